//! The integration tests, one binary: each module is what was one test file (linking the
//! library once instead of once per file). `cargo test --test it <module>::` runs one.

mod common;
mod fake_llm;

mod ablate_cli;
mod action_checks;
mod agentdojo_conventions;
mod agentdojo_honesty;
mod answer_facts;
mod answer_judge_http;
mod attack_search;
mod attack_split_critic;
mod batch_http;
mod data_only;
mod defense_all_cli;
mod defense_plugin_cli;
mod doc_examples;
mod external_protocol;
mod first_examples;
mod hostile_text;
mod html_report;
mod identity_cli;
mod key_leak;
mod latex_fit;
mod layers;
mod lure_cli;
mod main_table_cli;
mod merge_cli;
mod minilm;
mod model_cli;
mod openai_http;
mod output_guards;
mod pairing_cli;
mod preflight_http;
mod real_model_runs;
mod records_doc;
mod replay_fixture;
mod report_cli;
mod roles_http;
mod run_cli;
mod scripted_reading;
mod search_limits;
mod suite_errors;
mod suite_fixes;
mod suite_sight;
mod tool_props;
