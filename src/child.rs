//! One JSON-lines child process, the one client of both protocols that talk to other
//! programs: defense plugins (`defense::plugin`) and suite providers (`external`).
//!
//! - The child runs in a process group of its own; dropping the handle (or [`kill`])
//!   kills the whole group, so nothing the child started outlives it. The group is
//!   signalled only while its leader is not yet reaped (a reaped leader's id may already
//!   name another process's group); the leader is reaped after.
//! - The child and everything it starts carry an environment tag unique to this child
//!   ([`TAG_VAR`]); at the end, on Linux, every process of ours that still carries it
//!   (one that left the group with `setsid`) is found in `/proc` and killed. A process
//!   that clears its environment and leaves the group escapes; other platforms kill the
//!   group only (docs/defense-plugin.md says so).
//! - Every request carries an `id` that cannot be guessed (hash-derived, at most
//!   2^53 - 1 so every JSON reader holds it exactly) and a reply must carry the id of the
//!   request in flight: any other line (stray, repeated, or a guess at the next id) is
//!   [`ChildError::Stray`], an error, never an answer.
//! - A reply is one line of at most `max_reply` bytes, read as bytes up to the cap: a
//!   longer one is an error, whatever the child keeps writing.
//! - Every exchange has a deadline.
//! - stderr is drained as bytes into a bounded tail, whatever it holds, so a child that
//!   writes much or writes bytes that are not UTF-8 never blocks and never stops the drain.
//!
//! Any error leaves the stream in doubt: the caller discards the process.
//!
//! [`kill`]: Child::kill

use serde_json::{Map, Value};
use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout, Command};

/// The default cap on one reply line: far above any description or tool output a suite
/// needs, far below what would strain memory.
pub const DEFAULT_MAX_REPLY: usize = 8 << 20;

/// How many bytes of the child's stderr are kept to explain a failure.
const STDERR_TAIL: usize = 4096;

/// How to start a child.
#[derive(Clone, Debug)]
pub struct Spec {
    pub program: PathBuf,
    pub args: Vec<String>,
    /// Working directory; the parent's when `None`.
    pub dir: Option<PathBuf>,
    /// The longest one exchange (request written, reply read) may take.
    pub timeout: Duration,
    /// The longest reply line, in bytes (newline excluded).
    pub max_reply: usize,
}

/// Why an exchange failed. The process is in an unknown state after any of them.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ChildError {
    #[error("cannot start it: {0}")]
    Spawn(String),
    #[error("cannot write the request: {0}")]
    Write(String),
    #[error("cannot read the reply: {0}")]
    Read(String),
    #[error("no reply within {0:.1} s (timeout)")]
    Timeout(f64),
    #[error("it closed its stdout without replying")]
    Closed,
    #[error("its reply is longer than the cap of {cap} bytes")]
    TooLong { cap: usize },
    #[error("its reply is not valid UTF-8")]
    NotUtf8,
    #[error("malformed reply, not a JSON object ({why}): {line}")]
    NotJson { why: String, line: String },
    /// The reply carries no `id`.
    #[error("its reply has no `id`; it must echo the request's (`\"id\": {expected}`)")]
    NoId {
        expected: u64,
        /// The reply, for callers that explain an old protocol version.
        reply: Box<Map<String, Value>>,
    },
    /// A line that answers no request in flight: its id is another request's (an old
    /// one, a repeated one, a guess at the next), or extra output arrived when no request
    /// was in flight.
    #[error("{}", stray_message(*expected, got.as_deref()))]
    Stray {
        /// The request in flight, if any.
        expected: Option<u64>,
        /// The line's `id` (or the line, when no request was in flight).
        got: Option<Box<Value>>,
    },
}

fn stray_message(expected: Option<u64>, got: Option<&Value>) -> String {
    let got = got.map_or_else(String::new, |v| clip(&v.to_string(), 40));
    match expected {
        Some(id) => format!(
            "its reply carries `\"id\": {got}` but the request in flight is {id}: a stray or repeated line"
        ),
        None => format!("it wrote a line no request asked for: a stray or repeated line ({got})"),
    }
}

/// The environment variable every child (and what it starts) carries, set to a value
/// unique to that child, by which escapees are found at the end.
pub const TAG_VAR: &str = "SIEVE_BENCH_CHILD";

/// The largest integer every JSON reader holds exactly (2^53 - 1).
const MAX_SAFE_ID: u64 = (1 << 53) - 1;

/// A fresh value nobody can predict: the per-process random keys of std's hasher over a
/// counter, the time and `salt`. Not randomness that can change an outcome (ids and tags
/// are never recorded), so it needs no seed.
fn unguessable(salt: u64) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u64(salt);
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.finish()
}

