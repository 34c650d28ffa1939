//! One JSON-lines child process, the one client of both protocols that talk to other
//! programs: defense plugins (`defense::plugin`) and suite providers (`external`).
//!
//! - The child runs in a process group of its own; dropping the handle (or [`kill`])
//!   kills the whole group, so nothing the child started outlives it.
//! - Every request carries an `id` (1, 2, … per process) and a reply must carry the id
//!   of the request it answers: a stray or repeated line is an error, never an answer.
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
    /// The reply answers another request (or none): `got` is its `id`, if any.
    #[error("{}", id_message(*expected, got.as_deref()))]
    Id {
        expected: u64,
        got: Option<Box<Value>>,
        /// The reply without its id, for callers that explain an old protocol version.
        reply: Box<Map<String, Value>>,
    },
}

fn id_message(expected: u64, got: Option<&Value>) -> String {
    match got {
        None => format!("its reply has no `id`; it must echo the request's (`\"id\": {expected}`)"),
        Some(v) => format!(
            "its reply carries `\"id\": {}` but answers request {expected}: a stray or repeated line",
            clip(&v.to_string(), 40)
        ),
    }
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
    next_id: u64,
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
            next_id: 1,
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
        let id = self.next_id;
        self.next_id += 1;
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
        let got = reply.remove("id");
        if got.as_ref().and_then(Value::as_u64) != Some(id) {
            return Err(ChildError::Id {
                expected: id,
                got: got.map(Box::new),
                reply: Box::new(reply),
            });
        }
        Ok(reply)
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

    /// Kills the child and everything in its process group, and says how it ended when
    /// it ends within a moment; waits for the stderr drain to take what it wrote last.
    pub async fn kill(&mut self) -> Option<String> {
        self.kill_group();
        let status = tokio::time::timeout(Duration::from_secs(2), self.child.wait())
            .await
            .ok()
            .and_then(Result::ok);
        let _ = tokio::time::timeout(Duration::from_millis(200), &mut self.drain).await;
        status.map(|s| s.to_string())
    }

    /// Closes the child's stdin and gives it `grace` to exit on its own before its group
    /// is killed.
    pub async fn close(mut self, grace: Duration) {
        let _ = self.stdin.shutdown().await;
        let _ = tokio::time::timeout(grace, self.child.wait()).await;
        self.kill_group();
    }

    fn kill_group(&mut self) {
        #[cfg(unix)]
        if let Some(group) = self.group {
            // SAFETY: killpg only sends a signal, to the group the child leads (it was
            // started with process_group(0)); a group with no member left is ESRCH.
            unsafe {
                libc::killpg(group as libc::pid_t, libc::SIGKILL);
            }
        }
        let _ = self.child.start_kill();
    }
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

    #[tokio::test]
    async fn a_reply_must_echo_its_request_id() {
        // Answers with the id it was sent, then sends one stale line too many.
        let mut c = sh(
            r#"read l; echo '{"id": 1, "ok": true}'; echo '{"id": 1, "ok": true}'; read l; sleep 5"#,
            1024,
        );
        let r = c
            .exchange(obj(serde_json::json!({"op": "a"})))
            .await
            .unwrap();
        assert_eq!(r["ok"], true);
        assert!(!r.contains_key("id"));
        match c.exchange(obj(serde_json::json!({"op": "b"}))).await {
            Err(ChildError::Id {
                expected: 2, got, ..
            }) => assert_eq!(got.as_deref(), Some(&Value::from(1))),
            other => panic!("{other:?}"),
        }
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
            r#"read l; printf '\377' >&2; head -c 1000000 /dev/zero | tr '\0' e >&2; printf 'last words' >&2; echo '{"id": 1}'; sleep 5"#,
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
                "sleep 300 & echo $! > {}; read l; echo '{{\"id\": 1}}'; wait",
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
