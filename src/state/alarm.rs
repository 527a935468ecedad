//! What is wrong with an election, worked out from plain data, so triage is tested without a
//! screen or a store.

use std::collections::VecDeque;
use std::time::{Duration, SystemTime};

use crate::model::{Election, HistoryEntry};

/// The sliding window leader changes are counted over for the RATE column and flapping.
pub(crate) const FLAP_WINDOW: Duration = Duration::from_secs(60);

/// One thing wrong with an election, most severe first (the order rows are triaged in).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Alarm {
    /// Two participants believe they lead at once (known where electop sees beliefs: the demo).
    SplitBrain,
    NoLeader,
    /// A leader deposed with its lease alive may still believe it leads.
    Deposed,
    /// The leader changes more often than the configured threshold.
    Flapping,
    /// A key without a lease never expires and blocks everyone behind it.
    Zombie,
    /// No contact with the store: the row may be out of date.
    Stale,
}

impl Alarm {
    pub const ALL: [Alarm; 6] = [
        Alarm::SplitBrain,
        Alarm::NoLeader,
        Alarm::Deposed,
        Alarm::Flapping,
        Alarm::Zombie,
        Alarm::Stale,
    ];

    /// A mark that reads without colour (NO_COLOR) and in a one-cell column.
    pub fn glyph(self) -> &'static str {
        match self {
            Alarm::SplitBrain => "‼",
            Alarm::NoLeader => "✖",
            Alarm::Deposed => "⚠",
            Alarm::Flapping => "↯",
            Alarm::Zombie => "∞",
            Alarm::Stale => "◐",
        }
    }

    /// The name in `status` output and the help legend.
    pub fn code(self) -> &'static str {
        match self {
            Alarm::SplitBrain => "split-brain",
            Alarm::NoLeader => "no-leader",
            Alarm::Deposed => "deposed",
            Alarm::Flapping => "flapping",
            Alarm::Zombie => "zombie",
            Alarm::Stale => "stale",
        }
    }

    /// How the header counts it: `1 no leader`, `2 zombie keys`.
    pub fn counted(self, n: usize) -> String {
        let (one, many) = match self {
            Alarm::SplitBrain => ("split brain", "split brains"),
            Alarm::NoLeader => ("no leader", "no leader"),
            Alarm::Deposed => ("deposed", "deposed"),
            Alarm::Flapping => ("flapping", "flapping"),
            Alarm::Zombie => ("zombie key", "zombie keys"),
            Alarm::Stale => ("stale", "stale"),
        };
        format!("{n} {}", if n == 1 { one } else { many })
    }
}

/// The alarms of one election: a small set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Alarms(u8);

impl Alarms {
    pub fn insert(&mut self, a: Alarm) {
        self.0 |= 1 << a as u8;
    }

    pub fn has(self, a: Alarm) -> bool {
        self.0 & (1 << a as u8) != 0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub fn iter(self) -> impl Iterator<Item = Alarm> {
        Alarm::ALL.into_iter().filter(move |a| self.has(*a))
    }

    /// The most severe, which decides the row's mark and its place in triage order.
    pub fn worst(self) -> Option<Alarm> {
        self.iter().next()
    }

    /// `no-leader,zombie`, or `-` for none.
    pub fn codes(self) -> String {
        let codes: Vec<&str> = self.iter().map(Alarm::code).collect();
        if codes.is_empty() {
            "-".to_string()
        } else {
            codes.join(",")
        }
    }
}

/// What the alarms of an election depend on beyond the election itself.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Context {
    pub stale: bool,
    pub split_brain: bool,
    /// Leader changes per minute over [`FLAP_WINDOW`].
    pub rate: f64,
    /// Flapping above this rate.
    pub flap_per_min: u32,
    /// No holder is this source's resting state (a lock table between runs), not an alarm.
    pub idle_is_normal: bool,
}

/// Where an election goes in triage order: the worst alarm first, then more alarms first;
/// no alarm last. Ties are broken by name, then source.
pub(crate) fn triage_rank(alarms: Alarms) -> (usize, i64) {
    let worst = alarms
        .worst()
        .map(|w| w as usize)
        .unwrap_or(Alarm::ALL.len());
    (worst, -(alarms.iter().count() as i64))
}

