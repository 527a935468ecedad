//! The etcd backend's plain core: a mirror of the watched keys, the elections derived from
//! it, and the leader changes found by diffing each revision. No IO: the connection code
//! feeds it snapshots, watch events, lease readings and lease fates, and sends on what it
//! returns.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Instant, SystemTime};

use super::layout::{Kv, Layout, Mirror};
use crate::backend::book::Book;
use crate::model::{
    Candidate, Cause, Deadline, Election, Event, EventKind, HistoryEntry, SourceId,
};

/// One change to a key, as a watch reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    Put(Kv),
    Delete { key: Vec<u8>, revision: i64 },
}

impl Change {
    pub fn revision(&self) -> i64 {
        match self {
            Change::Put(kv) => kv.mod_revision,
            Change::Delete { revision, .. } => *revision,
        }
    }

    pub fn key(&self) -> &[u8] {
        match self {
            Change::Put(kv) => &kv.key,
            Change::Delete { key, .. } => key,
        }
    }
}

/// Whether a deleted key's lease still existed right after the delete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeaseFate {
    Alive,
    Gone,
}

/// How a batch of changes was observed.
#[derive(Clone, Copy, Debug)]
pub struct Observation {
    /// Wall-clock time of a live observation; `None` when replayed from past revisions.
    pub at: Option<SystemTime>,
    pub now: Instant,
    /// The earliest the changes may have happened: `now` as the watch delivers them, the
    /// last moment the view was known current for changes delivered after a move to
    /// another member (whether a lease ran out or was revoked is judged over that span).
    pub since: Instant,
    pub replayed: bool,
}

/// Below this much estimated lease left, a vanished lease counts as expired, not revoked.
const EXPIRY_SLACK_MS: i64 = 1_500;

/// The tracker's indexes, looked up for every election at a load and at every change: a
/// fast hash, not SipHash.
type Fast<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

pub struct Tracker {
    source: SourceId,
    source_name: String,
    layout: Box<dyn Layout>,
    history_limit: usize,
    mirror: Mirror,
    elections: BTreeMap<Vec<u8>, Election>,
    ttls: Fast<i64, Deadline>,
    /// How many mirrored keys hold each lease, so a lease's countdown is dropped with its
    /// last key without scanning the mirror.
    lease_keys: Fast<i64, usize>,
    /// Elections whose leader or candidates hold each lease, and the reverse, so a TTL
    /// reading touches only the elections on that lease, however many there are.
    by_lease: Fast<i64, BTreeSet<Vec<u8>>>,
    leases_of: Fast<Vec<u8>, Vec<i64>>,
    /// The elections behind each display name (one, unless two ids escape alike), so what
    /// is on screen is found without walking every election at each lease tick.
    by_name: Fast<String, Vec<Vec<u8>>>,
    /// Leases of deposed leaders: read eagerly, since their end ends an alarm.
    deposed: std::collections::HashSet<i64>,
    /// Moves when a lease may have become due for a read other than by the clock (a lease
    /// never read appeared, a reading came): see `leases::Quiet`.
    lease_epoch: u64,
    /// Last revision applied to the mirror.
    pub revision: i64,
    /// Elections our own admin actions are changing.
    /// The shared decision, forced marks and history; a deposed holder is its lease.
    book: Book,
}

impl Tracker {
    pub fn new(
        source: SourceId,
        source_name: String,
        layout: Box<dyn Layout>,
        history_limit: usize,
    ) -> Self {
        let book =
            Book::new(source_name.clone(), history_limit, Some(same_lease)).store_keeps_history();
        Tracker {
            source,
            source_name,
            layout,
            history_limit,
            mirror: Mirror::new(),
            elections: BTreeMap::new(),
            ttls: Fast::default(),
            lease_keys: Fast::default(),
            by_lease: Fast::default(),
            leases_of: Fast::default(),
            by_name: Fast::default(),
            deposed: Default::default(),
            lease_epoch: 0,
            revision: 0,
            book,
        }
    }

    pub fn layout(&self) -> &dyn Layout {
        self.layout.as_ref()
    }

    pub fn elections(&self) -> impl Iterator<Item = &Election> {
        self.elections.values()
    }

    /// The keys as of the last applied revision.
    pub fn mirror(&self) -> &Mirror {
        &self.mirror
    }

    /// Does the mirror hold exactly these keys (same revisions)?
    pub fn mirror_equals(&self, kvs: &Mirror) -> bool {
        &self.mirror == kvs
    }

