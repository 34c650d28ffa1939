//! The HTTP transport of OpenAI-compatible endpoints, shared by chat models and the
//! embedder: one [`Endpoint`] per base URL and key (connection pool, rate limits),
//! retries, secret redaction, the pre-flight probe and the cached POST.
//!
//! Faults: 429, 408, 5xx, timeouts and dropped connections are retried with exponential
//! backoff and full jitter, honouring `Retry-After` (seconds or an HTTP date), up to
//! `max_retries` times. 401/403, and a 429 that says the quota is spent, are
//! [`ModelError::Fatal`] (the runner stops the whole run); other 4xx fail the episode
//! with the endpoint's message; a body that is not JSON fails the episode with its first
//! bytes.
//!
//! The API key lives in a [`Secret`] whose `Debug` hides it, is sent in a header marked
//! sensitive, and is scrubbed from every error text and from every reply (a server may
//! echo it); request bodies (which go to the cache) never contain it.

pub mod batch;
pub mod cache;

use cache::{Cache, Entry};
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use serde_json::Value;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

/// Why a model call failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ModelError {
    /// The whole run must stop (bad credentials): failing every episode would waste money.
    #[error("fatal model error: {0}")]
    Fatal(String),
    /// This episode fails; others go on.
    #[error("model request failed: {0}")]
    Request(String),
    /// Replay mode found no recorded answer.
    #[error("replay cache miss: {0}")]
    ReplayMiss(String),
    /// `run --batch`: the request (this key) goes into the next batch round; the episode
    /// waits for it and is not recorded yet.
    #[error("waiting for the batch round that sends request {0}")]
    Deferred(String),
    /// The endpoint refused the conversation as too long for the model: HTTP 400 with
    /// error code `context_length_exceeded`, error param `max_tokens`, or a body asking to
    /// "reduce the length of the messages." (what agentdojo 0.1.35 catches as a context-
    /// length error). This episode fails; others go on.
    #[error("model request failed, the conversation is too long for the model: {0}")]
    ContextLength(String),
    /// The endpoint answered HTTP 422 naming `max_new_tokens` (text-generation-inference's
    /// form of a too-long conversation). This episode fails; others go on.
    #[error("model request failed, no room left for max_new_tokens: {0}")]
    MaxNewTokens(String),
}

/// Why an endpoint could not be set up: nothing was sent.
#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    /// The base URL is not a URL.
    #[error("bad base URL `{url}`: {reason}")]
    BadUrl { url: String, reason: String },
    /// The base URL is a URL of another scheme.
    #[error("base URL `{0}` must be http or https")]
    Scheme(String),
    /// The HTTP client could not be built (TLS back end, system resources).
    #[error("cannot build the HTTP client: {0}")]
    Client(#[source] ClientError),
}

/// Why an HTTP client could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The TLS configuration (the platform's certificate roots, the crypto provider).
    #[error("TLS set-up: {0}")]
    Tls(#[from] rustls::Error),
    #[error("{0}")]
    Build(#[from] reqwest::Error),
}

/// The HTTP client every real endpoint uses (models, batch APIs, a classifier over
/// HTTP), set up by `configure` (time-outs, agent). TLS is rustls with the `ring`
/// provider and the platform's certificate roots, HTTP/2 offered where the server has
/// it: reqwest's own default provider (aws-lc) needs a C toolchain and CMake and was
/// the longest step of a clean build.
pub fn client(
    configure: impl FnOnce(reqwest::ClientBuilder) -> reqwest::ClientBuilder,
) -> Result<reqwest::Client, ClientError> {
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let roots = rustls_platform_verifier::Verifier::new(provider.clone())?;
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(std::sync::Arc::new(roots))
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(configure(reqwest::Client::builder().tls_backend_preconfigured(tls)).build()?)
}

/// A secret string (an API key). `Debug` never shows it.
#[derive(Clone)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: impl Into<String>) -> Self {
        Secret(s.into())
    }
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

