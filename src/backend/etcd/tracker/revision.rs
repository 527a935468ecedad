//! One revision into the mirror and the elections: what changed, what only etcd can say of
//! it (the tenure is the key and its create revision, the old leader's lease fate), handed to
//! the election book shared with every store; the resigned holders and the line events.

use std::collections::{BTreeSet, HashMap};

use super::*;
use crate::backend::book::{Step, When};
use crate::backend::change::Changes;

impl Tracker {
    /// Applies changes, one revision at a time so that each leader change keeps its own
    /// revision and cause. Returns the elections that changed and what happened.
    pub fn apply(
        &mut self,
        changes: Vec<Change>,
        fates: &HashMap<i64, LeaseFate>,
        seen: Observation,
    ) -> (Vec<Election>, Vec<Event>) {
        let (touched, events) = self.apply_changes(changes, fates, seen);
        let changed = touched
            .iter()
            .filter_map(|id| self.elections.get(id).cloned())
            .collect();
        (changed, events)
    }

    /// `apply` for a history replay, whose elections go nowhere until it is merged: clones
    /// none of them.
    pub fn apply_quietly(
        &mut self,
        changes: Vec<Change>,
        fates: &HashMap<i64, LeaseFate>,
        seen: Observation,
    ) {
        self.apply_changes(changes, fates, seen);
    }

    pub(super) fn apply_changes(
        &mut self,
        changes: Vec<Change>,
        fates: &HashMap<i64, LeaseFate>,
        seen: Observation,
    ) -> (BTreeSet<Vec<u8>>, Vec<Event>) {
        let mut touched = BTreeSet::new();
        let mut events = Vec::new();
        let mut i = 0;
        while i < changes.len() {
            let rev = changes[i].revision();
            let mut j = i;
            while j < changes.len() && changes[j].revision() == rev {
                j += 1;
            }
            self.apply_revision(&changes[i..j], rev, fates, seen, &mut touched, &mut events);
            i = j;
        }
        (touched, events)
    }

    pub(super) fn apply_revision(
        &mut self,
        changes: &[Change],
        rev: i64,
        fates: &HashMap<i64, LeaseFate>,
        seen: Observation,
        touched: &mut BTreeSet<Vec<u8>>,
        events: &mut Vec<Event>,
    ) {
        let (before, released, ids) = self.mirror_changes(changes);
        self.revision = self.revision.max(rev);
        for id in ids.iter().cloned() {
            let holders = self.layout.derive(&id, &self.mirror);
            let name = self.layout.display_name(&id);
            let (source, scheme) = (self.source, self.layout.scheme_of(&id));
            let election = self
                .elections
                .entry(id.clone())
                .or_insert_with(|| Election::new(source, name.clone(), scheme));
            let old_leader = election.leader.take();
            let old_line = std::mem::take(&mut election.candidates);
            adopt(election, holders, self.history_limit);
            // The leader's key moved onto an admin action's hold: its tenure ended by that
            // action (relabelled by the audit log if another electop's), and it is deposed
            // until the hold's lease ends, since its session learns only at a keep-alive.
            let hold = old_leader
                .as_ref()
                .zip(election.held.as_deref())
                .is_some_and(|(o, h)| o.raw_key == h.raw_key);
            let step = step(old_leader.as_ref(), election, scheme, fates, seen, rev);
            let step = Step {
                gone: match (&old_leader, step.same_tenure) {
                    _ if hold => Cause::ForcedReelection,
                    (Some(old), false) => {
                        departure(before.get(&old.raw_key), fates, &self.ttls, seen)
                    }
                    _ => Cause::Unknown,
                },
                may_lead: step.may_lead && !hold,
                ..step
            };
            let mut out = Changes::default();
            let o = self.book.apply(election, step, &mut out);
            events.append(&mut out.events);
            if hold && !seen.replayed {
                election.deposed = election.held.clone();
                self.deposed
                    .extend(election.held.as_ref().and_then(|h| h.lease));
            }
            match o.deposed {
                Some(d) => self.deposed.extend(d.lease),
                // It removed its own key (or so it looks: the store does not say who deleted
                // a key): it knows it left, and is only shown as resigned.
                None if step.may_lead && !o.forced => election.resigned = old_leader.map(Box::new),
                None => {}
            }
            let back = |d: &Candidate| {
                let mut line = election.leader.iter().chain(&election.candidates);
                line.any(|c| c.lease == d.lease)
            };
            if election.resigned.as_deref().is_some_and(back) {
                election.resigned = None;
            }
            let at = (seen, rev);
            for (kind, from, to) in line_events(&old_line, &election.candidates) {
                events.push(line_event(&self.source_name, &name, at, (kind, from, to)));
            }
            self.index(&id);
            touched.insert(id);
        }
        self.recount_leases(released, &ids);
    }

    /// After a revision: the TTLs of leases no key holds any more are dropped (the lease is
    /// over, or no longer ours to count down), and the touched elections' countdowns
    /// attached again.
    pub(super) fn recount_leases(
        &mut self,
        released: impl IntoIterator<Item = i64>,
        ids: &BTreeSet<Vec<u8>>,
    ) {
        for lease in released {
            if !self.lease_keys.contains_key(&lease) {
                self.ttls.remove(&lease);
            }
        }
        for id in ids {
            if let Some(e) = self.elections.get_mut(id) {
                attach_ttls(e, &self.ttls);
            }
        }
    }

