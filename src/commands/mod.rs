//! The CLI's commands as library functions, so `main.rs` only parses and dispatches and
//! tests can call them directly.

pub mod ablate;
pub mod attack;
pub mod calibrate;
pub mod check_suites;
pub mod estimate;
pub mod list;
pub mod merge;
pub mod report_cmd;
pub mod run;

use crate::model::tokens::TokenCounter;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Why a command did not succeed. Each kind has one exit code (see [`CliError::exit_code`],
/// the only place codes are chosen; the "Exit codes" table of docs/cli.md mirrors it).
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Malformed suite, unknown name, bad flag value, a results folder recorded under
    /// other settings: nothing was run.
    #[error("{0}")]
    BadInput(String),
    /// Something outside the user's input failed (disk, runtime, a fatal model error).
    #[error("{0}")]
    Failed(String),
    /// `compare` found a regression beyond a threshold.
    #[error("{0}")]
    Regression(String),
    /// The run finished but a row's error rate exceeds `--max-error-rate`: its rates
    /// rest on too few episodes to be trusted as they stand.
    #[error("{0}")]
    TooManyErrors(String),
    /// The selection left no episode to run.
    #[error("{0}")]
    NothingToRun(String),
    /// Another live process holds the results folder.
    #[error("{0}")]
    Locked(String),
    /// `--budget-usd` / `--budget-tokens` left no room for another episode: everything
    /// run is written; rerunning with a higher budget resumes.
    #[error("{0}")]
    BudgetSpent(String),
    /// `run --batch`: a round is out or the next one is to be submitted; the message
    /// says which command comes next.
    #[error("{0}")]
    BatchPending(String),
    /// Ctrl-C: finished episodes are kept; rerunning resumes.
    #[error("interrupted; rerun the same command to resume")]
    Interrupted,
    /// An episode panicked: a bug in the harness. Episodes recorded before it are kept.
    #[error("{0}")]
    Panicked(String),
}

/// An input/output failure's kind decides its code: a file that is not there was named
/// wrongly, and one over the input limit or not text is malformed (bad input, as a suite
/// file's is); any other failure to read or write one is the machine's (failed).
fn io_failure(e: &std::io::Error, message: String) -> CliError {
    if matches!(
        e.kind(),
        std::io::ErrorKind::NotFound | std::io::ErrorKind::InvalidData
    ) {
        CliError::BadInput(message)
    } else {
        CliError::Failed(message)
    }
}

impl From<crate::report::ReportError> for CliError {
    fn from(e: crate::report::ReportError) -> Self {
        use crate::report::ReportError as E;
        let message = e.to_string();
        match &e {
            E::Read { source, .. } | E::ReadReference { source, .. } => io_failure(source, message),
            E::NoRun | E::NotARun { .. } | E::Mismatch(_) | E::Malformed(_) | E::Unknown(_) => {
                CliError::BadInput(message)
            }
            E::Usage(_) => CliError::BadInput(message),
        }
    }
}

impl From<crate::defense::sieve::config::SieveConfigError> for CliError {
    fn from(e: crate::defense::sieve::config::SieveConfigError) -> Self {
        use crate::defense::sieve::config::SieveConfigError as E;
        let message = e.to_string();
        match &e {
            E::Read { source, .. } => io_failure(source, message),
            E::Invalid { .. } | E::UnknownVariant { .. } | E::Setting(_) => {
                CliError::BadInput(message)
            }
        }
    }
}

impl From<crate::defense::BuildError> for CliError {
    fn from(e: crate::defense::BuildError) -> Self {
        use crate::defense::BuildError as E;
        match e {
            E::Sieve(e) => e.into(),
            // The machine could not build what a variant needs (an HTTP client).
            E::Option(e @ crate::defense::support::VariantError::Setup(_)) => {
                CliError::Failed(e.to_string())
            }
            E::Option(e) => CliError::BadInput(e.to_string()),
            e @ (E::Unknown { .. } | E::Variant(_) | E::Plugin(_)) => {
                CliError::BadInput(e.to_string())
            }
        }
    }
}

