//! The election book: what every store's tracker does once the store has said, in its own
//! order, who leads an election now. A tracker maps the store's data to candidates and says
//! what only it can know (whether the new leader holds the old one's tenure, why the old one
//! went, whether a removed holder may still believe it leads); the book decides the rest,
//! once for every store: whether the leadership changed and why ([`change::decide`]), whether
//! an admin action made the change (the forced marks, ours or another electop's from the
//! audit log, which relabel a change already recorded), who is deposed and when they are back
//! in line, and the history entry and event the change makes.

use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime};

use super::change::{self, Changes};
use super::forced::{ForcedMark, ForcedMarks};
use crate::admin::audit_tail::Done;
use crate::model::{Candidate, Cause, Election, HistoryEntry, Scheme, SourceId};

/// Whether two candidates are the same participant (the same token, session or lease):
/// how a deposed holder is recognised back in line.
pub(crate) type Same = fn(&Candidate, &Candidate) -> bool;

pub(crate) struct Book {
    source_name: String,
    limit: usize,
    /// Admin actions about to change an election (ours, or another electop's from the audit
    /// log): the change they make is recorded as forced.
    forced: ForcedMarks,
    /// The leader each election lost last, for an action learnt after its change to depose
    /// ([`Book::forced`]); `None` where the store tells that itself (etcd: the resigned
    /// holder whose lease lives on), so 10,000 busy elections keep no copy each.
    removed: Option<HashMap<String, Candidate>>,
    /// `None`: the store has no deposed holders (a SQL row's holder finds out at its next
    /// renewal; a session lock's session is ended by the action).
    same: Option<Same>,
    /// History read back from the journal for elections not seen yet, by name.
    past: HashMap<String, Vec<HistoryEntry>>,
    /// The admin actions of the audit log read at start: a change read back from the journal
    /// that one made is labelled as the electop that acted labels it (the electop that wrote
    /// the journal may not have learnt, or written, that label yet).
    actions: Vec<Done>,
}

/// Where a change stands: when it was seen, its place in the store's order where the store
/// numbers its changes, and whether it was replayed from the store's past (no admin mark of
/// ours can have made it).
#[derive(Clone, Copy, Debug)]
pub(crate) struct When {
    pub now: Instant,
    pub at: Option<SystemTime>,
    pub revision: Option<i64>,
    pub replayed: bool,
}

impl When {
    /// A change seen live now, at wall time `at`.
    pub(crate) fn live(at: SystemTime) -> When {
        When {
            now: Instant::now(),
            at: Some(at),
            revision: None,
            replayed: false,
        }
    }

    /// A change seen live at `now` (`wall` on the clock), at the store's `revision`.
    pub(crate) fn at(now: Instant, wall: SystemTime, revision: Option<i64>) -> When {
        When {
            now,
            at: Some(wall),
            revision,
            replayed: false,
        }
    }

    pub(crate) fn at_revision(self, revision: Option<i64>) -> When {
        When { revision, ..self }
    }
}

/// One leader change as the store tells it; the election already holds the new leader and
/// line. `same_tenure`: the new leader holds the old one's tenure (the same key and create
/// revision, row, node, token), so a different id there was written in place (`in_place`
/// says why); `gone`: why the old leader's tenure ended, when it did; `may_lead`: the old
/// leader may still believe it leads (its lease, session or countdown lives on), so an
/// admin action that removed it deposed it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Step<'a> {
    pub before: Option<&'a Candidate>,
    pub same_tenure: bool,
    pub gone: Cause,
    pub in_place: Cause,
    pub may_lead: bool,
    pub when: When,
}

/// What the book did beyond the history and the event: for the tracker that follows a
/// deposed holder's lease or session.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    /// An admin action made the change.
    pub forced: bool,
    /// The holder deposed by this change.
    pub deposed: Option<Candidate>,
    /// A deposed holder back in line, who knows where it stands now.
    pub back: Option<Candidate>,
}

impl Book {
    pub(crate) fn new(source_name: String, limit: usize, same: Option<Same>) -> Book {
        Book {
            source_name,
            limit: limit.max(1),
            forced: ForcedMarks::default(),
            removed: Some(HashMap::new()),
            same,
            past: HashMap::new(),
            actions: Vec::new(),
        }
    }

