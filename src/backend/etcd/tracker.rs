//! The etcd backend's plain core: a mirror of the watched keys, the elections derived from
//! it, and the leader changes found by diffing each revision. No IO: the connection code
//! feeds it snapshots, watch events, lease readings and lease fates, and sends on what it
//! returns.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Instant, SystemTime};

use super::layout::{Kv, Layout, Mirror};
use crate::backend::change::{self, LeaderChange};
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
pub struct Observed {
    /// Wall-clock time of a live observation; `None` when replayed from past revisions.
    pub at: Option<SystemTime>,
    pub now: Instant,
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
    /// Last revision applied to the mirror.
    pub revision: i64,
    /// Elections our own admin actions are changing.
    pub forced: crate::backend::ForcedMarks,
}

impl Tracker {
    pub fn new(
        source: SourceId,
        source_name: String,
        layout: Box<dyn Layout>,
        history_limit: usize,
    ) -> Self {
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
            revision: 0,
            forced: Default::default(),
        }
    }

    pub fn layout(&self) -> &dyn Layout {
        self.layout.as_ref()
    }

    pub fn elections(&self) -> impl Iterator<Item = &Election> {
        self.elections.values()
    }

    /// Does the mirror hold exactly these keys (same revisions)?
    pub fn mirror_equals(&self, kvs: &Mirror) -> bool {
        &self.mirror == kvs
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
                let mut e = Election::new(self.source, name, self.layout.scheme());
                e.leader = holders.leader;
                e.candidates = shrunk(holders.candidates);
                let limit = self.history_limit;
                super::past::adopt(&mut e, holders.members, holders.notes, &holders.past, limit);
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
                Election::new(self.source, name, self.layout.scheme())
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
                Election::new(self.source, name, self.layout.scheme())
            });
            adopt(e, holders, self.history_limit);
            self.index(&id);
        }
        self.attach_ttls_all();
    }

    /// Every election in `kvs`, in key order, for a state read once and handed over
    /// (`status`). No mirror, map or indexes are kept: only following changes needs them,
    /// and building them was half the time `status` took at 100,000 elections.
    pub fn derive_once(&mut self, kvs: &Mirror, revision: i64) -> Vec<Election> {
        self.revision = revision;
        self.election_ids(kvs)
            .iter()
            .map(|id| {
                let name = self.layout.display_name(id);
                let mut e = Election::new(self.source, name, self.layout.scheme());
                adopt(&mut e, self.layout.derive(id, kvs), self.history_limit);
                e
            })
            .collect()
    }

    /// The elections the keys of `kvs` belong to, once each, in order.
    fn election_ids(&self, kvs: &Mirror) -> Vec<Vec<u8>> {
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

    /// Applies changes, one revision at a time so that each leader change keeps its own
    /// revision and cause. Returns the elections that changed and what happened.
    pub fn apply(
        &mut self,
        changes: Vec<Change>,
        fates: &HashMap<i64, LeaseFate>,
        seen: Observed,
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
        seen: Observed,
    ) {
        self.apply_changes(changes, fates, seen);
    }

    fn apply_changes(
        &mut self,
        changes: Vec<Change>,
        fates: &HashMap<i64, LeaseFate>,
        seen: Observed,
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

    fn apply_revision(
        &mut self,
        changes: &[Change],
        rev: i64,
        fates: &HashMap<i64, LeaseFate>,
        seen: Observed,
        touched: &mut BTreeSet<Vec<u8>>,
        events: &mut Vec<Event>,
    ) {
        let (before, released, ids) = self.mirror_changes(changes);
        self.revision = self.revision.max(rev);
        for id in ids.iter().cloned() {
            let holders = self.layout.derive(&id, &self.mirror);
            let name = self.layout.display_name(&id);
            let (source, scheme) = (self.source, self.layout.scheme());
            let election = self
                .elections
                .entry(id.clone())
                .or_insert_with(|| Election::new(source, name.clone(), scheme));
            let old_leader = election.leader.take();
            let old_line = std::mem::take(&mut election.candidates);
            election.leader = holders.leader;
            election.candidates = shrunk(holders.candidates);
            let limit = self.history_limit;
            super::past::adopt(
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
            self.deposed
                .extend(note_deposed(election, old_leader.as_ref(), fates));
            if let Some(change) = change {
                let forced = (!seen.replayed)
                    .then(|| self.forced.take(&name, seen.now))
                    .flatten();
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
    fn recount_leases(&mut self, released: impl IntoIterator<Item = i64>, ids: &BTreeSet<Vec<u8>>) {
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
    fn mirror_changes(&mut self, changes: &[Change]) -> Mirrored {
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

    /// Leases of the given elections' leaders, plus the first `line` candidates of
    /// `selected`: what the screen shows, so lease reads do not grow with the election count.
    pub fn visible_leases(
        &self,
        names: &[String],
        selected: Option<&str>,
        line: usize,
    ) -> Vec<i64> {
        let mut set = BTreeSet::new();
        // Looked up by name: every tick asks, and walking every election each time was most
        // of an idle dashboard's CPU at 10,000 elections.
        for e in names.iter().flat_map(|n| self.named(n)) {
            set.extend(
                e.leader
                    .iter()
                    .chain(e.deposed.as_deref())
                    .filter_map(|l| l.lease),
            );
        }
        for e in selected.into_iter().flat_map(|n| self.named(n)) {
            set.extend(e.candidates.iter().take(line).filter_map(|c| c.lease));
        }
        set.remove(&0);
        set.into_iter().collect()
    }

    /// The elections shown as `name`.
    fn named<'a>(&'a self, name: &str) -> impl Iterator<Item = &'a Election> + 'a {
        self.by_name
            .get(name)
            .into_iter()
            .flatten()
            .filter_map(|id| self.elections.get(id))
    }

    /// Every lease in every election.
    pub fn all_leases(&self) -> Vec<i64> {
        self.by_lease.keys().copied().filter(|l| *l != 0).collect()
    }

    /// An admin action changes `name` (or one of ours did not after all). Another electop's,
    /// learnt after its change was recorded, relabels that entry: returns the election then.
    pub fn forced(
        &mut self,
        name: &str,
        mark: Option<crate::backend::ForcedMark>,
        now: Instant,
        wall: SystemTime,
    ) -> Option<Election> {
        let history = self
            .elections
            .values_mut()
            .find(|e| e.name == name)
            .map(|e| &mut e.history);
        if self.forced.note(name, history, mark, now, wall) {
            return self.elections.values().find(|e| e.name == name).cloned();
        }
        None
    }

    /// Whether `lease` is a deposed leader's (read eagerly until it ends).
    pub fn is_deposed_lease(&self, lease: i64) -> bool {
        self.deposed.contains(&lease)
    }

    /// When `lease` was last read, if ever.
    pub fn ttl(&self, lease: i64) -> Option<Deadline> {
        self.ttls.get(&lease).copied()
    }

    /// Records a TTL reading (`None`: the lease no longer exists). Returns the elections
    /// whose countdowns changed.
    pub fn set_ttl(
        &mut self,
        lease: i64,
        reading: Option<(i64, i64)>,
        now: Instant,
    ) -> Vec<Election> {
        self.set_ttls([(lease, reading, now)])
    }

    /// Records a batch of TTL readings. Returns each election whose countdowns changed once,
    /// however many of its leases were read: a batch of every lease (`status`) clones each
    /// election once rather than once per lease it holds.
    pub fn set_ttls(
        &mut self,
        readings: impl IntoIterator<Item = (i64, Option<(i64, i64)>, Instant)>,
    ) -> Vec<Election> {
        let mut touched: std::collections::HashSet<Vec<u8>> = std::collections::HashSet::new();
        for (lease, reading, now) in readings {
            if self.record_ttl(lease, reading, now) {
                touched.extend(self.by_lease.get(&lease).into_iter().flatten().cloned());
            }
        }
        touched
            .iter()
            .filter_map(|id| {
                let e = self.elections.get_mut(id)?;
                attach_ttls(e, &self.ttls);
                Some(e.clone())
            })
            .collect()
    }

    /// Records a batch of TTL readings without returning the elections (their countdowns
    /// are attached; the caller sends the whole state afterwards).
    pub fn set_ttls_quietly(
        &mut self,
        readings: impl IntoIterator<Item = (i64, Option<(i64, i64)>, Instant)>,
    ) {
        for (lease, reading, now) in readings {
            self.record_ttl(lease, reading, now);
        }
        self.attach_ttls_all();
    }

    /// Records one reading; true when the elections on the lease need their countdowns
    /// attached again (and sent).
    fn record_ttl(&mut self, lease: i64, reading: Option<(i64, i64)>, now: Instant) -> bool {
        match reading {
            Some((ttl, granted)) if ttl >= 0 => {
                let prev = self.ttls.get(&lease).copied();
                let d = Deadline::from_seconds(ttl, granted, now, prev);
                self.ttls.insert(lease, d);
                // The running countdown agreed with the reading: every copy of it counts down
                // the same, so there is nothing to send. A lease shared by 10,000 elections and
                // read every second on screen would otherwise resend all of them each time.
                let same = prev.is_some_and(|p| {
                    p.granted_ms == d.granted_ms && p.remaining_ms_at(now) == d.remaining_ms
                });
                if same {
                    return false;
                }
            }
            _ => {
                // Gone: its keys disappear with the next watch event; show 0 until then.
                if let Some(d) = self.ttls.get_mut(&lease) {
                    d.remaining_ms = 0;
                    d.read_at = now;
                }
                // A deposed leader whose lease ended can no longer believe it leads.
                let ids: Vec<Vec<u8>> = self
                    .by_lease
                    .get(&lease)
                    .into_iter()
                    .flatten()
                    .cloned()
                    .collect();
                for id in ids {
                    if let Some(e) = self.elections.get_mut(&id)
                        && e.deposed.as_ref().is_some_and(|d| d.lease == Some(lease))
                    {
                        e.deposed = None;
                    }
                }
                self.deposed.remove(&lease);
            }
        }
        true
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
            let live = std::mem::take(&mut e.history);
            let mut merged: std::collections::VecDeque<HistoryEntry> = past.history.clone();
            let before = live.len();
            merged.extend(live.into_iter().filter(|h| !super::past::from_store(h)));
            let dropped = (before + past.history.len() - merged.len()) as u64;
            e.transitions = e.transitions.saturating_sub(dropped);
            while merged.len() > self.history_limit.max(1) {
                merged.pop_front();
            }
            e.history = merged;
            e.transitions += past.transitions;
            changed.push(e.clone());
            self.index(id);
        }
        changed
    }

    /// Gives replayed changes the time some electop saw them live, where it was recorded.
    pub fn fill_times(&mut self, times: &HashMap<i64, SystemTime>) {
        for e in self.elections.values_mut() {
            for h in e.history.iter_mut().filter(|h| h.at.is_none()) {
                h.at = h.revision.and_then(|r| times.get(&r).copied());
            }
        }
    }

    /// Re-indexes election `id` by the leases its leader and candidates hold now.
    fn index(&mut self, id: &[u8]) {
        for lease in self.leases_of.remove(id).unwrap_or_default() {
            if let Some(set) = self.by_lease.get_mut(&lease) {
                set.remove(id);
                if set.is_empty() {
                    self.by_lease.remove(&lease);
                }
            }
        }
        let Some(e) = self.elections.get(id) else {
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
            .filter_map(|c| c.lease)
            .filter(|l| *l != 0)
            .collect();
        leases.sort_unstable();
        leases.dedup();
        for l in &leases {
            self.by_lease.entry(*l).or_default().insert(id.to_vec());
        }
        if !leases.is_empty() {
            self.leases_of.insert(id.to_vec(), leases);
        }
    }

    fn attach_ttls_all(&mut self) {
        for e in self.elections.values_mut() {
            attach_ttls(e, &self.ttls);
        }
    }
}

/// An election's leader and line as derived from the keys, with what the store says of them.
fn adopt(e: &mut Election, holders: super::layout::Holders, limit: usize) {
    e.leader = holders.leader;
    e.candidates = shrunk(holders.candidates);
    super::past::adopt(e, holders.members, holders.notes, &holders.past, limit);
}

/// A line without spare capacity: a one-candidate line grown by a push holds room for four,
/// and at 100,000 elections that spare room was the largest single use of memory.
fn shrunk(mut line: Vec<Candidate>) -> Vec<Candidate> {
    line.shrink_to_fit();
    line
}

fn attach_ttls(e: &mut Election, ttls: &Fast<i64, Deadline>) {
    let lookup = |lease: Option<i64>| lease.and_then(|l| ttls.get(&l).copied());
    if let Some(l) = e.leader.as_mut() {
        l.ttl = lookup(l.lease);
    }
    if let Some(d) = e.deposed.as_mut() {
        d.ttl = lookup(d.lease);
    }
    for c in e.candidates.iter_mut() {
        c.ttl = lookup(c.lease);
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

/// A leader whose key left while its lease lives on may still believe it leads: it is
/// deposed (returns its lease) until it is back in line on that lease. Replayed history reads
/// lease fates now, so there "alive" means alive now too.
fn note_deposed(
    e: &mut Election,
    old: Option<&Candidate>,
    fates: &HashMap<i64, LeaseFate>,
) -> Option<i64> {
    let mut lease = None;
    if let Some(old) = old
        && e.leader.as_ref().is_none_or(|n| n.raw_key != old.raw_key)
        && old
            .lease
            .is_some_and(|l| l != 0 && fates.get(&l) == Some(&LeaseFate::Alive))
    {
        lease = old.lease;
        e.deposed = Some(Box::new(old.clone()));
    }
    let back_in_line = e.deposed.as_ref().is_some_and(|d| {
        e.leader
            .iter()
            .chain(&e.candidates)
            .any(|c| c.lease == d.lease)
    });
    if back_in_line {
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
    seen: Observed,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::etcd::election::EtcdElection;
    use crate::backend::etcd::lease_key::EtcdLeaseKey;
    use std::time::Duration;

    fn kv(key: &str, value: &str, create: i64, rev: i64, lease: i64) -> Kv {
        Kv {
            key: key.as_bytes().to_vec(),
            value: value.as_bytes().to_vec(),
            create_revision: create,
            mod_revision: rev,
            lease,
        }
    }

    fn del(key: &str, rev: i64) -> Change {
        Change::Delete {
            key: key.as_bytes().to_vec(),
            revision: rev,
        }
    }

    fn live(now: Instant) -> Observed {
        Observed {
            at: Some(SystemTime::UNIX_EPOCH),
            now,
            replayed: false,
        }
    }

    fn election_tracker() -> Tracker {
        Tracker::new(
            0,
            "src".into(),
            Box::new(EtcdElection {
                prefix: b"/e/".to_vec(),
            }),
            10,
        )
    }

    #[test]
    fn a_put_and_its_delete_in_one_batch_both_apply() {
        let mut t = election_tracker();
        let changes = vec![
            Change::Put(kv("/e/j/1", "a", 2, 2, 1)),
            Change::Put(kv("/e/j/2", "b", 3, 3, 2)),
            del("/e/j/1", 4),
        ];
        let (elections, events) = t.apply(
            changes,
            &HashMap::from([(1, LeaseFate::Alive)]),
            live(Instant::now()),
        );
        let e = &elections[0];
        assert_eq!(e.leader.as_ref().map(|l| l.id.as_str()), Some("b"));
        let kinds: Vec<_> = events.iter().map(|e| e.kind).collect();
        assert!(kinds.contains(&EventKind::LeaderElected));
        let change = events
            .iter()
            .find(|e| e.kind == EventKind::LeaderChanged)
            .expect("change");
        assert_eq!(change.cause, Some(Cause::Resigned));
        assert_eq!(e.transitions, 2);
        // Delivered again after a resumed watch: nothing changes twice.
        let again = vec![Change::Put(kv("/e/j/2", "b", 3, 3, 2)), del("/e/j/1", 4)];
        let (_, events) = t.apply(again, &HashMap::new(), live(Instant::now()));
        assert!(events.is_empty(), "{events:?}");
    }

    #[test]
    fn a_vanished_lease_is_expired_when_its_countdown_ran_out_else_revoked() {
        let now = Instant::now();
        let mut t = Tracker::new(
            0,
            "src".into(),
            Box::new(EtcdLeaseKey {
                prefix: b"/l/".to_vec(),
                registry: None,
            }),
            10,
        );
        let snap: Mirror = [kv("/l/a", "x", 2, 2, 7), kv("/l/b", "y", 3, 3, 8)]
            .into_iter()
            .map(|kv| (kv.key.clone(), kv))
            .collect();
        t.load(snap, 3);
        t.set_ttl(7, Some((1, 10)), now);
        t.set_ttl(8, Some((20, 30)), now);
        let gone = HashMap::from([(7, LeaseFate::Gone), (8, LeaseFate::Gone)]);
        let later = now + Duration::from_millis(1_400);
        let (_, events) = t.apply(vec![del("/l/a", 4), del("/l/b", 5)], &gone, live(later));
        let causes: Vec<_> = events
            .iter()
            .filter(|e| e.kind == EventKind::LeaderLost)
            .map(|e| (e.election.clone(), e.cause))
            .collect();
        assert_eq!(
            causes,
            [
                (Some("a".to_string()), Some(Cause::LeaseExpired)),
                (Some("b".to_string()), Some(Cause::LeaseRevoked)),
            ]
        );
    }

    #[test]
    fn replayed_changes_have_no_time_and_cannot_tell_expiry_from_revocation() {
        let mut t = election_tracker();
        let seen = Observed {
            at: None,
            now: Instant::now(),
            replayed: true,
        };
        let changes = vec![Change::Put(kv("/e/j/1", "a", 2, 2, 1)), del("/e/j/1", 3)];
        let (elections, events) = t.apply(changes, &HashMap::from([(1, LeaseFate::Gone)]), seen);
        let h: Vec<_> = elections[0]
            .history
            .iter()
            .map(|h| (h.at, h.cause))
            .collect();
        assert_eq!(h, [(None, Cause::Elected), (None, Cause::LeaseEnded)]);
        assert!(events.iter().all(|e| e.replayed));
    }

    #[test]
    fn a_change_our_admin_action_made_is_forced() {
        let mut t = election_tracker();
        let now = Instant::now();
        t.apply(
            vec![
                Change::Put(kv("/e/j/1", "a", 2, 2, 1)),
                Change::Put(kv("/e/j/2", "b", 3, 3, 2)),
            ],
            &HashMap::new(),
            live(now),
        );
        let mark = crate::backend::ForcedMark {
            cause: Cause::ForcedReelection,
            by: crate::backend::BY_US.into(),
            before: None,
        };
        t.forced.set("j".into(), Some(mark), now);
        let alive = HashMap::from([(1, LeaseFate::Alive)]);
        let (_, events) = t.apply(vec![del("/e/j/1", 4)], &alive, live(now));
        let change = events
            .iter()
            .find(|e| e.kind == EventKind::LeaderChanged)
            .expect("change");
        assert_eq!(change.cause, Some(Cause::ForcedReelection));
        // The mark is used up: the next change is read from the store again.
        let (_, events) = t.apply(
            vec![Change::Put(kv("/e/j/1", "c", 5, 5, 3)), del("/e/j/2", 6)],
            &HashMap::from([(2, LeaseFate::Alive)]),
            live(now),
        );
        let change = events
            .iter()
            .find(|e| e.kind == EventKind::LeaderChanged)
            .expect("change");
        assert_eq!(change.cause, Some(Cause::Resigned));
    }

    #[test]
    fn proclaim_and_zombie_keys() {
        let mut t = election_tracker();
        let (_, _) = t.apply(
            vec![Change::Put(kv("/e/j/1", "a", 2, 2, 0))],
            &HashMap::new(),
            live(Instant::now()),
        );
        let (elections, events) = t.apply(
            vec![Change::Put(kv("/e/j/1", "a2", 2, 3, 0))],
            &HashMap::new(),
            live(Instant::now()),
        );
        assert_eq!(events[0].cause, Some(Cause::Proclaimed));
        assert!(elections[0].has_zombie(), "lease 0 never expires");
        let (_, events) = t.apply(
            vec![del("/e/j/1", 4)],
            &HashMap::new(),
            live(Instant::now()),
        );
        assert_eq!(events[0].cause, Some(Cause::Deleted));
    }

    #[test]
    fn diff_to_a_later_snapshot_reports_what_was_missed() {
        let mut t = election_tracker();
        let old: Mirror = [kv("/e/j/1", "a", 2, 2, 1)]
            .into_iter()
            .map(|kv| (kv.key.clone(), kv))
            .collect();
        t.load(old, 2);
        let new: Mirror = [kv("/e/j/5", "c", 9, 9, 5)]
            .into_iter()
            .map(|kv| (kv.key.clone(), kv))
            .collect();
        let changes = t.diff_to(&new, 10);
        let (elections, _) = t.apply(
            changes,
            &HashMap::from([(1, LeaseFate::Gone)]),
            live(Instant::now()),
        );
        assert_eq!(
            elections[0].leader.as_ref().map(|l| l.id.as_str()),
            Some("c")
        );
        assert!(
            t.mirror_equals(
                &new.into_iter()
                    .map(|(k, mut v)| {
                        v.mod_revision = 10;
                        (k, v)
                    })
                    .collect()
            )
        );
    }

    #[test]
    fn a_ttl_reading_touches_only_the_elections_on_that_lease() {
        let now = Instant::now();
        let mut t = election_tracker();
        let mut m = Mirror::new();
        for (i, lease) in [(1, 0x10), (2, 0x20), (3, 0x10)] {
            let key = format!("/e/job{i}/{lease:x}");
            m.insert(key.clone().into_bytes(), kv(&key, "n", i, i, lease));
        }
        t.load(m, 3);
        let mut names: Vec<String> = t
            .set_ttl(0x10, Some((30, 60)), now)
            .into_iter()
            .map(|e| e.name)
            .collect();
        names.sort();
        assert_eq!(names, ["job1", "job3"]);
        // job1's key moves to another lease: the old lease no longer reaches it.
        let moved = Change::Put(kv("/e/job1/10", "n", 1, 4, 0x30));
        t.apply(vec![moved], &HashMap::new(), live(now));
        let names: Vec<String> = t
            .set_ttl(0x10, Some((20, 60)), now)
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(names, ["job3"]);
        assert_eq!(t.set_ttl(0x30, None, now).len(), 1);
    }

    #[test]
    fn a_leader_resigned_with_its_lease_alive_is_deposed_until_the_lease_ends() {
        let now = Instant::now();
        let mut t = election_tracker();
        let mut m = Mirror::new();
        m.insert(b"/e/jobs/a".to_vec(), kv("/e/jobs/a", "node-a", 1, 1, 0xa));
        m.insert(b"/e/jobs/b".to_vec(), kv("/e/jobs/b", "node-b", 2, 2, 0xb));
        t.load(m, 2);
        let alive = HashMap::from([(0xa, LeaseFate::Alive)]);
        let (changed, _) = t.apply(vec![del("/e/jobs/a", 3)], &alive, live(now));
        let d = changed[0].deposed.as_ref().expect("deposed");
        assert_eq!((d.id.as_str(), d.lease), ("node-a", Some(0xa)));
        assert!(t.is_deposed_lease(0xa));
        assert!(t.all_leases().contains(&0xa), "its lease is still read");
        let after = t.set_ttl(0xa, None, now);
        assert_eq!(after.len(), 1);
        assert!(after[0].deposed.is_none(), "lease over: no longer an alarm");
        assert!(!t.is_deposed_lease(0xa));
        // A lease that ended with the key is no deposition.
        let gone = HashMap::from([(0xb, LeaseFate::Gone)]);
        let (changed, _) = t.apply(vec![del("/e/jobs/b", 4)], &gone, live(now));
        assert!(changed[0].deposed.is_none());
    }

    #[test]
    fn a_reading_the_countdown_agrees_with_sends_nothing() {
        let t0 = Instant::now();
        let mut t = election_tracker();
        let mut m = Mirror::new();
        m.insert(b"/e/job/10".to_vec(), kv("/e/job/10", "n", 1, 1, 0x10));
        t.load(m, 1);
        assert_eq!(
            t.set_ttl(0x10, Some((30, 60)), t0).len(),
            1,
            "first reading"
        );
        let later = t0 + std::time::Duration::from_secs(5);
        assert!(
            t.set_ttl(0x10, Some((25, 60)), later).is_empty(),
            "25 s left, as counted down"
        );
        assert_eq!(
            t.set_ttl(0x10, Some((60, 60)), later).len(),
            1,
            "a keep-alive moved the deadline"
        );
    }

    fn two_candidates(t: &mut Tracker) {
        let mut m = Mirror::new();
        m.insert(b"/e/job/10".to_vec(), kv("/e/job/10", "a", 1, 1, 0x10));
        m.insert(b"/e/job/20".to_vec(), kv("/e/job/20", "b", 2, 2, 0x20));
        m.insert(b"/e/other/30".to_vec(), kv("/e/other/30", "c", 3, 3, 0x30));
        t.load(m, 3);
    }

    #[test]
    fn a_batch_of_readings_sends_each_election_once_with_every_countdown() {
        let now = Instant::now();
        let mut t = election_tracker();
        two_candidates(&mut t);
        let changed = t.set_ttls([(0x10, Some((30, 60)), now), (0x20, Some((40, 60)), now)]);
        assert_eq!(changed.len(), 1, "one election, two of its leases read");
        let ttls: Vec<_> = changed[0]
            .candidates
            .iter()
            .map(|c| c.ttl.map(|d| d.remaining_ms))
            .collect();
        // A reading in whole seconds is counted from the middle of that second.
        assert_eq!(ttls, [Some(30_500), Some(40_500)]);
        t.set_ttls_quietly([(0x30, Some((5, 60)), now)]);
        let other = t.elections().find(|e| e.name == "other").expect("other");
        assert_eq!(
            other
                .leader
                .as_ref()
                .and_then(|l| l.ttl)
                .map(|d| d.remaining_ms),
            Some(5_500)
        );
    }

    #[test]
    fn visible_leases_are_found_by_name() {
        let mut t = election_tracker();
        two_candidates(&mut t);
        assert_eq!(t.visible_leases(&["job".into()], None, 64), [0x10]);
        assert_eq!(
            t.visible_leases(&["other".into()], Some("job"), 64),
            [0x10, 0x20, 0x30]
        );
        assert_eq!(t.visible_leases(&["nope".into()], Some("job"), 1), [0x10]);
    }

    #[test]
    fn a_preview_derives_without_storing_and_missing_elections_come_back_empty() {
        let t = election_tracker();
        let mut m = Mirror::new();
        m.insert(b"/e/job/10".to_vec(), kv("/e/job/10", "a", 1, 1, 0x10));
        m.insert(b"/e/gone/20".to_vec(), kv("/e/gone/20", "b", 2, 2, 0x20));
        let ids: BTreeSet<Vec<u8>> = [b"/e/job/".to_vec()].into();
        let shown = t.preview(&m, &ids);
        assert_eq!(shown.len(), 1);
        assert_eq!(shown[0].leader.as_ref().map(|l| l.id.as_str()), Some("a"));
        assert_eq!(t.elections().count(), 0, "nothing stored");
        let mut t = election_tracker();
        two_candidates(&mut t);
        let previewed: BTreeSet<Vec<u8>> = [b"/e/job/".to_vec(), b"/e/gone/".to_vec()].into();
        let missing = t.missing(previewed);
        assert_eq!(missing.len(), 1);
        assert_eq!(missing[0].name, "gone");
        assert!(missing[0].leader.is_none() && missing[0].candidates.is_empty());
    }
}