impl From<crate::model::tokens::TokenError> for CliError {
    fn from(e: crate::model::tokens::TokenError) -> Self {
        match e {
            // The machine could not start a thread: nothing the user gave was wrong.
            crate::model::tokens::TokenError::Spawn(_) => CliError::Failed(e.to_string()),
        }
    }
}

impl From<crate::model::config::ModelConfigError> for CliError {
    fn from(e: crate::model::config::ModelConfigError) -> Self {
        use crate::http::cache::CacheError;
        use crate::model::config::ModelConfigError as E;
        let message = e.to_string();
        match &e {
            E::Read { source, .. } | E::Cache(CacheError::Create { source, .. }) => {
                io_failure(source, message)
            }
            // The machine could not build an HTTP client: nothing the user gave was wrong.
            E::Endpoint(crate::http::EndpointError::Client(_)) => CliError::Failed(message),
            E::Toml { .. }
            | E::Invalid { .. }
            | E::Setting(_)
            | E::NoApiKey { .. }
            | E::Unknown(_)
            | E::Sim(_)
            | E::Endpoint(_)
            | E::Cache(_)
            | E::Embedder(_) => CliError::BadInput(message),
            // The weights' folder as given (or fetched) does not hold a loadable model.
            #[cfg(feature = "minilm")]
            E::MiniLm(_) => CliError::BadInput(message),
        }
    }
}

impl From<crate::model::answer_judge::ScriptedJudge> for CliError {
    fn from(e: crate::model::answer_judge::ScriptedJudge) -> Self {
        CliError::BadInput(e.to_string())
    }
}

impl From<crate::suite::SelectError> for CliError {
    fn from(e: crate::suite::SelectError) -> Self {
        use crate::suite::SelectError as E;
        let message = e.to_string();
        match &e {
            E::Read { source, .. } => io_failure(source, message),
            E::NoSuites { .. } | E::NoMatch { .. } | E::NothingSelected => {
                CliError::BadInput(message)
            }
        }
    }
}

impl From<crate::attack::AttackError> for CliError {
    fn from(e: crate::attack::AttackError) -> Self {
        use crate::attack::AttackError as E;
        let message = e.to_string();
        match &e {
            E::Read { source, .. } => io_failure(source, message),
            E::Invalid { .. } => CliError::BadInput(message),
        }
    }
}

impl From<crate::attack::SelectError> for CliError {
    fn from(e: crate::attack::SelectError) -> Self {
        use crate::attack::SelectError as E;
        match e {
            E::Library(e) => e.into(),
            e @ (E::NoneNamed | E::ProviderName(_) | E::Unknown { .. }) => {
                CliError::BadInput(e.to_string())
            }
        }
    }
}

/// A suite provider's failure: the user's input when its spec file is malformed, it
/// speaks another protocol version or it refused (an unknown suite name, a description
/// the harness rejects); the machine's when the program cannot start or crashed, hung or
/// broke the protocol. `message` is the error's own text or one that adds where it
/// happened; the kind alone picks the code.
fn external_failure(e: &crate::external::ExternalError, message: String) -> CliError {
    use crate::external::ExternalError as E;
    match e {
        E::Spec { .. } | E::Version { .. } | E::Refused { .. } => CliError::BadInput(message),
        E::Spawn { .. } | E::Broken(_) => CliError::Failed(message),
    }
}

impl From<crate::external::ExternalError> for CliError {
    fn from(e: crate::external::ExternalError) -> Self {
        let message = e.to_string();
        external_failure(&e, message)
    }
}

impl From<crate::search::UnitError> for CliError {
    fn from(e: crate::search::UnitError) -> Self {
        CliError::BadInput(e.to_string())
    }
}

