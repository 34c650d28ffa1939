//! The run loop: launching the plan's pending jobs under the budget, taking in each
//! finished episode (recorded, or stopping the run), Ctrl-C, and the breaker.

use super::{
    Finished, Job, RunError, RunOutcome, RunPlan, Shared, budget, pending_jobs, rec_key, run_job,
};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use sieve_record::RecordWriter;
use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::Arc;

/// The circuit breaker: this many episodes in a row failing with the same error stop the
/// run, since the cause (a dead server, a spent quota) would fail every other one too.
pub const BREAKER_RUN: usize = 20;

/// What makes two errors the same cause for the breaker: the first line of the message
/// (what follows quotes a process's stderr, which differs from process to process) with
/// every number masked (a pid, a port, a line number, an exit status).
fn cause(error: &str) -> String {
    let first = error.lines().next().unwrap_or("");
    let mut out = String::with_capacity(first.len());
    for c in first.chars() {
        if c.is_ascii_digit() {
            if !out.ends_with('#') {
                out.push('#');
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[derive(Default)]
struct Breaker {
    last: Option<String>,
    count: usize,
}

impl Breaker {
    /// Sees one finished episode's error; `Some(why)` when the breaker trips.
    fn see(&mut self, error: Option<&str>) -> Option<String> {
        match error {
            None => {
                self.last = None;
                self.count = 0;
                None
            }
            Some(e) => {
                let cause = cause(e);
                if self.last.as_deref() == Some(cause.as_str()) {
                    self.count += 1;
                } else {
                    self.last = Some(cause);
                    self.count = 1;
                }
                (self.count >= BREAKER_RUN).then(|| {
                    format!("{BREAKER_RUN} episodes in a row failed with the same error, so the others would too: {e}")
                })
            }
        }
    }
}

/// The message a panicking task left, for [`RunError::Panicked`].
fn panic_message(e: tokio::task::JoinError) -> String {
    if !e.is_panic() {
        return e.to_string();
    }
    let payload = e.into_panic();
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

/// The progress bar on a terminal, and how often a run without one logs a line instead.
fn progress_for(total: usize) -> (ProgressBar, usize) {
    let progress = ProgressBar::new(total as u64);
    let tty = std::io::stderr().is_terminal();
    // Without a terminal (CI logs, batch jobs) a long run reports every tenth instead.
    let log_every = if tty || total < 500 {
        usize::MAX
    } else {
        total.div_ceil(10)
    };
    if tty {
        progress.set_style(
            ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} episodes ({per_sec}, eta {eta}) {msg}")
                .expect("valid template"),
        );
    } else {
        progress.set_draw_target(ProgressDrawTarget::hidden());
    }
    (progress, log_every)
}

/// What the run does with a finished episode, decided once by [`classify`].
#[derive(Debug, PartialEq)]
enum Verdict {
    /// Record it (an error is its own outcome) and go on.
    Record,
    /// Record it, then admit no more episodes: the breaker tripped.
    RecordThenStop(String),
    /// Do not record it (the episode did not really run, so a resume reruns it) and
    /// admit no more episodes: its failure would fail every episode.
    Stop(String),
    /// Do not record it and go on: it waits for a batch round (`run --batch`), and the
    /// next pass replays it from the cache.
    Defer,
}

/// The run loop's state: the jobs still to launch under the budget, the episodes in
/// flight, the breaker, the outcome so far and the record writer.
struct Execution {
    shared: Arc<Shared>,
    budget: budget::Budget,
    pending: std::iter::Peekable<std::vec::IntoIter<Job>>,
    tasks: tokio::task::JoinSet<Finished>,
    /// Each task's job key, to name an episode that panics.
    in_flight: HashMap<tokio::task::Id, String>,
    concurrency: usize,
    stop_launching: bool,
    interrupts: u32,
    breaker: Breaker,
    outcome: RunOutcome,
    writer: RecordWriter,
    progress: ProgressBar,
    log_every: usize,
    total: usize,
    started: std::time::Instant,
}

/// What the loop does after a Ctrl-C.
#[derive(Debug, PartialEq)]
enum AfterInterrupt {
    /// Finish the episodes in flight, then end.
    Drain,
    /// The second Ctrl-C: end now (what is in flight reruns on resume).
    Stop,
}

/// The one place that decides whether a finished episode's failure stops the run: an
/// error that would fail every episode (the episode's or the answer judge's: bad
/// credentials) stops it unrecorded; the breaker stops it after recording an error that
/// ran [`BREAKER_RUN`] times in a row; any other error is the episode's own outcome.
fn classify(breaker: &mut Breaker, f: &Finished) -> Verdict {
    let error = f.record.error.as_deref();
    if f.deferred && !f.judge_fatal {
        return Verdict::Defer;
    }
    if f.episode_fatal || f.judge_fatal {
        return Verdict::Stop(error.unwrap_or_default().to_string());
    }
    match breaker.see(error) {
        Some(why) => Verdict::RecordThenStop(why),
        None => Verdict::Record,
    }
}

impl Execution {
    /// Launches pending jobs while there is room and the budget admits them.
    fn launch(&mut self) {
        while !self.stop_launching && self.tasks.len() < self.concurrency {
            let Some(next) = self.pending.peek() else {
                break;
            };
            let cell = budget::cell_key(&next.key);
            match self.budget.admit(&cell) {
                budget::Admission::Admit => {}
                budget::Admission::Wait => break,
                budget::Admission::Stop(why) => {
                    self.outcome.budget_stop = Some(why);
                    self.stop_launching = true;
                    break;
                }
            }
            let Some(job) = self.pending.next() else {
                break;
            };
            self.budget.started(&cell);
            let key = job.key.to_string();
            let handle = self.tasks.spawn(run_job(self.shared.clone(), job));
            self.in_flight.insert(handle.id(), key);
        }
    }

    /// Takes in a joined task: a panic is the run's error; an episode is paid for,
    /// classified, and recorded unless its failure stops the run unrecorded.
    fn on_joined(
        &mut self,
        joined: Result<(tokio::task::Id, Finished), tokio::task::JoinError>,
    ) -> Result<(), RunError> {
        let finished = match joined {
            Ok((id, done)) => {
                self.in_flight.remove(&id);
                done
            }
            Err(e) => {
                let key = self.in_flight.remove(&e.id()).unwrap_or_default();
                return Err(RunError::Panicked {
                    key,
                    message: panic_message(e),
                });
            }
        };
        let rec = &finished.record;
        // Whatever ran was paid for, recorded or not; a deferred episode sent nothing (its
        // replies are charged once, when it finishes).
        let cost = if finished.deferred {
            sieve_record::CostMeter::default()
        } else {
            rec.cost.clone()
        };
        self.budget
            .finished(&budget::cell_key(&rec_key(rec)), &rec.defense, &cost);
        // Lineage is per model: a request metered under one role but sent to another
        // role's model (MELON's masked run) is that model's.
        for (c, ids) in &rec.served_models {
            self.outcome
                .served
                .entry(crate::defense::model_role(&rec.defense, *c))
                .or_default()
                .extend(ids.iter().cloned());
        }
        match classify(&mut self.breaker, &finished) {
            Verdict::Stop(why) => {
                self.outcome.fatal = Some(why);
                self.stop_launching = true;
                return Ok(());
            }
            Verdict::RecordThenStop(why) => {
                self.outcome.fatal = Some(why);
                self.stop_launching = true;
            }
            Verdict::Record => {}
            Verdict::Defer => {
                self.outcome.deferred += 1;
                return Ok(());
            }
        }
        if finished.record.error.is_some() {
            self.outcome.errored += 1;
        }
        self.writer.write(&finished.record, &finished.trace)?;
        self.outcome.ran += 1;
        self.progress.inc(1);
        if self.outcome.ran.is_multiple_of(self.log_every) {
            let rate = self.outcome.ran as f64 / self.started.elapsed().as_secs_f64().max(1e-9);
            eprintln!(
                "progress: {}/{} episodes ({rate:.0}/s)",
                self.outcome.ran, self.total
            );
        }
        Ok(())
    }

    /// A Ctrl-C: the first stops launching and drains; the second drops what is in
    /// flight.
    fn on_interrupt(&mut self) -> AfterInterrupt {
        self.interrupts += 1;
        self.stop_launching = true;
        self.outcome.interrupted = true;
        if self.interrupts == 1 {
            self.progress.println("interrupted: finishing episodes in flight (Ctrl-C again to stop at once); rerun the same command to resume");
            AfterInterrupt::Drain
        } else {
            self.tasks.abort_all();
            self.progress.println(
                "stopped at once; episodes in flight were dropped and run again on resume",
            );
            AfterInterrupt::Stop
        }
    }

    /// The outcome, with the budget's ledger.
    fn finish(self) -> RunOutcome {
        self.progress.finish_and_clear();
        let mut outcome = self.outcome;
        outcome.ledger = self.budget.ledger;
        outcome
    }
}

/// Runs the plan's jobs not yet recorded in `plan.out`, appending each as it finishes.
pub async fn execute(plan: RunPlan) -> Result<RunOutcome, RunError> {
    std::fs::create_dir_all(&plan.out)?;
    let mut outcome = RunOutcome::default();
    let (todo, recorded) = pending_jobs(&plan, &mut outcome)?;
    let mut budget = plan.budget.clone();
    if let Some(why) = budget.reconcile(&recorded) {
        eprintln!(
            "warning: {}: {}",
            crate::escape::terminal(&plan.out.display().to_string()),
            why
        );
    }
    let writer = RecordWriter::open(&plan.out)?;
    let (progress, log_every) = progress_for(todo.len());
    let schemas = plan.suites.iter().map(|s| s.tools.schemas()).collect();
    let mut run = Execution {
        concurrency: plan.concurrency.max(1),
        budget,
        shared: Arc::new(Shared { plan, schemas }),
        total: todo.len(),
        pending: todo.into_iter().peekable(),
        tasks: tokio::task::JoinSet::new(),
        in_flight: HashMap::new(),
        stop_launching: false,
        interrupts: 0,
        breaker: Breaker::default(),
        outcome,
        writer,
        progress,
        log_every,
        started: std::time::Instant::now(),
    };
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    loop {
        run.launch();
        if run.tasks.is_empty() {
            break;
        }
        tokio::select! {
            joined = run.tasks.join_next_with_id() => {
                let Some(joined) = joined else { break };
                run.on_joined(joined)?;
            }
            _ = &mut ctrl_c, if run.interrupts < 2 => {
                match run.on_interrupt() {
                    AfterInterrupt::Drain => ctrl_c.set(tokio::signal::ctrl_c()),
                    AfterInterrupt::Stop => break,
                }
            }
        }
    }
    Ok(run.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use sieve_record::{EpisodeRecord, TraceRecord};

    #[tokio::test]
    async fn a_panicking_episode_is_its_own_error_naming_the_episode() {
        let mut set = tokio::task::JoinSet::new();
        let index = 3;
        set.spawn(async move {
            let episodes: [u8; 2] = [0, 1];
            assert!(index < episodes.len(), "index out of bounds: {index}");
        });
        let e = set.join_next().await.unwrap().unwrap_err();
        let err = RunError::Panicked {
            key: "s/t|u1|-".into(),
            message: panic_message(e),
        };
        let text = err.to_string();
        assert!(text.contains("episode s/t|u1|- panicked"), "{text}");
        assert!(text.contains("index out of bounds"), "{text}");
        assert!(!text.contains("writing results"), "{text}");
    }

    fn finished(error: Option<&str>, episode_fatal: bool, judge_fatal: bool) -> Finished {
        let record: EpisodeRecord = serde_json::from_value(serde_json::json!({
            "run_id": "r", "key": "k", "suite": "dojo-style/banking",
            "user_task": "user_task_0", "injection_task": null, "attack": null,
            "defense": "none", "model": "m", "simulated": false, "seed": 0,
            "utility": false, "attack_success": false, "severity": null, "steps": 1,
            "hit_step_limit": false, "proposed_calls": 0, "blocked": 0, "asked_user": 0,
            "faked": 0, "escalated": 0, "approved": 0, "cost": {}, "latency_ms": 0.0,
            "error": error, "version": "t"
        }))
        .unwrap();
        Finished {
            trace: TraceRecord {
                key: record.key.clone(),
                messages: Vec::new(),
                calls: Vec::new(),
                answer: String::new(),
                payload: None,
            },
            record,
            episode_fatal,
            judge_fatal,
            deferred: false,
        }
    }

    #[test]
    fn a_deferred_episode_is_neither_recorded_nor_seen_by_the_breaker() {
        let mut b = Breaker::default();
        let mut f = finished(Some("waiting for the batch round"), false, false);
        f.deferred = true;
        for _ in 0..(BREAKER_RUN * 2) {
            assert_eq!(classify(&mut b, &f), Verdict::Defer);
        }
    }

    #[test]
    fn one_place_decides_what_stops_the_run() {
        let mut b = Breaker::default();
        assert_eq!(
            classify(&mut b, &finished(None, false, false)),
            Verdict::Record
        );
        assert_eq!(
            classify(&mut b, &finished(Some("HTTP 401"), true, false)),
            Verdict::Stop("HTTP 401".into()),
            "the episode's fatal error stops the run unrecorded"
        );
        assert_eq!(
            classify(
                &mut b,
                &finished(Some("answer judge: HTTP 401"), false, true)
            ),
            Verdict::Stop("answer judge: HTTP 401".into()),
            "so does the answer judge's"
        );
        for _ in 0..BREAKER_RUN - 1 {
            assert_eq!(
                classify(&mut b, &finished(Some("HTTP 500"), false, false)),
                Verdict::Record,
                "an error is the episode's own outcome"
            );
        }
        match classify(&mut b, &finished(Some("HTTP 500"), false, false)) {
            Verdict::RecordThenStop(why) => assert!(why.contains("HTTP 500"), "{why}"),
            other => panic!("the breaker did not trip: {other:?}"),
        }
    }

    #[test]
    fn breaker_trips_on_a_run_of_one_cause_only() {
        let mut b = Breaker::default();
        for _ in 0..BREAKER_RUN - 1 {
            assert_eq!(b.see(Some("connection refused")), None);
        }
        assert_eq!(b.see(None), None, "a success resets it");
        for i in 0..BREAKER_RUN * 2 {
            let e = if i % 2 == 0 { "a" } else { "b" };
            assert_eq!(b.see(Some(e)), None, "alternating causes do not trip it");
        }
        for _ in 0..BREAKER_RUN - 1 {
            b.see(Some("HTTP 500"));
        }
        assert!(b.see(Some("HTTP 500")).unwrap().contains("HTTP 500"));
    }

    #[test]
    fn breaker_sees_one_cause_through_pids_and_stderr_tails() {
        let mut b = Breaker::default();
        let mut tripped = None;
        for i in 0..BREAKER_RUN {
            let e = format!(
                "suite provider failed: the provider exited before answering `call` (crashed) (exit status: 1)\n  its stderr ends: worker {} died at 0x{:x}",
                4000 + i,
                i * 977
            );
            tripped = b.see(Some(&e));
        }
        assert!(tripped.is_some(), "a pid in the text kept the breaker open");
        let mut b = Breaker::default();
        for i in 0..BREAKER_RUN * 2 {
            let e = if i % 2 == 0 {
                "HTTP 500"
            } else {
                "HTTP 429 Too Many Requests"
            };
            assert_eq!(b.see(Some(e)), None, "two causes are not one");
        }
    }
}
