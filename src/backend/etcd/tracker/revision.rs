//! One revision into the mirror and the elections: what changed, the leader-change decision
//! (shared with every store, `backend::change`), the deposed holders and the line events.

use std::collections::{BTreeSet, HashMap};

use super::*;

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
            election.leader = holders.leader;
            election.candidates = shrunk(holders.candidates);
            let limit = self.history_limit;
            super::super::past::adopt(
                election,
                holders.members,
                holders.notes,
                &holders.past,
                limit,
            );

            let mk = |kind, from: Option<String>, to: Option<String>, cause| Event {
                at: seen.at,
                source: self.source_name.clone(),
                election: Some(name.clone()),
                kind,
                from,
                to,
                cause,
                was: None,
                revision: Some(rev),
                replayed: seen.replayed,
                detail: None,
            };
            let change = leader_change(
                old_leader.as_ref(),
                election.leader.as_ref(),
                scheme,
                |old| departure(before.get(&old.raw_key), fates, &self.ttls, seen),
            );
            let forced = change
                .as_ref()
                .and_then(|_| (!seen.replayed).then(|| self.forced.take(&name, seen.now)))
                .flatten();
            let by_other = forced.is_some();
            self.deposed
                .extend(note_deposed(election, old_leader.as_ref(), fates, by_other));
            if let Some(change) = change {
                let at = (seen.at, Some(rev));
                let recorded = change.record(election, forced, at, self.history_limit);
                events.push(recorded.event(&self.source_name, &name, seen.replayed));
            }
            for (kind, from, to) in line_events(&old_line, &election.candidates) {
                events.push(mk(kind, from, to, None));
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

/// What happened to the leadership between two states of an election; `departed` says why
/// an old leader's key left. A new key (or the same key created again) is a new tenure; the
/// same key with a new value is a proclamation (election API) or someone overwriting it.
fn leader_change(
    old: Option<&Candidate>,
    new: Option<&Candidate>,
    scheme: crate::model::Scheme,
    departed: impl FnOnce(&Candidate) -> Cause,
) -> Option<LeaderChange> {
    let same_tenure = old
        .zip(new)
        .is_some_and(|(o, n)| o.raw_key == n.raw_key && o.create_revision == n.create_revision);
    let in_place = if scheme == crate::model::Scheme::EtcdElection {
        Cause::Proclaimed
    } else {
        Cause::TakenOver
    };
    let gone = || old.map_or(Cause::Unknown, departed);
    change::decide(
        old.map(|c| c.id.as_str()),
        new.map(|c| c.id.as_str()),
        same_tenure,
        gone,
        in_place,
    )
}

/// A leader whose key left while its lease lives on. Removed by someone else (`by_other`: an
/// admin action) it may still believe it leads: it is deposed (returns its lease, read
/// eagerly since its end ends the alarm). Otherwise it removed its own key, knows it left, and
/// is only shown as resigned. Either lasts until it is back in line on that lease. The store
/// does not say who deleted a key: a delete by another tool (`etcdctl del`) reads as a resign.
/// Replayed history reads lease fates now, so there "alive" means alive now too.
fn note_deposed(
    e: &mut Election,
    old: Option<&Candidate>,
    fates: &HashMap<i64, LeaseFate>,
    by_other: bool,
) -> Option<i64> {
    let mut lease = None;
    if let Some(old) = old
        && e.leader.as_ref().is_none_or(|n| n.raw_key != old.raw_key)
        && old
            .lease
            .is_some_and(|l| l != 0 && fates.get(&l) == Some(&LeaseFate::Alive))
    {
        if by_other {
            lease = old.lease;
            e.deposed = Some(Box::new(old.clone()));
        } else {
            e.resigned = Some(Box::new(old.clone()));
        }
    }
    let back = |d: &Option<Box<Candidate>>| {
        d.as_ref().is_some_and(|d| {
            e.leader
                .iter()
                .chain(&e.candidates)
                .any(|c| c.lease == d.lease)
        })
    };
    if back(&e.resigned) {
        e.resigned = None;
    }
    if back(&e.deposed) {
        e.deposed = None;
        lease = None;
    }
    lease
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

/// Why the key `old` left: deleted with its lease alive (a resignation), or its lease ended,
/// expired if our countdown had (nearly) run out, revoked if not.
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
            Some(d) if d.remaining_ms_at(seen.now) <= EXPIRY_SLACK_MS => Cause::LeaseExpired,
            Some(_) => Cause::LeaseRevoked,
            None => Cause::LeaseEnded,
        },
    }
}
