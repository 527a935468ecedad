//! Change hooks for `electop serve`: `--on-change CMD` and `--webhook URL` get every leader
//! change (and alarm) the observer passes them, as the line `watch --json` prints.
//!
//! The observer must never wait on a hook: a receiver that hangs or a command that sleeps
//! would otherwise freeze what serve reports. So [`Hooks::send`] only queues (a short lock,
//! no await), and each hook has its own queue drained by one task. One task per hook keeps
//! the events in order, which matters more to a hook than speed: "b then a" is a different
//! story from "a then b". Every event ends as exactly one count in [`HookStats`]: delivered,
//! failed, timed out, or dropped (a full queue, or shutdown out of time), and every outcome
//! but `ok` is logged, so none is lost silently.
//!
//! Logs name an event by kind, source handle and election, a webhook by scheme and host
//! only (its path is often a token), and never print the command (it may hold one).

mod command;
mod payload;
mod queue;
mod stats;
mod webhook;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::task::JoinHandle;

use crate::model::Event;
use payload::Payload;
pub use payload::event_json;
use queue::Queue;
pub use stats::HookStats;
use stats::{Hook, Outcome};
use webhook::Webhook;

/// What the hooks are and how far each may go. `Default` holds the documented defaults and
/// no hooks.
#[derive(Clone, PartialEq, Eq)]
pub struct HookConfig {
    /// Run with `sh -c CMD` for every event.
    pub on_change: Option<String>,
    /// `http://host:port/path`, each POSTed every event. https is refused at start (not
    /// supported yet).
    pub webhooks: Vec<String>,
    /// The longest a command may run, or one POST attempt may take (connecting included).
    pub timeout: Duration,
    /// Webhook attempts after the first (backoff 200 ms, doubling).
    pub retries: u32,
    /// Events waiting per hook before the oldest is dropped (and counted as dropped).
    pub queue: usize,
}

impl Default for HookConfig {
    fn default() -> HookConfig {
        HookConfig {
            on_change: None,
            webhooks: Vec::new(),
            timeout: Duration::from_secs(10),
            retries: 3,
            queue: 10_000,
        }
    }
}

/// Written by hand so that printing a config (in a log, an error) shows neither the command
/// nor the webhooks' paths, which may carry tokens.
impl std::fmt::Debug for HookConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookConfig")
            .field("on_change", &self.on_change.as_ref().map(|_| "…"))
            .field("webhooks", &self.webhooks.len())
            .field("timeout", &self.timeout)
            .field("retries", &self.retries)
            .field("queue", &self.queue)
            .finish()
    }
}

/// Why the hooks could not start: each names the setting to fix.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    #[error("--on-change is empty: give the command to run, e.g. --on-change 'logger -t electop'")]
    EmptyCommand,
    /// `position` counts the webhooks from 1, in the order given.
    #[error("webhook {position}: {reason}")]
    Webhook { position: usize, reason: String },
    #[error("the hook timeout is 0: give it a length, e.g. 10s")]
    ZeroTimeout,
    #[error("the hooks need a tokio runtime: start them from inside one")]
    NoRuntime,
}

/// One hook's queue, as `send` sees it.
struct Line {
    hook: Hook,
    queue: Arc<Queue>,
    /// For logs: `on-change command` or `webhook http://host:port`.
    name: String,
    /// Events this hook lost to a full queue, to log the first and then each tenfold.
    dropped: AtomicU64,
}

/// The running hooks: a queue and a task per hook. Dropping it without [`Hooks::drain`]
/// lets the tasks deliver what is queued and end on their own.
pub struct Hooks {
    lines: Vec<Line>,
    tasks: Vec<JoinHandle<()>>,
    stats: Arc<HookStats>,
}