impl From<crate::search::SearchError> for CliError {
    fn from(e: crate::search::SearchError) -> Self {
        use crate::search::SearchError as E;
        match e {
            E::BadInput(m) => CliError::BadInput(m),
            E::Failed(m) => CliError::Failed(m),
            // The attacker's endpoint failed: nothing the user gave was wrong.
            e @ E::Attacker(_) => CliError::Failed(e.to_string()),
        }
    }
}

impl From<crate::runner::files::ClaimError> for CliError {
    fn from(e: crate::runner::files::ClaimError) -> Self {
        use crate::runner::files::{ClaimError as E, LockError as L};
        let message = e.to_string();
        match e {
            E::Foreign { .. } => CliError::BadInput(message),
            E::Lock(L::Busy(_)) => CliError::Locked(message),
            E::Lock(L::Io(..)) => CliError::Failed(message),
        }
    }
}

/// Exit code for bad input (malformed suite, unknown name, bad flag value).
pub const EXIT_BAD_INPUT: i32 = 2;

impl CliError {
    /// Bad input with this message. It takes any message (a typed error too) so that a
    /// caller not yet on `?` keeps compiling; a typed error should go through its `From`
    /// impl above, where its kind picks the code.
    pub fn bad_input(message: impl std::fmt::Display) -> Self {
        CliError::BadInput(message.to_string())
    }

    pub fn failed(message: impl std::fmt::Display) -> Self {
        CliError::Failed(message.to_string())
    }

    /// The process exit code: the one table of them.
    pub fn exit_code(&self) -> i32 {
        match self {
            CliError::Failed(_) | CliError::Regression(_) => 1,
            CliError::BadInput(_) => EXIT_BAD_INPUT,
            CliError::TooManyErrors(_) => 3,
            CliError::NothingToRun(_) => 4,
            CliError::Locked(_) => 5,
            CliError::BudgetSpent(_) => 6,
            CliError::Panicked(_) => 7,
            CliError::BatchPending(_) => run::batch::EXIT_PENDING,
            CliError::Interrupted => 130,
        }
    }
}

/// Where suites, attacks and configs are read from: explicit flags win, then
/// `SIEVE_BENCH_HOME`, then the working directory.
#[derive(Clone, Debug)]
pub struct Paths {
    pub suites: PathBuf,
    pub attacks: PathBuf,
    pub configs: PathBuf,
    /// Where `run` keeps the proofs of sound suites (`suite::proof_cache`); `None`: off.
    pub proofs: Option<PathBuf>,
}

impl Paths {
    /// This build's identity in the proof cache (`suite::proof_cache::build_id`); `None`
    /// when the cache is off, so nothing is looked up or kept.
    pub fn proof_build(&self) -> Option<String> {
        self.proofs
            .is_some()
            .then(crate::suite::proof_cache::build_id)
            .flatten()
    }

    /// A token counter that keeps its counts in this build's folder of the proof cache
    /// (see `model::tokens`); with the cache off, one that keeps nothing.
    pub fn token_counter(&self) -> Result<Arc<TokenCounter>, CliError> {
        TokenCounter::cached(self.proofs.as_deref(), self.proof_build().as_deref())
            .map(Arc::new)
            .map_err(CliError::from)
    }

    pub fn resolve(
        suites: Option<PathBuf>,
        attacks: Option<PathBuf>,
        home: Option<PathBuf>,
    ) -> Self {
        let home = home.unwrap_or_else(|| PathBuf::from("."));
        Paths {
            suites: suites.unwrap_or_else(|| home.join("suites")),
            attacks: attacks.unwrap_or_else(|| home.join("attacks")),
            configs: home.join("configs"),
            proofs: crate::suite::proof_cache::default_dir(),
        }
    }

