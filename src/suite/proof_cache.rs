//! Proving a suite once per fingerprint: `run` proves every selected suite before it runs
//! (see [`super::validate::validate`]), which costs more than the episodes of a scripted
//! run. A suite that proved sound leaves a small file keyed by its fingerprint (every
//! byte of its folder) and by the build that proved it (version, commit, and the
//! executable's size and modification time, so every rebuild proves again). A later run
//! with the same suite and the same build reads the file instead of proving; any edit to
//! the suite changes the fingerprint and the proof runs again. A missing, unreadable or
//! corrupt file, or one written for other inputs, is ignored and rewritten: the cache can
//! only skip a proof that passed with exactly these inputs. Problems are never cached.

use super::Suite;
use super::validate::{Problem, validate};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The environment variable naming the cache folder; empty or `off` turns caching off.
pub const ENV: &str = "SIEVE_BENCH_PROOF_CACHE";

/// How a suite came to be known sound (or not).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// Proved now (no usable cache entry, or no cache).
    Proved,
    /// A cache entry written by this build for this very fingerprint.
    Cached,
}

/// One cache entry: what was proved, by which build. Read back, every field must match.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    suite: String,
    fingerprint: String,
    build: String,
    sound: bool,
}

/// The default cache folder: `$SIEVE_BENCH_PROOF_CACHE`, else `$XDG_CACHE_HOME/sieve-bench/proofs`,
/// else `$HOME/.cache/sieve-bench/proofs`; `None` when caching is off or no folder is known.
pub fn default_dir() -> Option<PathBuf> {
    let nonempty = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    if let Some(v) = std::env::var_os(ENV) {
        return (!v.is_empty() && v != "off").then(|| PathBuf::from(v));
    }
    nonempty("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| nonempty("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .map(|c| c.join("sieve-bench").join("proofs"))
}

/// This build's identity: package version, the commit it was built from, and the
/// executable's path, size and modification time (a rebuild changes them even when the
/// commit does not). `None` when the executable cannot be examined: then nothing is
/// cached.
pub fn build_id() -> Option<String> {
    let exe = std::env::current_exe().ok()?;
    let meta = std::fs::metadata(&exe).ok()?;
    let mtime = meta
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?;
    Some(format!(
        "{} {} {} {} {}",
        env!("CARGO_PKG_VERSION"),
        option_env!("SIEVE_BENCH_GIT_COMMIT").unwrap_or("-"),
        exe.display(),
        meta.len(),
        mtime.as_nanos()
    ))
}

fn short(text: &str) -> String {
    crate::digest::hex(&Sha256::digest(text.as_bytes())[..12])
}

/// The folder of one build's entries (other caches keyed by the build, such as the
/// token counts of `model::tokens`, keep their files there too and are pruned with it).
pub fn build_folder(dir: &Path, build: &str) -> PathBuf {
    dir.join(short(build))
}

/// An entry's file in its build's folder.
fn entry_path(dir: &Path, build: &str, suite: &Suite) -> PathBuf {
    build_folder(dir, build).join(format!(
        "{}.json",
        short(&format!(
            "{}\0{}",
            suite.qualified_name(),
            suite.fingerprint
        ))
    ))
}

/// Proves `suite` ([`validate`]) unless `dir` holds this build's entry for its exact
/// fingerprint; records a sound result there. Without `dir` or a build id it always
/// proves. Writing the entry is best effort: a cache that cannot be written only costs
/// the next run a proof.
pub fn prove(suite: &Suite, dir: Option<&Path>, build: Option<&str>) -> (Vec<Problem>, Source) {
    let (Some(dir), Some(build)) = (dir, build) else {
        return (validate(suite), Source::Proved);
    };
    let path = entry_path(dir, build, suite);
    let expected = Entry {
        suite: suite.qualified_name(),
        fingerprint: suite.fingerprint.clone(),
        build: build.to_string(),
        sound: true,
    };
    let cached = std::fs::read(&path)
        .ok()
        .and_then(|b| serde_json::from_slice::<Entry>(&b).ok());
    if cached.as_ref() == Some(&expected) {
        return (Vec::new(), Source::Cached);
    }
    let problems = validate(suite);
    if problems.is_empty() {
        let _ = write(&path, &expected);
    }
    (problems, Source::Proved)
}

/// Keeps what `suite`'s tasks take from tool outputs ([`super::needs_memo`]) in this
/// build's folder of `dir`, keyed by the suite's fingerprint as its proof is: read now,
/// extended when the suite is dropped. Without `dir` or a build id nothing is kept.
pub fn keep_needs(suite: &Suite, dir: Option<&Path>, build: Option<&str>) {
    let (Some(dir), Some(build)) = (dir, build) else {
        return;
    };
    let name = short(&format!(
        "{}\0{}",
        suite.qualified_name(),
        suite.fingerprint
    ));
    suite
        .needs_memo
        .keep_in(build_folder(dir, build).join(format!("needs-{name}.json")));
}

fn write(path: &Path, entry: &Entry) -> std::io::Result<()> {
    let folder = path.parent().expect("an entry lives in a folder");
    std::fs::create_dir_all(folder)?;
    if let Some(all) = folder.parent() {
        prune(all, folder);
    }
    // A unique temporary name, then a rename: a reader sees the whole entry or none.
    let tmp = tempfile::NamedTempFile::new_in(folder)?;
    std::fs::write(
        tmp.path(),
        serde_json::to_vec(entry).map_err(std::io::Error::other)?,
    )?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Removes other builds' folders untouched for a day: entries no build will read again.
/// (Not sooner: several builds may run at once, each proving into its own folder.)
fn prune(all: &Path, keep: &Path) {
    let Ok(folders) = std::fs::read_dir(all) else {
        return;
    };
    let day = std::time::Duration::from_secs(24 * 3600);
    for f in folders.flatten() {
        let p = f.path();
        let old = f
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > day);
        if p != keep && old && p.is_dir() {
            let _ = std::fs::remove_dir_all(&p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A copy of a sound suite in a temporary folder.
    fn copy_of(name: &str) -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let to = tmp.path().join("suite");
        std::fs::create_dir_all(&to).unwrap();
        let from = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("suites")
            .join(name);
        for f in std::fs::read_dir(&from).unwrap() {
            let f = f.unwrap().path();
            if f.is_file() {
                std::fs::copy(&f, to.join(f.file_name().unwrap())).unwrap();
            }
        }
        (tmp, to)
    }

    #[test]
    fn what_tasks_take_from_outputs_is_kept_per_fingerprint_and_build() {
        let (_tmp, dir) = copy_of("dojo-style/slack");
        let cache = tempfile::tempdir().unwrap();
        let c = Some(cache.path());
        let ask = |suite: &Suite| {
            let task = &suite.user_tasks[0];
            let answer = task.answer.clone().unwrap_or_default();
            crate::suite::sight::needs(suite, task, &task.plan, &answer)
        };
        let worked_out = {
            let suite = super::super::load(&dir).unwrap();
            keep_needs(&suite, c, Some("b1"));
            ask(&suite)
        };
        let kept = |build: &str| {
            std::fs::read_dir(build_folder(cache.path(), build))
                .map(|d| d.count())
                .unwrap_or(0)
        };
        assert_eq!(
            kept("b1"),
            1,
            "the answers are written when the suite is dropped"
        );
        // Read back, the answer is the one worked out; another build keeps its own.
        let suite = super::super::load(&dir).unwrap();
        keep_needs(&suite, c, Some("b1"));
        let task = &suite.user_tasks[0];
        let key = (
            task.id.clone(),
            serde_json::to_string(&task.plan).unwrap(),
            task.answer.clone().unwrap_or_default(),
        );
        assert_eq!(suite.needs_memo.get(&key), Some(worked_out.clone()));
        assert_eq!(ask(&suite), worked_out);
        assert_eq!(kept("b2"), 0);
    }

    #[test]
    fn a_sound_suite_is_proved_once_per_fingerprint_and_build() {
        let (_tmp, dir) = copy_of("dojo-style/slack");
        let cache = tempfile::tempdir().unwrap();
        let suite = super::super::load(&dir).unwrap();
        let c = Some(cache.path());
        let (problems, source) = prove(&suite, c, Some("b1"));
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(source, Source::Proved);
        assert_eq!(prove(&suite, c, Some("b1")).1, Source::Cached);
        // Another build never trusts it.
        assert_eq!(prove(&suite, c, Some("b2")).1, Source::Proved);
        // No cache: always proved.
        assert_eq!(prove(&suite, None, Some("b1")).1, Source::Proved);
        assert_eq!(prove(&suite, c, None).1, Source::Proved);
    }

    #[test]
    fn a_corrupt_or_foreign_entry_is_ignored_and_rewritten() {
        let (_tmp, dir) = copy_of("dojo-style/slack");
        let cache = tempfile::tempdir().unwrap();
        let suite = super::super::load(&dir).unwrap();
        let c = Some(cache.path());
        prove(&suite, c, Some("b"));
        let path = entry_path(cache.path(), "b", &suite);
        for bad in [
            "{not json".to_string(),
            String::new(),
            r#"{"suite":"x/y","fingerprint":"0","build":"b","sound":true}"#.to_string(),
            serde_json::to_string(&Entry {
                suite: suite.qualified_name(),
                fingerprint: suite.fingerprint.clone(),
                build: "b".into(),
                sound: false,
            })
            .unwrap(),
        ] {
            std::fs::write(&path, bad).unwrap();
            assert_eq!(prove(&suite, c, Some("b")).1, Source::Proved);
            assert_eq!(prove(&suite, c, Some("b")).1, Source::Cached, "rewritten");
        }
    }

    #[test]
    fn an_edited_suite_is_proved_again_and_its_error_caught() {
        let (_tmp, dir) = copy_of("dojo-style/banking");
        let cache = tempfile::tempdir().unwrap();
        let c = Some(cache.path());
        let sound = super::super::load(&dir).unwrap();
        assert!(prove(&sound, c, Some("b")).0.is_empty());
        assert_eq!(prove(&sound, c, Some("b")).1, Source::Cached);
        // The bill now names another account than the one user_task_0's plan pays:
        // the suite still loads, and only the proof (what the plan uses must be shown)
        // can find it.
        let env_path = dir.join("environment.yaml");
        let text = std::fs::read_to_string(&env_path).unwrap();
        let (from, to) = (
            "IBAN GB24PNDR60041531206688,",
            "IBAN GB24PNDR60041531200000,",
        );
        assert!(text.contains(from));
        std::fs::write(&env_path, text.replace(from, to)).unwrap();
        let edited = super::super::load(&dir).unwrap();
        assert_ne!(edited.fingerprint, sound.fingerprint);
        let (problems, source) = prove(&edited, c, Some("b"));
        assert_eq!(source, Source::Proved);
        assert!(
            !problems.is_empty(),
            "the tampered suite must fail its proof"
        );
        // And it stays unproven: problems are never cached.
        assert_eq!(prove(&edited, c, Some("b")).1, Source::Proved);
    }
}