impl Hooks {
    /// Checks the config and spawns a task per hook on the current tokio runtime. With no
    /// hook configured it spawns nothing and `send` costs nothing.
    pub fn start(cfg: HookConfig, stats: Arc<HookStats>) -> Result<Hooks, HookError> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(HookError::NoRuntime);
        }
        if cfg.timeout.is_zero() {
            return Err(HookError::ZeroTimeout);
        }
        if cfg.on_change.as_ref().is_some_and(|c| c.trim().is_empty()) {
            return Err(HookError::EmptyCommand);
        }
        // Every URL is checked before anything starts: a typo in the third is reported
        // without the first two already running.
        let webhooks = cfg
            .webhooks
            .iter()
            .enumerate()
            .map(|(i, url)| Webhook::new(url, i + 1, cfg.timeout))
            .collect::<Result<Vec<_>, _>>()?;
        let mut hooks = Hooks {
            lines: Vec::new(),
            tasks: Vec::new(),
            stats,
        };
        if let Some(cmd) = cfg.on_change {
            let (timeout, stats) = (cfg.timeout, hooks.stats.clone());
            hooks.add(Hook::OnChange, "on-change command".into(), cfg.queue, |q| {
                run_commands(cmd, q, stats, timeout)
            });
        }
        for w in webhooks {
            let (timeout, retries, stats) = (cfg.timeout, cfg.retries, hooks.stats.clone());
            let name = format!("webhook {}", w.shown);
            hooks.add(Hook::Webhook, name, cfg.queue, |q| {
                post_all(w, q, stats, timeout, retries)
            });
        }
        Ok(hooks)
    }

    fn add<F>(
        &mut self,
        hook: Hook,
        name: String,
        capacity: usize,
        task: impl FnOnce(Arc<Queue>) -> F,
    ) where
        F: Future<Output = ()> + Send + 'static,
    {
        let queue = Arc::new(Queue::new(capacity));
        self.tasks.push(tokio::spawn(task(queue.clone())));
        self.lines.push(Line {
            hook,
            queue,
            name,
            dropped: AtomicU64::new(0),
        });
    }

    /// Queues the event for every hook. Never blocks, never awaits.
    ///
    /// It takes the `watch --json` line as a JSON value (build it with [`event_json`])
    /// rather than the [`Event`], because that line carries the source's handle
    /// (`source_id`), which only the caller knows. A value's keys come out sorted, and
    /// building it costs the caller a serialization; [`Hooks::send_event`] keeps
    /// `watch --json`'s own field order and leaves the work to the hook tasks.
    pub fn send(&self, event_json: serde_json::Value) {
        if !self.lines.is_empty() {
            self.queue(Payload::from_value(event_json));
        }
    }

    /// [`Hooks::send`] for an [`Event`] of the source whose handle is `source_id`: the JSON
    /// is byte for byte the line `watch --json` prints. It only clones the event; the line
    /// is made by the first hook task that delivers it.
    pub fn send_event(&self, event: &Event, source_id: &str) {
        if !self.lines.is_empty() {
            self.queue(Payload::from_event(event, source_id));
        }
    }

    fn queue(&self, p: Payload) {
        let p = Arc::new(p);
        for line in &self.lines {
            let n = line.queue.push(p.clone());
            if n > 0 {
                self.stats.add(line.hook, Outcome::Dropped, n);
                let total = line.dropped.fetch_add(n, Ordering::Relaxed) + n;
                // A burst into a stuck hook drops thousands: log the first and each tenfold
                // (the metric has every one).
                if is_power_of_ten(total) {
                    tracing::warn!(
                        "{}: queue full, dropped the oldest event ({total} dropped so far)",
                        line.name
                    );
                }
            }
        }
    }

    /// Waits, at most `within`, for every queued event to be delivered: for a clean
    /// SIGTERM. What is still queued or running then is cut off, counted as dropped and
    /// logged.
    pub async fn drain(mut self, within: Duration) {
        for line in &self.lines {
            line.queue.close();
        }
        let mut tasks = std::mem::take(&mut self.tasks);
        let all = futures::future::join_all(tasks.iter_mut());
        if tokio::time::timeout(within, all).await.is_ok() {
            return;
        }
        for line in &self.lines {
            let n = line.queue.take_all();
            if n > 0 {
                self.stats.add(line.hook, Outcome::Dropped, n);
                tracing::warn!(
                    "{}: shutting down, {n} queued events not delivered",
                    line.name
                );
            }
        }
        // Aborting drops the event in flight, which counts itself as dropped (and kills a
        // command's process group); waiting for that makes the counts final on return.
        for task in &tasks {
            task.abort();
        }
        for task in tasks {
            let _ = task.await;
        }
    }
}

