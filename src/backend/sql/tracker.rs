//! The SQL backend's plain core: each poll's rows diffed against the last poll's into
//! elections, leader changes and events. A leader holds while its deadline, computed on the
//! database's clock, is ahead.

use std::collections::{BTreeMap, HashMap};
use std::time::{Instant, SystemTime};

use compact_str::CompactString;

use crate::backend::book::{Book, Step, When};
use crate::backend::change::Changes;

use crate::model::{Candidate, Cause, Deadline, Election, HistoryEntry, Scheme, SourceId};

/// One row as polled, its text as stored: it is escaped for display only when it changed,
/// so an unchanged row (most rows of most polls) costs a comparison of what was read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Row {
    pub key: String,
    pub holder: Option<String>,
    /// Time left of the holder's term, by the database's clock.
    pub remaining_ms: Option<i64>,
    /// The deadline column as text, for compare-and-swap and display.
    pub stamp: Option<String>,
}

fn escape(s: &str) -> String {
    crate::model::escape_bytes(s.as_bytes())
}

impl Row {
    fn leader(&self) -> Option<&str> {
        match (&self.holder, self.remaining_ms) {
            (Some(h), Some(ms)) if ms > 0 => Some(h),
            _ => None,
        }
    }
}

/// One poll: the database's clock and every row.
#[derive(Clone, Debug)]
pub(crate) struct Poll {
    pub db_now_ms: i64,
    pub rows: Vec<Row>,
    pub at: SystemTime,
    pub now: Instant,
}

struct Seen {
    row: Row,
    /// The row's holder and deadline as read, kept inline (up to 24 bytes) for `keep`: it
    /// compares them for every row of every poll, and reaching each through its own heap
    /// string, scattered among the history, was much of a poll (docs/PERFORMANCE.md).
    holder: Option<CompactString>,
    stamp: Option<CompactString>,
    /// Absolute deadline on the database's clock.
    deadline_ms: Option<i64>,
    /// Longest term seen for the current holder (the gauge's full width).
    granted_ms: i64,
    /// The last poll that had this row, to find the rows that are gone without a set of keys.
    poll: u64,
}

pub(crate) struct SqlTracker {
    source: SourceId,
    scheme: Scheme,
    term_ms: Option<i64>,
    /// By the key as read; hashed (foldhash: SipHash was much of a poll), since every
    /// row of every poll is looked up here.
    seen: HashMap<CompactString, Seen, foldhash::fast::RandomState>,
    elections: BTreeMap<String, Election>,
    polled: bool,
    /// Polls applied so far.
    polls: u64,
    /// A poll was started by [`SqlTracker::start_poll`] and not yet applied.
    started: bool,
    /// The shared decision, forced marks and history; a row's holder has no deposed state
    /// (it finds out at its next renewal).
    book: Book,
    /// The earliest deadline of a leader as last applied, on the database's clock: until
    /// then an unchanged table shows the same leaders (see [`SqlTracker::runs_out_ms`]).
    runs_out_ms: Option<i64>,
    /// `status` and `history` read once and stop: the first poll's elections are handed
    /// over rather than copied, and the tracker is spent (see [`SqlTracker::hand_over`]).
    hand_over: bool,
}

pub(crate) use crate::backend::engine::history::Recorded;

impl SqlTracker {
    pub(crate) fn new(
        source: SourceId,
        source_name: String,
        scheme: Scheme,
        term_ms: Option<i64>,
        history_limit: usize,
    ) -> Self {
        SqlTracker {
            source,
            scheme,
            term_ms,
            seen: HashMap::default(),
            elections: BTreeMap::new(),
            polled: false,
            polls: 0,
            started: false,
            book: Book::new(source_name, history_limit, None),
            runs_out_ms: None,
            hand_over: false,
        }
    }

    /// For a run that prints the first state and stops: the first poll hands its elections
    /// over (their copy and the tracker's freeing were time a SQLite `status` need not
    /// spend), and any later poll changes nothing (a reconnect's would show the
    /// elections without the history handed over).
    pub(crate) fn hand_over(&mut self) {
        self.hand_over = true;
    }