pub(crate) fn of(e: &Election, cx: &Context) -> Alarms {
    let mut a = Alarms::default();
    let checks = [
        (cx.split_brain, Alarm::SplitBrain),
        (e.leader.is_none() && !cx.idle_is_normal, Alarm::NoLeader),
        (e.deposed.is_some(), Alarm::Deposed),
        (cx.rate > f64::from(cx.flap_per_min), Alarm::Flapping),
        (e.has_zombie(), Alarm::Zombie),
        (cx.stale, Alarm::Stale),
    ];
    for (on, alarm) in checks {
        if on {
            a.insert(alarm);
        }
    }
    a
}

/// Leader changes per minute over the `window` before `wall`, and when the oldest change it
/// counted was seen (the rate next moves at that plus the window). Only changes with a time
/// count: ones replayed from etcd's past revisions have none and say nothing about the rate
/// now.
pub(crate) fn rate_and_oldest(
    history: &VecDeque<HistoryEntry>,
    wall: SystemTime,
    window: Duration,
) -> (f64, Option<SystemTime>) {
    let since = wall.checked_sub(window).unwrap_or(SystemTime::UNIX_EPOCH);
    // Newest first, stopping at the first change older than the window: O(changes in it).
    let (mut n, mut oldest) = (0usize, None);
    for at in history.iter().rev().filter_map(|h| h.at) {
        if at <= since {
            break;
        }
        n += 1;
        oldest = Some(at);
    }
    (n as f64 * 60.0 / window.as_secs_f64().max(1.0), oldest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Cause, Scheme};

    fn change(at: Option<SystemTime>) -> HistoryEntry {
        HistoryEntry {
            at,
            revision: None,
            from: Some("a".into()),
            to: Some("b".into()),
            cause: Cause::TakenOver,
            by: None,
        }
    }

    fn t0() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000)
    }

    #[test]
    fn the_window_slides_past_old_changes() {
        // A change every 2 s for 100 s.
        let h: VecDeque<HistoryEntry> = (0..50)
            .map(|i| change(Some(t0() + Duration::from_secs(2 * i))))
            .collect();
        let end = t0() + Duration::from_secs(99);
        assert_eq!(rate_and_oldest(&h, end, FLAP_WINDOW).0, 30.0);
        // A minute after the last change, none is in the window any more.
        let later = t0() + Duration::from_secs(98 + 60);
        assert_eq!(rate_and_oldest(&h, later, FLAP_WINDOW).0, 0.0);
        // Halfway: the changes of the last 30 s of flapping are left.
        let half = t0() + Duration::from_secs(98 + 30);
        assert_eq!(rate_and_oldest(&h, half, FLAP_WINDOW).0, 15.0);
    }

    #[test]
    fn replayed_changes_without_time_do_not_count() {
        let mut h: VecDeque<HistoryEntry> = (0..10).map(|_| change(None)).collect();
        h.push_back(change(Some(t0())));
        assert_eq!(rate_and_oldest(&h, t0(), FLAP_WINDOW).0, 1.0);
    }

    #[test]
    fn flapping_is_above_the_threshold_and_alarms_are_ordered_by_severity() {
        let mut e = Election::new(0, "x".into(), Scheme::EtcdElection);
        let cx = |rate| Context {
            stale: true,
            split_brain: false,
            rate,
            flap_per_min: 4,
            idle_is_normal: false,
        };
        assert!(!of(&e, &cx(4.0)).has(Alarm::Flapping), "at the threshold");
        let idle = Context {
            idle_is_normal: true,
            ..cx(0.0)
        };
        assert!(
            !of(&e, &idle).has(Alarm::NoLeader),
            "a lock at rest is no alarm"
        );
        let a = of(&e, &cx(5.0));
        assert!(a.has(Alarm::Flapping));
        assert_eq!(a.worst(), Some(Alarm::NoLeader));
        assert_eq!(a.codes(), "no-leader,flapping,stale");
        e.leader = Some(crate::model::Candidate {
            id: "n".into(),
            raw_id: b"n".to_vec(),
            key: "k".into(),
            raw_key: b"k".to_vec(),
            lease: Some(0),
            create_revision: 1,
            mod_revision: 1,
            stamp: None,
            ttl: None,
        });
        let a = of(&e, &cx(0.0));
        assert_eq!(a.codes(), "zombie,stale");
        assert_eq!(Alarm::Zombie.counted(2), "2 zombie keys");
        assert_eq!(Alarm::SplitBrain.counted(1), "1 split brain");
    }
}
