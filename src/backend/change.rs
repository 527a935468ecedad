//! The leader-change decision every store shares: from the leader before and after, whether
//! the leadership changed and why; then the admin action that forced it, if one did, names
//! the cause; then the history entry and the event it makes. A store says only what it
//! alone knows: whether the new leader holds the old one's tenure (the same etcd key and
//! create revision, the same row, the same znode), why an old leader went, and what a new
//! holder of the same tenure means (a proclamation, a take-over, an expired term).

use std::time::SystemTime;

use crate::model::{Cause, Election, Event, EventKind, HistoryEntry};

/// What a store's changes did to its elections, in the store's order: the elections to
/// send and the events they make. Every tracker returns it; `engine::show` sends it.
#[derive(Default, Debug)]
pub(crate) struct Changes {
    pub changed: Vec<Election>,
    pub events: Vec<Event>,
}

/// A leader change as the store shows it, before any admin action is taken into account.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LeaderChange {
    pub kind: EventKind,
    pub from: Option<String>,
    pub to: Option<String>,
    pub cause: Cause,
}

/// What changed between the leader `old` and `new` (their ids), if anything.
/// `same_tenure`: both hold the same tenure (key, row, node), so a different id there was
/// written in place (`in_place` says why); `gone` says why the old leader's tenure ended,
/// asked only when it did.
pub(crate) fn decide(
    old: Option<&str>,
    new: Option<&str>,
    same_tenure: bool,
    gone: impl FnOnce() -> Cause,
    in_place: Cause,
) -> Option<LeaderChange> {
    let change = |kind, from: Option<&str>, to: Option<&str>, cause| LeaderChange {
        kind,
        from: from.map(str::to_string),
        to: to.map(str::to_string),
        cause,
    };
    match (old, new) {
        (None, Some(_)) => Some(change(EventKind::LeaderElected, None, new, Cause::Elected)),
        (Some(_), None) => Some(change(EventKind::LeaderLost, old, None, gone())),
        (Some(_), Some(_)) if !same_tenure => {
            Some(change(EventKind::LeaderChanged, old, new, gone()))
        }
        (Some(o), Some(n)) if o != n => Some(change(EventKind::LeaderChanged, old, new, in_place)),
        _ => None,
    }
}

/// A leader change as recorded: the history entry, with the cause an admin action gave it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Recorded {
    pub kind: EventKind,
    pub entry: HistoryEntry,
}

impl LeaderChange {
    /// Records the change in `e`'s history (keeping `limit` entries). `forced`: the cause and
    /// author of the admin action that made it, which win over what the store suggests.
    pub(crate) fn record(
        self,
        e: &mut Election,
        forced: Option<(Cause, String)>,
        (at, revision): (Option<SystemTime>, Option<i64>),
        limit: usize,
    ) -> Recorded {
        let (cause, by) = match forced {
            Some((cause, by)) => (cause, Some(by)),
            None => (self.cause, None),
        };
        let entry = HistoryEntry {
            at,
            revision,
            from: self.from,
            to: self.to,
            cause,
            by,
        };
        e.record(entry.clone(), limit);
        Recorded {
            kind: self.kind,
            entry,
        }
    }
}

impl Recorded {
    /// The event every view shows for the change, under the source's name.
    pub(crate) fn event(&self, source: &str, election: &str, replayed: bool) -> Event {
        let h = &self.entry;
        Event {
            at: h.at,
            source: source.to_string(),
            election: Some(election.to_string()),
            kind: self.kind,
            from: h.from.clone(),
            to: h.to.clone(),
            cause: Some(h.cause),
            was: None,
            revision: h.revision,
            replayed,
            detail: h.by.as_deref().map(forced_by),
        }
    }
}

/// An event's detail for a change an admin action made: who made it.
pub(crate) fn forced_by(by: &str) -> String {
    format!("{FORCED_BY}{by}")
}

const FORCED_BY: &str = "forced by ";

/// The history entry a live leader-change event tells (see [`Recorded::event`]), with its
/// election: what the engine journals of every store's changes as they go by. A change
/// replayed from the store's own past is the store's to keep.
pub(crate) fn entry_of(ev: &Event) -> Option<(&str, HistoryEntry)> {
    use EventKind::{LeaderChanged, LeaderElected, LeaderLost};
    let change = matches!(ev.kind, LeaderElected | LeaderChanged | LeaderLost) && !ev.replayed;
    let election = ev.election.as_deref().filter(|_| change)?;
    let by = ev.detail.as_deref().and_then(|d| d.strip_prefix(FORCED_BY));
    let entry = HistoryEntry {
        at: ev.at,
        revision: ev.revision,
        from: ev.from.clone(),
        to: ev.to.clone(),
        cause: ev.cause.unwrap_or(Cause::Unknown),
        by: by.map(str::to_string),
    };
    Some((election, entry))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Scheme;

    fn kinds(c: Option<LeaderChange>) -> Option<(EventKind, Cause)> {
        c.map(|c| (c.kind, c.cause))
    }

    #[test]
    fn elected_lost_replaced_and_written_in_place() {
        let gone = || Cause::LeaseExpired;
        let d = |old, new, same| kinds(decide(old, new, same, gone, Cause::TakenOver));
        assert_eq!(
            d(None, Some("a"), false),
            Some((EventKind::LeaderElected, Cause::Elected))
        );
        assert_eq!(
            d(Some("a"), None, false),
            Some((EventKind::LeaderLost, Cause::LeaseExpired))
        );
        // A new tenure, even by the same id, is a new term: why the old one ended.
        assert_eq!(
            d(Some("a"), Some("a"), false),
            Some((EventKind::LeaderChanged, Cause::LeaseExpired))
        );
        assert_eq!(
            d(Some("a"), Some("b"), true),
            Some((EventKind::LeaderChanged, Cause::TakenOver))
        );
        assert_eq!(d(Some("a"), Some("a"), true), None);
        assert_eq!(d(None, None, false), None);
    }

    #[test]
    fn why_the_old_leader_went_is_asked_only_when_it_did() {
        let asked = std::cell::Cell::new(false);
        let gone = || {
            asked.set(true);
            Cause::Deleted
        };
        decide(Some("a"), Some("b"), true, gone, Cause::Proclaimed);
        assert!(!asked.get());
    }

    #[test]
    fn a_forced_change_is_recorded_with_the_actions_cause_and_author() {
        let mut e = Election::new(0, "jobs".into(), Scheme::SqlLease);
        let change = decide(
            Some("a"),
            Some("b"),
            true,
            || Cause::Expired,
            Cause::TakenOver,
        );
        let forced = Some((Cause::ForcedLeader, "this electop".to_string()));
        let at = Some(SystemTime::UNIX_EPOCH);
        let r = change
            .expect("a change")
            .record(&mut e, forced, (at, Some(7)), 10);
        assert_eq!(r.entry.cause, Cause::ForcedLeader);
        assert_eq!(e.history.back(), Some(&r.entry));
        assert_eq!(e.transitions, 1);
        let ev = r.event("etcd x /e/", "jobs", false);
        assert_eq!(ev.detail.as_deref(), Some("forced by this electop"));
        assert_eq!(
            (ev.revision, ev.cause),
            (Some(7), Some(Cause::ForcedLeader))
        );
        // What the engine journals of the event is the entry, its author included.
        assert_eq!(entry_of(&ev), Some(("jobs", r.entry.clone())));
        let replayed = r.event("etcd x /e/", "jobs", true);
        assert_eq!(
            entry_of(&replayed),
            None,
            "a replayed change is the store's"
        );
    }
}
