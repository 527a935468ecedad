//! The Leases of one Kubernetes source, and the leader changes between two reads of each,
//! judged as client-go judges them. Pure: the follow task lists and watches, this decides;
//! the shared [`Book`] records.
//!
//! client-go holds a Lease expired `leaseDurationSeconds` after it last saw the record
//! change, on its own clock, never from `renewTime` (the writer's clock). A change seen
//! live therefore restarts the countdown at the full duration, and `renewTime` is only
//! compared with when the write was seen (the writer's clock skew). A Lease read without
//! its write being seen (the first list, a re-list) counts down from `renewTime`, capped
//! at the duration: what a candidate that had been watching would count at most.

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime};

use super::lease::{Read, utc};
use crate::backend::ForcedMark;
use crate::backend::book::{Book, Step, When};
use crate::backend::change::Changes;
use crate::model::{Candidate, Cause, Deadline, Election, Note, Scheme, SourceId, escape_bytes};

/// A Lease as last read, and when its record was last seen to change.
#[derive(Clone, Debug)]
struct Seen {
    read: Read,
    /// The countdown of the holder, as client-go counts it.
    ttl: Option<Deadline>,
    /// How far the writer's `renewTime` was from when the write was seen (ms; positive:
    /// seen after the stamp), for a write seen live.
    skew_ms: Option<i64>,
}

/// How a Lease came to be read: its write seen live, or read in a list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum How {
    /// A watch event: the write, as it happened.
    Live,
    /// A list after an outage or a `410 Gone`: what changed meanwhile was not watched.
    Relisted,
}

pub(crate) struct KubeTracker {
    source: SourceId,
    seen: BTreeMap<String, Seen>,
    elections: BTreeMap<String, Election>,
    book: Book,
}

impl KubeTracker {
    /// `past`: the history read back from the source's journal.
    pub(crate) fn new(
        source: SourceId,
        source_name: String,
        history_limit: usize,
        past: BTreeMap<String, Vec<crate::model::HistoryEntry>>,
    ) -> Self {
        let same_holder: fn(&Candidate, &Candidate) -> bool = |a, b| a.raw_id == b.raw_id;
        KubeTracker {
            source,
            seen: BTreeMap::new(),
            elections: BTreeMap::new(),
            book: Book::new(source_name, history_limit, Some(same_holder)).with_past(past),
        }
    }

    /// The first list: it sets the scene; its only changes are those since the history read
    /// back. Then the history's elections with no Lease left, kept for `keep`.
    pub(crate) fn load(
        &mut self,
        reads: Vec<Read>,
        (now, wall): (Instant, SystemTime),
        keep: Duration,
    ) -> Changes {
        let mut out = Changes::default();
        for r in reads {
            let ttl = listed_ttl(&r, now, wall);
            let seen = Seen {
                read: r,
                ttl,
                skew_ms: None,
            };
            let key = seen.read.key.clone();
            let mut e = self
                .book
                .election(self.source, key.clone(), Scheme::KubeLease);
            show(&mut e, &seen, now);
            self.book.first_read(&mut e, (wall, None), &mut out);
            out.changed.push(e.clone());
            self.elections.insert(key.clone(), e);
            self.seen.insert(key, seen);
        }
        for name in self.book.unseen(wall, keep) {
            let mut e = self
                .book
                .election(self.source, name.clone(), Scheme::KubeLease);
            self.book.first_read(&mut e, (wall, None), &mut out);
            out.changed.push(e.clone());
            self.elections.insert(name, e);
        }
        out
    }

    /// A list after the watch could not go on: each Lease compared with what was last seen,
    /// and those not listed gone. Unchanged Leases change nothing.
    pub(crate) fn relist(&mut self, reads: Vec<Read>, now: Instant, wall: SystemTime) -> Changes {
        let mut out = Changes::default();
        let listed: std::collections::HashSet<String> =
            reads.iter().map(|r| r.key.clone()).collect();
        let gone: Vec<String> = (self.seen.keys())
            .filter(|k| !listed.contains(*k))
            .cloned()
            .collect();
        for key in gone {
            self.remove(&key, Cause::Unknown, (now, wall), &mut out);
        }
        for r in reads {
            self.put(r, How::Relisted, (now, wall), &mut out);
        }
        out
    }

