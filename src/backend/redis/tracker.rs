//! The lock keys of one Redis source as last read, and the leader changes between two reads
//! of a key, decided by the shared [`change`] rule. Pure: the follow task reads, this
//! decides. Each key is an election of its own; its value (the holder's token) is the
//! leader, `PTTL` its time left; nobody waits in line.

use std::collections::BTreeMap;
use std::time::{Instant, SystemTime};

use crate::admin::audit_tail::Done;
use crate::backend::{ForcedMark, ForcedMarks, change};
use crate::model::{
    Candidate, Cause, Deadline, Election, Event, Note, Scheme, SourceId, escape_bytes,
};

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
    /// Not told (a poll, a re-read after a reconnect): the countdown decides.
    Unseen,
}

/// What one read changed: the elections to send and the events they make.
#[derive(Default, Debug)]
pub(crate) struct Applied {
    pub changed: Vec<Election>,
    pub events: Vec<Event>,
}

pub(crate) struct RedisTracker {
    source: SourceId,
    source_name: String,
    history_limit: usize,
    /// By raw key; a key that went stays, without a leader (the read model drops it after
    /// its retention).
    elections: BTreeMap<Vec<u8>, Election>,
    /// Admin actions about to change an election (ours, or another electop's from the audit
    /// log): the change they make is recorded as forced.
    forced: ForcedMarks,
    /// The holder each election lost last, for an action learnt after its change.
    removed: BTreeMap<String, Candidate>,
}

impl RedisTracker {
    pub(crate) fn new(source: SourceId, source_name: String, history_limit: usize) -> Self {
        RedisTracker {
            source,
            source_name,
            history_limit: history_limit.max(1),
            elections: BTreeMap::new(),
            forced: ForcedMarks::default(),
            removed: BTreeMap::new(),
        }
    }

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

    /// The first read sets the scene: no history, no events.
    pub(crate) fn load(&mut self, reads: &[Read]) {
        for r in reads {
            if let Some(held) = &r.held {
                let mut e = Election::new(self.source, escape_bytes(&r.key), Scheme::RedisLock);
                set_holder(&mut e, &r.key, held, r.at, None);
                self.elections.insert(r.key.clone(), e);
            }
        }
    }

