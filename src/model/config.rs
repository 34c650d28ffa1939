//! Turning `--model` / `--planner-model` / `--judge-model` / `--embedder` specs into
//! backends: `sim:…`, `openai:<model>`, or a named endpoint from `configs/models.toml`.
//!
//! Settings resolve in this order: a flag given on the command line, then the named
//! endpoint's entry, then the built-in default. Roles that use the same endpoint (same
//! base URL and key variable) share one [`Endpoint`]: one connection pool and one set of
//! `--rpm` / `--tpm` limiters.
//!
//! `configs/models.toml`:
//! ```toml
//! [endpoints.local-qwen]
//! base_url = "http://localhost:8000/v1"
//! model = "Qwen/Qwen2.5-7B-Instruct"
//! api_key_env = "VLLM_API_KEY"      # optional; a local server may need no key
//! rpm = 600                          # optional limits
//! tpm = 2000000
//! tool_format = "native"             # or "prompted"
//! max_tokens = 2048
//! price_per_mtok = [0.0, 0.0]       # optional: $ per million prompt, completion tokens
//! extra_body = { chat_template_kwargs = { enable_thinking = false } }
//! ```

use super::openai::{ChatOptions, OpenAiModel, ToolFormat};
use super::tokens::TokenCounter;
use super::{ChatModel, sim};
use crate::embed::Embedder;
use crate::http::cache::Cache;
use crate::http::{Endpoint, EndpointConfig, Secret};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The default endpoint when neither `--base-url` nor `OPENAI_BASE_URL` is set.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// The file of named endpoints inside the configs folder.
pub const MODELS_TOML: &str = "models.toml";

/// Model-related options of a run (the `Model endpoints` flags of `run` and `ablate`);
/// `None` means "not given on the command line", so a named endpoint's entry can fill it.
#[derive(clap::Args, Clone, Debug, Default, PartialEq)]
#[command(next_help_heading = "Model endpoints")]
pub struct ModelOptions {
    /// OpenAI-compatible base URL up to `/v1` for `openai:<model>` [default: $OPENAI_BASE_URL, else https://api.openai.com/v1].
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Environment variable that holds the API key (the key itself is never a flag) [default: OPENAI_API_KEY].
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
    /// Completion token cap sent with every request [default: 2048].
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u32>,
    /// Sampling temperature [default: 0].
    #[arg(long, value_name = "T", value_parser = parse_temperature)]
    pub temperature: Option<f64>,
    /// Fixed sampling seed sent with every request [default: derived from each episode's seed].
    #[arg(long, value_name = "N")]
    pub model_seed: Option<u64>,
    /// Seconds before one HTTP attempt is abandoned (and retried) [default: 120].
    #[arg(long, value_name = "SECS", value_parser = parse_seconds)]
    pub request_timeout: Option<f64>,
    /// Retries of 429, 5xx, timeouts and dropped connections per call [default: 6].
    #[arg(long, value_name = "N")]
    pub max_retries: Option<u32>,
    /// Requests per minute per endpoint, shared by every role on it (at least 1; leave it
    /// out for no limit).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub rpm: Option<u32>,
    /// Tokens per minute per endpoint, shared by every role on it (at least 1; leave it
    /// out for no limit).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub tpm: Option<u32>,
    /// JSON object merged into every chat request body, e.g. '{"chat_template_kwargs":{"enable_thinking":false}}'.
    #[arg(long, value_name = "JSON", value_parser = parse_extra_body)]
    pub extra_body: Option<Map<String, Value>>,
    /// How tools reach the model: `native` tool calling, or `prompted` (described in the system prompt, calls parsed from a JSON block) [default: native].
    #[arg(long, value_name = "FORMAT", value_parser = |s: &str| s.parse::<ToolFormat>())]
    pub tool_format: Option<ToolFormat>,
    /// Embedder for defenses that compare meanings: `lexical`, `openai:<model>`, a named endpoint, or `minilm[:DIR]` (build feature `minilm`) [default: lexical].
    #[arg(long, value_name = "SPEC")]
    pub embedder: Option<String>,
    /// Record every real request and reply in DIR (and answer repeats from it).
    #[arg(long, value_name = "DIR")]
    pub cache: Option<PathBuf>,
    /// Answer only from --cache; a request not recorded fails its episode.
    #[arg(long)]
    pub replay: bool,
    /// Dollars per million prompt and completion tokens, adds a $/ep column: `IN,OUT`.
    #[arg(long, value_name = "IN,OUT", value_parser = parse_price)]
    pub price_per_mtok: Option<(f64, f64)>,
    /// First retry delay (tests shorten it); default 500 ms.
    #[arg(skip)]
    pub backoff_base: Option<Duration>,
    /// `run --batch`: the cache gathers its chat misses here instead of sending them.
    #[arg(skip)]
    pub batch: Option<Arc<crate::http::cache::Gather>>,
}

