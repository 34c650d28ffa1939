//! Files that survive anything: an exclusive lock on a results folder, atomic writes
//! (temp file + rename) so a crash or a full disk never leaves a half-written file, and
//! the check that a folder a command writes into is empty or a run of its own.

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
    /// Takes the lock of a folder that is read, not written (a shard being merged), when
    /// it has one: a folder without a lock file was never locked by a live run. Held, it
    /// keeps a run from starting to write into the folder while it is read.
    pub fn hold_if_present(dir: &Path) -> Result<Option<FolderLock>, LockError> {
        let path = dir.join(LOCK);
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(LockError::Io(dir.to_path_buf(), e)),
        };
        match file.try_lock() {
            Ok(()) => Ok(Some(FolderLock { _file: file, path })),
            Err(std::fs::TryLockError::WouldBlock) => Err(LockError::Busy(dir.to_path_buf())),
            Err(std::fs::TryLockError::Error(e)) => Err(LockError::Io(dir.to_path_buf(), e)),
        }
    }

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

/// Every file `run`, `ablate` and `merge` write into a results folder. `run --fresh`
/// removes these and nothing else.
pub const RUN_FILES: &[&str] = &[
    sieve_record::EPISODES,
    sieve_record::TRACES,
    sieve_record::RUN_INFO,
    "summary.json",
    "summary.csv",
    "summary.md",
    "breakdown.csv",
    "ablation.json",
    "ablation.csv",
    "ablation.md",
    "sweep.md",
    "sweep.csv",
    LOCK,
];

/// The name prefix of [`write_atomic`]'s temporary files: one seen in a folder is a write
/// of a run in progress (or one a crash cut short), never a file of the user's.
pub const TEMP_PREFIX: &str = ".sieve-bench-write-";

/// What a folder holds, before a command writes a run into it.
#[derive(Debug, PartialEq, Eq)]
pub enum Folder {
    Missing,
    /// Empty, or only files a run writes (an interrupted first start): free to use.
    Ours,
    /// A run: it has a manifest. Files of the user's beside it are left alone.
    Run,
    /// Anything else: the first few of its entries. Never written into.
    Foreign(Vec<String>),
}

/// Looks at `dir` before a command writes a run into it.
pub fn inspect(dir: &Path) -> std::io::Result<Folder> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Folder::Missing),
        Err(e) => return Err(e),
    };
    let mut foreign = Vec::new();
    let mut run = false;
    for e in entries {
        let e = e?;
        let name = e.file_name().to_string_lossy().into_owned();
        let is_dir = e.file_type()?.is_dir();
        if name == sieve_record::RUN_INFO && !is_dir {
            run = true;
        } else if is_dir || !(RUN_FILES.contains(&name.as_str()) || name.starts_with(TEMP_PREFIX)) {
            foreign.push(if is_dir { format!("{name}/") } else { name });
        }
    }
    Ok(if run {
        Folder::Run
    } else if foreign.is_empty() {
        Folder::Ours
    } else {
        foreign.sort();
        foreign.truncate(6);
        Folder::Foreign(foreign)
    })
}

/// Looks at a folder a command other than `run` writes (a search, a merge of searches, a
/// calibration): [`Folder::Run`] when it holds one of `markers` (the file that command
/// writes first, so an interrupted start has it too), [`Folder::Ours`] when it holds
/// nothing but a lock and temporary files, else [`Folder::Foreign`]: a user's
/// `library.json` or `cost.csv` in a folder without the marker is never written over.
pub fn inspect_own(dir: &Path, markers: &[&str]) -> std::io::Result<Folder> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Folder::Missing),
        Err(e) => return Err(e),
    };
    let mut foreign = Vec::new();
    for e in entries {
        let e = e?;
        let name = e.file_name().to_string_lossy().into_owned();
        let is_dir = e.file_type()?.is_dir();
        if !is_dir && markers.contains(&name.as_str()) {
            return Ok(Folder::Run);
        }
        if name != LOCK && !name.starts_with(TEMP_PREFIX) {
            foreign.push(if is_dir { format!("{name}/") } else { name });
        }
    }
    Ok(if foreign.is_empty() {
        Folder::Ours
    } else {
        foreign.sort();
        foreign.truncate(6);
        Folder::Foreign(foreign)
    })
}

