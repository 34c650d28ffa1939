//! sieve-bench's on-disk formats as plain data: the episode and trace records, the call
//! records and decisions inside them, the messages of a trace, the costs per role, the
//! answer judge's verdicts, the error kinds and conventions, SIEVE's call notes
//! ([`sieve`]), the run folder's manifest (`run.json`: the run settings that make its
//! identity, the invocations, the spending ledger, the models served), the file names of
//! a run folder, and the one streaming reader and writer of its JSON-lines files.
//!
//! This crate depends on nothing of the harness (only serde, serde_json and thiserror),
//! so it cannot import a layer above the records: the compiler keeps the layering. A new
//! on-disk field goes here, in the type that holds it, and nowhere else; behaviour that
//! needs a model, a suite or a tokenizer stays in the main crate.

mod cost;
mod episode;
mod errors_as;
mod floors;
mod jsonl;
mod judged;
mod ledger;
mod manifest;
mod message;
mod role;
mod settings;
pub mod sieve;

pub use cost::{CostMeter, CostTotals, MeteredCall, Usage};
pub use episode::{
    CallRecord, Decision, EpisodeRecord, ErrorConvention, ErrorKind, TraceRecord, Undecided,
    proposed_calls,
};
pub use errors_as::{ErrorPolicy, ErrorsAs, agentdojo_scores, family_default};
pub use floors::{Floor, Floors};
pub use jsonl::{
    BATCH_BYTES, Batch, EPISODES, LineError, Parsed, RUN_INFO, RecordWriter, TRACES,
    drop_partial_tail, key_hash, key_of, parse_line, read_batches, skipped_line,
};
pub use judged::{JudgeOn, JudgedAnswer, JudgedVerdict, UtilityFrom};
pub use ledger::Ledger;
pub use manifest::{Invocation, InvocationOutcome, Lineage, Manifest, RunRoles};
pub use message::{Message, Role, ToolCall};
pub use role::{Component, ScriptedRole, ScriptedRoles};
pub use settings::{Change, ModelIdentity, RunSettings};
