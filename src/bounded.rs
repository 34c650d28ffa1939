//! Reading input files (suites, attacks, configurations) with a size limit, so a file
//! that is a symlink to `/dev/zero` or a stray multi-gigabyte dump is refused with the
//! limit named instead of being read until memory runs out.

use std::io::Read;
use std::path::Path;

/// The largest suite, attack or configuration file read: far above any real one (the
/// biggest shipped suite file is under 50 KiB) and far below what a machine can hold.
pub const MAX_INPUT_BYTES: u64 = 16 * 1024 * 1024;

/// Reads at most `limit` bytes of `path`; a longer file (or an endless device) is an
/// `InvalidData` error that names the limit.
pub fn read(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    let file = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "larger than the limit of {} for an input file",
                human(limit)
            ),
        ));
    }
    Ok(bytes)
}

/// [`read`] as UTF-8 text.
pub fn read_to_string(path: &Path, limit: u64) -> std::io::Result<String> {
    String::from_utf8(read(path, limit)?)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "not valid UTF-8"))
}

fn human(bytes: u64) -> String {
    if bytes >= 1024 * 1024 && bytes.is_multiple_of(1024 * 1024) {
        format!("{} MiB", bytes / (1024 * 1024))
    } else {
        format!("{bytes} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_at_the_limit_reads_and_one_byte_more_is_refused_naming_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, "abcd").unwrap();
        assert_eq!(read(&p, 4).unwrap(), b"abcd");
        let e = read(&p, 3).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidData);
        assert!(e.to_string().contains("limit of 3 bytes"), "{e}");
    }

    #[cfg(unix)]
    #[test]
    fn an_endless_device_stops_at_the_limit() {
        let e = read(Path::new("/dev/zero"), MAX_INPUT_BYTES).unwrap_err();
        assert!(e.to_string().contains("16 MiB"), "{e}");
    }

    #[test]
    fn text_that_is_not_utf8_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, [0xff, 0xfe]).unwrap();
        assert!(read_to_string(&p, 10).is_err());
    }
}