    /// For a store that keeps its own history and tells who a relabelled action deposed
    /// (etcd): nothing kept for that.
    pub(crate) fn store_keeps_history(mut self) -> Book {
        self.removed = None;
        self
    }

    /// The admin actions read from the audit log at start, oldest first (see `actions`).
    pub(crate) fn set_actions(&mut self, actions: Vec<Done>) {
        self.actions = actions;
    }

    /// History a restarted electop read back from the journal, by election: each election
    /// starts from its own when first seen ([`Book::election`]).
    pub(crate) fn with_past(
        mut self,
        past: impl IntoIterator<Item = (String, Vec<HistoryEntry>)>,
    ) -> Book {
        self.past = past.into_iter().collect();
        self
    }

    /// A new election, with the history read back for it.
    pub(crate) fn election(&mut self, source: SourceId, name: String, scheme: Scheme) -> Election {
        let past = self.past.remove(&name);
        let mut e = Election::new(source, name, scheme);
        if let Some(past) = past {
            self.preload(&mut e, past);
        }
        e
    }

    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    pub(crate) fn source_name(&self) -> &str {
        &self.source_name
    }

    /// Applies one leader change to `e` (see [`Step`]): its history entry and event into
    /// `out`, a live one labelled by the admin action that made it.
    pub(crate) fn apply(&mut self, e: &mut Election, step: Step<'_>, out: &mut Changes) -> Outcome {
        let mut outcome = Outcome {
            back: self.back_in_line(e),
            ..Outcome::default()
        };
        let before = step.before;
        let Some(change) = change::decide(
            before.map(|c| c.id.as_str()),
            e.leader.as_ref().map(|c| c.id.as_str()),
            step.same_tenure,
            || step.gone,
            step.in_place,
        ) else {
            return outcome;
        };
        let w = step.when;
        let forced = (!w.replayed)
            .then(|| self.forced.take(&e.name, w.now))
            .flatten();
        outcome.forced = forced.is_some();
        if let Some(b) = before.filter(|_| !w.replayed) {
            if let Some(removed) = self.removed.as_mut() {
                removed.insert(e.name.clone(), b.clone());
            }
            if forced.is_some() && step.may_lead && self.depose(e, b) {
                outcome.deposed = Some(b.clone());
            }
        }
        let recorded = change.record(e, forced, (w.at, w.revision), self.limit);
        out.events
            .push(recorded.event(&self.source_name, &e.name, w.replayed));
        outcome
    }

    /// `c`, a holder an admin action removed, is deposed in `e` unless it is back in line:
    /// it is not told, and may go on believing it leads. Whether it did.
    pub(crate) fn depose(&self, e: &mut Election, c: &Candidate) -> bool {
        let Some(same) = self.same else { return false };
        if e.leader.iter().chain(&e.candidates).any(|x| same(x, c)) {
            return false;
        }
        e.deposed = Some(Box::new(c.clone()));
        true
    }

    /// A deposed holder that holds the election (or is in its line) again knows where it
    /// stands: no longer deposed. Who it was, when it was.
    pub(crate) fn back_in_line(&self, e: &mut Election) -> Option<Candidate> {
        let same = self.same?;
        let d = e.deposed.as_deref()?;
        if !e.leader.iter().chain(&e.candidates).any(|x| same(x, d)) {
            return None;
        }
        e.deposed.take().map(|d| *d)
    }

    /// An admin action changes `e` (`None`: ours did not after all). One learnt after its
    /// change was recorded (another electop's, from the audit log) relabels that change and
    /// deposes the leader it removed, if `may_lead` says it may still believe it leads. The
    /// election to send and the holder deposed, when it was relabelled.
    pub(crate) fn forced(
        &mut self,
        name: &str,
        e: Option<&mut Election>,
        mark: Option<ForcedMark>,
        (now, wall): (Instant, SystemTime),
        may_lead: impl FnOnce(&Candidate) -> bool,
    ) -> Option<(Election, Option<Candidate>)> {
        let before = mark.as_ref().and_then(|m| m.before.clone());
        let Some(e) = e else {
            self.mark(name, mark, now);
            return None;
        };
        e.relabelled = Some(
            self.forced
                .note(name, Some(&mut e.history), mark, now, wall)?,
        );
        let removed = self
            .removed
            .as_ref()
            .and_then(|r| r.get(name))
            .filter(|r| before.as_deref() == Some(r.id.as_str()) && may_lead(r))
            .cloned();
        let deposed = removed.filter(|r| self.depose(e, r));
        Some((e.clone(), deposed))
    }