    /// An admin action learnt at start (from the audit log) is about to change `name`.
    pub fn mark(&mut self, name: &str, mark: Option<crate::backend::ForcedMark>, now: Instant) {
        self.book.mark(name, mark, now);
    }

    pub fn source(&self) -> SourceId {
        self.source
    }

    /// The elections `ids` as derived from `kvs`, part of a snapshot still being read:
    /// what the screen shows meanwhile. Stores nothing.
    pub fn preview(&self, kvs: &Mirror, ids: &BTreeSet<Vec<u8>>) -> Vec<Election> {
        ids.iter()
            .map(|id| {
                let holders = self.layout.derive(id, kvs);
                let name = self.layout.display_name(id);
                let mut e = Election::new(self.source, name, self.layout.scheme_of(id));
                adopt(&mut e, holders, self.history_limit);
                e
            })
            .collect()
    }

    /// Of `ids`, the elections this tracker does not hold, with no holders: how elections
    /// shown from a snapshot read that failed midway look once a later read lacks them.
    pub fn missing(&self, ids: BTreeSet<Vec<u8>>) -> Vec<Election> {
        ids.into_iter()
            .filter(|id| !self.elections.contains_key(id))
            .map(|id| {
                let name = self.layout.display_name(&id);
                Election::new(self.source, name, self.layout.scheme_of(&id))
            })
            .collect()
    }

    /// Every election, cloned: what the screen is sent after a snapshot.
    pub fn cloned_elections(&self) -> Vec<Election> {
        self.elections.values().cloned().collect()
    }

    /// Loads the state at `revision` without recording history (the start of a replay or
    /// a plain snapshot). Clones nothing: a replay's start never goes to the screen.
    pub fn load(&mut self, kvs: Mirror, revision: i64) {
        self.mirror = kvs;
        self.revision = revision;
        self.lease_keys.clear();
        self.by_lease.clear();
        self.leases_of.clear();
        for kv in self.mirror.values() {
            *self.lease_keys.entry(kv.lease).or_default() += 1;
        }
        for id in self.election_ids(&self.mirror) {
            let holders = self.layout.derive(&id, &self.mirror);
            let e = self.elections.entry(id.clone()).or_insert_with(|| {
                let name = self.layout.display_name(&id);
                Election::new(self.source, name, self.layout.scheme_of(&id))
            });
            adopt(e, holders, self.history_limit);
            self.index(&id);
        }
        self.attach_ttls_all();
    }

    /// Every election in `kvs`, in key order, for a state read once and handed over
    /// (`status`). No mirror, map or indexes are kept: only following changes needs them,
    /// and building them was much of `status`'s time at a large prefix (docs/PERFORMANCE.md).
    pub fn derive_once(&mut self, kvs: &Mirror, revision: i64) -> Vec<Election> {
        self.revision = revision;
        self.election_ids(kvs)
            .iter()
            .map(|id| {
                let name = self.layout.display_name(id);
                let mut e = Election::new(self.source, name, self.layout.scheme_of(id));
                adopt(&mut e, self.layout.derive(id, kvs), self.history_limit);
                e
            })
            .collect()
    }