/// Removes the key, and anything that looks like a masked key (`sk-ab***yz`), from text
/// that may be shown or recorded.
pub fn redact(text: &str, key: Option<&Secret>) -> String {
    let mut out = match key {
        Some(k) if k.0.len() >= 4 => text.replace(&k.0, "[redacted]"),
        _ => text.to_string(),
    };
    if out.contains('*') {
        out = out
            .split_inclusive(char::is_whitespace)
            .map(|w| {
                let core = w.trim();
                if core.len() >= 8 && core.contains("**") {
                    let tail = &w[w.trim_end().len()..];
                    format!("[redacted]{tail}")
                } else {
                    w.to_string()
                }
            })
            .collect();
    }
    out
}

/// Transport settings of one endpoint.
#[derive(Clone, Debug)]
pub struct EndpointConfig {
    /// A label for messages (`openai`, or the name in `configs/models.toml`).
    pub name: String,
    /// Up to and including `/v1`, e.g. `https://api.openai.com/v1`.
    pub base_url: String,
    pub api_key: Option<Secret>,
    /// The variable the key came from, named in messages about bad credentials.
    pub api_key_env: String,
    pub request_timeout: Duration,
    pub max_retries: u32,
    /// First backoff delay; doubles per retry up to `backoff_cap`, with full jitter.
    pub backoff_base: Duration,
    pub backoff_cap: Duration,
    /// Longest `Retry-After` honoured; a server asking for longer stops the run (a
    /// fatal error naming the wait), never a silent shorter wait.
    pub retry_after_cap: Duration,
    pub rpm: Option<u32>,
    pub tpm: Option<u32>,
}

impl EndpointConfig {
    pub fn new(base_url: impl Into<String>) -> Self {
        EndpointConfig {
            name: "openai".into(),
            base_url: base_url.into(),
            api_key: None,
            api_key_env: "OPENAI_API_KEY".into(),
            request_timeout: Duration::from_secs(120),
            max_retries: 6,
            backoff_base: Duration::from_millis(500),
            backoff_cap: Duration::from_secs(30),
            retry_after_cap: Duration::from_secs(300),
            rpm: None,
            tpm: None,
        }
    }
}

/// One endpoint: an HTTP client with its connection pool, and its rate limiters. Every
/// role and embedder that uses the same endpoint shares one, so limits hold per endpoint.
pub struct Endpoint {
    cfg: EndpointConfig,
    client: reqwest::Client,
    rpm: Option<DefaultDirectRateLimiter>,
    tpm: Option<DefaultDirectRateLimiter>,
    tpm_burst: u32,
    jitter_seq: AtomicU64,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint").field("cfg", &self.cfg).finish()
    }
}

/// A successful POST.
#[derive(Debug)]
pub struct Posted {
    pub body: Value,
    pub retries: u32,
    pub latency_ms: f64,
}

/// What one attempt produced.
enum Attempt {
    Done(Value),
    Retry {
        why: String,
        after: Option<Duration>,
    },
    Fail(ModelError),
}

/// The longest reply body read from an endpoint (a chat completion or a batch of
/// embeddings is far smaller); a longer one fails its call.
pub const MAX_REPLY_BYTES: usize = 64 << 20;

/// A wait before a retry at least this long is said on stderr.
const LOUD_WAIT: Duration = Duration::from_secs(10);