    /// History read back from disk, oldest first.
    pub(crate) fn preload(&mut self, entries: Vec<Recorded>) {
        // Hashed (foldhash): a start groups every change of the journal, millions of them.
        let mut by_name: HashMap<String, Vec<HistoryEntry>, foldhash::fast::RandomState> =
            HashMap::default();
        for (name, entry) in entries {
            by_name.entry(name).or_default().push(entry);
        }
        for (name, entries) in by_name {
            self.election(&name);
            let e = self.elections.get_mut(&name).expect("inserted above");
            self.book.preload(e, entries);
        }
    }

    fn election(&mut self, name: &str) -> &mut Election {
        let (source, scheme) = (self.source, self.scheme);
        // Looked up before inserting: a poll finds almost every election there already, and
        // `entry` would allocate its key each time.
        if !self.elections.contains_key(name) {
            let e = Election::new(source, name.to_string(), scheme);
            self.elections.insert(name.to_string(), e);
        }
        self.elections.get_mut(name).expect("inserted above")
    }

    /// Starts a poll: rows [`SqlTracker::keep`] matches from here on count as seen in it, and
    /// only the others need to be read into [`Row`]s and applied.
    pub(crate) fn start_poll(&mut self) {
        if !self.started {
            self.polls += 1;
            self.started = true;
        }
    }

    /// A row just read whose holder, deadline and leadership are as last polled: nothing the
    /// screen shows changed (its countdown runs from the deadline it has), so only its time
    /// left is noted. This is what most rows of most polls are; it is checked on the text as
    /// read, before anything is allocated or escaped. False for any other row.
    pub(crate) fn keep(
        &mut self,
        key: &str,
        holder: Option<&str>,
        stamp: Option<&str>,
        remaining_ms: Option<i64>,
        db_now_ms: i64,
    ) -> bool {
        if !self.polled {
            return false;
        }
        let Some(prev) = self.seen.get_mut(key) else {
            return false;
        };
        let leads = holder.is_some() && remaining_ms.is_some_and(|ms| ms > 0);
        let same = prev.holder.as_deref() == holder
            && prev.stamp.as_deref() == stamp
            && prev.row.leader().is_some() == leads;
        if !same {
            return false;
        }
        if self.term_ms.is_none() {
            prev.granted_ms = prev.granted_ms.max(remaining_ms.unwrap_or(0).max(0));
        }
        prev.deadline_ms = remaining_ms.map(|r| db_now_ms + r);
        prev.row.remaining_ms = remaining_ms;
        prev.poll = self.polls;
        true
    }

    #[cfg(test)]
    fn elections(&self) -> impl Iterator<Item = &Election> {
        self.elections.values()
    }

    /// Applies a poll: the elections that changed and what happened. The first poll
    /// establishes the state: its only changes are those since the history read back.
    pub(crate) fn apply(&mut self, mut poll: Poll) -> Changes {
        let mut out = Changes::default();
        self.start_poll();
        self.started = false;
        if self.hand_over && self.polled {
            return out;
        }
        let first = !self.polled;
        if first {
            self.seen.reserve(poll.rows.len());
        }
        for row in std::mem::take(&mut poll.rows) {
            let (holder, stamp) = (row.holder.as_deref(), row.stamp.as_deref());
            if self.keep(&row.key, holder, stamp, row.remaining_ms, poll.db_now_ms) {
                continue;
            }
            self.apply_row(row, &poll, first, &mut out);
        }
        self.apply_gone(&poll, &mut out);
        if first {
            // What changed since the history read back, seen by this read first.
            for e in self.elections.values_mut() {
                self.book.first_read(e, (poll.at, None), &mut out);
            }
            out.changed = match self.hand_over {
                true => std::mem::take(&mut self.elections).into_values().collect(),
                false => self.elections.values().cloned().collect(),
            };
        }
        self.polled = true;
        self.runs_out_ms = self
            .seen
            .values()
            .filter(|s| s.row.leader().is_some())
            .filter_map(|s| s.deadline_ms)
            .min();
        out
    }