    /// A Lease written (added or modified), as a watch told it.
    pub(crate) fn written(&mut self, r: Read, now: Instant, wall: SystemTime) -> Changes {
        let mut out = Changes::default();
        self.put(r, How::Live, (now, wall), &mut out);
        out
    }

    /// A Lease deleted, as a watch told it.
    pub(crate) fn deleted(&mut self, key: &str, now: Instant, wall: SystemTime) -> Changes {
        let mut out = Changes::default();
        self.remove(key, Cause::Deleted, (now, wall), &mut out);
        out
    }

    /// The Leases whose holder's countdown ran out: each to be read again before it is
    /// said expired ([`KubeTracker::confirm`]), as a renewal may sit unread in a watch that
    /// stalled.
    pub(crate) fn ran_out(&self, now: Instant) -> Vec<String> {
        (self.elections.iter())
            .filter(|(_, e)| e.leader.as_ref().is_some_and(|l| !alive(l, now)))
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// `key`'s Lease read again (`None`: gone) after its countdown ran out: unchanged, its
    /// holder's lease expired (client-go's candidates may take it now); changed, what the
    /// read shows, with the cause unknown where the holder changed (the write was not seen
    /// when it happened).
    pub(crate) fn confirm(
        &mut self,
        key: &str,
        read: Option<Read>,
        now: Instant,
        wall: SystemTime,
    ) -> Changes {
        let mut out = Changes::default();
        let Some(seen) = self.seen.get(key).cloned() else {
            return out;
        };
        match read {
            None => self.remove(key, Cause::Unknown, (now, wall), &mut out),
            Some(r) if r.resource_version != seen.read.resource_version => {
                self.put(r, How::Relisted, (now, wall), &mut out)
            }
            Some(_) => {
                let Some(mut e) = self.elections.remove(key) else {
                    return out;
                };
                let before = e.leader.clone();
                show(&mut e, &seen, now);
                let causes = (Cause::LeaseExpired, Cause::LeaseExpired);
                let step = step(before.as_ref(), false, causes, When::at(now, wall, None));
                self.book.apply(&mut e, step, &mut out);
                out.changed.push(e.clone());
                self.elections.insert(key.to_string(), e);
            }
        }
        out
    }

    /// Deposed holders whose time ran out stop being shown as maybe believing they lead.
    pub(crate) fn settle(&mut self, now: Instant) -> Changes {
        let mut out = Changes::default();
        for e in self.elections.values_mut() {
            if e.deposed.as_ref().is_some_and(|d| !alive(d, now)) {
                e.deposed = None;
                out.changed.push(e.clone());
            }
        }
        out
    }

    /// The next moment a countdown runs out, to tick then.
    pub(crate) fn next_expiry(&self, now: Instant) -> Option<Instant> {
        let holders = self.elections.values().flat_map(|e| {
            let deposed = e.deposed.as_deref();
            e.leader.iter().chain(deposed)
        });
        holders
            .filter_map(|c| c.ttl)
            .map(|t| now + Duration::from_millis(t.remaining_ms_at(now) as u64))
            .min()
    }

    fn put(&mut self, r: Read, how: How, (now, wall): (Instant, SystemTime), out: &mut Changes) {
        let prev = self.seen.get(&r.key);
        // Seen already, or older than what was read since (a stalled watch's backlog after
        // a fresh read).
        if prev.is_some_and(|p| !newer(&r.resource_version, &p.read.resource_version)) {
            return;
        }
        let record_changed = prev.is_none_or(|p| !p.read.same_record(&r));
        // Another acquire time is another tenure, even of the same holder (it released or
        // lost the Lease and took it again while nobody watched).
        let same_tenure = prev.is_none_or(|p| match (p.read.acquire, r.acquire) {
            (Some(was), Some(now)) => was == now || how == How::Live,
            _ => true,
        });
        let seen = match (prev, record_changed, how) {
            // The record is the same (a label, an annotation): the countdown runs on.
            (Some(p), false, _) => Seen {
                read: r,
                ..p.clone()
            },
            // Seen to change (live, or between two reads): client-go's countdown restarts.
            (Some(_), _, _) | (None, _, How::Live) => Seen {
                ttl: Some(full(r.duration_s.unwrap_or(0), now)),
                skew_ms: r
                    .renew
                    .filter(|_| how == How::Live)
                    .map(|t| signed_ms(wall, t)),
                read: r,
            },
            (None, _, How::Relisted) => Seen {
                ttl: listed_ttl(&r, now, wall),
                skew_ms: None,
                read: r,
            },
        };
        let key = seen.read.key.clone();
        let mut e = match self.elections.remove(&key) {
            Some(e) => e,
            None => self
                .book
                .election(self.source, key.clone(), Scheme::KubeLease),
        };
        let before = e.leader.clone();
        show(&mut e, &seen, now);
        let (gone, in_place) = match how {
            // An empty holder is client-go's release; another holder before the countdown
            // ran out was written over it (client-go never does: an admin, a tool).
            How::Live => (Cause::Resigned, Cause::TakenOver),
            How::Relisted => (Cause::Unknown, Cause::Unknown),
        };
        let revision = seen.read.resource_version.parse().ok();
        let step = step(
            before.as_ref(),
            same_tenure,
            (gone, in_place),
            When::at(now, wall, revision),
        );
        self.book.apply(&mut e, step, out);
        out.changed.push(e.clone());
        self.elections.insert(key.clone(), e);
        self.seen.insert(key, seen);
    }

    fn remove(
        &mut self,
        key: &str,
        gone: Cause,
        (now, wall): (Instant, SystemTime),
        out: &mut Changes,
    ) {
        self.seen.remove(key);
        let Some(mut e) = self.elections.remove(key) else {
            return;
        };
        let before = e.leader.take();
        e.candidates.clear();
        e.notes.clear();
        e.expired = None;
        match before {
            Some(_) => {
                let step = step(
                    before.as_ref(),
                    false,
                    (gone, gone),
                    When::at(now, wall, None),
                );
                self.book.apply(&mut e, step, out);
            }
            None => self.book.spend(key, now),
        }
        out.changed.push(e.clone());
        self.elections.insert(key.to_string(), e);
    }
}

/// A change from `before`, seen live at `now`: a Lease is one tenure (`same_tenure`, false
/// when it went or ran out), `gone` says why a holder went, `in_place` why another holder
/// is written there.
fn step(
    before: Option<&Candidate>,
    same_tenure: bool,
    (gone, in_place): (Cause, Cause),
    when: When,
) -> Step<'_> {
    Step {
        before,
        same_tenure,
        gone,
        in_place,
        // A holder written over before its countdown ran out believes it leads until its
        // renew deadline passes, which client-go keeps below the duration.
        may_lead: before.is_some_and(|b| alive(b, when.now)),
        when,
    }
}

