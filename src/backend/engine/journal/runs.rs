//! Several runs' records of one source as one run's: each electop watching a source records
//! what it sees, so two at once record each change twice (at the times each saw it). At
//! each moment the records of the oldest run then watching count, from its first record to
//! its last; a younger run's count before the oldest started and after it ended (stopped,
//! or killed: after its last record), so a run killed mid-change loses nothing another saw,
//! unless an older run has the same record (a copy seen a moment later, [`SAME_WITHIN`]).

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use super::Entry;

/// A run's first and last record's time.
#[derive(Clone, Copy)]
struct Span {
    first: SystemTime,
    last: SystemTime,
}

/// `rows` (run, record) in the order written, as one run's: a record of a run is left out
/// when an older run watched at its time; a record without a time is kept. Run 0 (an
/// earlier release's journal, imported) is the oldest of all.
pub(super) fn as_one_run(rows: Vec<(i64, Entry)>) -> Vec<Entry> {
    let mut spans: HashMap<i64, Span> = HashMap::new();
    for (run, e) in &rows {
        if let Some(at) = e.at() {
            let s = spans.entry(*run).or_insert(Span {
                first: at,
                last: at,
            });
            s.first = s.first.min(at);
            s.last = s.last.max(at);
        }
    }
    if spans.len() < 2 {
        return rows.into_iter().map(|(_, e)| e).collect();
    }
    // Oldest first: by first record, then by id; run 0 before every other.
    let mut order: Vec<(i64, Span)> = spans.into_iter().collect();
    order.sort_by_key(|(run, s)| (*run != 0, s.first, *run));
    let rank: HashMap<i64, usize> = order
        .iter()
        .enumerate()
        .map(|(i, (r, _))| (*r, i))
        .collect();
    let covered = |run: i64, at: SystemTime| {
        let mine = rank[&run];
        order[..mine]
            .iter()
            .any(|(_, s)| s.first <= at && at <= s.last)
    };
    let kept: Vec<(i64, Entry)> = rows
        .into_iter()
        .filter(|(run, e)| e.at().is_none_or(|at| !covered(*run, at)))
        .collect();
    let mut seen: HashMap<Same<'_>, Vec<(usize, &Entry)>> = HashMap::new();
    let mut drop = vec![false; kept.len()];
    for (i, (run, e)) in kept.iter().enumerate() {
        let Some(k) = same_key(e) else { continue };
        let mine = rank[run];
        let others = seen.entry(k).or_default();
        drop[i] = others.iter().any(|(r, o)| *r < mine && same(o, e));
        others.push((mine, e));
    }
    kept.iter()
        .zip(drop)
        .filter(|(_, d)| !d)
        .map(|((_, e), _)| e.clone())
        .collect()
}

/// How far apart two runs may see one change (each at its own poll) for the younger's to be
/// taken for a copy.
const SAME_WITHIN: Duration = Duration::from_secs(10);

/// What two runs' records of one thing share: the kind, the election, the leaders.
type Same<'a> = (u8, Option<&'a str>, Option<&'a str>, Option<&'a str>);

fn same_key(e: &Entry) -> Option<Same<'_>> {
    match e {
        Entry::Change { election, entry } => Some((
            0,
            Some(election),
            entry.from.as_deref(),
            entry.to.as_deref(),
        )),
        // Revision times are merged by revision where they are read (`etcd::times`).
        Entry::Outage { .. } => Some((2, None, None, None)),
        Entry::Deposed(d) => Some((3, Some(&d.election), Some(&d.holder), None)),
        _ => None,
    }
}

/// Whether `a` and `b` (of one [`same_key`]) are one thing seen by two runs.
fn same(a: &Entry, b: &Entry) -> bool {
    let near = |x: SystemTime, y: SystemTime| {
        x.duration_since(y)
            .or_else(|_| y.duration_since(x))
            .is_ok_and(|d| d <= SAME_WITHIN)
    };
    match (a, b) {
        (Entry::Change { entry: x, .. }, Entry::Change { entry: y, .. }) => {
            match (x.revision, y.revision, x.at, y.at) {
                (Some(r), Some(q), _, _) => r == q,
                (_, _, Some(s), Some(t)) => near(s, t),
                _ => false,
            }
        }
        (Entry::Outage { from: f, to, .. }, Entry::Outage { from: g, to: u, .. }) => {
            overlap((*f, *to), (*g, *u))
        }
        (Entry::Deposed(x), Entry::Deposed(y)) => overlap((x.from, x.to), (y.from, y.to)),
        _ => false,
    }
}

/// Whether two stretches (an open one: its start) overlap.
fn overlap(a: (SystemTime, Option<SystemTime>), b: (SystemTime, Option<SystemTime>)) -> bool {
    let end = |(from, to): (SystemTime, Option<SystemTime>)| to.unwrap_or(from);
    a.0 <= end(b) && b.0 <= end(a)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;
    use crate::model::{Cause, HistoryEntry};

    fn t(s: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_700_000_000 + s)
    }

    fn change(at: u64, to: &str) -> Entry {
        Entry::Change {
            election: "jobs".into(),
            entry: HistoryEntry {
                at: Some(t(at)),
                revision: None,
                from: None,
                to: Some(to.into()),
                cause: Cause::Elected,
                by: None,
            },
        }
    }

    /// Two runs at once: the older's records count while it watches; the younger's before
    /// it started and after its last record (it was killed), none twice.
    #[test]
    fn the_oldest_run_watching_counts_and_a_killed_ones_successor_takes_over() {
        let rows = vec![
            (7, Entry::Watching(t(10))),
            (7, change(11, "a")),
            (9, Entry::Watching(t(12))),
            (9, change(11, "a")),
            (7, change(20, "b")),
            (9, change(20, "b")),
            (7, Entry::Alive(t(21))),
            // 9 saw b a moment after 7's last record: a copy all the same.
            (9, change(22, "b")),
            // Run 7 was killed here: 9 alone saw what came next.
            (9, change(30, "c")),
            (9, Entry::Stopped(t(31))),
        ];
        let got = as_one_run(rows);
        assert_eq!(
            got,
            [
                Entry::Watching(t(10)),
                change(11, "a"),
                change(20, "b"),
                Entry::Alive(t(21)),
                change(30, "c"),
                Entry::Stopped(t(31)),
            ]
        );
    }

    /// One run, or runs one after the other, are read as written.
    #[test]
    fn runs_one_after_the_other_are_read_whole() {
        let rows = vec![
            (0, Entry::Watching(t(1))),
            (0, Entry::Stopped(t(2))),
            (5, Entry::Watching(t(3))),
            (5, change(4, "a")),
            (3, Entry::Watching(t(5))),
            (3, change(6, "b")),
        ];
        let want: Vec<Entry> = rows.iter().map(|(_, e)| e.clone()).collect();
        assert_eq!(as_one_run(rows), want);
    }
}
