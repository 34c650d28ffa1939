//! Records the git commit the binary is built from (`SIEVE_BENCH_GIT_COMMIT`), so a run's
//! manifest names the build, not whatever the checkout holds when the run starts. Outside
//! a git checkout (a source tarball, a vendored copy) nothing is set and the manifest
//! says the commit is unknown.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8(out.stdout).ok()?.trim().to_string())
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=SIEVE_BENCH_GIT_COMMIT");
    if let Ok(given) = std::env::var("SIEVE_BENCH_GIT_COMMIT") {
        // A packager that knows the commit sets it directly.
        println!("cargo:rustc-env=SIEVE_BENCH_GIT_COMMIT={given}");
        return;
    }
    let Some(commit) = git(&["rev-parse", "HEAD"]).filter(|c| c.len() == 40) else {
        return;
    };
    // Rebuild when HEAD moves: HEAD itself (a checkout) and the branch it points at (a
    // commit), wherever this worktree keeps them. Only files that exist: Cargo reruns the
    // script on every build for a missing one.
    let mut watch = vec!["HEAD".to_string(), "packed-refs".to_string()];
    watch.extend(git(&["symbolic-ref", "-q", "HEAD"]));
    for name in watch {
        if let Some(p) = git(&["rev-parse", "--git-path", &name])
            && std::path::Path::new(&p).exists()
        {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    println!("cargo:rustc-env=SIEVE_BENCH_GIT_COMMIT={commit}");
}