/// Why [`claim_own`] refused a folder.
#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    /// It holds files the command did not write (the first few named).
    #[error(
        "{} holds {} and no {}: `{command}` writes only into a new or empty folder or one of its own, and never over a file it did not write; choose another --out",
        dir.display(),
        holds.join(", "),
        markers.join(" or ")
    )]
    Foreign {
        dir: PathBuf,
        holds: Vec<String>,
        markers: Vec<String>,
        command: String,
    },
    #[error(transparent)]
    Lock(#[from] LockError),
}

/// Takes a folder for a command other than `run` ([`inspect_own`]): refuses one holding
/// files `command` did not write, creates it when missing, and locks it.
pub fn claim_own(dir: &Path, markers: &[&str], command: &str) -> Result<FolderLock, ClaimError> {
    match inspect_own(dir, markers) {
        Ok(Folder::Foreign(holds)) => {
            return Err(ClaimError::Foreign {
                dir: dir.to_path_buf(),
                holds,
                markers: markers.iter().map(|m| m.to_string()).collect(),
                command: command.to_string(),
            });
        }
        Ok(_) => {}
        Err(e) => return Err(LockError::Io(dir.to_path_buf(), e).into()),
    }
    std::fs::create_dir_all(dir).map_err(|e| LockError::Io(dir.to_path_buf(), e))?;
    Ok(FolderLock::acquire(dir)?)
}

/// The refusal for a folder that is neither empty nor a run, naming what it holds.
pub fn not_a_run(dir: &Path, holds: &[String], command: &str) -> String {
    format!(
        "{} is not a run folder: it holds {} and no {}. `{command}` writes only into a new or empty folder or a run folder of its own, and never moves or removes what it did not write; choose another --out",
        dir.display(),
        holds.join(", "),
        sieve_record::RUN_INFO
    )
}

/// Writes `bytes` to `path` through a temporary file in the same folder and a rename:
/// readers see the old content or the new, never a torn or empty file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .tempfile_in(dir)?;
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
    fn a_folder_is_a_run_only_with_its_manifest() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("out");
        assert_eq!(inspect(&d).unwrap(), Folder::Missing);
        std::fs::create_dir(&d).unwrap();
        assert_eq!(inspect(&d).unwrap(), Folder::Ours);
        std::fs::write(d.join(LOCK), "").unwrap();
        std::fs::write(d.join("summary.md"), "").unwrap();
        assert_eq!(inspect(&d).unwrap(), Folder::Ours);
        // A concurrent run's write in progress is no file of the user's.
        std::fs::write(d.join(format!("{TEMP_PREFIX}a1b2c3")), "").unwrap();
        assert_eq!(inspect(&d).unwrap(), Folder::Ours);
        std::fs::create_dir(d.join("run-b")).unwrap();
        std::fs::write(d.join("thesis.tex"), "").unwrap();
        assert_eq!(
            inspect(&d).unwrap(),
            Folder::Foreign(vec!["run-b/".into(), "thesis.tex".into()])
        );
        std::fs::write(d.join(sieve_record::RUN_INFO), "{}").unwrap();
        assert_eq!(inspect(&d).unwrap(), Folder::Run);
    }

    #[test]
    fn a_read_folder_is_held_only_when_free() {
        let dir = tempfile::tempdir().unwrap();
        assert!(FolderLock::hold_if_present(dir.path()).unwrap().is_none());
        let live = FolderLock::acquire(dir.path()).unwrap();
        assert!(matches!(
            FolderLock::hold_if_present(dir.path()),
            Err(LockError::Busy(_))
        ));
        drop(live);
        let held = FolderLock::hold_if_present(dir.path()).unwrap();
        assert!(held.is_some());
        assert!(matches!(
            FolderLock::acquire(dir.path()),
            Err(LockError::Busy(_))
        ));
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
