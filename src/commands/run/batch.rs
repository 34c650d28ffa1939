//! `run --batch submit|collect|auto`: a real-model run through a provider's batch API,
//! one round per model request of the longest episode.
//!
//! A round needs no engine of its own: the run's replay cache (`--cache`) addresses every
//! chat request by its content hash. A *pass* runs the matrix with the cache gathering
//! its misses ([`Gather`]): every episode replays from the cache up to its first request
//! the cache cannot answer, and waits there (it is not recorded); episodes that finish
//! are recorded as in any run.
//! - `submit`: a pass, then the gathered requests go out as one provider batch; the batch
//!   id and what it holds are kept in the run folder (`batch.json`, the round's requests
//!   under `batch/`). Exit [`EXIT_PENDING`].
//! - `collect`: polls the round once; while it runs, exit [`EXIT_PENDING`]. When it ended:
//!   every reply is written into the cache (an entry already there is never replaced),
//!   every per-request error is kept as that request's answer (its episode errors), and
//!   a pass advances the episodes to their next request. Exit 0 when no episode waits,
//!   else [`EXIT_PENDING`] (submit the next round).
//! - `auto`: submit and collect in turn, polling every `--batch-poll` seconds, until done.
//!
//! A batch the provider rejects or lets expire, and a result for a request the round did
//! not send, are named errors; nothing is written into the cache and the round is marked
//! failed, so the next `submit` gathers and sends the same requests again.

use super::super::CliError;
use super::super::Paths;
use super::args::RunArgs;
use super::summary::RunReport;
use crate::http::Secret;
use crate::http::batch::{BatchError, Client, Reply, Shape, Status};
use crate::http::cache::{self, Cache, Gather, Pending};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The exit code of a batch command that leaves a round to wait for (listed in the one
/// table, `CliError::exit_code`).
pub const EXIT_PENDING: i32 = 8;

/// What `--batch` does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// Gather every waiting episode's next request and submit them as one batch.
    Submit,
    /// Poll the round out; when it ended, cache its replies and advance the episodes.
    Collect,
    /// Submit and collect in turn until the run is complete.
    Auto,
}

/// The batch flags of `run`.
#[derive(clap::Args, Clone, Debug, Default, PartialEq)]
#[command(next_help_heading = "Batch API")]
pub struct BatchArgs {
    /// Run through a provider's batch API at batch prices (half): `submit` a round,
    /// `collect` it later, or `auto` (both until done). Needs --cache DIR
    /// (docs/real-model-runs.md).
    #[arg(long, value_enum, value_name = "MODE")]
    pub batch: Option<Mode>,
    /// Which batch API: `openai` (Batch) or `anthropic` (Message Batches).
    #[arg(long, value_enum, default_value = "openai", value_name = "API")]
    pub batch_api: BatchApi,
    /// Base URL of the batch API [default: --base-url / OPENAI_BASE_URL for openai,
    /// https://api.anthropic.com/v1 for anthropic].
    #[arg(long, value_name = "URL")]
    pub batch_url: Option<String>,
    /// Variable holding the batch API's key [default: OPENAI_API_KEY or ANTHROPIC_API_KEY].
    #[arg(long, value_name = "VAR")]
    pub batch_key_env: Option<String>,
    /// Seconds between polls of `--batch auto`.
    #[arg(long, value_name = "SECS", default_value_t = 60.0)]
    pub batch_poll: f64,
}

/// The batch API flag's values (the shape's own type lives in the transport layer).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum BatchApi {
    #[default]
    Openai,
    Anthropic,
}

impl BatchApi {
    fn shape(self) -> Shape {
        match self {
            BatchApi::Openai => Shape::Openai,
            BatchApi::Anthropic => Shape::Anthropic,
        }
    }
}

/// The run folder's record of its batch rounds (`batch.json`).
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchState {
    pub rounds: Vec<Round>,
}

/// One round.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Round {
    pub n: usize,
    pub api: Shape,
    pub batch_id: String,
    /// The round's requests, relative to the run folder (`batch/round-N.requests.json`).
    pub requests: PathBuf,
    pub state: RoundState,
    /// Requests the provider refused, by cache key, with its message.
    #[serde(default)]
    pub refused: BTreeMap<String, String>,
    /// Tokens the collected replies report, and their dollars at batch prices.
    #[serde(default)]
    pub prompt_tokens: u64,
    #[serde(default)]
    pub completion_tokens: u64,
    #[serde(default)]
    pub usd: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "state", content = "why")]