/// A model flag's value that its parser refuses (clap prints it after the flag's name).
#[derive(Debug, thiserror::Error)]
pub enum ModelFlagError {
    #[error("`{0}` is not a temperature (a finite number >= 0)")]
    Temperature(String),
    #[error("`{0}` is not a number of seconds (finite, > 0)")]
    Seconds(String),
    /// `--price-per-mtok` without the comma between its two prices.
    #[error("--price-per-mtok must look like IN,OUT (e.g. 0.15,0.60), got `{0}`")]
    PriceForm(String),
    /// One of the two prices (as written between the commas).
    #[error("--price-per-mtok: `{0}` is not a price")]
    Price(String),
    #[error("--extra-body must be a JSON object")]
    ExtraBodyNotObject,
    #[error("--extra-body is not valid JSON: {0}")]
    ExtraBodyJson(serde_json::Error),
}

fn parse_temperature(s: &str) -> Result<f64, ModelFlagError> {
    s.trim()
        .parse::<f64>()
        .ok()
        .filter(|t| t.is_finite() && *t >= 0.0)
        .ok_or_else(|| ModelFlagError::Temperature(s.to_string()))
}

fn parse_seconds(s: &str) -> Result<f64, ModelFlagError> {
    s.trim()
        .parse::<f64>()
        .ok()
        .filter(|t| t.is_finite() && *t > 0.0 && *t < 1e9)
        .ok_or_else(|| ModelFlagError::Seconds(s.to_string()))
}

/// The longest request timeout accepted: a day. Longer is a typo, and beyond about
/// 1.8e19 seconds a `Duration` cannot hold it at all.
pub const MAX_REQUEST_TIMEOUT_SECS: f64 = 86_400.0;

/// A request timeout in seconds, checked: positive, finite, at most a day.
fn request_timeout(what: &str, t: f64) -> Result<Duration, ModelConfigError> {
    if t.is_finite() && t > 0.0 && t <= MAX_REQUEST_TIMEOUT_SECS {
        Ok(Duration::from_secs_f64(t))
    } else {
        Err(ModelConfigError::Setting(format!(
            "{what} must be a number of seconds above 0 and at most {MAX_REQUEST_TIMEOUT_SECS}, got {t}"
        )))
    }
}

/// Parses `--price-per-mtok IN,OUT` (dollars per million prompt / completion tokens).
pub fn parse_price(s: &str) -> Result<(f64, f64), ModelFlagError> {
    let (i, o) = s
        .split_once(',')
        .ok_or_else(|| ModelFlagError::PriceForm(s.to_string()))?;
    let p = |x: &str| {
        x.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| ModelFlagError::Price(x.to_string()))
    };
    Ok((p(i)?, p(o)?))
}

/// Parses `--extra-body JSON` (a JSON object merged into every chat request).
pub fn parse_extra_body(
    s: &str,
) -> Result<serde_json::Map<String, serde_json::Value>, ModelFlagError> {
    match serde_json::from_str::<serde_json::Value>(s) {
        Ok(serde_json::Value::Object(m)) => Ok(m),
        Ok(_) => Err(ModelFlagError::ExtraBodyNotObject),
        Err(e) => Err(ModelFlagError::ExtraBodyJson(e)),
    }
}