impl Drop for Hooks {
    fn drop(&mut self) {
        for line in &self.lines {
            line.queue.close();
        }
    }
}

fn is_power_of_ten(mut n: u64) -> bool {
    while n >= 10 && n.is_multiple_of(10) {
        n /= 10;
    }
    n == 1
}

/// The on-change task: one command at a time, in queue order.
async fn run_commands(cmd: String, queue: Arc<Queue>, stats: Arc<HookStats>, timeout: Duration) {
    while let Some(p) = queue.pop().await {
        let flight = InFlight::new(&stats, Hook::OnChange, &p);
        let (outcome, why) = command::run(&cmd, &p, timeout).await;
        flight.end(outcome, &why, "on-change command");
    }
}

/// A webhook's task: one event at a time (its retries included), in queue order.
async fn post_all(
    w: Webhook,
    queue: Arc<Queue>,
    stats: Arc<HookStats>,
    timeout: Duration,
    retries: u32,
) {
    let name = format!("webhook {}", w.shown);
    while let Some(p) = queue.pop().await {
        let flight = InFlight::new(&stats, Hook::Webhook, &p);
        let (outcome, why) = w.post(&p, timeout, retries).await;
        flight.end(outcome, &why, &name);
    }
}

/// One event being delivered. It counts exactly once: its outcome when it ends, or as
/// dropped if the task is aborted first (drain out of time).
struct InFlight<'a> {
    stats: &'a HookStats,
    hook: Hook,
    payload: &'a Payload,
    ended: bool,
}

impl<'a> InFlight<'a> {
    fn new(stats: &'a HookStats, hook: Hook, payload: &'a Payload) -> InFlight<'a> {
        InFlight {
            stats,
            hook,
            payload,
            ended: false,
        }
    }

    fn end(mut self, outcome: Outcome, why: &str, name: &str) {
        self.ended = true;
        self.stats.add(self.hook, outcome, 1);
        if outcome != Outcome::Ok {
            tracing::warn!(
                "{name} {} for {}: {why}",
                outcome.as_str(),
                self.payload.describe()
            );
        }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if !self.ended {
            self.stats.add(self.hook, Outcome::Dropped, 1);
            tracing::warn!(
                "shutting down: the {} hook's delivery of {} was cut off",
                self.hook.as_str(),
                self.payload.describe()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_are_logged_at_the_first_and_each_tenfold() {
        let logged: Vec<u64> = (1..=2000).filter(|n| is_power_of_ten(*n)).collect();
        assert_eq!(logged, [1, 10, 100, 1000]);
    }

    #[test]
    fn starting_outside_a_runtime_or_with_bad_settings_names_what_to_fix() {
        let stats = Arc::new(HookStats::new());
        let err = |cfg: HookConfig| match Hooks::start(cfg, stats.clone()) {
            Ok(_) => panic!("started"),
            Err(e) => e.to_string(),
        };
        assert!(err(HookConfig::default()).contains("tokio runtime"));
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        let _in = rt.enter();
        let empty = HookConfig {
            on_change: Some("  ".into()),
            ..HookConfig::default()
        };
        assert!(err(empty).contains("--on-change is empty"));
        let zero = HookConfig {
            timeout: Duration::ZERO,
            ..HookConfig::default()
        };
        assert!(err(zero).contains("timeout is 0"));
        let https = HookConfig {
            webhooks: vec![
                "http://127.0.0.1:1/a".into(),
                "https://x.example/T/S".into(),
            ],
            ..HookConfig::default()
        };
        assert!(err(https).starts_with("webhook 2: https://x.example: https is not supported"));
    }

    #[test]
    fn a_config_prints_without_its_command_or_urls() {
        let cfg = HookConfig {
            on_change: Some("curl -H 'token: abc'".into()),
            webhooks: vec!["http://h/SECRET".into()],
            ..HookConfig::default()
        };
        let shown = format!("{cfg:?}");
        assert!(
            !shown.contains("abc") && !shown.contains("SECRET"),
            "{shown}"
        );
    }
}