pub enum RoundState {
    Submitted,
    Collected,
    /// Rejected, expired or unusable: nothing was cached; the next submit repeats it.
    Failed(String),
}

const STATE_FILE: &str = "batch.json";

impl BatchState {
    fn load(out: &Path) -> Result<BatchState, CliError> {
        let path = out.join(STATE_FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| {
                CliError::bad_input(format!("{}: not a batch record ({e})", path.display()))
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BatchState::default()),
            Err(e) => Err(CliError::failed(format!("{}: {e}", path.display()))),
        }
    }

    fn save(&self, out: &Path) -> Result<(), CliError> {
        let text = serde_json::to_string_pretty(self).expect("batch state serialises") + "\n";
        write_atomic(&out.join(STATE_FILE), text.as_bytes())
    }

    /// What every round so far refused: those requests answer with their error.
    fn refused(&self) -> BTreeMap<String, String> {
        self.rounds.iter().flat_map(|r| r.refused.clone()).collect()
    }

    fn out(&self) -> Option<&Round> {
        self.rounds
            .last()
            .filter(|r| r.state == RoundState::Submitted)
    }

    /// Dollars the collected rounds cost (batch prices).
    pub fn spent_usd(&self) -> f64 {
        self.rounds.iter().map(|r| r.usd).sum()
    }

    pub fn spent_tokens(&self) -> u64 {
        self.rounds
            .iter()
            .map(|r| r.prompt_tokens + r.completion_tokens)
            .sum()
    }
}

fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    use std::io::Write;
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)
        .map_err(|e| CliError::failed(format!("{}: {e}", dir.display())))?;
    let fail = |e: std::io::Error| CliError::failed(format!("writing {}: {e}", path.display()));
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(fail)?;
    tmp.write_all(bytes).map_err(fail)?;
    tmp.as_file().sync_all().map_err(fail)?;
    tmp.persist(path).map_err(|e| fail(e.error))?;
    Ok(())
}

/// What one step of the batch workflow came to.
enum Step {
    /// No episode waits: the run is complete.
    Done(Box<RunReport>),
    /// A round is out (just submitted, or still running when polled).
    Out(String),
    /// A round was collected and episodes wait for their next request.
    Next(String),
}

/// `run --batch MODE`.
pub async fn batch(paths: &Paths, args: RunArgs) -> Result<RunReport, CliError> {
    let mode = args.batch.batch.expect("called with --batch");
    if args.model_options.cache.is_none() || args.model_options.replay {
        return Err(CliError::bad_input(
            "--batch needs --cache DIR (where the replies are kept) and no --replay",
        ));
    }
    if !(args.batch.batch_poll.is_finite() && args.batch.batch_poll >= 0.0) {
        return Err(CliError::bad_input(
            "--batch-poll must be a number of seconds >= 0",
        ));
    }
    let step = match mode {
        Mode::Submit => submit(paths, &args).await?,
        Mode::Collect => collect(paths, &args).await?,
        Mode::Auto => loop {
            match submit(paths, &args).await? {
                Step::Done(r) => break Step::Done(r),
                Step::Out(m) | Step::Next(m) => eprintln!("{m}"),
            }
            let next = loop {
                tokio::time::sleep(std::time::Duration::from_secs_f64(args.batch.batch_poll)).await;
                match collect(paths, &args).await? {
                    Step::Out(m) => eprintln!("{m}"),
                    other => break other,
                }
            };
            match next {
                Step::Done(r) => break Step::Done(r),
                Step::Next(m) | Step::Out(m) => eprintln!("{m}"),
            }
        },
    };
    match step {
        Step::Done(r) => Ok(*r),
        Step::Out(m) | Step::Next(m) => Err(CliError::BatchPending(m)),
    }
}

/// A pass: the matrix with the cache gathering its misses. Returns the run's report and
/// the requests the waiting episodes need next.
async fn pass(
    paths: &Paths,
    args: &RunArgs,
    refused: BTreeMap<String, String>,
) -> Result<(RunReport, Vec<Pending>), CliError> {
    let gather = Arc::new(Gather::new(refused));
    let mut args = args.clone();
    args.model_options.batch = Some(gather.clone());
    // An episode recorded with an error (a request the provider refused) is final for
    // the batch workflow: the next pass must not run it again.
    args.keep_errors = true;
    let config = super::config::resolve(paths, &args).await?;
    let report = super::execute(config).await?;
    Ok((report, gather.take()))
}