    /// Reads of every key (a poll, or a re-read after a reconnect): keys known but not read
    /// are gone. `at`: the wall time the changes are dated.
    pub(crate) fn resync(&mut self, reads: &[Read], now: Instant, at: SystemTime) -> Applied {
        let mut out = Applied::default();
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
            self.apply_into(&r, Gone::Unseen, at, &mut out);
        }
        for r in reads {
            self.apply_into(r, Gone::Unseen, at, &mut out);
        }
        out
    }

    /// One key as just read, after a keyspace event that says why it went (if it did).
    pub(crate) fn apply(&mut self, r: &Read, gone: Gone, at: SystemTime) -> Applied {
        let mut out = Applied::default();
        self.apply_into(r, gone, at, &mut out);
        out
    }

    fn apply_into(&mut self, r: &Read, gone: Gone, at: SystemTime, out: &mut Applied) {
        let old = self.elections.get(&r.key);
        let before = old.and_then(|e| e.leader.clone());
        let Some(old) = old else {
            let Some(held) = &r.held else { return };
            // A key not seen before: its holder is elected now.
            let mut e = Election::new(self.source, escape_bytes(&r.key), Scheme::RedisLock);
            set_holder(&mut e, &r.key, held, r.at, None);
            self.record(&mut e, None, (false, Cause::Unknown), at, out);
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
            Gone::Unseen if ran_out => Cause::LeaseExpired,
            // A key without expiry that went was deleted; one with time left, released.
            Gone::Unseen if before.as_ref().is_some_and(|b| b.ttl.is_none()) => Cause::Deleted,
            Gone::Unseen => Cause::Resigned,
        };
        // Another token in the same key with no removal told or due in between: written
        // over (a `SET` without `NX`); after an expiry or a release, a new tenure.
        // The same id under another token is another run of that holder: a new tenure.
        let rerun = before
            .as_ref()
            .zip(e.leader.as_ref())
            .is_some_and(|(b, a)| b.id == a.id && b.raw_id != a.raw_id);
        let same_tenure = matches!(gone, Gone::Unseen) && !ran_out && !rerun;
        self.record(&mut e, before.as_ref(), (same_tenure, cause), at, out);
        self.elections.insert(r.key.clone(), e.clone());
        out.changed.push(e);
    }

    /// An admin action changes `name` (`None`: ours did not after all). One learnt after its
    /// change was recorded relabels that change: the election to send, when it did.
    pub(crate) fn forced(
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
        let mut e = self.forced.note_on(name, e, mark, now, wall)?;
        // Relabelled as forced: the holder it removed is deposed.
        if let Some(r) = self.removed.get(name) {
            depose(&mut e, r, now);
            let key = r.raw_key.clone();
            self.elections.insert(key, e.clone());
        }
        Some(e)
    }

    /// At start, from the audit log: the holder the newest action on each election removed,
    /// deposed while its key's countdown as of that action would still run (it is not
    /// told, and believes it leads until its next renewal fails). An election whose key is
    /// gone is shown, without a leader, for as long.
    pub(crate) fn audited(&mut self, actions: &[Done], now: Instant, wall: SystemTime) {
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
            let e = self
                .elections
                .entry(raw_key.clone())
                .or_insert_with(|| Election::new(self.source, name.to_string(), Scheme::RedisLock));
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
        }
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
        (same_tenure, gone): (bool, Cause),
        at: SystemTime,
        out: &mut Applied,
    ) {
        let after = e.leader.as_ref();
        let Some(change) = change::decide(
            before.map(|c| c.id.as_str()),
            after.map(|c| c.id.as_str()),
            same_tenure,
            || gone,
            Cause::TakenOver,
        ) else {
            return;
        };
        // The holder went or was replaced: an admin action's, if one said it was about to.
        let now = Instant::now();
        let forced = before.and_then(|_| self.forced.take(&e.name, now));
        if let Some(b) = before {
            self.removed.insert(e.name.clone(), b.clone());
            if forced.is_some() {
                depose(e, b, now);
            }
        }
        // A deposed holder that took the lock again knows where it stands.
        if e.deposed
            .as_ref()
            .zip(e.leader.as_ref())
            .is_some_and(|(d, a)| d.raw_id == a.raw_id)
        {
            e.deposed = None;
        }
        let recorded = change.record(e, forced, (Some(at), None), self.history_limit);
        out.events
            .push(recorded.event(&self.source_name, &e.name, false));
    }
}