    pub fn suites_dir(&self) -> Result<&Path, CliError> {
        if self.suites.is_dir() {
            Ok(&self.suites)
        } else {
            Err(CliError::bad_input(format!(
                "suites directory {} does not exist; run from the repository root, or pass --suites-dir or set SIEVE_BENCH_HOME",
                self.suites.display()
            )))
        }
    }
}

/// Loads the selected suites, failing with every located error before anything runs.
pub fn load_suites(paths: &Paths, selector: &str) -> Result<Vec<crate::suite::Suite>, CliError> {
    let refs = crate::suite::select(paths.suites_dir()?, selector)?;
    // Each suite loads on its own core (parsing, fingerprinting and deriving its
    // alternatives are a good part of a scripted run's start); the order stays the
    // selection's.
    let loaded: Vec<_> = {
        use rayon::prelude::*;
        refs.par_iter()
            .map(|r| crate::suite::load(&r.dir))
            .collect()
    };
    let mut suites = Vec::new();
    let mut errors = Vec::new();
    for l in loaded {
        match l {
            Ok(s) => suites.push(s),
            Err(e) => errors.push(e.to_string()),
        }
    }
    // Records and reports name a suite by `family/name` from its suite.yaml: two folders
    // declaring the same one would mix their episodes.
    for (i, s) in suites.iter().enumerate() {
        if let Some(first) = suites[..i]
            .iter()
            .find(|o| o.qualified_name() == s.qualified_name())
        {
            errors.push(format!(
                "{}: suite name `{}` is already declared by {}",
                s.dir.join("suite.yaml").display(),
                s.qualified_name(),
                first.dir.join("suite.yaml").display()
            ));
        }
    }
    if errors.is_empty() {
        Ok(suites)
    } else {
        Err(CliError::bad_input(format!(
            "invalid suite:\n  {}",
            errors.join("\n  ")
        )))
    }
}