    /// The elections the keys of `kvs` belong to, once each, in order.
    pub(super) fn election_ids(&self, kvs: &Mirror) -> Vec<Vec<u8>> {
        let mut ids: Vec<Vec<u8>> = kvs
            .keys()
            .filter_map(|k| self.layout.election_of(k))
            .collect();
        // Keys come sorted, so an election's keys are mostly neighbours.
        ids.dedup();
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// TTL readings into elections handed over by `derive_once`.
    pub fn attach_readings(
        &mut self,
        elections: &mut [Election],
        readings: impl IntoIterator<Item = (i64, Option<(i64, i64)>, Instant)>,
    ) {
        for (lease, reading, now) in readings {
            self.record_ttl(lease, reading, now);
        }
        for e in elections {
            attach_ttls(e, &self.ttls);
        }
    }

    /// The changes that turn the mirror into `kvs` (after a gap in the watch, e.g. history
    /// compacted while disconnected), stamped with `revision`.
    pub fn diff_to(&self, kvs: &Mirror, revision: i64) -> Vec<Change> {
        let mut changes: Vec<Change> = self
            .mirror
            .keys()
            .filter(|k| !kvs.contains_key(*k))
            .map(|k| Change::Delete {
                key: k.clone(),
                revision,
            })
            .collect();
        changes.extend(
            kvs.values()
                .filter(|kv| self.mirror.get(&kv.key) != Some(kv))
                .map(|kv| {
                    Change::Put(Kv {
                        mod_revision: revision,
                        ..kv.clone()
                    })
                }),
        );
        changes
    }

    /// Leases whose fate decides the cause of a change in `changes`: the leases of leased
    /// keys being deleted.
    pub fn leases_to_check(&self, changes: &[Change]) -> Vec<i64> {
        // A key put earlier in the same batch is not in the mirror yet.
        let mut batch: HashMap<&[u8], i64> = HashMap::new();
        let mut set = BTreeSet::new();
        for c in changes {
            match c {
                Change::Put(kv) => {
                    batch.insert(&kv.key, kv.lease);
                }
                Change::Delete { key, .. } => {
                    let lease = batch
                        .get(key.as_slice())
                        .copied()
                        .or_else(|| self.mirror.get(key).map(|kv| kv.lease));
                    set.extend(lease.filter(|l| *l != 0));
                }
            }
        }
        set.into_iter().collect()
    }

    /// Re-indexes election `id` by the leases its leader and candidates hold now.
    pub(super) fn index(&mut self, id: &[u8]) {
        let Some(e) = self.elections.get(id) else {
            self.unindex(id);
            return;
        };
        match self.by_name.get_mut(&e.name) {
            Some(ids) if ids.iter().any(|known| known == id) => {}
            Some(ids) => ids.push(id.to_vec()),
            None => {
                self.by_name.insert(e.name.clone(), vec![id.to_vec()]);
            }
        }
        let mut leases: Vec<i64> = e
            .leader
            .iter()
            .chain(&e.candidates)
            .chain(e.deposed.as_deref())
            .chain(e.resigned.as_deref())
            .chain(e.held.as_deref())
            .filter_map(|c| c.lease)
            .filter(|l| *l != 0)
            .collect();
        leases.sort_unstable();
        leases.dedup();
        // The same leases as before (a key rewritten on its lease, the usual change): the
        // sets stand. Taking the election out and back in cost serve CPU at every change, for
        // nothing (docs/PERFORMANCE.md).
        let before = self.leases_of.get(id).map_or(&[][..], Vec::as_slice);
        if before == leases.as_slice() {
            return;
        }
        self.unindex(id);
        for l in &leases {
            self.by_lease.entry(*l).or_default().insert(id.to_vec());
            if !self.ttls.contains_key(l) {
                self.lease_epoch += 1;
            }
        }
        if !leases.is_empty() {
            self.leases_of.insert(id.to_vec(), leases);
        }
    }

    /// Takes election `id` out of the sets of the leases it held.
    fn unindex(&mut self, id: &[u8]) {
        for lease in self.leases_of.remove(id).unwrap_or_default() {
            if let Some(set) = self.by_lease.get_mut(&lease) {
                set.remove(id);
                if set.is_empty() {
                    self.by_lease.remove(&lease);
                }
            }
        }
    }
}

/// An election's leader and line as derived from the keys, with what the store says of them.
fn adopt(e: &mut Election, holders: super::layout::Holders, limit: usize) {
    e.leader = holders.leader;
    e.candidates = shrunk(holders.candidates);
    e.held = holders.held.map(Box::new);
    super::past::adopt(e, holders.members, holders.notes, &holders.past, limit);
}

/// A line without spare capacity: a one-candidate line grown by a push holds room for four,
/// and over many elections that spare room was the largest single use of memory.
fn shrunk(mut line: Vec<Candidate>) -> Vec<Candidate> {
    line.shrink_to_fit();
    line
}

fn attach_ttls(e: &mut Election, ttls: &Fast<i64, Deadline>) {
    let lookup = |lease: Option<i64>| lease.and_then(|l| ttls.get(&l).copied());
    if let Some(l) = e.leader.as_mut() {
        l.ttl = lookup(l.lease);
    }
    for d in [e.deposed.as_mut(), e.resigned.as_mut(), e.held.as_mut()]
        .into_iter()
        .flatten()
    {
        d.ttl = lookup(d.lease);
    }
    for c in e.candidates.iter_mut() {
        c.ttl = lookup(c.lease);
    }
}

mod history;
mod leases;
mod revision;
#[cfg(test)]
mod tests;

/// Whether two candidates hold the same lease: a deposed holder back in line on it.
fn same_lease(a: &Candidate, b: &Candidate) -> bool {
    a.lease.is_some() && a.lease == b.lease
}