/// A request id: unguessable, non-zero, at most [`MAX_SAFE_ID`].
fn request_id(salt: u64) -> u64 {
    (unguessable(salt) & MAX_SAFE_ID).max(1)
}

/// The first `n` characters of `s`, with `…` when cut.
pub fn clip(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// The last bytes a child wrote to stderr.
#[derive(Default)]
struct Tail(VecDeque<u8>);

impl Tail {
    fn push(&mut self, bytes: &[u8]) {
        self.0.extend(bytes);
        let extra = self.0.len().saturating_sub(STDERR_TAIL);
        self.0.drain(..extra);
    }
}

/// A running child.
pub struct Child {
    child: tokio::process::Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    stderr: Arc<Mutex<Tail>>,
    drain: tokio::task::JoinHandle<()>,
    /// The child's process group (its pid at start): kept, since the pid is gone once
    /// the child is reaped while what it started may live on.
    group: Option<u32>,
    /// This child's value of [`TAG_VAR`].
    tag: String,
    /// Requests sent so far (mixed into each id).
    sent: u64,
    timeout: Duration,
    max_reply: usize,
}

impl Child {
    /// Starts the child in its own process group, with its stderr drained.
    pub fn spawn(spec: &Spec) -> Result<Child, ChildError> {
        let mut cmd = Command::new(&spec.program);
        cmd.args(&spec.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        #[cfg(unix)]
        cmd.process_group(0);
        if let Some(dir) = &spec.dir {
            cmd.current_dir(dir);
        }
        let tag = format!("{:016x}{:016x}", unguessable(1), unguessable(2));
        cmd.env(TAG_VAR, &tag);
        let mut child = cmd.spawn().map_err(|e| ChildError::Spawn(e.to_string()))?;
        let group = child.id();
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut pipe = child.stderr.take().expect("piped stderr");
        let stderr = Arc::new(Mutex::new(Tail::default()));
        let sink = stderr.clone();
        let drain = tokio::spawn(async move {
            let mut buf = [0u8; 8192];
            while let Ok(n) = pipe.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                sink.lock().expect("stderr lock").push(&buf[..n]);
            }
        });
        Ok(Child {
            child,
            stdin,
            stdout,
            stderr,
            drain,
            group,
            tag,
            sent: 0,
            timeout: spec.timeout,
            max_reply: spec.max_reply,
        })
    }

    /// Sends `request` (a JSON object) with the next id and returns the reply answering
    /// it, without its `id`.
    pub async fn exchange(
        &mut self,
        mut request: Map<String, Value>,
    ) -> Result<Map<String, Value>, ChildError> {
        self.sent += 1;
        let id = request_id(self.sent);
        let clobbered = request.insert("id".into(), Value::from(id));
        debug_assert!(
            clobbered.is_none(),
            "a request field named `id` would be lost"
        );
        let mut line = serde_json::to_vec(&request).expect("a JSON object serialises");
        line.push(b'\n');
        let timeout = self.timeout;
        let bytes = tokio::time::timeout(timeout, async {
            self.stdin
                .write_all(&line)
                .await
                .map_err(|e| ChildError::Write(e.to_string()))?;
            self.stdin
                .flush()
                .await
                .map_err(|e| ChildError::Write(e.to_string()))?;
            self.read_line().await
        })
        .await
        .map_err(|_| ChildError::Timeout(timeout.as_secs_f64()))??;
        let text = std::str::from_utf8(&bytes).map_err(|_| ChildError::NotUtf8)?;
        let text = text.trim_end_matches(['\n', '\r']);
        let mut reply = match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(m)) => m,
            Ok(_) => {
                return Err(ChildError::NotJson {
                    why: "not an object".into(),
                    line: clip(text, 200),
                });
            }
            Err(e) => {
                return Err(ChildError::NotJson {
                    why: e.to_string(),
                    line: clip(text, 200),
                });
            }
        };
        match reply.remove("id") {
            None => Err(ChildError::NoId {
                expected: id,
                reply: Box::new(reply),
            }),
            Some(got) if got.as_u64() != Some(id) => Err(ChildError::Stray {
                expected: Some(id),
                got: Some(Box::new(got)),
            }),
            Some(_) => Ok(reply),
        }
    }

    /// Checks that the child wrote nothing after its last reply (no request is in
    /// flight, so any line is stray); waits `settle` for a line still on its way.
    pub async fn quiet(&mut self, settle: Duration) -> Result<(), ChildError> {
        match tokio::time::timeout(settle, self.stdout.fill_buf()).await {
            Err(_) => Ok(()),
            Ok(Err(e)) => Err(ChildError::Read(e.to_string())),
            Ok(Ok([])) => Err(ChildError::Closed),
            Ok(Ok(buf)) => {
                let text = String::from_utf8_lossy(&buf[..buf.len().min(200)]).into_owned();
                Err(ChildError::Stray {
                    expected: None,
                    got: Some(Box::new(Value::String(text))),
                })
            }
        }
    }

    /// One line, up to the cap, as bytes.
    async fn read_line(&mut self) -> Result<Vec<u8>, ChildError> {
        let mut line = Vec::new();
        loop {
            let buf = self
                .stdout
                .fill_buf()
                .await
                .map_err(|e| ChildError::Read(e.to_string()))?;
            if buf.is_empty() {
                return Err(ChildError::Closed);
            }
            let (take, done) = match buf.iter().position(|b| *b == b'\n') {
                Some(i) => (i + 1, true),
                None => (buf.len(), false),
            };
            if line.len() + take > self.max_reply + 1 {
                return Err(ChildError::TooLong {
                    cap: self.max_reply,
                });
            }
            line.extend_from_slice(&buf[..take]);
            self.stdout.consume(take);
            if done {
                return Ok(line);
            }
        }
    }

    /// The end of what the child wrote to stderr, trimmed, as text (bytes that are not
    /// UTF-8 shown as U+FFFD); empty when it wrote nothing.
    pub fn stderr_tail(&self) -> String {
        let tail = self.stderr.lock().expect("stderr lock");
        let bytes: Vec<u8> = tail.0.iter().copied().collect();
        String::from_utf8_lossy(&bytes).trim().to_string()
    }

    /// Kills the child and everything in its process group (and its tagged escapees),
    /// and says how it ended when it ends within a moment; waits for the stderr drain to
    /// take what it wrote last.
    pub async fn kill(&mut self) -> Option<String> {
        self.kill_group();
        let status = tokio::time::timeout(Duration::from_secs(2), self.child.wait())
            .await
            .ok()
            .and_then(Result::ok);
        let _ = tokio::time::timeout(Duration::from_millis(200), &mut self.drain).await;
        status.map(|s| s.to_string())
    }

    /// Closes the child's stdin and gives it `grace` to exit on its own; then kills its
    /// group (the leader still unreaped, so the group id is still its own), then reaps it.
    pub async fn close(mut self, grace: Duration) {
        let _ = self.stdin.shutdown().await;
        let deadline = tokio::time::Instant::now() + grace;
        while !self.leader_exited() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        self.kill_group();
        let _ = tokio::time::timeout(Duration::from_secs(2), self.child.wait()).await;
    }

    /// Whether the child is still running (checked without reaping it).
    pub fn alive(&self) -> bool {
        !self.leader_exited()
    }

    /// Whether the leader has exited (reaped or not), without reaping it.
    fn leader_exited(&self) -> bool {
        match self.group {
            #[cfg(unix)]
            Some(pid) => !matches!(leader(pid), Leader::Running),
            _ => true,
        }
    }

    /// Kills the group, only while its leader is not reaped (exited or not, its pid and so
    /// its group id are still its own), and then every tagged escapee.
    fn kill_group(&mut self) {
        #[cfg(unix)]
        if let Some(group) = self.group
            && !matches!(leader(group), Leader::Reaped)
        {
            // SAFETY: killpg only sends a signal, to the group the child leads (it was
            // started with process_group(0) and is not reaped, so the id is not reused).
            unsafe {
                libc::killpg(group as libc::pid_t, libc::SIGKILL);
            }
        }
        let _ = self.child.start_kill();
        sweep(&self.tag);
        // A process caught inside execve (between `setsid` and the program it runs)
        // shows no environment for that moment, so one pass can miss it: look again
        // after it has had time to finish the exec.
        #[cfg(target_os = "linux")]
        for pause in [5, 25] {
            std::thread::sleep(Duration::from_millis(pause));
            sweep(&self.tag);
        }
    }
}

