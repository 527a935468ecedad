//! The lock keys of one Redis source as last read, and the leader changes between two reads
//! of a key. Pure: the follow task reads, this
//! decides; the shared election [`Book`] records. Each key is an election of its own; its value (the holder's token) is the
//! leader, `PTTL` its time left; nobody waits in line.

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime};

use crate::admin::audit_tail::Done;
use crate::backend::ForcedMark;
use crate::backend::book::{Book, Step, When};
use crate::backend::change::Changes;
use crate::model::{Candidate, Cause, Deadline, Election, Note, Scheme, SourceId, escape_bytes};

/// A `PTTL` reading within this of the running countdown keeps the countdown, so it ticks
/// smoothly; further off, the key was renewed (or shortened) and the reading is taken.
const AGREE_MS: i64 = 250;

/// One lock key as read: its value and `PTTL` (ms; -1: no expiry), or gone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Read {
    pub key: Vec<u8>,
    /// `None`: the key is not there (any more).
    pub held: Option<(Vec<u8>, i64)>,
    /// When the read was sent: what `PTTL` says was left at or after this moment.
    pub at: Instant,
}

/// Why a key went, as far as the source says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Gone {
    /// Keyspace event `expired`.
    Expired,
    /// Keyspace event `del`/`unlink`: the holder released it (or someone deleted it).
    Deleted,
    /// Keyspace event `evicted`: Redis dropped it for memory.
    Evicted,
    /// Not told (a write's event): the countdown decides.
    Unseen,
    /// Not told, read by a poll: the countdown decides; another token in the key may be a
    /// release and an acquire as well as a write over it, which a poll cannot tell apart.
    Polled,
    /// Not watched: a re-read after a reconnect (a countdown that ran out while electop was
    /// disconnected is no observation), or a key gone without an event (`FLUSHDB`). Why a
    /// holder went is not known.
    Gap,
}

impl Gone {
    /// Why another token in the same tenure's key is there: written over, or, polled, the
    /// result of what happened between two reads (a release and an acquire look the same).
    fn in_place(self) -> Cause {
        match self {
            Gone::Polled => Cause::Unknown,
            _ => Cause::TakenOver,
        }
    }
}

pub(crate) struct RedisTracker {
    source: SourceId,
    /// By raw key; a key that went stays, without a leader (the read model drops it after
    /// its retention).
    elections: BTreeMap<Vec<u8>, Election>,
    /// The shared decision, forced marks and history; a deposed holder is its token.
    book: Book,
}

impl RedisTracker {
    /// `past`: the history read back from the source's journal.
    pub(crate) fn new(
        source: SourceId,
        source_name: String,
        history_limit: usize,
        past: BTreeMap<String, Vec<crate::model::HistoryEntry>>,
    ) -> Self {
        let same_token: fn(&Candidate, &Candidate) -> bool = |a, b| a.raw_id == b.raw_id;
        RedisTracker {
            source,
            elections: BTreeMap::new(),
            book: Book::new(source_name, history_limit, Some(same_token)).with_past(past),
        }
    }

    #[cfg(test)]
    pub(crate) fn elections(&self) -> Vec<Election> {
        self.elections.values().cloned().collect()
    }