    /// When, on the database's clock, the first leader of the last poll applied runs out
    /// (None for no leader). A poll that finds the table unchanged before then needs none of
    /// its rows: a row's leadership moves only with its holder, its deadline or time
    /// passing that deadline, and the leaders' time left is counted down on the screen from
    /// the deadline it has.
    pub(crate) fn runs_out_ms(&self) -> Option<i64> {
        self.runs_out_ms
    }

    /// A row that is new or differs from the last poll's.
    fn apply_row(&mut self, row: Row, poll: &Poll, first: bool, out: &mut Changes) {
        let deadline_ms = row.remaining_ms.map(|r| poll.db_now_ms + r);
        let prev = self.seen.remove(row.key.as_str());
        // What the screen and the history show is escaped; the row keeps what was read.
        let name = escape(&row.key);
        let old_leader = prev.as_ref().and_then(|p| p.row.leader().map(escape));
        let new_leader = row.leader().map(escape);
        let same_holder = prev.as_ref().is_some_and(|p| p.row.holder == row.holder);
        let granted_ms = self.term_ms.unwrap_or_else(|| {
            let r = row.remaining_ms.unwrap_or(0).max(0);
            if same_holder {
                prev.as_ref().map_or(r, |p| p.granted_ms.max(r))
            } else {
                r
            }
        });
        // Taking over is allowed once the old term is over; before that it was forced.
        let expired = prev
            .as_ref()
            .and_then(|p| p.deadline_ms)
            .is_some_and(|d| d <= poll.db_now_ms);
        let changed = !first && old_leader != new_leader;
        // The remaining time moves every poll; only a new holder or deadline is news (the
        // screen counts down from the deadline it has).
        let stamp_changed = prev
            .as_ref()
            .is_none_or(|p| (&p.row.holder, &p.row.stamp) != (&row.holder, &row.stamp));
        let candidate = row.holder.as_deref().map(|h| Candidate {
            id: escape(h),
            raw_id: h.as_bytes().to_vec(),
            key: name.clone(),
            raw_key: row.key.as_bytes().to_vec(),
            // Shown as is: a SQLite column holds any text, not only a timestamp.
            stamp: row.stamp.as_deref().map(escape),
            ttl: row.remaining_ms.map(|r| Deadline {
                granted_ms: granted_ms.max(1),
                remaining_ms: r.max(0),
                read_at: poll.now,
            }),
            ..Candidate::plain("", "")
        });
        let e = self.election(&name);
        let leader_before = e.leader.as_ref().map(|l| l.id.clone());
        e.leader = candidate.clone().filter(|_| new_leader.is_some());
        e.candidates = candidate.into_iter().collect();
        if changed {
            let before = old_leader.as_deref().map(|id| Candidate::plain(id, &name));
            // Between two polls, a holder that resigned (its term moved to now) and the next
            // acquire read the same as a write over a running term: which is not known.
            let in_place = if expired {
                Cause::Expired
            } else {
                Cause::Unknown
            };
            let step = step(before.as_ref(), true, (Cause::Expired, in_place), poll);
            let e = self.elections.get_mut(&name).expect("inserted above");
            self.book.apply(e, step, out);
        }
        // Cloned only when sent: an election carries its history.
        if let Some(e) = self.elections.get(&name)
            && !first
            && (stamp_changed || leader_before != e.leader.as_ref().map(|l| l.id.clone()))
        {
            out.changed.push(e.clone());
        }
        let seen = Seen {
            holder: row.holder.as_deref().map(CompactString::from),
            stamp: row.stamp.as_deref().map(CompactString::from),
            row,
            deadline_ms,
            granted_ms,
            poll: self.polls,
        };
        self.seen.insert(CompactString::from(&seen.row.key), seen);
    }

