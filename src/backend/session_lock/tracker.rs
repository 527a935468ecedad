//! The locks of one session-lock source as last read, and the leader changes between two
//! reads, decided by the shared election [`Book`]. Pure: the follow task reads, this decides.
//! Each lock is an election: the session holding it leads, the sessions waiting are the
//! line. A holder is one session exactly (its id and its start), so a session that takes
//! the lock again after ending, or a reused id, is a new term.

use std::collections::{BTreeMap, HashSet};
use std::time::{Instant, SystemTime};

use super::{LockRead, Session, SessionRef};
use crate::backend::ForcedMark;
use crate::backend::book::{Book, Step, When};
use crate::backend::change::Changes;
use crate::model::{Candidate, Cause, Election, MemberInfo, Note, Scheme, SourceId};

struct Tracked {
    election: Election,
    /// Who held it at the last read.
    holder: Option<SessionRef>,
    /// When electop first saw that holder hold it: servers do not record when a lock was
    /// granted, so this is all that is known ("since then or earlier").
    since: Option<SystemTime>,
    /// The lock as last read: a poll that reads it the same changes nothing, and over many
    /// locks rebuilding and comparing each election every poll was most of a poll's CPU.
    read: LockRead,
}

pub(crate) struct SessionLockTracker {
    source: SourceId,
    scheme: Scheme,
    /// What to do when the server hides sessions from this user (the note shown then).
    hint: String,
    /// By lock key; a lock nobody holds or waits for any more stays, without a leader
    /// (the read model drops it after its retention).
    locks: BTreeMap<String, Tracked>,
    /// The shared decision, forced marks and history. A holder an admin action removed has
    /// no deposed state: the action ends its session.
    book: Book,
}

impl SessionLockTracker {
    pub(crate) fn new(
        source: SourceId,
        source_name: String,
        scheme: Scheme,
        history_limit: usize,
        hint: String,
        past: BTreeMap<String, Vec<crate::model::HistoryEntry>>,
    ) -> Self {
        SessionLockTracker {
            source,
            scheme,
            hint,
            locks: BTreeMap::new(),
            book: Book::new(source_name, history_limit, None).with_past(past),
        }
    }

    pub(crate) fn elections(&self) -> Vec<Election> {
        self.locks.values().map(|t| t.election.clone()).collect()
    }

    /// The first read sets the scene: no history, no events.
    /// The first read sets the scene; its only changes are those since the history read
    /// back (a lock whose holder changed while no electop watched).
    pub(crate) fn load(&mut self, reads: &[LockRead], at: SystemTime) -> Changes {
        let mut out = Changes::default();
        for r in reads {
            let mut e = self.book.election(self.source, r.name.clone(), self.scheme);
            let since = r.holder.as_ref().map(|_| at);
            fill(&mut e, r, since, &self.hint);
            self.book.first_read(&mut e, (at, None), &mut out);
            self.locks.insert(
                r.key.clone(),
                Tracked {
                    election: e,
                    holder: r.holder.as_ref().map(Session::identity),
                    since,
                    read: r.clone(),
                },
            );
        }
        out
    }

    /// The holders at the last read that do not hold their lock in `reads`: the follow task
    /// asks the server which of them still exist, to tell a release from an ended session.
    pub(crate) fn gone(&self, reads: &[LockRead]) -> Vec<SessionRef> {
        let now: BTreeMap<&str, Option<SessionRef>> = reads
            .iter()
            .map(|r| (r.key.as_str(), r.holder.as_ref().map(Session::identity)))
            .collect();
        self.locks
            .iter()
            .filter_map(|(k, t)| {
                let h = t.holder.as_ref()?;
                (now.get(k.as_str()).cloned().flatten().as_ref() != Some(h)).then(|| h.clone())
            })
            .collect()
    }

    /// A whole read (every lock of the source): locks known but not read are free now.
    /// `alive`: which of [`Self::gone`]'s sessions still exist. `at`: the wall time the
    /// changes are dated.
    pub(crate) fn apply(
        &mut self,
        reads: &[LockRead],
        alive: &HashSet<SessionRef>,
        at: SystemTime,
    ) -> Changes {
        let mut out = Changes::default();
        let read: HashSet<&str> = reads.iter().map(|r| r.key.as_str()).collect();
        let freed: Vec<LockRead> = self
            .locks
            .iter()
            .filter(|(k, t)| !read.contains(k.as_str()) && !t.election.candidates.is_empty())
            .map(|(k, t)| LockRead {
                key: k.clone(),
                name: t.election.name.clone(),
                holder: None,
                waiting: Vec::new(),
            })
            .collect();
        for r in freed.iter().chain(reads) {
            self.apply_one(r, alive, at, &mut out);
        }
        out
    }

