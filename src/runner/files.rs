//! Files that survive anything: an exclusive lock on a results folder, and atomic writes
//! (temp file + rename) so a crash or a full disk never leaves a half-written file.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The lock file inside a results folder.
pub const LOCK: &str = ".lock";

/// Held while a process writes into a results folder; released when dropped or when the
/// process dies (an OS file lock, so a killed run never leaves the folder locked).
#[derive(Debug)]
pub struct FolderLock {
    _file: File,
    pub path: PathBuf,
}

/// Why a folder could not be locked.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(
        "{0} is in use by another run (it holds {LOCK}); wait for it to finish, or write into another --out"
    )]
    Busy(PathBuf),
    #[error("cannot lock {0}: {1}")]
    Io(PathBuf, std::io::Error),
}

impl FolderLock {
    /// Takes the folder's lock without waiting.
    pub fn acquire(dir: &Path) -> Result<FolderLock, LockError> {
        let path = dir.join(LOCK);
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| LockError::Io(dir.to_path_buf(), e))?;
        match file.try_lock() {
            Ok(()) => Ok(FolderLock { _file: file, path }),
            Err(std::fs::TryLockError::WouldBlock) => Err(LockError::Busy(dir.to_path_buf())),
            Err(std::fs::TryLockError::Error(e)) => Err(LockError::Io(dir.to_path_buf(), e)),
        }
    }
}

/// Writes `bytes` to `path` through a temporary file in the same folder and a rename:
/// readers see the old content or the new, never a torn or empty file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_is_refused_while_the_first_lives() {
        let dir = tempfile::tempdir().unwrap();
        let first = FolderLock::acquire(dir.path()).unwrap();
        assert!(matches!(
            FolderLock::acquire(dir.path()),
            Err(LockError::Busy(_))
        ));
        drop(first);
        FolderLock::acquire(dir.path()).unwrap();
    }

    #[test]
    fn atomic_write_replaces_whole_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "two");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
