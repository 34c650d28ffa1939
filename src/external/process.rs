//! One provider process: spawn, one request line out, one reply line back, with a
//! deadline. Any failure that leaves the stream in doubt (crash, hang, malformed reply)
//! marks the process broken; the pool then discards it and starts a fresh one.

use super::ExternalError;
use super::protocol::{Hello, PROTOCOL, Request};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// How to start a provider.
#[derive(Clone, Debug)]
pub struct Launch {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub dir: PathBuf,
    /// The longest a single reply may take before the process counts as hung.
    pub timeout: Duration,
}

/// Lines of the provider's stderr kept to explain a crash.
const STDERR_TAIL: usize = 20;

pub struct ProviderProcess {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
    timeout: Duration,
    broken: bool,
    pub hello: Hello,
}

impl ProviderProcess {
    /// Starts the process and checks its protocol version.
    pub async fn spawn(launch: &Launch) -> Result<Self, ExternalError> {
        let mut child = Command::new(&launch.program)
            .args(&launch.args)
            .current_dir(&launch.dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| ExternalError::Spawn {
                program: launch.program.display().to_string(),
                message: e.to_string(),
            })?;
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let stderr = child.stderr.take().expect("piped stderr");
        let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
        let tail = stderr_tail.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let mut t = tail.lock().expect("stderr tail lock");
                if t.len() == STDERR_TAIL {
                    t.pop_front();
                }
                t.push_back(line);
            }
        });
        let mut p = ProviderProcess {
            child,
            stdin,
            stdout,
            stderr_tail,
            timeout: launch.timeout,
            broken: false,
            hello: Hello {
                protocol: 0,
                provider: String::new(),
                package: String::new(),
                package_version: String::new(),
            },
        };
        let hello: Hello = p.request(&Request::Hello { protocol: PROTOCOL }).await?;
        if hello.protocol != PROTOCOL {
            return Err(ExternalError::Version {
                theirs: hello.protocol,
                ours: PROTOCOL,
            });
        }
        p.hello = hello;
        Ok(p)
    }

    /// Whether the process can take another request.
    pub fn is_broken(&self) -> bool {
        self.broken
    }

    fn stderr_tail(&self) -> String {
        let t = self.stderr_tail.lock().expect("stderr tail lock");
        if t.is_empty() {
            String::new()
        } else {
            format!(
                "; its last stderr lines:\n    {}",
                t.iter().cloned().collect::<Vec<_>>().join("\n    ")
            )
        }
    }

    async fn fail(&mut self, what: String) -> ExternalError {
        self.broken = true;
        let _ = self.child.start_kill();
        let status = match tokio::time::timeout(Duration::from_secs(2), self.child.wait()).await {
            Ok(Ok(s)) => format!(" ({s})"),
            _ => String::new(),
        };
        // Give the stderr reader a moment to drain what the process said last.
        tokio::time::sleep(Duration::from_millis(20)).await;
        ExternalError::Broken(format!("{what}{status}{}", self.stderr_tail()))
    }

    /// Sends one request and parses the reply's payload as `T`.
    pub async fn request<T: DeserializeOwned>(
        &mut self,
        req: &Request<'_>,
    ) -> Result<T, ExternalError> {
        if self.broken {
            return Err(ExternalError::Broken(
                "the provider process was already discarded".into(),
            ));
        }
        let mut line = serde_json::to_string(req).expect("requests serialise");
        line.push('\n');
        let op = req.op();
        if let Err(e) = self.stdin.write_all(line.as_bytes()).await {
            return Err(self
                .fail(format!("cannot write `{op}` to the provider: {e}"))
                .await);
        }
        if let Err(e) = self.stdin.flush().await {
            return Err(self
                .fail(format!("cannot write `{op}` to the provider: {e}"))
                .await);
        }
        let mut reply = String::new();
        match tokio::time::timeout(self.timeout, self.stdout.read_line(&mut reply)).await {
            Err(_) => {
                return Err(self
                    .fail(format!(
                        "the provider did not answer `{op}` within {:?} (hung)",
                        self.timeout
                    ))
                    .await);
            }
            Ok(Err(e)) => {
                return Err(self
                    .fail(format!("cannot read the reply to `{op}`: {e}"))
                    .await);
            }
            Ok(Ok(0)) => {
                return Err(self
                    .fail(format!(
                        "the provider exited before answering `{op}` (crashed)"
                    ))
                    .await);
            }
            Ok(Ok(_)) => {}
        }
        let value: Value = match serde_json::from_str(reply.trim_end()) {
            Ok(v) => v,
            Err(e) => {
                let shown: String = reply.trim_end().chars().take(200).collect();
                return Err(self
                    .fail(format!(
                        "malformed reply to `{op}` (not JSON: {e}): `{shown}`"
                    ))
                    .await);
            }
        };
        match value.get("ok").and_then(Value::as_bool) {
            Some(true) => {}
            Some(false) => {
                let message = value
                    .get("error")
                    .and_then(Value::as_str)
                    .unwrap_or("(no error message)")
                    .to_string();
                return Err(ExternalError::Refused {
                    op: op.to_string(),
                    message,
                });
            }
            None => {
                return Err(self
                    .fail(format!("malformed reply to `{op}`: no boolean `ok` field"))
                    .await);
            }
        }
        match serde_json::from_value(value) {
            Ok(t) => Ok(t),
            Err(e) => Err(self.fail(format!("malformed reply to `{op}`: {e}")).await),
        }
    }
}
