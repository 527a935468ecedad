//! History from outside the live diff: changes marked as forced by an admin action, the
//! replayed past merged in, and wall-clock times filled in for replayed revisions.

use std::collections::HashMap;
use std::time::{Instant, SystemTime};

use super::*;

impl Tracker {
    /// An admin action changes `name` (or one of ours did not after all). Another electop's,
    /// learnt after its change was recorded, relabels that entry: returns the election then.
    pub fn forced(
        &mut self,
        name: &str,
        mark: Option<crate::backend::ForcedMark>,
        now: Instant,
        wall: SystemTime,
    ) -> Option<Election> {
        let before = mark.as_ref().and_then(|m| m.before.clone());
        let e = self.elections.values_mut().find(|e| e.name == name);
        // The holder it removed looked resigned (its lease lives on): deposed just below.
        self.book.forced(name, e, mark, (now, wall), |_| false)?;
        // The change was another electop's: a holder that looked resigned was deposed.
        let e = self.elections.values_mut().find(|e| e.name == name)?;
        e.resigned_was_deposed(before.as_deref());
        self.deposed
            .extend(e.deposed.as_ref().and_then(|d| d.lease));
        Some(e.clone())
    }

    /// Puts history replayed from past revisions (by `replayed`, a tracker that replayed up to
    /// the snapshot this one was loaded from) before what this one saw live since. Returns the
    /// elections that gained history.
    pub fn merge_history(&mut self, replayed: &Tracker) -> Vec<Election> {
        let mut changed = Vec::new();
        for (id, past) in &replayed.elections {
            if past.history.is_empty() {
                continue;
            }
            let Some(e) = self.elections.get_mut(id) else {
                // Gone before the snapshot (no keys left): listed with its past.
                self.deposed
                    .extend(past.deposed.as_ref().and_then(|d| d.lease));
                self.elections.insert(id.clone(), past.clone());
                self.index(id);
                changed.push(past.clone());
                continue;
            };
            if e.deposed.is_none()
                && let Some(d) = past.deposed.clone()
                && !e.candidates.iter().any(|c| c.lease == d.lease)
            {
                self.deposed.extend(d.lease);
                e.deposed = Some(d);
            }
            if e.resigned.is_none()
                && let Some(r) = past.resigned.clone()
                && !e.candidates.iter().any(|c| c.lease == r.lease)
            {
                e.resigned = Some(r);
            }
            let live = std::mem::take(&mut e.history);
            let mut merged: std::collections::VecDeque<HistoryEntry> = (*past.history).clone();
            let before = live.len();
            merged.extend(
                live.into_entries()
                    .into_iter()
                    .filter(|h| !super::super::past::from_store(h)),
            );
            let dropped = (before + past.history.len() - merged.len()) as u64;
            e.transitions = e.transitions.saturating_sub(dropped);
            while merged.len() > self.book.limit() {
                merged.pop_front();
            }
            e.history = merged.into();
            e.transitions += past.transitions;
            changed.push(e.clone());
            self.index(id);
        }
        changed
    }

    /// A holder an admin action removed before this electop started (from the audit log),
    /// whose lease lives on: deposed in election `name`, its lease read eagerly until it ends.
    pub fn depose(&mut self, name: &str, holder: &Candidate) {
        let ids: Vec<Vec<u8>> = self.by_name.get(name).cloned().unwrap_or_default();
        for id in ids {
            if let Some(e) = self.elections.get_mut(&id) {
                e.deposed = Some(Box::new(holder.clone()));
                e.resigned = None;
                if let (Some(lease), Some(d)) = (holder.lease, holder.ttl) {
                    self.ttls.insert(lease, d);
                    self.deposed.insert(lease);
                }
                self.index(&id);
            }
        }
    }

    pub fn history_limit(&self) -> usize {
        self.history_limit
    }

    /// A change the audit log tells that no history read back has (see `audited::Deposed`).
    pub fn told(&mut self, name: &str, entry: &crate::model::HistoryEntry) {
        let limit = self.history_limit;
        for e in self.elections.values_mut().filter(|e| e.name == name) {
            e.record(entry.clone(), limit);
        }
    }

    /// Replayed changes that admin actions made, as the audit log records them (`done`,
    /// oldest first): labelled with the action's cause and author, as a watching electop
    /// labelled them live. A holder that looked resigned was deposed.
    pub(crate) fn attribute(&mut self, done: &[crate::admin::audit_tail::Done]) {
        for d in done {
            let Some(e) = self.elections.values_mut().find(|e| e.name == d.election) else {
                continue;
            };
            if crate::backend::forced::attribute_past(&mut e.history, d) {
                e.resigned_was_deposed(d.before.as_deref());
                self.deposed
                    .extend(e.deposed.as_ref().and_then(|c| c.lease));
            }
        }
    }

    /// Gives replayed changes the time some electop saw them live, where it was recorded,
    /// and the cause it told (a resign, a lease's expiry or revocation, which a replay cannot
    /// tell apart): every dashboard names a change as the one that watched it did.
    pub fn fill_seen(&mut self, seen: &HashMap<i64, crate::backend::etcd::times::Seen>) {
        for e in self.elections.values_mut() {
            for h in e.history.iter_mut().filter(|h| h.at.is_none()) {
                let Some((at, cause)) = h.revision.and_then(|r| seen.get(&r)) else {
                    continue;
                };
                h.at = Some(*at);
                if let (Cause::LeaseEnded, Some(told)) = (h.cause, cause) {
                    h.cause = *told;
                }
            }
        }
    }
}