    /// Rows that are gone: the election stays, without a leader.
    fn apply_gone(&mut self, poll: &Poll, out: &mut Changes) {
        let mut gone: Vec<String> = self
            .seen
            .iter()
            .filter(|(_, s)| s.poll != self.polls)
            .map(|(_, s)| s.row.key.clone())
            .collect();
        // In key order, as the rows were: the events come out the same every time.
        gone.sort_unstable();
        for raw in gone {
            let Some(prev) = self.seen.remove(raw.as_str()) else {
                continue;
            };
            let key = escape(&raw);
            let e = self.election(&key);
            e.leader = None;
            e.candidates.clear();
            match prev.row.leader().map(escape) {
                Some(a) => {
                    let before = Candidate::plain(&a, &key);
                    let gone = (Cause::Deleted, Cause::Deleted);
                    let step = step(Some(&before), false, gone, poll);
                    let e = self.elections.get_mut(&key).expect("inserted above");
                    self.book.apply(e, step, out);
                }
                // An action aimed at a row that went with no leader is spent all the same:
                // it must not name the cause of a later change.
                None => self.book.spend(&key, poll.now),
            }
            if let Some(e) = self.elections.get(&key) {
                out.changed.push(e.clone());
            }
        }
    }
}

/// A change of a row's holder, live at `poll`: a row is one tenure (`same_tenure`, false
/// when it went), so a new holder took over or followed an expired term (`gone`, `in_place`).
fn step<'a>(
    before: Option<&'a Candidate>,
    same_tenure: bool,
    (gone, in_place): (Cause, Cause),
    poll: &Poll,
) -> Step<'a> {
    Step {
        before,
        same_tenure,
        gone,
        in_place,
        may_lead: false,
        when: When {
            now: poll.now,
            at: Some(poll.at),
            revision: None,
            replayed: false,
        },
    }
}

impl crate::backend::forced::Marks for SqlTracker {
    fn book(&mut self) -> &mut crate::backend::book::Book {
        &mut self.book
    }