    /// The keys with a holder now, to re-read after a reconnect.
    pub(crate) fn held_keys(&self) -> Vec<Vec<u8>> {
        self.elections
            .iter()
            .filter(|(_, e)| e.leader.is_some())
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// The first read sets the scene; its only changes are those since the history read
    /// back (a key whose holder changed, or went, while no electop watched).
    /// `keep`: the retention of an election with nothing in the store.
    #[cfg(test)]
    pub(crate) fn load(&mut self, reads: &[Read], at: SystemTime, keep: Duration) -> Changes {
        let (mut out, _) = self.load_part(reads, at);
        let (end, _) = self.load_end(at, keep);
        out.changed.extend(end.changed);
        out.events.extend(end.events);
        out
    }

    /// Part of the first read (a batch of keys, each read once): its elections, to show
    /// while the rest is read, and their changes since the history read back.
    pub(crate) fn load_part(&mut self, reads: &[Read], at: SystemTime) -> (Changes, Vec<Election>) {
        let mut out = Changes::default();
        let mut shown = Vec::with_capacity(reads.len());
        for r in reads {
            if let Some(held) = &r.held {
                let name = escape_bytes(&r.key);
                let mut e = self.book.election(self.source, name, Scheme::RedisLock);
                set_holder(&mut e, &r.key, held, r.at, None);
                self.book.first_read(&mut e, (at, None), &mut out);
                shown.push(e.clone());
                self.elections.insert(r.key.clone(), e);
            }
        }
        (out, shown)
    }

    /// The end of the first read: the elections of the history with no key read (gone while
    /// no electop watched), with their changes.
    pub(crate) fn load_end(&mut self, at: SystemTime, keep: Duration) -> (Changes, Vec<Election>) {
        let mut out = Changes::default();
        let mut shown = Vec::new();
        // A name shown escaped is not the key's bytes: its election is not made up.
        for name in self.book.unseen(at, keep) {
            if name.contains('\\') {
                continue;
            }
            let mut e = self
                .book
                .election(self.source, name.clone(), Scheme::RedisLock);
            self.book.first_read(&mut e, (at, None), &mut out);
            shown.push(e.clone());
            self.elections.insert(name.into_bytes(), e);
        }
        (out, shown)
    }

    /// Reads of every key (a poll, or after a reconnect, `gap`, a re-read): keys known but
    /// not read are gone. `at`: the wall time the changes are dated.
    pub(crate) fn resync(
        &mut self,
        reads: &[Read],
        now: Instant,
        at: SystemTime,
        gap: bool,
    ) -> Changes {
        let mut out = Changes::default();
        let gone = if gap { Gone::Gap } else { Gone::Polled };
        let read: std::collections::HashSet<&[u8]> =
            reads.iter().map(|r| r.key.as_slice()).collect();
        let missing: Vec<Vec<u8>> = self
            .held_keys()
            .into_iter()
            .filter(|k| !read.contains(k.as_slice()))
            .collect();
        for key in missing {
            let r = Read {
                key,
                held: None,
                at: now,
            };
            self.apply_into(&r, gone, at, &mut out);
        }
        for r in reads {
            self.apply_into(r, gone, at, &mut out);
        }
        out
    }

    /// One key as just read, after a keyspace event that says why it went (if it did).
    pub(crate) fn apply(&mut self, r: &Read, gone: Gone, at: SystemTime) -> Changes {
        let mut out = Changes::default();
        self.apply_into(r, gone, at, &mut out);
        out
    }

    fn apply_into(&mut self, r: &Read, gone: Gone, at: SystemTime, out: &mut Changes) {
        let old = self.elections.get(&r.key);
        let before = old.and_then(|e| e.leader.clone());
        let Some(old) = old else {
            let Some(held) = &r.held else { return };
            // A key not seen before: its holder is elected now.
            let name = escape_bytes(&r.key);
            let mut e = self.book.election(self.source, name, Scheme::RedisLock);
            set_holder(&mut e, &r.key, held, r.at, None);
            self.record(
                &mut e,
                None,
                (false, Cause::Unknown, Cause::TakenOver),
                at,
                out,
            );
            self.elections.insert(r.key.clone(), e.clone());
            out.changed.push(e);
            return;
        };
        let mut e = old.clone();
        match &r.held {
            Some(held) => set_holder(&mut e, &r.key, held, r.at, before.as_ref()),
            None => {
                e.leader = None;
                e.candidates.clear();
                e.notes.clear();
            }
        }
        if e.leader == old.leader && e.notes == old.notes {
            return;
        }
        // Ran out: the countdown of the last reading reached zero by the time of this one.
        let ran_out = before
            .as_ref()
            .and_then(|b| b.ttl)
            .is_some_and(|t| t.remaining_ms_at(r.at) == 0);
        let cause = match gone {
            Gone::Expired => Cause::LeaseExpired,
            // A key without expiry is no lease: it was deleted, not released early.
            Gone::Deleted if before.as_ref().is_some_and(|b| b.ttl.is_none()) => Cause::Deleted,
            Gone::Deleted => Cause::Resigned,
            Gone::Evicted => Cause::Deleted,
            Gone::Unseen | Gone::Polled if ran_out => Cause::LeaseExpired,
            // A key without expiry that went was deleted; one with time left, released.
            Gone::Unseen | Gone::Polled if before.as_ref().is_some_and(|b| b.ttl.is_none()) => {
                Cause::Deleted
            }
            Gone::Unseen | Gone::Polled => Cause::Resigned,
            Gone::Gap if before.as_ref().is_some_and(|b| b.ttl.is_none()) => Cause::Deleted,
            Gone::Gap => Cause::Unknown,
        };
        // Another token in the same key with no removal told or due in between: written
        // over (a `SET` without `NX`); after an expiry or a release, a new tenure.
        // The same id under another token is another run of that holder: a new tenure.
        let rerun = before
            .as_ref()
            .zip(e.leader.as_ref())
            .is_some_and(|(b, a)| b.id == a.id && b.raw_id != a.raw_id);
        // The same token read again is the same tenure whatever the clock says (a holder
        // that renewed through an outage; an event that predates the read it follows).
        let same_token = before
            .as_ref()
            .zip(e.leader.as_ref())
            .is_some_and(|(b, a)| b.raw_id == a.raw_id);
        let unseen = matches!(gone, Gone::Unseen | Gone::Polled);
        let same_tenure = same_token || (unseen && !ran_out && !rerun);
        self.record(
            &mut e,
            before.as_ref(),
            (same_tenure, cause, gone.in_place()),
            at,
            out,
        );
        self.elections.insert(r.key.clone(), e.clone());
        out.changed.push(e);
    }

    /// At start, from the audit log: the holder the newest action on each election removed,
    /// deposed while its key's countdown as of that action would still run (it is not
    /// told, and believes it leads until its next renewal fails). An election whose key is
    /// gone is shown, without a leader, for as long.
    /// Returns the elections it marked, to show again.
    pub(crate) fn audited(
        &mut self,
        actions: &[Done],
        now: Instant,
        wall: SystemTime,
    ) -> Vec<Election> {
        let mut marked = Vec::new();
        let newest: BTreeMap<&str, &Done> =
            actions.iter().map(|d| (d.election.as_str(), d)).collect();
        for (name, done) in newest {
            let (Some(id), Some(ttl), Some(at)) = (&done.before, done.before_ttl_ms, done.at)
            else {
                continue;
            };
            let since = wall.duration_since(at).unwrap_or_default().as_millis() as i64;
            let left = ttl - since;
            // A name shown escaped is not the key's bytes: its election is not made up.
            if left <= 0 || name.contains('\\') {
                continue;
            }
            let raw_key = name.as_bytes().to_vec();
            let e = match self.elections.entry(raw_key.clone()) {
                std::collections::btree_map::Entry::Occupied(o) => o.into_mut(),
                std::collections::btree_map::Entry::Vacant(v) => {
                    let e = self
                        .book
                        .election(self.source, name.to_string(), Scheme::RedisLock);
                    v.insert(e)
                }
            };
            if e.leader.as_ref().is_some_and(|l| l.id == *id) || e.deposed.is_some() {
                continue;
            }
            let mut holder = Candidate::plain(id, name);
            holder.raw_id = id.as_bytes().to_vec();
            holder.raw_key = raw_key;
            holder.ttl = Some(Deadline {
                granted_ms: ttl,
                remaining_ms: left,
                read_at: now,
            });
            e.deposed = Some(Box::new(holder));
            marked.push(e.clone());
        }
        marked
    }

    /// Deposed holders whose key's time ran out since: they know, or should, that the lock
    /// is gone. The elections to send.
    pub(crate) fn settle(&mut self, now: Instant) -> Vec<Election> {
        let mut out = Vec::new();
        for e in self.elections.values_mut() {
            if e.deposed.as_ref().is_some_and(|d| !alive(d, now)) {
                e.deposed = None;
                out.push(e.clone());
            }
        }
        out
    }

    fn record(
        &mut self,
        e: &mut Election,
        before: Option<&Candidate>,
        (same_tenure, gone, in_place): (bool, Cause, Cause),
        at: SystemTime,
        out: &mut Changes,
    ) {
        let when = When::live(at);
        let step = Step {
            before,
            same_tenure,
            gone,
            in_place,
            // A holder an admin action removed believes it leads until its next renewal
            // fails: deposed while its key's time would have run.
            may_lead: before.is_some_and(|b| alive(b, when.now)),
            when,
        };
        self.book.apply(e, step, out);
    }
}

/// Whether `c`'s key would still be held by its countdown (one without expiry: always).
fn alive(c: &Candidate, now: Instant) -> bool {
    c.ttl.is_none_or(|t| t.remaining_ms_at(now) > 0)
}

/// `e`'s holder from a read of its key: the token, and the countdown from `PTTL` (kept
/// where the running one agrees with the reading, for the same token).
fn set_holder(
    e: &mut Election,
    key: &[u8],
    (value, pttl): &(Vec<u8>, i64),
    read_at: Instant,
    before: Option<&Candidate>,
) {
    let same = before.filter(|b| b.raw_id == *value);
    let ttl = (*pttl >= 0).then(|| {
        let prev = same.and_then(|b| b.ttl);
        let granted = prev.map_or(*pttl, |p| p.granted_ms.max(*pttl));
        match prev {
            Some(p) if (p.remaining_ms_at(read_at) - pttl).abs() <= AGREE_MS => Deadline {
                granted_ms: granted,
                ..p
            },
            _ => Deadline {
                granted_ms: granted,
                remaining_ms: *pttl,
                read_at,
            },
        }
    });
    let mut c = Candidate::plain("", "");
    // An `electop node`'s token shows as its id (see `token`); any other, whole.
    c.id = super::token::holder(value);
    c.raw_id = value.clone();
    c.key = escape_bytes(key);
    c.raw_key = key.to_vec();
    c.ttl = ttl;
    e.notes = if ttl.is_none() {
        vec![Note {
            name: "expiry".into(),
            text: "no expiry: held until deleted".into(),
            raw_key: key.to_vec(),
            mod_revision: 0,
        }]
    } else {
        Vec::new()
    };
    e.candidates = vec![c.clone()];
    e.leader = Some(c);
}

impl crate::backend::forced::Marks for RedisTracker {
    fn book(&mut self) -> &mut crate::backend::book::Book {
        &mut self.book
    }

    fn forced(
        &mut self,
        name: &str,
        mark: Option<ForcedMark>,
        now: Instant,
        wall: SystemTime,
    ) -> Option<Election> {
        let key = self
            .elections
            .iter()
            .find(|(_, e)| e.name == name)
            .map(|(k, _)| k.clone());
        let e = key.and_then(|k| self.elections.get_mut(&k));
        // Relabelled as forced: the holder it removed is deposed while its key's time runs.
        let (e, _) = self
            .book
            .forced(name, e, mark, (now, wall), |r| alive(r, now))?;
        Some(e)
    }
}

#[cfg(test)]
mod tests;