/// One named endpoint in `configs/models.toml`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NamedEndpoint {
    pub base_url: String,
    pub model: String,
    #[serde(default)]
    pub api_key_env: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub rpm: Option<u32>,
    #[serde(default)]
    pub tpm: Option<u32>,
    #[serde(default)]
    pub max_tokens: Option<u32>,
    #[serde(default)]
    pub temperature: Option<f64>,
    #[serde(default)]
    pub request_timeout: Option<f64>,
    #[serde(default)]
    pub max_retries: Option<u32>,
    #[serde(default)]
    pub tool_format: Option<ToolFormat>,
    #[serde(default)]
    pub extra_body: Option<Map<String, Value>>,
    /// Dollars per million prompt and completion tokens, `[in, out]`: prices this
    /// endpoint's roles in `--dry-run` estimates and `--budget-usd` (`--price-per-mtok`
    /// overrides it).
    #[serde(default)]
    pub price_per_mtok: Option<[f64; 2]>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelsFile {
    #[serde(default)]
    endpoints: BTreeMap<String, NamedEndpoint>,
}

/// Reads `configs/models.toml`; a missing file means no named endpoints.
pub fn load_named(configs: &Path) -> Result<BTreeMap<String, NamedEndpoint>, ModelConfigError> {
    let path = configs.join(MODELS_TOML);
    let text = match crate::bounded::read_to_string(&path, crate::bounded::MAX_INPUT_BYTES) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(source) => return Err(ModelConfigError::Read { path, source }),
    };
    let f: ModelsFile = match toml::from_str(&text) {
        Ok(f) => f,
        Err(source) => return Err(ModelConfigError::Toml { path, source }),
    };
    let invalid = |problem: String| ModelConfigError::Invalid {
        path: path.clone(),
        problem,
    };
    for (name, ep) in &f.endpoints {
        if name.contains(':') {
            return Err(invalid(format!(
                "endpoint name `{name}` must not contain `:`"
            )));
        }
        if let Some(p) = ep.price_per_mtok
            && !p.iter().all(|x| x.is_finite() && *x >= 0.0)
        {
            return Err(invalid(format!(
                "endpoint `{name}`: price_per_mtok must be two prices >= 0, got {p:?}"
            )));
        }
        if ep.model.is_empty() {
            return Err(invalid(format!("endpoint `{name}` has no model")));
        }
    }
    Ok(f.endpoints)
}