    fn apply_one(
        &mut self,
        r: &LockRead,
        alive: &HashSet<SessionRef>,
        at: SystemTime,
        out: &mut Changes,
    ) {
        if self.locks.get(&r.key).is_some_and(|t| t.read == *r) {
            return;
        }
        let new_holder = r.holder.as_ref().map(Session::identity);
        let (mut e, old_holder, old_since) = match self.locks.get(&r.key) {
            Some(t) => (t.election.clone(), t.holder.clone(), t.since),
            None => (
                self.book.election(self.source, r.name.clone(), self.scheme),
                None,
                None,
            ),
        };
        let before = e.clone();
        let since = match (&new_holder, &old_holder) {
            (Some(n), Some(o)) if n == o => old_since,
            (Some(_), _) => Some(at),
            (None, _) => None,
        };
        e.name = r.name.clone();
        fill(&mut e, r, since, &self.hint);
        let key = |s: &SessionRef| format!("{}@{}", s.id, s.start.as_deref().unwrap_or("?"));
        let (old_key, new_key) = (old_holder.as_ref().map(key), new_holder.as_ref().map(key));
        // One session is one term: a change only when the holding session is another.
        if old_key != new_key {
            let gone = match &old_holder {
                Some(o) if alive.contains(o) => Cause::Resigned,
                _ => Cause::SessionEnded,
            };
            let step = Step {
                before: before.leader.as_ref(),
                same_tenure: false,
                gone,
                in_place: Cause::TakenOver,
                may_lead: false,
                when: When::live(at),
            };
            self.book.apply(&mut e, step, out);
        }
        let same = before.leader == e.leader
            && before.candidates == e.candidates
            && before.members == e.members
            && before.notes == e.notes
            && before.name == e.name;
        self.locks.insert(
            r.key.clone(),
            Tracked {
                election: e.clone(),
                holder: new_holder,
                since,
                read: r.clone(),
            },
        );
        if !same || decided_changed(&before, &e) {
            out.changed.push(e);
        }
    }
}

/// A change was recorded (the history grew) even where the line looks the same.
fn decided_changed(before: &Election, after: &Election) -> bool {
    before.transitions != after.transitions
}

/// `e` as `r` shows it: the holder leads, the waiting sessions follow in grant order, each
/// session's account in `members`; a note when the server hid sessions from this user.
fn fill(e: &mut Election, r: &LockRead, since: Option<SystemTime>, hint: &str) {
    let holder = r.holder.as_ref().map(|s| candidate(&r.key, s));
    e.leader = holder.clone();
    e.candidates = holder
        .into_iter()
        .chain(r.waiting.iter().map(|s| candidate(&r.key, s)))
        .collect();
    let mut members: Vec<MemberInfo> = Vec::new();
    if let Some(h) = &r.holder {
        let held = since.map_or_else(
            || "held".to_string(),
            // The server does not record when a lock was granted: first seen is all.
            |t| format!("held since {} or earlier", wall(t)),
        );
        members.push(member(h, "holder", held));
    }
    for (i, w) in r.waiting.iter().enumerate() {
        let waits = match w.waiting_since {
            Some(t) => format!("waiting since {}", wall(t)),
            None => "waiting".to_string(),
        };
        members.push(member(w, &format!("waiting #{}", i + 1), waits));
    }
    e.members = members;
    let hidden = r.holder.iter().chain(&r.waiting).any(|s| s.start.is_none());
    e.notes = if hidden {
        vec![Note {
            name: "privilege".into(),
            text: hint.to_string(),
            raw_key: Vec::new(),
            mod_revision: 0,
        }]
    } else {
        Vec::new()
    };
}

fn candidate(key: &str, s: &Session) -> Candidate {
    let mut c = Candidate::plain(&s.shown(), key);
    c.raw_id = s.id.to_string().into_bytes();
    c.stamp = s.start.clone();
    c
}

/// `holder: user app · app worker · from 10.0.0.5:51234 · session started … · held since …`.
fn member(s: &Session, role: &str, what: String) -> MemberInfo {
    let mut parts = vec![what];
    if s.start.is_none() {
        parts.push("session details hidden from this user".into());
    }
    parts.extend(s.user.as_ref().map(|u| format!("user {u}")));
    parts.extend(s.client.as_ref().map(|c| format!("from {c}")));
    parts.extend(s.started.map(|t| format!("session started {}", wall(t))));
    parts.push(format!("{} {}", s.flavor.id_word(), s.id));
    MemberInfo {
        id: s.shown(),
        role: Some(role.to_string()),
        state: Some(parts.join(", ")),
        timeline: None,
        lag_bytes: None,
        nofailover: false,
    }
}

/// `2024-05-01 10:00:01 UTC`.
pub(crate) fn wall(t: SystemTime) -> String {
    let dt = time::OffsetDateTime::from(t);
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02} UTC",
        dt.year(),
        u8::from(dt.month()),
        dt.day(),
        dt.hour(),
        dt.minute(),
        dt.second()
    )
}