/// The run folder `args` names (resolving the run without running it).
async fn folder(paths: &Paths, args: &RunArgs) -> Result<PathBuf, CliError> {
    let mut probe = args.clone();
    probe.model_options.batch = Some(Arc::new(Gather::default()));
    Ok(super::config::resolve(paths, &probe).await?.out)
}

fn client(args: &RunArgs) -> Result<Client, CliError> {
    let shape = args.batch.batch_api.shape();
    let url = args.batch.batch_url.clone().unwrap_or_else(|| match shape {
        Shape::Openai => args
            .model_options
            .base_url
            .clone()
            .filter(|u| !u.trim().is_empty())
            .or_else(|| {
                std::env::var("OPENAI_BASE_URL")
                    .ok()
                    .filter(|u| !u.trim().is_empty())
            })
            .unwrap_or_else(|| shape.default_url().into()),
        Shape::Anthropic => shape.default_url().into(),
    });
    let var = args
        .batch
        .batch_key_env
        .clone()
        .unwrap_or_else(|| shape.default_key_env().into());
    let key = std::env::var(&var)
        .ok()
        .filter(|k| !k.trim().is_empty())
        .map(Secret::new);
    if key.is_none()
        && (url == Shape::Openai.default_url() || url == Shape::Anthropic.default_url())
    {
        return Err(CliError::bad_input(format!(
            "--batch: no API key in {var} (set it, or name another with --batch-key-env)"
        )));
    }
    Client::new(shape, &url, key).map_err(|e| CliError::failed(e.to_string()))
}

/// The most a round of `pending` could cost: every prompt (about 4 bytes a token of its
/// canonical JSON) plus every request's `max_tokens`, at batch prices.
fn round_bound(args: &RunArgs, pending: &[Pending]) -> (f64, u64) {
    let (mut prompt, mut completion) = (0u64, 0u64);
    for p in pending {
        prompt += cache::canonical(&p.request).len() as u64 / 4;
        completion += p.request["max_tokens"].as_u64().unwrap_or(4096);
    }
    let usd = args.model_options.price_per_mtok.map_or(0.0, |(i, o)| {
        (prompt as f64 * i + completion as f64 * o) / 1e6 * BATCH_PRICE
    });
    (usd, prompt + completion)
}

/// Batch prices are this share of the synchronous ones.
pub const BATCH_PRICE: f64 = 0.5;

async fn submit(paths: &Paths, args: &RunArgs) -> Result<Step, CliError> {
    let out = folder(paths, args).await?;
    let mut state = BatchState::load(&out)?;
    if let Some(r) = state.out() {
        return Ok(Step::Out(format!(
            "round {} (batch {}) is still out: run --batch collect first",
            r.n, r.batch_id
        )));
    }
    let (report, pending) = pass(paths, args, state.refused()).await?;
    if pending.is_empty() {
        return Ok(Step::Done(Box::new(report)));
    }
    let (bound_usd, bound_tokens) = round_bound(args, &pending);
    if let Some(cap) = args.budget_usd
        && state.spent_usd() + bound_usd > cap
    {
        return Err(CliError::BudgetSpent(format!(
            "budget: the next round ({} requests) could cost up to ${bound_usd:.4} at batch prices, and ${:.4} of --budget-usd {cap} is spent; nothing was submitted (rerun with a higher budget to go on)",
            pending.len(),
            state.spent_usd()
        )));
    }
    if let Some(cap) = args.budget_tokens
        && state.spent_tokens() + bound_tokens > cap
    {
        return Err(CliError::BudgetSpent(format!(
            "budget: the next round ({} requests) could use up to {bound_tokens} tokens, and {} of --budget-tokens {cap} are spent; nothing was submitted",
            pending.len(),
            state.spent_tokens()
        )));
    }
    let client = client(args)?;
    let n = state.rounds.len() + 1;
    let requests = PathBuf::from(format!("batch/round-{n}.requests.json"));
    let file = client.batch_file(&pending);
    let ext = match client.shape() {
        Shape::Openai => "jsonl",
        Shape::Anthropic => "json",
    };
    write_atomic(&out.join(format!("batch/round-{n}.{ext}")), file.as_bytes())?;
    write_atomic(
        &out.join(&requests),
        serde_json::to_string(&pending)
            .expect("requests serialise")
            .as_bytes(),
    )?;
    let batch_id = client
        .submit(&file)
        .await
        .map_err(|e| batch_error(e, "nothing was submitted; fix it and submit again"))?;
    state.rounds.push(Round {
        n,
        api: client.shape(),
        batch_id: batch_id.clone(),
        requests,
        state: RoundState::Submitted,
        refused: BTreeMap::new(),
        prompt_tokens: 0,
        completion_tokens: 0,
        usd: 0.0,
    });
    state.save(&out)?;
    Ok(Step::Out(format!(
        "round {n}: {} request(s) submitted as batch {batch_id}; {} episode(s) finished in this pass. Run --batch collect later",
        pending.len(),
        report.outcome.ran
    )))
}