/// Parses `Retry-After`: delta seconds (possibly fractional) or an HTTP date.
pub fn parse_retry_after(v: &str, now: SystemTime) -> Option<Duration> {
    let v = v.trim();
    if let Ok(s) = v.parse::<f64>() {
        return (s.is_finite() && s >= 0.0).then(|| Duration::from_secs_f64(s));
    }
    let when = httpdate::parse_http_date(v).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

/// `s` cut to at most `n` bytes (on a character boundary), with `…` when cut.
pub(crate) fn truncate(s: &str, n: usize) -> String {
    if s.len() <= n {
        return s.to_string();
    }
    let mut end = n;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// The human message in an error body (`{"error": {"message": ...}}` and variants).
fn error_message(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    if let Ok(v) = serde_json::from_str::<Value>(&text) {
        let m = v
            .pointer("/error/message")
            .or_else(|| v.get("error").filter(|e| e.is_string()))
            .or_else(|| v.get("message"))
            .or_else(|| v.get("detail"));
        if let Some(m) = m {
            return truncate(m.as_str().map_or(&m.to_string(), |s| s), 500);
        }
    }
    let t = text.trim();
    if t.is_empty() {
        "(empty body)".into()
    } else {
        truncate(t, 500)
    }
}

/// Whether a 429 body says the account has no quota left (OpenAI's `insufficient_quota`),
/// as opposed to a rate limit that waiting lifts.
fn out_of_quota(body: &[u8]) -> bool {
    serde_json::from_slice::<Value>(body).is_ok_and(|v| {
        ["/error/code", "/error/type"]
            .iter()
            .any(|p| v.pointer(p).and_then(Value::as_str) == Some("insufficient_quota"))
    })
}

/// Whether an HTTP 400 body is a context-length refusal as agentdojo 0.1.35 recognises
/// one on an OpenAI client's `BadRequestError`: error code `context_length_exceeded`,
/// error param `max_tokens`, or the text "reduce the length of the messages." anywhere.
fn context_length(body: &[u8]) -> bool {
    let named = serde_json::from_slice::<Value>(body).is_ok_and(|v| {
        v.pointer("/error/code").and_then(Value::as_str) == Some("context_length_exceeded")
            || v.pointer("/error/param").and_then(Value::as_str) == Some("max_tokens")
    });
    named || String::from_utf8_lossy(body).contains("reduce the length of the messages.")
}

fn describe(e: &reqwest::Error) -> String {
    // Never print the URL's or headers' details beyond the kind of failure.
    let kind = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "connection failed"
    } else if e.is_body() || e.is_decode() {
        "connection dropped while reading the reply"
    } else if e.is_request() {
        "request failed"
    } else {
        "transport error"
    };
    let mut src = String::new();
    let mut cur: Option<&dyn std::error::Error> = std::error::Error::source(e);
    while let Some(s) = cur {
        src = s.to_string();
        cur = s.source();
    }
    if src.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}: {src}")
    }
}