    /// An admin action aimed at an election the tracker does not hold (yet): the mark waits.
    pub(crate) fn mark(&mut self, name: &str, mark: Option<ForcedMark>, now: Instant) {
        self.forced.set(name.to_string(), mark, now);
    }

    /// An action aimed at an election that went without a leader change is spent all the
    /// same: it must not name the cause of a later change.
    pub(crate) fn spend(&mut self, name: &str, now: Instant) {
        drop(self.forced.take(name, now));
    }

    /// The first read of `e`, whose history was read back from the journal: a leader other
    /// than the one that history ends with changed while no electop watched, and this read
    /// is the first to see it (cause unknown), unless an admin action of the audit log read
    /// at start made it after that history's last change: then it is that action's.
    /// `revision`: where the store numbers tenures (a ZooKeeper node's creating zxid), the
    /// leader's now, so the same id in another tenure is a change too.
    pub(crate) fn first_read(
        &mut self,
        e: &mut Election,
        (at, revision): (SystemTime, Option<i64>),
        out: &mut Changes,
    ) {
        let Some(last) = e.history.back() else { return };
        let same_id = last.to.as_deref() == e.leader.as_ref().map(|c| c.id.as_str());
        let same_tenure = match (last.revision, revision) {
            (Some(was), Some(now)) => was == now,
            _ => true,
        };
        if same_id && same_tenure {
            return;
        }
        let before = last.to.as_deref().map(|id| Candidate::plain(id, ""));
        let after = last.at;
        let action = self.actions.iter().rev().find(|d| {
            d.election == e.name
                && d.before.is_some()
                && d.before == last.to
                && d.at.zip(after).is_none_or(|(done, last)| done >= last)
        });
        let when = When::live(at).at_revision(revision);
        if let Some(d) = action {
            let mark = ForcedMark {
                cause: d.cause,
                by: d.by.clone(),
                before: None,
            };
            self.forced.set(e.name.clone(), Some(mark), when.now);
        }
        let step = Step {
            before: before.as_ref(),
            same_tenure: false,
            gone: Cause::Unknown,
            in_place: Cause::Unknown,
            may_lead: false,
            when,
        };
        self.apply(e, step, out);
    }

    /// Names of elections with history read back that no read has shown yet (their keys or
    /// rows are gone): listed all the same, as SQL tables list a row's election, so what
    /// happened to them is not lost from view (a change nobody watched, if their history
    /// ends with a leader).
    /// Only those whose last change is within `keep` of `at`: the read model's retention,
    /// after which an election with nothing in the store is no longer listed.
    pub(crate) fn unseen(&self, at: SystemTime, keep: Duration) -> Vec<String> {
        let recent = |h: &[HistoryEntry]| {
            h.last()
                .and_then(|e| e.at)
                .is_some_and(|t| at.duration_since(t).unwrap_or_default() <= keep)
        };
        let mut names: Vec<String> = self
            .past
            .iter()
            .filter(|(_, h)| recent(h))
            .map(|(name, _)| name.clone())
            .collect();
        names.sort_unstable();
        names
    }

    /// History read back from disk (oldest first) into `e`, bounded.
    pub(crate) fn preload(
        &self,
        e: &mut Election,
        entries: impl IntoIterator<Item = HistoryEntry>,
    ) {
        for entry in entries {
            e.record(entry, usize::MAX);
        }
        while e.history.len() > self.limit {
            e.history.pop_front();
        }
        for done in self.actions.iter().filter(|d| d.election == e.name) {
            super::forced::attribute_past(&mut e.history, done);
        }
    }
}

#[cfg(test)]
mod tests;