/// Whether resourceVersion `a` is a later write than `b`. They are etcd revisions on every
/// API server, though the API calls them opaque: one that is not a number is only told
/// apart.
fn newer(a: &str, b: &str) -> bool {
    match (a.parse::<u64>(), b.parse::<u64>()) {
        (Ok(a), Ok(b)) => a > b,
        _ => a != b,
    }
}

/// Whether `c`'s countdown still runs (one without a duration: always).
fn alive(c: &Candidate, now: Instant) -> bool {
    c.ttl.is_none_or(|t| t.remaining_ms_at(now) > 0)
}

/// The full duration from now: client-go's countdown from a change it saw.
fn full(duration_s: i32, now: Instant) -> Deadline {
    let ms = i64::from(duration_s.max(0)) * 1000;
    Deadline {
        granted_ms: ms,
        remaining_ms: ms,
        read_at: now,
    }
}

/// The countdown of a Lease whose write was not seen: from `renewTime`, at most the full
/// duration (the writer's clock may be ahead). Without a duration client-go reads 0: over.
fn listed_ttl(r: &Read, now: Instant, wall: SystemTime) -> Option<Deadline> {
    let d = full(r.duration_s.unwrap_or(0), now);
    let Some(renew) = r.renew else {
        return Some(d);
    };
    let since = signed_ms(wall, renew).max(0);
    Some(Deadline {
        remaining_ms: (d.granted_ms - since).clamp(0, d.granted_ms),
        ..d
    })
}