/// Loads a selector that may also name external suites (`agentdojo@v1.2.2/banking`, or a
/// whole `agentdojo@v1.2.2`): those come from their provider, whose process pool is
/// sized for `concurrency` episodes; the other parts go to [`load_suites`].
pub async fn load_selected(
    paths: &Paths,
    selector: &str,
    concurrency: usize,
) -> Result<Vec<crate::suite::Suite>, CliError> {
    use crate::external::{Provider, is_external_selector, package_of};
    let parts: Vec<&str> = selector
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    let (external, data): (Vec<&str>, Vec<&str>) =
        parts.into_iter().partition(|p| is_external_selector(p));
    let mut suites = if data.is_empty() {
        Vec::new()
    } else {
        load_suites(paths, &data.join(","))?
    };
    let mut providers: Vec<Provider> = Vec::new();
    for part in external {
        let package = package_of(part);
        if !providers.iter().any(|p| p.spec.package == package) {
            let p = Provider::open(paths.suites_dir()?, package)?;
            p.pool.grow_to(concurrency);
            providers.push(p);
        }
        let provider = providers
            .iter()
            .find(|p| p.spec.package == package)
            .expect("opened above");
        let served = provider.list().await?;
        let wanted: Vec<&String> = served
            .iter()
            .filter(|q| q.as_str() == part || q.split('/').next() == Some(part))
            .collect();
        if wanted.is_empty() {
            return Err(CliError::bad_input(format!(
                "no suite matches `{part}`; {} serves: {}",
                provider.file.display(),
                served.join(", ")
            )));
        }
        for q in wanted {
            if suites.iter().any(|s| &s.qualified_name() == q) {
                continue;
            }
            let suite = provider.load(q).await?;
            suites.push(suite);
        }
    }
    Ok(suites)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::ReportError;

    /// The kind of a failure, not the command meeting it, decides the code.
    #[test]
    fn a_read_failure_exits_by_its_kind() {
        let read = |kind| ReportError::Read {
            path: "r/traces.jsonl".into(),
            source: std::io::Error::from(kind),
        };
        let code = |e: ReportError| CliError::from(e).exit_code();
        assert_eq!(code(read(std::io::ErrorKind::IsADirectory)), 1);
        assert_eq!(code(read(std::io::ErrorKind::PermissionDenied)), 1);
        assert_eq!(code(read(std::io::ErrorKind::NotFound)), EXIT_BAD_INPUT);
        // Over the input limit, or not text: the file's content is at fault.
        assert_eq!(code(read(std::io::ErrorKind::InvalidData)), EXIT_BAD_INPUT);
        let e = CliError::from(ReportError::NotARun {
            dir: "x".into(),
            summary_would_do: true,
        });
        assert_eq!(e.exit_code(), EXIT_BAD_INPUT);
        assert_eq!(
            e.to_string(),
            "x has neither episodes.jsonl nor summary.json: not a run directory"
        );
    }

    /// A model's set-up failure: a cache folder that cannot be created is the machine's,
    /// a missing replay folder or a bad spec is the user's.
    #[test]
    fn a_model_setup_failure_exits_by_its_kind() {
        use crate::http::cache::CacheError;
        use crate::model::config::ModelConfigError;
        let code = |e: ModelConfigError| CliError::from(e).exit_code();
        let create = CacheError::Create {
            dir: "c".into(),
            source: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
        };
        assert_eq!(code(create.into()), 1);
        assert_eq!(
            code(CacheError::NoReplay("c".into()).into()),
            EXIT_BAD_INPUT
        );
        let sim = crate::model::sim::SimProfile::parse("p=2").unwrap_err();
        assert_eq!(sim.to_string(), "`p` must be a number in [0,1], got `2`");
        assert_eq!(code(sim.into()), EXIT_BAD_INPUT);
        let key = ModelConfigError::NoApiKey {
            var: "OPENAI_API_KEY".into(),
        };
        assert_eq!(
            key.to_string(),
            "no API key: set $OPENAI_API_KEY (or name another variable with --api-key-env)"
        );
        assert_eq!(code(key), EXIT_BAD_INPUT);
    }

    /// A suite provider's failure exits by its kind: what the user wrote or asked for
    /// (the spec file, the protocol version, a refusal) is bad input; a program that will
    /// not start or that broke is the machine's. The message is the error's own.
    #[test]
    fn a_provider_failure_exits_by_its_kind() {
        use crate::external::ExternalError as E;
        let cases = [
            (
                E::Spec {
                    file: "suites/external/toy.toml".into(),
                    message: "field `command` is empty".into(),
                },
                EXIT_BAD_INPUT,
                "suites/external/toy.toml: field `command` is empty",
            ),
            (
                E::Version { theirs: 1, ours: 2 },
                EXIT_BAD_INPUT,
                "the suite provider speaks protocol version 1; this build speaks 2",
            ),
            (
                E::Refused {
                    op: "describe".into(),
                    message: "no suite `toy@v1/nope`".into(),
                },
                EXIT_BAD_INPUT,
                "suite provider refused `describe`: no suite `toy@v1/nope`",
            ),
            (
                E::Spawn {
                    program: "/nonexistent/python".into(),
                    message: "No such file or directory (os error 2)".into(),
                },
                1,
                "cannot start the suite provider `/nonexistent/python`: No such file or directory (os error 2)",
            ),
            (
                E::Broken("the provider exited before answering `list` (crashed)".into()),
                1,
                "suite provider failed: the provider exited before answering `list` (crashed)",
            ),
        ];
        for (e, want_code, want_text) in cases {
            let cli = CliError::from(e.clone());
            assert_eq!(cli.exit_code(), want_code, "{e:?}");
            assert_eq!(cli.to_string(), want_text);
            // With a message that says where it happened, the kind still decides.
            let placed = external_failure(&e, format!("toy@v1/counter: {e}"));
            assert_eq!(placed.exit_code(), want_code, "{e:?}");
            assert_eq!(placed.to_string(), format!("toy@v1/counter: {want_text}"));
        }
    }
}