impl crate::backend::forced::Marks for SessionLockTracker {
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
        let t = self.locks.values_mut().find(|t| t.election.name == name);
        let e = t.map(|t| &mut t.election);
        let relabelled = self.book.forced(name, e, mark, (now, wall), |_| false);
        relabelled.map(|(e, _)| e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::forced::Marks as _;
    use crate::model::EventKind;

    fn session(id: i64, start: &str, app: &str) -> Session {
        Session {
            id,
            start: Some(start.into()),
            started: None,
            user: Some("app".into()),
            application: Some(app.into()),
            client: Some("127.0.0.1:5000".into()),
            waiting_since: None,
            flavor: super::super::Flavor::Postgres,
        }
    }

    fn lock(key: &str, holder: Option<Session>, waiting: Vec<Session>) -> LockRead {
        LockRead {
            key: key.into(),
            name: key.into(),
            holder,
            waiting,
        }
    }

    fn tracker() -> SessionLockTracker {
        SessionLockTracker::new(
            0,
            "pg x".into(),
            Scheme::PgAdvisory,
            10,
            "grant".into(),
            Default::default(),
        )
    }

    fn kinds(a: &Changes) -> Vec<(EventKind, Option<Cause>)> {
        a.events.iter().map(|e| (e.kind, e.cause)).collect()
    }

    #[test]
    fn holder_leads_the_waiting_follow_in_grant_order() {
        let mut t = tracker();
        let (a, b, c) = (
            session(1, "10", "a"),
            session(2, "20", "b"),
            session(3, "30", "c"),
        );
        t.load(&[lock("42", Some(a), vec![b, c])], SystemTime::UNIX_EPOCH);
        let e = &t.elections()[0];
        assert_eq!(e.leader.as_ref().map(|c| c.id.as_str()), Some("a:1"));
        let line: Vec<_> = e.candidates.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(line, ["a:1", "b:2", "c:3"]);
        assert_eq!(e.waiting(), Some(2));
        assert_eq!(e.members[1].role.as_deref(), Some("waiting #1"));
        let held = e.members[0].state.clone().unwrap_or_default();
        assert!(
            held.contains("held since 1970-01-01 00:00:00 UTC or earlier"),
            "{held}"
        );
    }

    #[test]
    fn released_session_ended_and_a_reused_pid_are_told_apart() {
        let mut t = tracker();
        let wall = SystemTime::now();
        let (a, b) = (session(1, "10", "a"), session(2, "20", "b"));
        t.load(&[lock("42", Some(a.clone()), vec![b.clone()])], wall);
        // Nothing changed: nothing to send.
        let again = [lock("42", Some(a.clone()), vec![b.clone()])];
        let x = t.apply(&again, &HashSet::new(), wall);
        assert!(x.changed.is_empty() && x.events.is_empty());
        // a's session ended; b was granted the lock.
        let next = [lock("42", Some(b.clone()), vec![])];
        assert_eq!(t.gone(&next), [a.identity()]);
        let x = t.apply(&next, &HashSet::new(), wall);
        assert_eq!(
            kinds(&x),
            [(EventKind::LeaderChanged, Some(Cause::SessionEnded))]
        );
        assert_eq!(x.events[0].from.as_deref(), Some("a:1"));
        assert_eq!(x.events[0].to.as_deref(), Some("b:2"));
        // b released it and lives on: resigned; the lock is gone from the server.
        let alive: HashSet<_> = [b.identity()].into();
        let x = t.apply(&[], &alive, wall);
        assert_eq!(kinds(&x), [(EventKind::LeaderLost, Some(Cause::Resigned))]);
        assert!(x.changed[0].leader.is_none());
        // pid 2 again, another session (another start): elected, a new term.
        t.apply(
            &[lock("42", Some(b.clone()), vec![])],
            &HashSet::new(),
            wall,
        );
        let reused = session(2, "99", "b");
        let x = t.apply(&[lock("42", Some(reused), vec![])], &HashSet::new(), wall);
        assert_eq!(
            kinds(&x),
            [(EventKind::LeaderChanged, Some(Cause::SessionEnded))]
        );
    }

    #[test]
    fn hidden_sessions_are_noted_with_the_fix_and_forced_changes_attributed() {
        let mut t = tracker();
        let wall = SystemTime::now();
        let mut hidden = session(5, "1", "other");
        hidden.start = None;
        t.load(&[lock("1:2", Some(hidden), vec![])], wall);
        let e = &t.elections()[0];
        assert_eq!(e.notes[0].text, "grant");
        assert!(
            e.members[0]
                .state
                .as_deref()
                .is_some_and(|s| s.contains("hidden from this user"))
        );
        let a = session(7, "70", "a");
        t.apply(&[lock("9", Some(a), vec![])], &HashSet::new(), wall);
        let mark = ForcedMark {
            cause: Cause::ForcedReelection,
            by: "this electop".into(),
            before: None,
        };
        assert!(t.forced("9", Some(mark), Instant::now(), wall).is_none());
        let x = t.apply(&[], &HashSet::new(), wall);
        let causes: Vec<_> = x
            .events
            .iter()
            .map(|e| (e.election.clone(), e.cause))
            .collect();
        assert!(
            causes.contains(&(Some("9".into()), Some(Cause::ForcedReelection))),
            "{causes:?}"
        );
    }
}