/// Why a model, an embedder or `configs/models.toml` could not be set up: nothing was
/// run. `commands` maps each kind to its exit code.
#[derive(Debug, thiserror::Error)]
pub enum ModelConfigError {
    /// `configs/models.toml` exists but could not be read (an I/O failure).
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// `configs/models.toml` is not valid TOML of the endpoints' shape (the message
    /// names the line and the field).
    #[error("{}: {source}", path.display())]
    Toml {
        path: PathBuf,
        #[source]
        source: toml::de::Error,
    },
    /// An endpoint entry of `configs/models.toml` is malformed (the problem names the
    /// endpoint and the field).
    #[error("{}: {problem}", path.display())]
    Invalid { path: PathBuf, problem: String },
    /// A flag, or a setting of a named endpoint, out of its range or missing its partner.
    #[error("{0}")]
    Setting(String),
    /// The default endpoint needs a key and the variable naming it is empty.
    #[error("no API key: set ${var} (or name another variable with --api-key-env)")]
    NoApiKey { var: String },
    /// A model or embedder spec that names nothing known.
    #[error("{0}")]
    Unknown(String),
    /// A `sim:` spec that does not parse.
    #[error(transparent)]
    Sim(#[from] sim::SimSpecError),
    /// The endpoint's base URL or HTTP client.
    #[error(transparent)]
    Endpoint(#[from] crate::http::EndpointError),
    /// The `--cache` directory.
    #[error(transparent)]
    Cache(#[from] crate::http::cache::CacheError),
    /// The local MiniLM embedder is not built in.
    #[error("{0}")]
    Embedder(String),
    /// The local MiniLM embedder's files could not be loaded.
    #[cfg(feature = "minilm")]
    #[error(transparent)]
    MiniLm(#[from] crate::embed::minilm::MiniLmError),
}

/// How environment variables are read.
type EnvReader = Box<dyn Fn(&str) -> Option<String> + Send + Sync>;
/// A named endpoint entry with its name.
type Named<'a> = Option<(&'a str, &'a NamedEndpoint)>;

/// Builds backends from specs, sharing endpoints between roles.
pub struct ModelFactory {
    opts: ModelOptions,
    named: BTreeMap<String, NamedEndpoint>,
    tokens: Arc<TokenCounter>,
    cache: Option<Arc<Cache>>,
    endpoints: Mutex<HashMap<(String, String), Arc<Endpoint>>>,
    /// How `OPENAI_BASE_URL` / key variables are read (tests substitute a map).
    env: EnvReader,
    /// Nothing will be sent (`--dry-run`): a missing API key is no error.
    sends_nothing: bool,
}

impl std::fmt::Debug for ModelFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelFactory")
            .field("opts", &self.opts)
            .field("named", &self.named)
            .finish()
    }
}

fn non_empty(v: Option<String>) -> Option<String> {
    v.filter(|s| !s.trim().is_empty())
}

impl ModelFactory {
    pub fn new(
        opts: ModelOptions,
        named: BTreeMap<String, NamedEndpoint>,
        tokens: Arc<TokenCounter>,
    ) -> Result<Self, ModelConfigError> {
        let setting = |m: String| Err(ModelConfigError::Setting(m));
        if opts.replay && opts.cache.is_none() {
            return setting("--replay needs --cache DIR (the recorded transcripts)".into());
        }
        if let Some(t) = opts.request_timeout {
            request_timeout("--request-timeout", t)?;
        }
        if let Some(t) = opts.temperature
            && !(t.is_finite() && t >= 0.0)
        {
            return setting(format!("--temperature must be >= 0, got {t}"));
        }
        if opts.max_tokens == Some(0) {
            return setting("--max-tokens must be at least 1".into());
        }
        let cache = match &opts.cache {
            Some(dir) => {
                let c = Cache::open(dir, opts.replay)?;
                Some(Arc::new(match &opts.batch {
                    Some(g) => c.gathering(g.clone()),
                    None => c,
                }))
            }
            None => None,
        };
        Ok(ModelFactory {
            opts,
            named,
            tokens,
            cache,
            endpoints: Mutex::new(HashMap::new()),
            env: Box::new(|k| std::env::var(k).ok()),
            sends_nothing: false,
        })
    }

    /// A factory whose models will send nothing (`--dry-run` plays the matrix with
    /// scripted stand-ins): the endpoints are described, so no API key is needed.
    pub fn sending_nothing(mut self) -> Self {
        self.sends_nothing = true;
        self
    }

    /// Replaces how environment variables are read.
    pub fn with_env(
        mut self,
        env: impl Fn(&str) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        self.env = Box::new(env);
        self
    }

    pub fn tokens(&self) -> Arc<TokenCounter> {
        self.tokens.clone()
    }

    pub fn options(&self) -> &ModelOptions {
        &self.opts
    }

    fn endpoint(&self, named: Named<'_>) -> Result<Arc<Endpoint>, ModelConfigError> {
        let o = &self.opts;
        let (label, base_url, key_env) = match named {
            Some((name, ep)) => (
                name.to_string(),
                ep.base_url.clone(),
                o.api_key_env
                    .clone()
                    .or_else(|| ep.api_key_env.clone())
                    .unwrap_or_else(|| "OPENAI_API_KEY".into()),
            ),
            None => (
                "openai endpoint".to_string(),
                non_empty(o.base_url.clone())
                    .or_else(|| non_empty((self.env)("OPENAI_BASE_URL")))
                    .unwrap_or_else(|| DEFAULT_BASE_URL.into()),
                o.api_key_env
                    .clone()
                    .unwrap_or_else(|| "OPENAI_API_KEY".into()),
            ),
        };
        let map_key = (base_url.trim_end_matches('/').to_string(), key_env.clone());
        let mut map = self.endpoints.lock().expect("endpoint map poisoned");
        if let Some(e) = map.get(&map_key) {
            return Ok(e.clone());
        }
        let key = non_empty((self.env)(&key_env)).map(Secret::new);
        if key.is_none()
            && !o.replay
            && !self.sends_nothing
            && base_url.trim_end_matches('/') == DEFAULT_BASE_URL
        {
            return Err(ModelConfigError::NoApiKey { var: key_env });
        }
        let ep = named.map(|(_, e)| e);
        let mut cfg = EndpointConfig::new(base_url);
        cfg.name = label;
        cfg.api_key = key;
        cfg.api_key_env = key_env;
        if let Some(t) = o.request_timeout {
            cfg.request_timeout = request_timeout("--request-timeout", t)?;
        } else if let Some(t) = ep.and_then(|e| e.request_timeout) {
            cfg.request_timeout = request_timeout(
                &format!(
                    "{MODELS_TOML}: endpoint `{label}`: request_timeout",
                    label = cfg.name
                ),
                t,
            )?;
        }
        if let Some(r) = o.max_retries.or(ep.and_then(|e| e.max_retries)) {
            cfg.max_retries = r;
        }
        if let Some(b) = o.backoff_base {
            cfg.backoff_base = b;
        }
        cfg.rpm = o.rpm.or(ep.and_then(|e| e.rpm));
        cfg.tpm = o.tpm.or(ep.and_then(|e| e.tpm));
        for (what, v) in [("rpm", cfg.rpm), ("tpm", cfg.tpm)] {
            if v == Some(0) {
                return Err(ModelConfigError::Setting(format!(
                    "{MODELS_TOML}: endpoint `{}`: {what} = 0 would mean no limit; leave it out for no limit, or give at least 1",
                    cfg.name
                )));
            }
        }
        let e = Arc::new(Endpoint::new(cfg)?);
        map.insert(map_key, e.clone());
        Ok(e)
    }

    /// What a non-sim spec names: the endpoint entry (if named), the model id and the
    /// report name.
    fn resolve<'a>(&'a self, spec: &str) -> Result<Option<(Named<'a>, String)>, ModelConfigError> {
        if let Some(m) = spec.strip_prefix("openai:") {
            if m.trim().is_empty() {
                return Err(ModelConfigError::Unknown(
                    "`openai:` needs a model id, e.g. openai:gpt-4o-mini".into(),
                ));
            }
            return Ok(Some((None, m.to_string())));
        }
        if let Some((name, ep)) = self.named.get_key_value(spec) {
            return Ok(Some((Some((name.as_str(), ep)), ep.model.clone())));
        }
        Ok(None)
    }

    fn known(&self) -> String {
        let mut s = String::from(
            "sim[:oracle|obedient|p=<x>][,substitute][,judge_auc=<x>][,planner_recall=<x>][,planner_extra=<x>], openai:<model>",
        );
        for n in self.named.keys() {
            s.push_str(", ");
            s.push_str(n);
        }
        s
    }

    /// A chat model for `spec`.
    pub fn chat(&self, spec: &str) -> Result<Arc<dyn ChatModel>, ModelConfigError> {
        self.chat_with(spec, Map::new())
    }

    /// A chat model for `spec` whose requests carry `role_body` too (a role's own
    /// request fields, e.g. the answer judge's `response_format`): merged over the named
    /// endpoint's `extra_body`, under `--extra-body`.
    pub fn chat_with(
        &self,
        spec: &str,
        role_body: Map<String, Value>,
    ) -> Result<Arc<dyn ChatModel>, ModelConfigError> {
        let (backend, rest) = spec.split_once(':').unwrap_or((spec, ""));
        if backend == "sim" {
            return Ok(Arc::new(sim::SimModel::new(
                sim::SimProfile::parse(rest)?,
                self.tokens.clone(),
            )));
        }
        let Some((named, model)) = self.resolve(spec)? else {
            let mut candidates: Vec<&str> = vec!["sim", "sim:oracle", "sim:obedient", "openai"];
            candidates.extend(self.named.keys().map(String::as_str));
            return Err(ModelConfigError::Unknown(format!(
                "unknown model `{spec}`{}; available: {} (named endpoints come from configs/{MODELS_TOML})",
                crate::suggest::did_you_mean(spec, candidates),
                self.known()
            )));
        };
        let o = &self.opts;
        let ep = named.map(|(_, e)| e);
        let endpoint = self.endpoint(named)?;
        let mut opts = ChatOptions::new(model.clone());
        if let Some(v) = o.max_tokens.or(ep.and_then(|e| e.max_tokens)) {
            opts.max_tokens = v;
        }
        if let Some(v) = o.temperature.or(ep.and_then(|e| e.temperature)) {
            opts.temperature = v;
        }
        opts.seed = o.model_seed;
        opts.tool_format = o
            .tool_format
            .or(ep.and_then(|e| e.tool_format))
            .unwrap_or_default();
        let mut extra = ep.and_then(|e| e.extra_body.clone()).unwrap_or_default();
        extra.extend(role_body);
        if let Some(x) = &o.extra_body {
            extra.extend(x.clone());
        }
        opts.extra_body = extra;
        let mut name = match named {
            Some((n, _)) => format!("openai:{model}@{n}"),
            None => format!("openai:{model}"),
        };
        if opts.tool_format == ToolFormat::Prompted {
            name.push_str("+prompted");
        }
        Ok(Arc::new(OpenAiModel::new(
            name,
            endpoint,
            opts,
            self.tokens.clone(),
            self.cache.clone(),
        )))
    }

    /// The embedder for `--embedder` (`lexical` when not given).
    pub fn embedder(&self, spec: Option<&str>) -> Result<Arc<dyn Embedder>, ModelConfigError> {
        let spec = spec.unwrap_or("lexical");
        if spec == "lexical" {
            return Ok(Arc::new(crate::embed::Lexical));
        }
        if spec == "minilm" || spec.starts_with("minilm:") {
            #[cfg(feature = "minilm")]
            {
                let dir = spec
                    .strip_prefix("minilm:")
                    .map(std::path::PathBuf::from)
                    .unwrap_or_else(crate::embed::minilm::default_dir);
                return Ok(Arc::new(crate::embed::minilm::MiniLm::load(&dir)?));
            }
            #[cfg(not(feature = "minilm"))]
            return Err(ModelConfigError::Embedder(
                "the minilm embedder is not part of this build: rebuild with `--features minilm` \
                 (see docs/models.md), or use lexical or openai:<model>"
                    .into(),
            ));
        }
        let Some((named, model)) = self.resolve(spec)? else {
            return Err(ModelConfigError::Unknown(format!(
                "unknown embedder `{spec}`; available: lexical, openai:<model>{}",
                self.named
                    .keys()
                    .map(|n| format!(", {n}"))
                    .collect::<String>()
            )));
        };
        let endpoint = self.endpoint(named)?;
        let name = match named {
            Some((n, _)) => format!("openai:{model}@{n}"),
            None => format!("openai:{model}"),
        };
        Ok(Arc::new(crate::embed::openai::OpenAiEmbedder::new(
            name,
            model,
            endpoint,
            self.cache.clone(),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn factory(opts: ModelOptions, named: &str) -> Result<ModelFactory, ModelConfigError> {
        let named = if named.is_empty() {
            BTreeMap::new()
        } else {
            toml::from_str::<ModelsFile>(named).unwrap().endpoints
        };
        Ok(
            ModelFactory::new(opts, named, Arc::new(TokenCounter::new().unwrap()))?
                .with_env(|k| (k == "LOCAL_KEY").then(|| "secret-local".to_string())),
        )
    }

    #[test]
    fn specs_resolve_and_endpoints_are_shared() {
        let f = factory(
            ModelOptions {
                base_url: Some("http://127.0.0.1:9/v1".into()),
                ..Default::default()
            },
            r#"
            [endpoints.local-qwen]
            base_url = "http://127.0.0.1:8000/v1"
            model = "Qwen/Qwen2.5-7B-Instruct"
            api_key_env = "LOCAL_KEY"
            rpm = 60
            tool_format = "prompted"
            extra_body = { chat_template_kwargs = { enable_thinking = false } }
            "#,
        )
        .unwrap();
        assert_eq!(
            f.chat("sim:oracle,judge_auc=1,planner_recall=1,planner_extra=0")
                .unwrap()
                .name(),
            "sim:oracle,judge=oracle,planner=oracle"
        );
        assert_eq!(f.chat("openai:gpt-x").unwrap().name(), "openai:gpt-x");
        let q = f.chat("local-qwen").unwrap();
        assert_eq!(
            q.name(),
            "openai:Qwen/Qwen2.5-7B-Instruct@local-qwen+prompted"
        );
        assert!(!q.simulated());
        let _ = f.chat("openai:gpt-y").unwrap();
        let _ = f.embedder(Some("openai:emb")).unwrap();
        // Two endpoints: the --base-url one (shared by three specs) and local-qwen.
        assert_eq!(f.endpoints.lock().unwrap().len(), 2);
        let err = f.chat("nope").err().unwrap().to_string();
        assert!(err.contains("local-qwen"), "{err}");
        assert!(f.chat("openai:").is_err());
        assert_eq!(f.embedder(None).unwrap().name(), "lexical");
    }

    #[test]
    fn default_endpoint_without_key_is_refused_unless_replaying() {
        let f = factory(ModelOptions::default(), "").unwrap();
        let err = f.chat("openai:gpt-4o").err().unwrap().to_string();
        assert!(err.contains("OPENAI_API_KEY"), "{err}");
        assert!(
            factory(
                ModelOptions {
                    replay: true,
                    ..Default::default()
                },
                ""
            )
            .is_err(),
            "--replay without --cache"
        );
        // A dry run sends nothing: it describes the endpoint without a key.
        let f = factory(ModelOptions::default(), "")
            .unwrap()
            .sending_nothing();
        assert!(f.chat("openai:gpt-4o").is_ok());
    }

    /// A timeout too large for a `Duration` (or negative, or NaN) in models.toml is an
    /// error naming the endpoint, not a panic when the endpoint is built.
    #[test]
    fn an_absurd_request_timeout_in_models_toml_is_an_error_not_a_panic() {
        for bad in ["1e30", "-1.0", "nan", "86401.0"] {
            let f = factory(
                ModelOptions::default(),
                &format!(
                    "[endpoints.slow]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\napi_key_env = \"LOCAL_KEY\"\nrequest_timeout = {bad}\n"
                ),
            )
            .unwrap();
            let err = f.chat("slow").err().expect(bad).to_string();
            assert!(err.contains("request_timeout"), "{bad}: {err}");
            assert!(err.contains("slow"), "{bad}: {err}");
        }
        let ok = factory(
            ModelOptions::default(),
            "[endpoints.slow]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\napi_key_env = \"LOCAL_KEY\"\nrequest_timeout = 86400.0\n",
        )
        .unwrap();
        assert!(ok.chat("slow").is_ok());
    }

    /// Each flag parser names its kind of refusal and keeps the words clap prints.
    #[test]
    fn flag_parsers_refuse_with_their_own_kind_and_words() {
        let e = parse_temperature("3x").unwrap_err();
        assert!(
            matches!(&e, ModelFlagError::Temperature(s) if s == "3x"),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "`3x` is not a temperature (a finite number >= 0)"
        );
        assert!(matches!(
            parse_temperature("-1"),
            Err(ModelFlagError::Temperature(_))
        ));
        assert_eq!(parse_temperature(" 0.7 ").unwrap(), 0.7);
        let e = parse_seconds("0").unwrap_err();
        assert!(
            matches!(&e, ModelFlagError::Seconds(s) if s == "0"),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "`0` is not a number of seconds (finite, > 0)"
        );
        let e = parse_price("cheap").unwrap_err();
        assert!(
            matches!(&e, ModelFlagError::PriceForm(s) if s == "cheap"),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "--price-per-mtok must look like IN,OUT (e.g. 0.15,0.60), got `cheap`"
        );
        let e = parse_price("0.15,free").unwrap_err();
        assert!(
            matches!(&e, ModelFlagError::Price(s) if s == "free"),
            "{e:?}"
        );
        assert_eq!(e.to_string(), "--price-per-mtok: `free` is not a price");
        assert_eq!(parse_price("0.15, 0.60").unwrap(), (0.15, 0.6));
        let e = parse_extra_body("[1]").unwrap_err();
        assert!(matches!(e, ModelFlagError::ExtraBodyNotObject), "{e:?}");
        assert_eq!(e.to_string(), "--extra-body must be a JSON object");
        let e = parse_extra_body("{oops").unwrap_err();
        assert!(matches!(e, ModelFlagError::ExtraBodyJson(_)), "{e:?}");
        assert!(
            e.to_string()
                .starts_with("--extra-body is not valid JSON: key must be a string"),
            "{e}"
        );
    }
}
