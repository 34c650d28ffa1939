//! sieve-bench: measure how much indirect-prompt-injection success a defense removes,
//! and at what cost in utility, tokens and calls.
//!
//! The modules follow the pipeline: suite → attack → agent loop ⇄ defense → model;
//! records → metrics → report.

pub mod aggregate;
pub mod attack;
pub mod bounded;
pub mod child;
pub mod commands;
pub mod defense;
pub mod digest;
pub mod embed;
pub mod envpath;
pub mod episode;
pub mod escape;
pub mod external;
pub mod http;
pub mod ids;
pub mod model;
pub mod readable;
pub mod record;
pub mod report;
pub mod runner;
pub mod search;
pub mod suggest;
pub mod suite;
pub mod text;
pub mod tools;
pub mod yaml;