/// The state of a group's leader, seen without reaping it.
#[cfg(unix)]
#[derive(Debug, PartialEq)]
enum Leader {
    Running,
    /// Exited, not yet reaped: its pid (and group id) cannot be reused yet.
    Exited,
    /// Reaped (or never ours): its id may name another process now.
    Reaped,
}

#[cfg(unix)]
fn leader(pid: u32) -> Leader {
    // SAFETY: waitid with WNOWAIT only reads the child's state into `info`, which it
    // owns; it reaps nothing.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let rc = libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        );
        if rc != 0 {
            Leader::Reaped
        } else if info.si_pid() == 0 {
            Leader::Running
        } else {
            Leader::Exited
        }
    }
}

/// Kills every process of ours whose environment carries `TAG_VAR=tag`: what left the
/// child's group (`setsid`) but kept the environment it was given. Linux only.
fn sweep(tag: &str) {
    #[cfg(target_os = "linux")]
    {
        let needle = format!("{TAG_VAR}={tag}");
        let me = std::process::id();
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return;
        };
        for entry in dir.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            if pid == me {
                continue;
            }
            let Ok(env) = std::fs::read(entry.path().join("environ")) else {
                continue;
            };
            let tagged = |env: &[u8]| env.split(|b| *b == 0).any(|v| v == needle.as_bytes());
            if !tagged(&env) {
                continue;
            }
            // Pin the process with a pidfd, then read its environment again: a pid that
            // exited between the two reads and was reused is not signalled.
            // SAFETY: pidfd_open takes a pid and flags and returns a descriptor we close.
            let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
            if fd < 0 {
                continue;
            }
            let fd = fd as libc::c_int;
            if std::fs::read(entry.path().join("environ")).is_ok_and(|e| tagged(&e)) {
                // SAFETY: sends SIGKILL through the pidfd just opened; no other memory.
                unsafe {
                    libc::syscall(
                        libc::SYS_pidfd_send_signal,
                        fd,
                        libc::SIGKILL,
                        std::ptr::null::<libc::siginfo_t>(),
                        0,
                    );
                }
            }
            // SAFETY: closes the descriptor opened above, once.
            unsafe {
                libc::close(fd);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = tag;
}

impl Drop for Child {
    fn drop(&mut self) {
        self.kill_group();
        self.drain.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str, max_reply: usize) -> Child {
        Child::spawn(&Spec {
            program: "sh".into(),
            args: vec!["-c".into(), script.into()],
            dir: None,
            timeout: Duration::from_secs(5),
            max_reply,
        })
        .unwrap()
    }

    fn obj(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => unreachable!(),
        }
    }

    /// A shell line that sets `$id` to the id of the request just read into `$l`.
    const ID: &str = r#"id=$(printf '%s' "$l" | sed 's/.*"id":\([0-9]*\).*/\1/')"#;

    #[tokio::test]
    async fn a_reply_must_echo_its_request_id() {
        // Answers with the id it was sent, then sends one stale line too many.
        let mut c = sh(
            &format!(
                r#"read l; {ID}; echo "{{\"id\": $id, \"ok\": true}}"; echo "{{\"id\": $id, \"ok\": true}}"; read l; sleep 5"#
            ),
            1024,
        );
        let r = c
            .exchange(obj(serde_json::json!({"op": "a"})))
            .await
            .unwrap();
        assert_eq!(r["ok"], true);
        assert!(!r.contains_key("id"));
        match c.exchange(obj(serde_json::json!({"op": "b"}))).await {
            Err(ChildError::Stray {
                expected: Some(_),
                got: Some(_),
            }) => {}
            other => panic!("{other:?}"),
        }
    }

    /// A child that answers each request and then guesses the next id (the id plus one,
    /// as a counting scheme would give) has its guess refused, not taken as an answer.
    #[tokio::test]
    async fn a_line_guessing_the_next_id_is_stray() {
        let mut c = sh(
            &format!(
                r#"while read l; do {ID}; echo "{{\"id\": $id}}"; echo "{{\"id\": $((id + 1)), \"guess\": true}}"; done"#
            ),
            1024,
        );
        c.exchange(Map::new()).await.unwrap();
        let e = c.exchange(Map::new()).await.unwrap_err();
        assert!(matches!(e, ChildError::Stray { .. }), "{e}");
        assert!(e.to_string().contains("stray"), "{e}");
    }

    #[tokio::test]
    async fn output_after_the_last_reply_is_stray() {
        let mut c = sh(
            &format!(r#"read l; {ID}; echo "{{\"id\": $id}}"; echo '{{"late": 1}}'; sleep 5"#),
            1024,
        );
        c.exchange(Map::new()).await.unwrap();
        let e = c.quiet(Duration::from_millis(500)).await.unwrap_err();
        assert!(matches!(e, ChildError::Stray { expected: None, .. }), "{e}");
        let mut q = sh(
            &format!(r#"read l; {ID}; echo "{{\"id\": $id}}"; sleep 5"#),
            1024,
        );
        q.exchange(Map::new()).await.unwrap();
        q.quiet(Duration::from_millis(50)).await.unwrap();
    }

    #[test]
    fn request_ids_are_distinct_nonzero_and_json_safe() {
        let ids: std::collections::BTreeSet<u64> = (0..1000).map(|_| request_id(1)).collect();
        assert_eq!(ids.len(), 1000, "no id repeats, even for the same position");
        assert!(ids.iter().all(|i| (1..=MAX_SAFE_ID).contains(i)));
        // Not a count: consecutive requests are far apart.
        let (a, b) = (request_id(1), request_id(2));
        assert!(a.abs_diff(b) > 1_000, "{a} {b}");
    }

    /// A leader's group is signalled only while the leader is unreaped: `leader` tells
    /// running, exited-unreaped and reaped apart without reaping.
    #[tokio::test]
    async fn the_leader_is_seen_without_being_reaped() {
        let mut c = sh("sleep 0.5", 1024);
        let pid = c.group.unwrap();
        assert_eq!(leader(pid), Leader::Running);
        for _ in 0..400 {
            if leader(pid) != Leader::Running {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(leader(pid), Leader::Exited, "exited, still unreaped");
        assert_eq!(leader(pid), Leader::Exited, "looking did not reap it");
        c.child.wait().await.unwrap();
        assert_eq!(leader(pid), Leader::Reaped);
        // Ending it now sends no group signal (the id may be another's) and is harmless.
        c.kill().await;
    }

    #[tokio::test]
    async fn a_grandchild_that_left_the_group_with_setsid_is_killed_too() {
        if std::process::Command::new("setsid")
            .arg("true")
            .status()
            .is_err()
        {
            eprintln!("skipped: no setsid");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        let mut c = sh(
            &format!(
                r#"setsid sleep 300 & echo $! > {}; read l; {ID}; echo "{{\"id\": $id}}"; wait"#,
                pidfile.display()
            ),
            1024,
        );
        c.exchange(Map::new()).await.unwrap();
        let pid = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .to_string();
        drop(c);
        assert!(
            gone(&pid),
            "the setsid grandchild {pid} outlived its parent"
        );
    }

    #[tokio::test]
    async fn a_reply_over_the_cap_is_refused_without_reading_it_all() {
        let mut c = sh(
            "read l; head -c 100000000 /dev/zero | tr '\\0' x; echo",
            1000,
        );
        let e = c.exchange(Map::new()).await.unwrap_err();
        assert!(matches!(e, ChildError::TooLong { cap: 1000 }), "{e}");
    }

    #[tokio::test]
    async fn stderr_that_is_not_utf8_or_long_never_blocks_the_child() {
        // 1 MB of stderr (far past a pipe's buffer) starting with a byte that is not
        // UTF-8, then the reply.
        let mut c = sh(
            &format!(
                r#"read l; {ID}; printf '\377' >&2; head -c 1000000 /dev/zero | tr '\0' e >&2; printf 'last words' >&2; echo "{{\"id\": $id}}"; sleep 5"#
            ),
            1024,
        );
        c.exchange(Map::new()).await.unwrap();
        c.kill().await;
        assert!(
            c.stderr_tail().ends_with("last words"),
            "{}",
            c.stderr_tail()
        );
        assert!(c.stderr_tail().len() <= STDERR_TAIL);
    }

    #[tokio::test]
    async fn killing_the_child_kills_what_it_started() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        let mut c = sh(
            &format!(
                r#"sleep 300 & echo $! > {}; read l; {ID}; echo "{{\"id\": $id}}"; wait"#,
                pidfile.display()
            ),
            1024,
        );
        c.exchange(Map::new()).await.unwrap();
        let pid = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .to_string();
        drop(c);
        assert!(gone(&pid), "the grandchild {pid} outlived its parent");
    }

    /// Whether a process is gone (or a zombie nobody reaps yet).
    pub(crate) fn gone(pid: &str) -> bool {
        for _ in 0..100 {
            match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
                Err(_) => return true,
                Ok(stat) if stat.split(") ").nth(1).is_some_and(|s| s.starts_with('Z')) => {
                    return true;
                }
                Ok(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
        false
    }

    #[tokio::test]
    async fn a_silent_child_times_out() {
        let mut c = Child::spawn(&Spec {
            program: "sleep".into(),
            args: vec!["30".into()],
            dir: None,
            timeout: Duration::from_millis(200),
            max_reply: 1024,
        })
        .unwrap();
        assert!(matches!(
            c.exchange(Map::new()).await,
            Err(ChildError::Timeout(_))
        ));
    }
}