    /// Puts one revision's changes into the mirror. Returns the keys as they were before (to
    /// explain departures), the leases no key holds any more, and the elections touched.
    pub(super) fn mirror_changes(&mut self, changes: &[Change]) -> Mirrored {
        let mut before: HashMap<Vec<u8>, Kv> = HashMap::new();
        let mut released = Vec::new();
        let mut ids = BTreeSet::new();
        for change in changes {
            // A watch resumed per prefix may deliver a change twice; the mirror has it already.
            let stale = match change {
                Change::Put(kv) => self
                    .mirror
                    .get(&kv.key)
                    .is_some_and(|old| old.mod_revision >= kv.mod_revision),
                Change::Delete { key, revision } => self
                    .mirror
                    .get(key)
                    .is_none_or(|old| old.mod_revision >= *revision),
            };
            if stale {
                continue;
            }
            if let Some(id) = self.layout.election_of(change.key()) {
                ids.insert(id);
            }
            if let Some(old) = self.mirror.get(change.key()) {
                before.insert(old.key.clone(), old.clone());
            }
            let old = match change {
                Change::Put(kv) => {
                    *self.lease_keys.entry(kv.lease).or_default() += 1;
                    self.mirror.insert(kv.key.clone(), kv.clone())
                }
                Change::Delete { key, .. } => self.mirror.remove(key),
            };
            if let Some(old) = old
                && let Some(n) = self.lease_keys.get_mut(&old.lease)
            {
                *n -= 1;
                if *n == 0 {
                    self.lease_keys.remove(&old.lease);
                    released.push(old.lease);
                }
            }
        }
        (before, released, ids)
    }
}

/// One revision in the mirror: keys as they were before, leases no key holds any more, and
/// the elections touched.
type Mirrored = (HashMap<Vec<u8>, Kv>, Vec<i64>, BTreeSet<Vec<u8>>);

/// A change of `e`'s leader from `old`, as etcd tells it: a new key (or the same key created
/// again) is a new tenure; the same key with a new value is a proclamation (election API) or
/// someone overwriting it. A leader whose key left while its lease lives on may still believe
/// it leads (an admin action that removed it deposed it). Replayed history reads lease fates
/// now, so there "alive" means alive now too. `gone` is filled in by the caller.
fn step<'a>(
    old: Option<&'a Candidate>,
    e: &Election,
    scheme: crate::model::Scheme,
    fates: &HashMap<i64, LeaseFate>,
    seen: Observation,
    rev: i64,
) -> Step<'a> {
    let new = e.leader.as_ref();
    let same_tenure = old
        .zip(new)
        .is_some_and(|(o, n)| o.raw_key == n.raw_key && o.create_revision == n.create_revision);
    let in_place = if scheme == crate::model::Scheme::EtcdElection {
        Cause::Proclaimed
    } else {
        Cause::TakenOver
    };
    let key_left = old.is_some_and(|o| new.is_none_or(|n| n.raw_key != o.raw_key));
    let lease_alive = old
        .and_then(|o| o.lease)
        .is_some_and(|l| l != 0 && fates.get(&l) == Some(&LeaseFate::Alive));
    Step {
        before: old,
        same_tenure,
        gone: Cause::Unknown,
        in_place,
        may_lead: key_left && lease_alive,
        when: When {
            now: seen.now,
            at: seen.at,
            revision: Some(rev),
            replayed: seen.replayed,
        },
    }
}

/// An event of the line (a candidate joined or left) of election `name`, as `seen` at
/// revision `rev`.
fn line_event(
    source: &str,
    name: &str,
    (seen, rev): (Observation, i64),
    (kind, from, to): (EventKind, Option<String>, Option<String>),
) -> Event {
    Event {
        at: seen.at,
        source: source.to_string(),
        election: Some(name.to_string()),
        kind,
        from,
        to,
        cause: None,
        was: None,
        revision: Some(rev),
        replayed: seen.replayed,
        detail: None,
    }
}

/// Candidates that joined or left the line.
fn line_events(
    old: &[Candidate],
    new: &[Candidate],
) -> Vec<(EventKind, Option<String>, Option<String>)> {
    let has = |line: &[Candidate], key: &[u8]| line.iter().any(|c| c.raw_key == key);
    let joined = new
        .iter()
        .filter(|c| !has(old, &c.raw_key))
        .map(|c| (EventKind::CandidateJoined, None, Some(c.id.clone())));
    let left = old
        .iter()
        .filter(|c| !has(new, &c.raw_key))
        .map(|c| (EventKind::CandidateLeft, Some(c.id.clone()), None));
    joined.chain(left).collect()
}

/// Why the key `old` left: deleted with its lease alive (a resignation), or its lease ended:
/// expired if our countdown had (nearly) run out by the earliest the change may have
/// happened, revoked if it had not by the latest (now); between them (a change delivered
/// late, after a move to another member), either: `LeaseEnded`.
fn departure(
    old: Option<&Kv>,
    fates: &HashMap<i64, LeaseFate>,
    ttls: &Fast<i64, Deadline>,
    seen: Observation,
) -> Cause {
    let Some(old) = old else {
        return Cause::Unknown;
    };
    if old.lease == 0 {
        return Cause::Deleted;
    }
    match fates.get(&old.lease) {
        Some(LeaseFate::Alive) => Cause::Resigned,
        _ if seen.replayed => Cause::LeaseEnded,
        _ => match ttls.get(&old.lease) {
            Some(d) if d.remaining_ms_at(seen.since) <= EXPIRY_SLACK_MS => Cause::LeaseExpired,
            Some(d) if d.remaining_ms_at(seen.now) > EXPIRY_SLACK_MS => Cause::LeaseRevoked,
            Some(_) | None => Cause::LeaseEnded,
        },
    }
}
