//! Every command that writes a folder keeps its promises: a search refuses a folder
//! holding a user's file, a report writes only where `--out` says and through a
//! temporary file (a full disk keeps the previous one), and a partial run says so in
//! every format, its CSV included.

use crate::common::{bench, lines};
use std::path::Path;

/// A small scripted run: one user task, one injection task.
fn small_run(cwd: &Path, out: &Path, extra: &[&str]) -> assert_cmd::assert::Assert {
    bench(cwd)
        .args([
            "run",
            "--suite",
            "banking",
            "--defense",
            "none",
            "--user-tasks",
            "user_task_0,user_task_1,user_task_2",
            "--injection-tasks",
            "injection_task_0",
            "--quiet",
            "--out",
        ])
        .arg(out)
        .args(extra)
        .assert()
}

/// `attack search --out DIR` into a folder holding a file the search did not write (a
/// user's `library.json`) is refused, naming it, and the file is left as it was.
#[test]
fn a_search_into_a_folder_with_a_user_s_file_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("mine");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("library.json"), "my own notes").unwrap();
    let a = bench(tmp.path())
        .args([
            "attack",
            "search",
            "--suite",
            "dojo-style/banking",
            "--unit",
            "pair:user_task_0,injection_task_0",
            "--budget-episodes",
            "30",
            "--out",
        ])
        .arg(&dir)
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&a.get_output().stderr).to_string();
    assert!(
        err.contains("library.json") && err.contains("attack search"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("library.json")).unwrap(),
        "my own notes"
    );
    assert!(!dir.join("settings.json").exists());
}

/// A run stopped by its budget says PARTIAL in `summary.csv` (a column of its own on
/// every row) and in `report --format csv`, as the text and Markdown tables do.
#[test]
fn a_budget_stopped_run_is_partial_in_summary_csv() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    small_run(tmp.path(), &out, &["--budget-tokens", "20000"]).code(6);
    let csv = lines(&out.join("summary.csv"));
    assert!(csv[0].ends_with(",partial"), "{}", csv[0]);
    assert!(csv[1..].iter().all(|l| l.ends_with(",PARTIAL")), "{csv:?}");
    let a = bench(tmp.path())
        .args(["report", "--format", "csv"])
        .arg(&out)
        .assert()
        .success();
    let text = String::from_utf8_lossy(&a.get_output().stdout).to_string();
    assert!(text.contains(",PARTIAL"), "{text}");
}

/// `report RUN` leaves the run's own summary files alone, and `--out` naming one of
/// them is refused.
#[test]
fn report_never_writes_over_a_run_s_own_files() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    small_run(tmp.path(), &out, &[]).success();
    let before = std::fs::read(out.join("summary.md")).unwrap();
    std::fs::write(out.join("summary.md"), "kept").unwrap();
    bench(tmp.path()).arg("report").arg(&out).assert().success();
    assert_eq!(
        std::fs::read_to_string(out.join("summary.md")).unwrap(),
        "kept"
    );
    bench(tmp.path())
        .args(["report", "--format", "md", "--out"])
        .arg(out.join("summary.md"))
        .arg(&out)
        .assert()
        .code(2);
    assert_eq!(
        std::fs::read_to_string(out.join("summary.md")).unwrap(),
        "kept"
    );
    assert!(!before.is_empty());
}

/// `report --out` on a full disk fails and keeps the previous file whole (a tmpfs of
/// 256 KiB filled up; skipped with a note where mounting is not allowed).
#[test]
fn report_out_on_a_full_tmpfs_keeps_the_old_file() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r");
    small_run(tmp.path(), &out, &[]).success();
    let disk = tmp.path().join("disk");
    std::fs::create_dir(&disk).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=256k", "tmpfs"])
        .arg(&disk)
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("note: cannot mount a tmpfs here (not root?); full-disk report test skipped");
        return;
    }
    let unmount = scopeguard(disk.clone());
    let report = disk.join("report.md");
    bench(tmp.path())
        .args(["report", "--format", "md", "--out"])
        .arg(&report)
        .arg(&out)
        .assert()
        .success();
    let old = std::fs::read(&report).unwrap();
    assert!(old.len() > 100);
    // Fill the disk: what is left is smaller than the report.
    let mut filler = std::fs::File::create(disk.join("filler")).unwrap();
    let block = vec![b'x'; 4096];
    while std::io::Write::write_all(&mut filler, &block).is_ok() {}
    let _ = filler.sync_all();
    drop(filler);
    bench(tmp.path())
        .args(["report", "--format", "md", "--out"])
        .arg(&report)
        .arg(&out)
        .assert()
        .code(1);
    assert_eq!(
        std::fs::read(&report).unwrap(),
        old,
        "the previous report is whole"
    );
    drop(unmount);
}

/// Unmounts the tmpfs when dropped (also when an assertion fails).
struct Unmount(std::path::PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

fn scopeguard(p: std::path::PathBuf) -> Unmount {
    Unmount(p)
}
