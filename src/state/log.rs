//! The events view's timeline: every change across elections and sources, and the outcome of
//! every admin action, in a bounded ring (the oldest go first).

use std::collections::{HashMap, VecDeque};
use std::time::SystemTime;

use crate::model::{Event, EventKind};

/// Entries kept; enough for an incident, bounded for a dashboard left running for weeks.
pub(crate) const KEPT: usize = 5000;

/// How an entry is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tone {
    /// A leader elected or changed.
    Change,
    /// A leader lost, a source down: something is wrong.
    Bad,
    /// An admin action that was done.
    Done,
    /// An admin action refused or failed.
    Failed,
    /// Anything else: connections, candidates joining.
    Info,
}

#[derive(Clone, Debug, PartialEq)]
pub struct LogEntry {
    /// `None`: replayed from the store's past, which has no time; `revision` says when.
    pub at: Option<SystemTime>,
    pub revision: Option<i64>,
    /// The source's short handle (`etcd1`).
    pub source: String,
    pub election: Option<String>,
    /// `leader a → b`, `candidate c joined`, `reelect jobs: done: …`.
    pub text: String,
    /// Why, and for a failover how long there was no leader.
    pub cause: Option<String>,
    pub tone: Tone,
}

impl LogEntry {
    /// Everything a filter looks at, in one string.
    pub fn haystack(&self) -> String {
        format!(
            "{} {} {} {}",
            self.source,
            self.election.as_deref().unwrap_or(""),
            self.text,
            self.cause.as_deref().unwrap_or("")
        )
    }
}

#[derive(Clone, Debug, Default)]
pub struct EventLog {
    /// Oldest first.
    pub entries: VecDeque<LogEntry>,
    /// When each (source, election) lost its leader, to time the failover when one returns.
    leaderless: HashMap<(String, String), SystemTime>,
}

impl EventLog {
    pub fn push(&mut self, entry: LogEntry) {
        if self.entries.len() >= KEPT {
            self.entries.pop_front();
        }
        self.entries.push_back(entry);
    }

    /// A backend's event, under the source's short handle.
    pub fn event(&mut self, e: &Event, short: &str) {
        let who = |x: &Option<String>| x.clone().unwrap_or_else(|| "∅".into());
        let (text, tone) = match e.kind {
            EventKind::LeaderElected | EventKind::LeaderChanged => (
                format!("leader {} → {}", who(&e.from), who(&e.to)),
                Tone::Change,
            ),
            EventKind::LeaderLost => (format!("leader {} → ∅", who(&e.from)), Tone::Bad),
            EventKind::Attributed => (
                format!("leader {} → {} was forced", who(&e.from), who(&e.to)),
                Tone::Done,
            ),
            EventKind::Current => (format!("leader {} now", who(&e.to)), Tone::Info),
            EventKind::CandidateJoined => (
                format!("candidate {} joined", who(&e.to.clone().or(e.from.clone()))),
                Tone::Info,
            ),
            EventKind::CandidateLeft => (
                format!("candidate {} left", who(&e.from.clone().or(e.to.clone()))),
                Tone::Info,
            ),
            kind => (
                source_text(kind).to_string(),
                if matches!(kind, EventKind::Disconnected | EventKind::MemberDown) {
                    Tone::Bad
                } else {
                    Tone::Info
                },
            ),
        };
        let mut cause: Vec<String> = e
            .cause
            .map(|c| c.as_str().to_string())
            .into_iter()
            .collect();
        let leader_change = matches!(
            e.kind,
            EventKind::LeaderElected | EventKind::LeaderChanged | EventKind::LeaderLost
        );
        if leader_change {
            cause.extend(self.failover(e));
        }
        cause.extend(e.detail.clone());
        self.push(LogEntry {
            at: e.at,
            revision: e.revision,
            source: short.to_string(),
            election: e.election.clone(),
            text,
            cause: (!cause.is_empty()).then(|| cause.join(" · ")),
            tone,
        });
    }

    /// How long the election was without a leader, when one is elected after a loss seen live.
    fn failover(&mut self, e: &Event) -> Option<String> {
        let key = (e.source.clone(), e.election.clone()?);
        let at = e.at?;
        match (e.from.is_some(), e.to.is_some()) {
            (true, false) => {
                self.leaderless.insert(key, at);
                None
            }
            (false, true) => {
                let lost = self.leaderless.remove(&key)?;
                let ms = at.duration_since(lost).ok()?.as_millis() as i64;
                Some(format!(
                    "failover {} without leader",
                    crate::model::time::duration_ms(ms)
                ))
            }
            _ => {
                self.leaderless.remove(&key);
                None
            }
        }
    }
}

/// How a source-wide event reads in the timeline.
pub(crate) fn source_text(kind: EventKind) -> &'static str {
    match kind {
        EventKind::LeaderElected => "leader elected",
        EventKind::LeaderChanged => "leader changed",
        EventKind::LeaderLost => "leader lost",
        EventKind::CandidateJoined => "candidate joined",
        EventKind::CandidateLeft => "candidate left",
        EventKind::HistoryCompacted => "history compacted",
        EventKind::Connected => "connected",
        EventKind::Disconnected => "disconnected",
        EventKind::Synced => "synced: live from here",
        EventKind::Stale => "stale",
        EventKind::Fresh => "fresh again",
        EventKind::MemberDown => "member down",
        EventKind::MemberUp => "member up",
        EventKind::Attributed => "an earlier change was forced by an admin",
        EventKind::Current => "as it stands",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Cause;
    use std::time::Duration;

    fn ev(kind: EventKind, from: Option<&str>, to: Option<&str>, secs: u64) -> Event {
        Event {
            at: Some(SystemTime::UNIX_EPOCH + Duration::from_secs(secs)),
            source: "etcd x /e/".into(),
            election: Some("jobs".into()),
            kind,
            from: from.map(str::to_string),
            to: to.map(str::to_string),
            cause: Some(Cause::LeaseExpired),
            was: None,
            revision: None,
            replayed: false,
            detail: None,
        }
    }

    #[test]
    fn a_loss_then_an_election_is_timed_as_a_failover() {
        let mut log = EventLog::default();
        log.event(&ev(EventKind::LeaderLost, Some("a"), None, 100), "etcd1");
        log.event(&ev(EventKind::LeaderElected, None, Some("b"), 103), "etcd1");
        let last = log.entries.back().expect("entry");
        assert_eq!(last.text, "leader ∅ → b");
        assert_eq!(
            last.cause.as_deref(),
            Some("lease_expired · failover 3.0s without leader")
        );
        assert_eq!(log.entries[0].tone, Tone::Bad);
    }

    #[test]
    fn the_ring_is_bounded() {
        let mut log = EventLog::default();
        for i in 0..KEPT + 10 {
            log.event(
                &ev(EventKind::LeaderChanged, Some("a"), Some("b"), i as u64),
                "etcd1",
            );
        }
        assert_eq!(log.entries.len(), KEPT);
        assert_eq!(
            log.entries.front().and_then(|e| e.at),
            Some(SystemTime::UNIX_EPOCH + Duration::from_secs(10))
        );
    }
}