/// `a - b` in milliseconds, negative when `b` is later.
fn signed_ms(a: SystemTime, b: SystemTime) -> i64 {
    match a.duration_since(b) {
        Ok(d) => d.as_millis() as i64,
        Err(e) => -(e.duration().as_millis() as i64),
    }
}

/// `e` as `seen` shows it: its holder leads while the countdown runs; the notes say when it
/// was acquired, how many transitions the Lease counts, how far the writer's clock stamp was
/// from the write, and an expired holder.
fn show(e: &mut Election, seen: &Seen, now: Instant) {
    let r = &seen.read;
    let holder = r.holder.as_deref().map(|h| {
        let mut c = Candidate::plain("", "");
        c.id = escape_bytes(h.as_bytes());
        c.raw_id = h.as_bytes().to_vec();
        c.key = r.key.clone();
        c.raw_key = r.key.as_bytes().to_vec();
        c.mod_revision = r.resource_version.parse().unwrap_or(0);
        c.ttl = seen.ttl;
        c
    });
    let expired = holder.as_ref().filter(|c| !alive(c, now));
    e.expired = expired.cloned().map(Box::new);
    e.leader = holder.clone().filter(|c| alive(c, now));
    e.candidates = e.leader.iter().cloned().collect();
    let mut notes = Vec::new();
    let mut note = |name: &str, text: String| {
        notes.push(Note {
            name: name.into(),
            text,
            raw_key: r.key.as_bytes().to_vec(),
            mod_revision: 0,
        })
    };
    if let Some(c) = expired {
        let d = r.duration_s.unwrap_or(0);
        note(
            "expired",
            format!(
                "{} still named, not renewed within its {d} s lease: expired, any candidate \
                 may take it",
                c.id
            ),
        );
    }
    if let Some(what) = r.known_as() {
        note("lease", what.to_string());
    }
    if let Some(n) = r.transitions {
        note("transitions", format!("{n} transitions (leaseTransitions)"));
    }
    if let Some(t) = r.acquire {
        note("acquired", format!("acquired {}", utc(t)));
    }
    if let Some(t) = r.renew {
        note("renewed", format!("renewed {}", utc(t)));
    }
    if let Some(skew) = seen.skew_ms {
        let s = skew.unsigned_abs() as f64 / 1000.0;
        let text = match skew >= 0 {
            true => format!("renewTime {s:.1} s before electop saw the write"),
            false => format!(
                "renewTime {s:.1} s after electop saw the write: the writer's clock is ahead"
            ),
        };
        note("renew skew", text);
    }
    if let Some(p) = &r.preferred {
        note(
            "preferred",
            format!("preferred holder {}", escape_bytes(p.as_bytes())),
        );
    }
    e.notes = notes;
}

impl crate::backend::forced::Marks for KubeTracker {
    fn book(&mut self) -> &mut Book {
        &mut self.book
    }

    fn forced(
        &mut self,
        name: &str,
        mark: Option<ForcedMark>,
        now: Instant,
        wall: SystemTime,
    ) -> Option<Election> {
        let e = self.elections.get_mut(name);
        // Relabelled as forced: the holder it removed is deposed while its countdown runs.
        let (e, _) = self
            .book
            .forced(name, e, mark, (now, wall), |r| alive(r, now))?;
        Some(e)
    }
}

#[cfg(test)]
mod tests;