impl Endpoint {
    pub fn new(cfg: EndpointConfig) -> Result<Self, EndpointError> {
        let url = reqwest::Url::parse(&cfg.base_url).map_err(|e| EndpointError::BadUrl {
            url: cfg.base_url.clone(),
            reason: e.to_string(),
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(EndpointError::Scheme(cfg.base_url.clone()));
        }
        let client = client(|b| {
            b.timeout(cfg.request_timeout)
                .connect_timeout(cfg.request_timeout.min(Duration::from_secs(30)))
                .pool_idle_timeout(Duration::from_secs(90))
                .user_agent(concat!("sieve-bench/", env!("CARGO_PKG_VERSION")))
        })
        .map_err(EndpointError::Client)?;
        let quota = |n: u32| Quota::per_minute(NonZeroU32::new(n).expect("checked non-zero"));
        let rpm = cfg
            .rpm
            .filter(|n| *n > 0)
            .map(|n| RateLimiter::direct(quota(n)));
        let tpm = cfg
            .tpm
            .filter(|n| *n > 0)
            .map(|n| RateLimiter::direct(quota(n)));
        Ok(Endpoint {
            tpm_burst: cfg.tpm.unwrap_or(0),
            cfg,
            client,
            rpm,
            tpm,
            jitter_seq: AtomicU64::new(0),
        })
    }

    pub fn config(&self) -> &EndpointConfig {
        &self.cfg
    }

    /// Whether a tokens-per-minute budget applies (only then are prompts counted first).
    pub fn limits_tokens(&self) -> bool {
        self.tpm.is_some()
    }

    fn url(&self, path: &str) -> String {
        format!("{}/{}", self.cfg.base_url.trim_end_matches('/'), path)
    }

    fn scrub(&self, s: &str) -> String {
        redact(s, self.cfg.api_key.as_ref())
    }

    /// A reply with the API key redacted wherever the server echoed it, so it never
    /// reaches a trace, a cache entry or a record.
    fn scrub_value(&self, v: Value) -> Value {
        let Some(k) = &self.cfg.api_key else { return v };
        let text = v.to_string();
        if k.expose().len() < 4 || !text.contains(k.expose()) {
            return v;
        }
        serde_json::from_str(&text.replace(k.expose(), "[redacted]")).unwrap_or(v)
    }

    /// Waits for the request and token budgets (`tokens` = tokens this call will use).
    async fn admit(&self, tokens: u64) {
        if let Some(l) = &self.rpm {
            l.until_ready().await;
        }
        self.charge_tokens(tokens).await;
    }

    /// Charges tokens to the per-minute token budget (waits when it is spent).
    pub async fn charge_tokens(&self, tokens: u64) {
        if let Some(l) = &self.tpm {
            let n = tokens.clamp(1, self.tpm_burst.max(1) as u64) as u32;
            if let Some(n) = NonZeroU32::new(n) {
                let _ = l.until_n_ready(n).await;
            }
        }
    }

    /// The wait before retry `attempt` of `request`: `retry_after` when the endpoint named
    /// one, else exponential backoff with jitter. The jitter is drawn from the request's
    /// bytes, the attempt and a per-endpoint sequence number (never the clock), so
    /// different requests, and the same request sent twice, retry at different moments.
    fn backoff(&self, request: &[u8], attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(ra) = retry_after {
            return ra.min(self.cfg.retry_after_cap);
        }
        let exp = self
            .cfg
            .backoff_base
            .saturating_mul(1u32.checked_shl(attempt.min(20)).unwrap_or(u32::MAX))
            .min(self.cfg.backoff_cap);
        let seq = self.jitter_seq.fetch_add(1, Ordering::Relaxed);
        let seed = crate::digest::fnv1a(request)
            ^ u64::from(attempt).wrapping_mul(0xBF58_476D_1CE4_E5B9)
            ^ seq.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        // "Full jitter" keeps half the delay as a floor so retries never hammer.
        exp.mul_f64(rng.random_range(0.5..=1.0))
    }

    async fn attempt(&self, url: &str, body: &[u8]) -> Attempt {
        let mut rb = self
            .client
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_vec());
        if let Some(k) = &self.cfg.api_key {
            match reqwest::header::HeaderValue::from_str(&format!("Bearer {}", k.expose())) {
                Ok(mut v) => {
                    v.set_sensitive(true);
                    rb = rb.header(reqwest::header::AUTHORIZATION, v);
                }
                Err(_) => {
                    return Attempt::Fail(ModelError::Fatal(format!(
                        "the API key in ${} contains characters not allowed in an HTTP header",
                        self.cfg.api_key_env
                    )));
                }
            }
        }
        let resp = match rb.send().await {
            Ok(r) => r,
            Err(e) => {
                return Attempt::Retry {
                    why: describe(&e),
                    after: None,
                };
            }
        };
        let status = resp.status();
        let retry_after = resp
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| parse_retry_after(v, SystemTime::now()));
        // The body is read up to a cap: an endpoint cannot make the harness hold more.
        let mut resp = resp;
        let mut bytes: Vec<u8> = Vec::new();
        loop {
            match resp.chunk().await {
                Ok(Some(chunk)) => {
                    if bytes.len() + chunk.len() > MAX_REPLY_BYTES {
                        return Attempt::Fail(ModelError::Request(format!(
                            "{} sent a reply longer than {} MiB (HTTP {}); not read further",
                            self.cfg.name,
                            MAX_REPLY_BYTES >> 20,
                            status.as_u16()
                        )));
                    }
                    bytes.extend_from_slice(&chunk);
                }
                Ok(None) => break,
                Err(e) => {
                    return Attempt::Retry {
                        why: describe(&e),
                        after: None,
                    };
                }
            }
        }
        let code = status.as_u16();
        if status.is_success() {
            return match serde_json::from_slice::<Value>(&bytes) {
                Ok(v) if v.is_object() => Attempt::Done(v),
                _ => Attempt::Fail(ModelError::Request(format!(
                    "malformed reply from {} (HTTP {code}), first bytes: {:?}",
                    self.cfg.name,
                    truncate(&String::from_utf8_lossy(&bytes), 200)
                ))),
            };
        }
        let msg = error_message(&bytes);
        if code == 429 && out_of_quota(&bytes) {
            // Retrying cannot help, and every other episode would fail the same way.
            return Attempt::Fail(ModelError::Fatal(format!(
                "{} reports the account is out of quota (HTTP 429: {msg})",
                self.cfg.name
            )));
        }
        match code {
            401 | 403 => Attempt::Fail(ModelError::Fatal(format!(
                "{} rejected the credentials (HTTP {code}: {msg}); check ${} and --base-url",
                self.cfg.name, self.cfg.api_key_env
            ))),
            400 if context_length(&bytes) => Attempt::Fail(ModelError::ContextLength(format!(
                "{} answered HTTP {code}: {msg}",
                self.cfg.name
            ))),
            422 if String::from_utf8_lossy(&bytes).contains("max_new_tokens") => Attempt::Fail(
                ModelError::MaxNewTokens(format!("{} answered HTTP {code}: {msg}", self.cfg.name)),
            ),
            408 | 409 | 425 | 429 | 500..=599 => Attempt::Retry {
                why: format!("HTTP {code}: {msg}"),
                after: retry_after,
            },
            _ => Attempt::Fail(ModelError::Request(format!(
                "{} answered HTTP {code}: {msg}",
                self.cfg.name
            ))),
        }
    }

    /// One attempt, no retries, for the pre-flight check of `who` (a role and model).
    /// Anything that would fail every episode is fatal and names the URL: nothing
    /// listening, a 404 (with a `/v1` hint when the base URL lacks it), a 401/403, any
    /// other 4xx. A 429 or 5xx is transient: `Ok(None)`, the run goes on and retries.
    pub async fn probe(
        &self,
        path: &str,
        body: &Value,
        who: &str,
    ) -> Result<Option<Value>, ModelError> {
        let url = self.url(path);
        let bytes = serde_json::to_vec(body).expect("request serialises");
        let fatal = |m: String| {
            ModelError::Fatal(self.scrub(&format!("pre-flight of the {who} at {url}: {m}")))
        };
        match self.attempt(&url, &bytes).await {
            Attempt::Done(v) => Ok(Some(v)),
            Attempt::Retry { why, .. } if why.starts_with("HTTP ") => Ok(None),
            Attempt::Retry { why, .. } => Err(fatal(format!("cannot reach the server ({why})"))),
            Attempt::Fail(ModelError::Request(m)) if m.contains("HTTP 404") => {
                let base = self.cfg.base_url.trim_end_matches('/');
                let hint = if base.ends_with("/v1") {
                    "check --base-url and the model name".to_string()
                } else {
                    format!("did you mean --base-url {base}/v1 ?")
                };
                Err(fatal(format!("{m}; {hint}")))
            }
            // Any other client error would meet every request; a malformed 200 may be
            // this request's alone, so the run goes on and episodes say what failed.
            Attempt::Fail(ModelError::Request(m)) if m.contains("answered HTTP 4") => Err(fatal(m)),
            // Too long already for the smallest request (or max_tokens above the model's):
            // every episode would fail the same way.
            Attempt::Fail(ModelError::ContextLength(m) | ModelError::MaxNewTokens(m)) => {
                Err(fatal(m))
            }
            Attempt::Fail(ModelError::Request(_)) => Ok(None),
            Attempt::Fail(ModelError::Fatal(m)) => Err(fatal(m)),
            Attempt::Fail(e) => Err(e),
        }
    }

    /// POSTs a JSON body to `path` (relative to the base URL) with retries. `tokens` is
    /// the estimate charged to the token budget before sending.
    pub async fn post(&self, path: &str, body: &Value, tokens: u64) -> Result<Posted, ModelError> {
        let url = self.url(path);
        let bytes = serde_json::to_vec(body).expect("request serialises");
        let mut retries = 0u32;
        loop {
            self.admit(if retries == 0 { tokens } else { 0 }).await;
            let started = Instant::now();
            match self.attempt(&url, &bytes).await {
                Attempt::Done(v) => {
                    return Ok(Posted {
                        body: self.scrub_value(v),
                        retries,
                        latency_ms: started.elapsed().as_secs_f64() * 1000.0,
                    });
                }
                Attempt::Fail(e) => {
                    return Err(match e {
                        ModelError::Fatal(m) => ModelError::Fatal(self.scrub(&m)),
                        ModelError::Request(m) => ModelError::Request(self.scrub(&m)),
                        ModelError::ReplayMiss(m) => ModelError::ReplayMiss(m),
                        ModelError::Deferred(m) => ModelError::Deferred(m),
                        ModelError::ContextLength(m) => ModelError::ContextLength(self.scrub(&m)),
                        ModelError::MaxNewTokens(m) => ModelError::MaxNewTokens(self.scrub(&m)),
                    });
                }
                Attempt::Retry { why, after } => {
                    // A wait beyond the cap is refused, out loud: the endpoint's quota is
                    // spent for longer than a run should sit idle.
                    if let Some(wait) = after
                        && wait > self.cfg.retry_after_cap
                    {
                        return Err(ModelError::Fatal(self.scrub(&format!(
                            "{} asks to retry after {:.0} s (Retry-After; {why}), longer than the {:.0} s this harness waits: its quota is spent for now. Rerun the same command later to resume",
                            self.cfg.name,
                            wait.as_secs_f64(),
                            self.cfg.retry_after_cap.as_secs_f64()
                        ))));
                    }
                    if retries >= self.cfg.max_retries {
                        return Err(ModelError::Request(self.scrub(&format!(
                            "{} failed after {} attempt(s), last: {why}",
                            self.cfg.name,
                            retries + 1
                        ))));
                    }
                    let wait = self.backoff(&bytes, retries, after);
                    if wait >= LOUD_WAIT {
                        eprintln!(
                            "note: {} asks to retry after {:.0} s ({why}); waiting",
                            self.cfg.name,
                            wait.as_secs_f64()
                        );
                    }
                    tokio::time::sleep(wait).await;
                    retries += 1;
                }
            }
        }
    }

    /// POSTs through `cache`: a recorded reply answers without a request; in replay mode
    /// a request never recorded is [`ModelError::ReplayMiss`] (`miss` describes it); a
    /// fresh reply is recorded before anyone parses it, and when another caller recorded
    /// the same request first, its reply is the one returned, so a run and its replay
    /// see the same reply. `estimate` (tokens charged to the budget) is asked only when
    /// a request is sent.
    pub async fn cached_post(
        &self,
        cache: Option<&Cache>,
        path: &str,
        body: &Value,
        estimate: impl FnOnce() -> u64,
        miss: impl FnOnce(&str, &Cache) -> String,
    ) -> Result<Posted, ModelError> {
        let Some(c) = cache else {
            return self.post(path, body, estimate()).await;
        };
        let key = cache::key(path, body);
        if let Some(e) = c.get(&key) {
            return Ok(Posted {
                body: e.response,
                retries: 0,
                latency_ms: e.latency_ms,
            });
        }
        match c.miss(&key, path, body) {
            cache::Miss::Send => {}
            cache::Miss::Replay => return Err(ModelError::ReplayMiss(miss(&key, c))),
            cache::Miss::Deferred => return Err(ModelError::Deferred(key)),
            cache::Miss::Refused(m) => {
                return Err(ModelError::Request(format!(
                    "the batch provider refused request {key}: {m}"
                )));
            }
        }
        let posted = self.post(path, body, estimate()).await?;
        let entry = Entry {
            key: key.clone(),
            path: path.into(),
            request: body.clone(),
            response: posted.body,
            latency_ms: posted.latency_ms,
        };
        // A reply the cache cannot hold (a full disk) would be missing from the replay:
        // the run stops here, and this episode runs again on resume.
        let body = match c.put(&entry) {
            Ok(recorded) => recorded.response,
            Err(e) => {
                return Err(ModelError::Fatal(format!(
                    "cannot record a reply in the cache {} ({e}); a replay of this run would miss it. Free space (or fix the folder) and rerun the same command",
                    c.dir().display()
                )));
            }
        };
        Ok(Posted { body, ..posted })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_seconds_and_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(parse_retry_after("3", now), Some(Duration::from_secs(3)));
        assert_eq!(
            parse_retry_after("0.25", now),
            Some(Duration::from_millis(250))
        );
        let later = httpdate::fmt_http_date(now + Duration::from_secs(7));
        assert_eq!(parse_retry_after(&later, now), Some(Duration::from_secs(7)));
        let past = httpdate::fmt_http_date(now - Duration::from_secs(7));
        assert_eq!(parse_retry_after(&past, now), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-1", now), None);
    }

    #[test]
    fn context_length_refusals_are_recognised_as_agentdojo_does() {
        for body in [
            r#"{"error": {"message": "too long", "code": "context_length_exceeded"}}"#,
            r#"{"error": {"message": "max_tokens is too large", "param": "max_tokens"}}"#,
            r#"{"error": "This model's maximum context length is 8192 tokens. Please reduce the length of the messages."}"#,
        ] {
            assert!(context_length(body.as_bytes()), "{body}");
        }
        for body in [
            r#"{"error": {"message": "bad tool schema", "code": "invalid_request"}}"#,
            r#"{"error": {"message": "temperature too high", "param": "temperature"}}"#,
            "not json at all",
        ] {
            assert!(!context_length(body.as_bytes()), "{body}");
        }
    }

    #[test]
    fn redaction_removes_key_and_masked_keys() {
        let k = Secret::new("sk-test-abcdef123456");
        let s = redact(
            "Incorrect API key provided: sk-test-***********3456. Key sk-test-abcdef123456 bad",
            Some(&k),
        );
        assert!(!s.contains("abcdef"), "{s}");
        assert!(!s.contains("3456"), "{s}");
        assert_eq!(format!("{k:?}"), "Secret([redacted])");
    }

    /// Nothing listens on the endpoint: the cached POST must answer from the cache or,
    /// replaying, refuse, without ever sending a request.
    #[tokio::test]
    async fn cached_post_answers_from_the_cache_and_misses_without_sending() {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = EndpointConfig::new("http://127.0.0.1:9/v1");
        cfg.max_retries = 0;
        let ep = Endpoint::new(cfg).unwrap();
        let body = serde_json::json!({"model": "m", "input": ["x"]});
        let writer = Cache::open(dir.path(), false).unwrap();
        writer
            .put(&Entry {
                key: cache::key("p", &body),
                path: "p".into(),
                request: body.clone(),
                response: serde_json::json!({"recorded": true}),
                latency_ms: 7.0,
            })
            .unwrap();
        let replay = Cache::open(dir.path(), true).unwrap();
        let never = || -> u64 { panic!("no request is sent, so nothing is estimated") };
        let hit = ep
            .cached_post(Some(&replay), "p", &body, never, |_, _| unreachable!())
            .await
            .unwrap();
        assert_eq!(hit.body["recorded"], true);
        assert_eq!((hit.retries, hit.latency_ms), (0, 7.0));
        let other = serde_json::json!({"model": "m", "input": ["y"]});
        let miss = ep
            .cached_post(Some(&replay), "p", &other, never, |k, _| {
                format!("missed {k}")
            })
            .await
            .unwrap_err();
        assert!(
            matches!(&miss, ModelError::ReplayMiss(m) if m.starts_with("missed ")),
            "{miss:?}"
        );
    }
}
