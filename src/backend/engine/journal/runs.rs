//! Several runs' records of one source as one run's: each electop watching a source records
//! what it sees, so two at once record each change twice (at the times each saw it). At
//! each moment the records of the oldest run then watching count, from its first record to
//! its last; a younger run's count before the oldest started and after it ended (stopped,
//! or killed: after its last record), so a run killed mid-change loses nothing another saw.

use std::collections::HashMap;
use std::time::SystemTime;

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
    rows.into_iter()
        .filter(|(run, e)| e.at().is_none_or(|at| !covered(*run, at)))
        .map(|(_, e)| e)
        .collect()
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