    fn forced(
        &mut self,
        name: &str,
        mark: Option<crate::backend::ForcedMark>,
        now: Instant,
        wall: SystemTime,
    ) -> Option<Election> {
        let e = self.elections.get_mut(name);
        let relabelled = self.book.forced(name, e, mark, (now, wall), |_| false);
        relabelled.map(|(e, _)| e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Event;

    /// What a poll changed, its events, and the history entries the engine journals of them.
    fn parts(c: Changes) -> (Vec<Election>, Vec<Event>, Vec<(String, HistoryEntry)>) {
        let rec = c.events.iter().filter_map(crate::backend::change::entry_of);
        let rec = rec.map(|(name, h)| (name.to_string(), h)).collect();
        (c.changed, c.events, rec)
    }
    use crate::model::EventKind;

    fn row(key: &str, holder: &str, remaining: i64) -> Row {
        Row {
            key: key.into(),
            holder: Some(holder.into()),
            remaining_ms: Some(remaining),
            stamp: Some(format!("t{remaining}")),
        }
    }

    fn poll(db_now_ms: i64, rows: Vec<Row>) -> Poll {
        Poll {
            db_now_ms,
            rows,
            at: SystemTime::UNIX_EPOCH,
            now: Instant::now(),
        }
    }

    fn causes(events: &[Event]) -> Vec<(EventKind, Option<Cause>)> {
        events.iter().map(|e| (e.kind, e.cause)).collect()
    }

    #[test]
    fn first_poll_sets_the_scene_without_history() {
        let mut t = SqlTracker::new(0, "s".into(), Scheme::SqlLease, None, 10);
        let (changed, events, rec) = parts(t.apply(poll(1_000, vec![row("jobs", "a", 5_000)])));
        assert_eq!(changed.len(), 1);
        assert!(events.is_empty() && rec.is_empty());
        assert_eq!(changed[0].leader.as_ref().map(|l| l.id.as_str()), Some("a"));
    }

    #[test]
    fn a_tracker_that_hands_over_gives_the_first_state_and_then_nothing() {
        let mut t = SqlTracker::new(0, "s".into(), Scheme::SqlLease, None, 10);
        t.hand_over();
        let rows = vec![row("jobs", "a", 5_000), row("mail", "b", 5_000)];
        let (changed, _, _) = parts(t.apply(poll(1_000, rows)));
        let names: Vec<&str> = changed.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["jobs", "mail"]);
        assert_eq!(changed[1].leader.as_ref().map(|l| l.id.as_str()), Some("b"));
        // A later poll (a reconnect's) shows no copy without the history handed over.
        let (changed, events, rec) = parts(t.apply(poll(2_000, vec![row("jobs", "c", 5_000)])));
        assert!(changed.is_empty() && events.is_empty() && rec.is_empty());
    }

    #[test]
    fn another_holder_before_the_deadline_is_unknown_after_it_expired() {
        let mut t = SqlTracker::new(0, "s".into(), Scheme::SqlLease, None, 10);
        t.apply(poll(1_000, vec![row("jobs", "a", 5_000)]));
        // Deadline 6 000; at 2 000 someone else holds it: a resign and an acquire, or a write
        // over a's term, which two polls cannot tell apart.
        let (_, events, _) = parts(t.apply(poll(2_000, vec![row("jobs", "b", 5_000)])));
        assert_eq!(
            causes(&events),
            [(EventKind::LeaderChanged, Some(Cause::Unknown))]
        );
        // b's deadline is 7 000; at 7 500 c holds it: b had expired.
        let (_, events, rec) = parts(t.apply(poll(7_500, vec![row("jobs", "c", 5_000)])));
        assert_eq!(
            causes(&events),
            [(EventKind::LeaderChanged, Some(Cause::Expired))]
        );
        assert_eq!(rec[0].1.from.as_deref(), Some("b"));
    }

    #[test]
    fn an_expired_term_loses_the_leader_and_a_deleted_row_too() {
        let mut t = SqlTracker::new(0, "s".into(), Scheme::SqlHeartbeat, Some(20_000), 10);
        t.apply(poll(0, vec![row("a", "x", 1_000), row("b", "y", 9_000)]));
        let (changed, events, _) =
            parts(t.apply(poll(1_500, vec![row("a", "x", -500), row("b", "y", 7_500)])));
        assert_eq!(
            causes(&events),
            [(EventKind::LeaderLost, Some(Cause::Expired))]
        );
        let a = changed.iter().find(|e| e.name == "a").expect("a");
        assert!(a.leader.is_none(), "expired: no leader");
        assert_eq!(
            a.candidates[0].ttl.map(|d| d.granted_ms),
            Some(20_000),
            "heartbeat term is the timeout"
        );
        let (_, events, _) = parts(t.apply(poll(2_000, vec![row("a", "x", -1_000)])));
        assert_eq!(
            causes(&events),
            [(EventKind::LeaderLost, Some(Cause::Deleted))]
        );
        let (_, events, _) = parts(t.apply(poll(2_500, vec![row("a", "z", 19_000)])));
        assert_eq!(
            causes(&events),
            [(EventKind::LeaderElected, Some(Cause::Elected))]
        );
        assert_eq!(t.elections().count(), 2, "b stays, without leader");
    }

    #[test]
    fn an_unchanged_row_is_not_sent_again() {
        let mut t = SqlTracker::new(0, "s".into(), Scheme::SqlLease, None, 10);
        t.apply(poll(0, vec![row("jobs", "a", 5_000)]));
        let mut same = row("jobs", "a", 4_500);
        same.stamp = Some("t5000".into());
        let (changed, events, _) = parts(t.apply(poll(500, vec![same])));
        assert!(changed.is_empty() && events.is_empty(), "{changed:?}");
        let (changed, _, _) = parts(t.apply(poll(1_000, vec![row("jobs", "a", 8_000)])));
        assert_eq!(changed.len(), 1, "a renewal moves the deadline");
    }

    #[test]
    fn unchanged_rows_still_expire_and_go() {
        let mut t = SqlTracker::new(0, "s".into(), Scheme::SqlLease, None, 10);
        let at = |remaining| {
            let mut r = row("jobs", "a", remaining);
            r.stamp = Some("t5000".into());
            r
        };
        t.apply(poll(0, vec![at(5_000), row("other", "b", 5_000)]));
        for ms in [1_000, 2_000, 3_000] {
            let (changed, events, _) =
                parts(t.apply(poll(ms, vec![at(5_000 - ms), row("other", "b", 5_000)])));
            assert!(changed.is_empty() && events.is_empty(), "{changed:?}");
        }
        // Same holder, same deadline, but the deadline passed: the leader is lost.
        let (changed, events, _) = parts(t.apply(poll(6_000, vec![at(-1_000)])));
        assert_eq!(
            causes(&events),
            [
                (EventKind::LeaderLost, Some(Cause::Expired)),
                (EventKind::LeaderLost, Some(Cause::Deleted))
            ],
            "and the row not polled any more is gone"
        );
        assert_eq!(changed.len(), 2);
    }

    #[test]
    fn the_first_leader_to_run_out_says_when_to_read_again() {
        let mut t = SqlTracker::new(0, "s".into(), Scheme::SqlLease, None, 10);
        assert_eq!(t.runs_out_ms(), None, "nothing read yet");
        let over = row("over", "z", -100);
        t.apply(poll(
            1_000,
            vec![row("a", "x", 5_000), row("b", "y", 2_000), over],
        ));
        assert_eq!(
            t.runs_out_ms(),
            Some(3_000),
            "b's deadline; not the row run out"
        );
        let (_, events, _) =
            parts(t.apply(poll(3_000, vec![row("a", "x", 3_000), row("b", "y", 0)])));
        assert_eq!(
            causes(&events),
            [(EventKind::LeaderLost, Some(Cause::Expired))],
            "b ran out (the row gone had no leader to lose)"
        );
        assert_eq!(t.runs_out_ms(), Some(6_000), "a's, now b's ran out");
        t.apply(poll(7_000, vec![row("a", "x", -1_000)]));
        assert_eq!(t.runs_out_ms(), None, "no leader left to run out");
    }

    #[test]
    fn preloaded_history_counts_and_is_bounded() {
        let mut t = SqlTracker::new(0, "s".into(), Scheme::SqlLease, None, 2);
        let entry = |to: &str| HistoryEntry {
            at: None,
            revision: None,
            from: None,
            to: Some(to.into()),
            cause: Cause::Elected,
            by: None,
        };
        t.preload(vec![
            ("j".into(), entry("a")),
            ("j".into(), entry("b")),
            ("j".into(), entry("c")),
        ]);
        let e = t.elections().next().expect("j");
        assert_eq!(e.transitions, 3);
        assert_eq!(e.history.len(), 2);
        assert_eq!(e.history[0].to.as_deref(), Some("b"));
    }

    #[test]
    fn rows_are_matched_as_read_and_escaped_only_for_the_screen() {
        let mut t = SqlTracker::new(0, "s".into(), Scheme::SqlLease, None, 10);
        let raw = row("job\x1b[31m", "a\u{202e}b", 5_000);
        let (changed, _, _) = parts(t.apply(poll(0, vec![raw.clone()])));
        assert_eq!(changed[0].name, "job\\u{1b}[31m");
        let leader = changed[0].leader.as_ref().expect("leader");
        assert_eq!(leader.id, "a\\u{202e}b");
        assert_eq!(leader.raw_id, "a\u{202e}b".as_bytes(), "kept as stored");
        assert_eq!(leader.raw_key, b"job\x1b[31m");
        // Read again with less time left: kept on the text as read, before any copy.
        t.start_poll();
        let (h, st) = (raw.holder.as_deref(), raw.stamp.as_deref());
        assert!(t.keep(&raw.key, h, st, Some(4_500), 500));
        assert!(!t.keep(&raw.key, Some("other"), st, Some(4_500), 500));
        let (changed, events, _) = parts(t.apply(poll(500, vec![])));
        assert!(
            changed.is_empty() && events.is_empty(),
            "a kept row is not gone"
        );
        let (_, events, rec) = parts(t.apply(poll(1_000, vec![row("job\x1b[31m", "c\n", 5_000)])));
        assert_eq!(events[0].from.as_deref(), Some("a\\u{202e}b"));
        assert_eq!(events[0].to.as_deref(), Some("c\\n"));
        assert_eq!(rec[0].0, "job\\u{1b}[31m", "history is by the name shown");
    }
}