/// `c`, the holder an admin action removed, is deposed in `e` while its key's time would
/// have run: it is not told, and learns only when its next renewal fails.
fn depose(e: &mut Election, c: &Candidate, now: Instant) {
    if alive(c, now) && e.leader.as_ref().is_none_or(|l| l.raw_id != c.raw_id) {
        e.deposed = Some(Box::new(c.clone()));
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

#[cfg(test)]
mod tests {
    use super::super::token::SHOWN_MAX as TOKEN_MAX;
    use super::*;
    use crate::model::EventKind;
    use std::time::Duration;

    fn read(key: &str, held: Option<(&str, i64)>, at: Instant) -> Read {
        Read {
            key: key.as_bytes().to_vec(),
            held: held.map(|(v, p)| (v.as_bytes().to_vec(), p)),
            at,
        }
    }

    fn kinds(a: &Applied) -> Vec<(EventKind, Option<Cause>)> {
        a.events.iter().map(|e| (e.kind, e.cause)).collect()
    }

    #[test]
    fn elected_renewed_expired_and_taken_again() {
        let t0 = Instant::now();
        let wall = SystemTime::now();
        let mut t = RedisTracker::new(0, "redis x".into(), 10);
        t.load(&[read("leader:jobs", Some(("tok-a", 10_000)), t0)]);
        let e = &t.elections()[0];
        assert_eq!(e.leader.as_ref().map(|c| c.id.as_str()), Some("tok-a"));
        assert_eq!(
            e.leader
                .as_ref()
                .and_then(|c| c.ttl)
                .map(|d| d.remaining_ms),
            Some(10_000)
        );
        // Read again 1 s later at 9 s: the countdown agrees, nothing to send.
        let t1 = t0 + Duration::from_secs(1);
        let a = t.apply(
            &read("leader:jobs", Some(("tok-a", 9_000)), t1),
            Gone::Unseen,
            wall,
        );
        assert!(a.changed.is_empty() && a.events.is_empty());
        // Renewed to 10 s: the new reading, no leader change.
        let a = t.apply(
            &read("leader:jobs", Some(("tok-a", 10_000)), t1),
            Gone::Unseen,
            wall,
        );
        assert_eq!(a.changed.len(), 1);
        assert!(a.events.is_empty());
        // Gone after its countdown ran out, not told why: expired.
        let t2 = t1 + Duration::from_secs(11);
        let a = t.resync(&[], t2, wall);
        assert_eq!(
            kinds(&a),
            [(EventKind::LeaderLost, Some(Cause::LeaseExpired))]
        );
        let a = t.apply(
            &read("leader:jobs", Some(("tok-b", 10_000)), t2),
            Gone::Unseen,
            wall,
        );
        assert_eq!(
            kinds(&a),
            [(EventKind::LeaderElected, Some(Cause::Elected))]
        );
    }

    #[test]
    fn released_with_time_left_overwritten_and_told_causes() {
        let t0 = Instant::now();
        let wall = SystemTime::now();
        let mut t = RedisTracker::new(0, "redis x".into(), 10);
        t.load(&[read("k", Some(("a", 10_000)), t0)]);
        let a = t.resync(&[read("k", Some(("b", 10_000)), t0)], t0, wall);
        assert_eq!(
            kinds(&a),
            [(EventKind::LeaderChanged, Some(Cause::TakenOver))]
        );
        let a = t.resync(&[], t0, wall);
        assert_eq!(kinds(&a), [(EventKind::LeaderLost, Some(Cause::Resigned))]);
        t.apply(&read("k", Some(("c", 10_000)), t0), Gone::Unseen, wall);
        let a = t.apply(&read("k", Some(("d", 5_000)), t0), Gone::Expired, wall);
        assert_eq!(
            kinds(&a),
            [(EventKind::LeaderChanged, Some(Cause::LeaseExpired))]
        );
        let a = t.apply(&read("k", None, t0), Gone::Evicted, wall);
        assert_eq!(kinds(&a), [(EventKind::LeaderLost, Some(Cause::Deleted))]);
        // Nothing there, nothing known: nothing to say.
        let a = t.apply(&read("other", None, t0), Gone::Deleted, wall);
        assert!(a.changed.is_empty() && a.events.is_empty());
    }

    #[test]
    fn a_key_without_expiry_is_noted_and_odd_tokens_are_escaped_and_cut() {
        let t0 = Instant::now();
        let mut t = RedisTracker::new(0, "redis x".into(), 10);
        let huge = "x".repeat(10_000);
        t.load(&[
            read("forever", Some(("me", -1)), t0),
            Read {
                key: b"bin".to_vec(),
                held: Some((b"\xff\x1b[2J".to_vec(), 5_000)),
                at: t0,
            },
            read("huge", Some((&huge, 5_000)), t0),
        ]);
        let es = t.elections();
        let id = |n: &str| {
            let e = es.iter().find(|e| e.name == n).expect(n);
            e.leader.as_ref().map(|c| c.id.clone()).unwrap_or_default()
        };
        assert_eq!(id("bin"), "\\xff\\u{1b}[2J");
        assert!(id("huge").chars().count() <= TOKEN_MAX && id("huge").contains("10000 chars"));
        let f = es.iter().find(|e| e.name == "forever").expect("forever");
        assert_eq!(f.notes[0].text, "no expiry: held until deleted");
        assert!(f.leader.as_ref().is_some_and(|c| c.ttl.is_none()));
        let wall = SystemTime::now();
        let a = t.resync(&[], t0 + Duration::from_secs(60), wall);
        let causes: Vec<_> = a
            .events
            .iter()
            .map(|e| (e.election.clone(), e.cause))
            .collect();
        assert!(
            causes.contains(&(Some("forever".into()), Some(Cause::Deleted))),
            "{causes:?}"
        );
    }
}

#[cfg(test)]
mod deposed_tests {
    use super::*;
    use crate::model::EventKind;
    use std::time::Duration;

    fn mark() -> ForcedMark {
        ForcedMark {
            cause: Cause::ForcedReelection,
            by: "this electop".into(),
            before: Some("a".into()),
        }
    }

    /// Our re-election: the removed holder is deposed while its key's time would have run,
    /// then settled; one that takes the lock again is no longer deposed.
    #[test]
    fn a_forced_removal_deposes_the_holder_until_its_time_runs_out() {
        let t0 = Instant::now();
        let wall = SystemTime::now();
        let mut t = RedisTracker::new(0, "redis x".into(), 10);
        let read = |v: Option<&str>| Read {
            key: b"k".to_vec(),
            held: v.map(|v| (v.as_bytes().to_vec(), 3_000)),
            at: t0,
        };
        t.load(&[read(Some("a"))]);
        assert!(
            t.forced("k", Some(mark()), t0, wall).is_none(),
            "nothing changed yet"
        );
        let a = t.apply(&read(None), Gone::Deleted, wall);
        assert_eq!(a.events[0].cause, Some(Cause::ForcedReelection));
        assert_eq!(a.events[0].kind, EventKind::LeaderLost);
        let e = &a.changed[0];
        assert_eq!(e.deposed.as_ref().map(|d| d.id.as_str()), Some("a"));
        assert!(e.deposed_hold(t0).is_some_and(|h| h.contains("PTTL had")));
        assert!(
            t.settle(t0 + Duration::from_secs(1)).is_empty(),
            "still within its time"
        );
        let settled = t.settle(t0 + Duration::from_secs(4));
        assert!(settled.len() == 1 && settled[0].deposed.is_none());
        // Deposed again, then it takes the lock again: it knows.
        t.apply(&read(Some("a")), Gone::Unseen, wall);
        t.forced("k", Some(mark()), Instant::now(), wall);
        t.apply(&read(None), Gone::Deleted, wall);
        let a = t.apply(&read(Some("a")), Gone::Unseen, wall);
        assert!(a.changed[0].deposed.is_none());
    }

    /// Another electop's re-election, from the audit log at start: the removed holder is
    /// deposed for what was left of its countdown (the election made up when its key is
    /// gone); an action whose countdown has ended, or a name shown escaped, is not.
    #[test]
    fn the_audit_log_deposes_the_holder_another_electop_removed() {
        let t0 = Instant::now();
        let wall = SystemTime::now();
        let done = |election: &str, ttl: i64, ago_ms: u64| Done {
            pid: Some(1),
            source: "redis x".into(),
            election: election.into(),
            cause: Cause::ForcedReelection,
            by: "someone".into(),
            before: Some("old".into()),
            before_lease: None,
            before_session: None,
            before_ttl_ms: Some(ttl),
            at: Some(wall - Duration::from_millis(ago_ms)),
        };
        let mut t = RedisTracker::new(0, "redis x".into(), 10);
        t.load(&[Read {
            key: b"held".to_vec(),
            held: Some((b"new".to_vec(), 9_000)),
            at: t0,
        }]);
        t.audited(
            &[
                done("held", 5_000, 1_000),
                done("gone", 5_000, 2_000),
                done("over", 1_000, 2_000),
                done("bin\\xff", 5_000, 0),
            ],
            t0,
            wall,
        );
        let es = t.elections();
        let find = |n: &str| es.iter().find(|e| e.name == n);
        let held = find("held").expect("held");
        let d = held.deposed.as_ref().expect("deposed");
        assert_eq!(
            (d.id.as_str(), d.ttl.map(|t| t.remaining_ms)),
            ("old", Some(4_000))
        );
        assert_eq!(held.leader.as_ref().map(|l| l.id.as_str()), Some("new"));
        let gone = find("gone").expect("made up");
        assert!(gone.leader.is_none() && gone.deposed.is_some());
        assert!(find("over").is_none() && find("bin\\xff").is_none());
        assert_eq!(t.settle(t0 + Duration::from_millis(4_001)).len(), 2);
    }
}