fn batch_error(e: BatchError, then: &str) -> CliError {
    let m = format!("--batch: {e}; {then}");
    match e {
        BatchError::Http { .. } => CliError::failed(m),
        _ => CliError::bad_input(m),
    }
}

async fn collect(paths: &Paths, args: &RunArgs) -> Result<Step, CliError> {
    let out = folder(paths, args).await?;
    let mut state = BatchState::load(&out)?;
    let Some(round) = state.out() else {
        return Err(CliError::bad_input(format!(
            "--batch collect: no round is out in {} (run --batch submit)",
            out.display()
        )));
    };
    let (n, id) = (round.n, round.batch_id.clone());
    let path = out.join(&round.requests);
    let pending: Vec<Pending> = std::fs::read_to_string(&path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .ok_or_else(|| {
            CliError::bad_input(format!(
                "{}: the requests of round {n} are missing or unreadable",
                path.display()
            ))
        })?;
    let keys: Vec<String> = pending.iter().map(|p| p.key.clone()).collect();
    let client = client(args)?;
    let replies = match client.poll(&id, &keys).await {
        Ok(Status::Pending(how)) => {
            return Ok(Step::Out(format!(
                "round {n} (batch {id}) is still running: {how}"
            )));
        }
        Ok(Status::Ended(r)) => r,
        Err(e @ BatchError::Http { .. }) => return Err(batch_error(e, "try collect again")),
        Err(e) => {
            let last = state.rounds.last_mut().expect("a round is out");
            last.state = RoundState::Failed(e.to_string());
            state.save(&out)?;
            return Err(batch_error(
                e,
                "nothing was cached; run --batch submit to send the round again",
            ));
        }
    };
    let cache = Cache::open(args.model_options.cache.as_deref().expect("checked"), false)
        .map_err(|e| CliError::failed(e.to_string()))?;
    let prices = args.model_options.price_per_mtok;
    let (mut pt, mut ct, mut refused) = (0u64, 0u64, BTreeMap::new());
    for p in &pending {
        match &replies[&p.key] {
            Reply::Ok(body) => {
                pt += body["usage"]["prompt_tokens"].as_u64().unwrap_or(0);
                ct += body["usage"]["completion_tokens"].as_u64().unwrap_or(0);
                cache
                    .put(&cache::Entry {
                        key: p.key.clone(),
                        path: p.path.clone(),
                        request: p.request.clone(),
                        response: body.clone(),
                        latency_ms: 0.0,
                    })
                    .map_err(|e| {
                        CliError::failed(format!(
                            "cannot write a reply into the cache {}: {e}",
                            cache.dir().display()
                        ))
                    })?;
            }
            Reply::Error(m) => {
                refused.insert(p.key.clone(), m.clone());
            }
        }
    }
    let last = state.rounds.last_mut().expect("a round is out");
    last.state = RoundState::Collected;
    last.prompt_tokens = pt;
    last.completion_tokens = ct;
    last.usd = prices.map_or(0.0, |(i, o)| {
        (pt as f64 * i + ct as f64 * o) / 1e6 * BATCH_PRICE
    });
    let errors = refused.len();
    last.refused = refused;
    state.save(&out)?;
    let (report, next) = pass(paths, args, state.refused()).await?;
    if next.is_empty() {
        return Ok(Step::Done(Box::new(report)));
    }
    Ok(Step::Next(format!(
        "round {n} collected: {} repl(ies) cached, {errors} refused by the provider; {} request(s) wait for the next round: run --batch submit",
        pending.len() - errors,
        next.len()
    )))
}
