//! What became of every event handed to a hook, for `electop_hook_runs_total{hook,outcome}`.
//!
//! Plain atomics: the hook tasks count from their own threads and the metrics endpoint reads
//! whenever it is scraped, with no lock either could hold the other up on.

use std::sync::atomic::{AtomicU64, Ordering};

/// Which kind of hook ran. Every `--webhook` URL counts under `webhook` (the metric's labels
/// are fixed and a URL may hold a secret, so it never becomes a label).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Hook {
    OnChange,
    Webhook,
}

impl Hook {
    const ALL: [Hook; 2] = [Hook::OnChange, Hook::Webhook];

    pub(super) fn as_str(self) -> &'static str {
        match self {
            Hook::OnChange => "on_change",
            Hook::Webhook => "webhook",
        }
    }
}

/// How one event's delivery to one hook ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Outcome {
    /// The command exited 0; the receiver answered 2xx.
    Ok,
    /// Non-zero exit, a command that could not be started, a non-2xx answer or a connection
    /// that failed on the last attempt.
    Failed,
    /// Cut off at the timeout (the last attempt, for a webhook).
    Timeout,
    /// Never delivered: pushed out of a full queue, or still queued when `drain` ran out of
    /// time.
    Dropped,
}

impl Outcome {
    const ALL: [Outcome; 4] = [
        Outcome::Ok,
        Outcome::Failed,
        Outcome::Timeout,
        Outcome::Dropped,
    ];

    pub(super) fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Failed => "failed",
            Outcome::Timeout => "timeout",
            Outcome::Dropped => "dropped",
        }
    }
}

/// The counts behind `electop_hook_runs_total`. Shared (in an `Arc`) between the hooks that
/// count and the metrics that read; it outlives [`super::Hooks`] so a scrape after shutdown
/// still sees the last counts.
#[derive(Debug, Default)]
pub struct HookStats {
    counts: [[AtomicU64; 4]; 2],
}

impl HookStats {
    pub fn new() -> HookStats {
        HookStats::default()
    }

    pub(super) fn add(&self, hook: Hook, outcome: Outcome, n: u64) {
        self.counts[hook as usize][outcome as usize].fetch_add(n, Ordering::Relaxed);
    }

    /// `(hook, outcome, count)` for hook in `on_change|webhook` and outcome in
    /// `ok|failed|timeout|dropped`, for the metrics. Every pair is listed, zeros included,
    /// so the series exist from the first scrape (a counter that appears late hides its
    /// first increase from `rate()`).
    pub fn snapshot(&self) -> Vec<(&'static str, &'static str, u64)> {
        let mut out = Vec::with_capacity(8);
        for hook in Hook::ALL {
            for outcome in Outcome::ALL {
                let n = self.counts[hook as usize][outcome as usize].load(Ordering::Relaxed);
                out.push((hook.as_str(), outcome.as_str(), n));
            }
        }
        out
    }

    /// One count, for tests and logs.
    pub fn get(&self, hook: &str, outcome: &str) -> u64 {
        self.snapshot()
            .into_iter()
            .find(|(h, o, _)| *h == hook && *o == outcome)
            .map_or(0, |(_, _, n)| n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_snapshot_lists_every_pair_with_its_count() {
        let s = HookStats::new();
        s.add(Hook::Webhook, Outcome::Timeout, 2);
        s.add(Hook::OnChange, Outcome::Ok, 1);
        let snap = s.snapshot();
        assert_eq!(snap.len(), 8);
        assert!(snap.contains(&("webhook", "timeout", 2)));
        assert!(snap.contains(&("on_change", "ok", 1)));
        assert!(snap.contains(&("on_change", "dropped", 0)));
        assert_eq!(s.get("webhook", "timeout"), 2);
        assert_eq!(s.get("webhook", "ok"), 0);
    }
}
