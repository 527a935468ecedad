//! What a journal read back holds: each change once (a relabelled one merged), the newest
//! changes of each election and the newest revision times (counts), nothing older than the
//! retention (time). The database is kept so by `DELETE` (`db::Db::trim`); a read bounds
//! what it gives the same way, so one election's records are what all of them give of it.

use std::collections::HashMap;
use std::collections::hash_map::Entry::{Occupied, Vacant};
use std::time::{Duration, SystemTime};

use super::{Entry, MARKS_KEPT, SEEN_KEPT};

/// Runs' records kept when no change is older: enough to say the last gaps, not a diary of
/// every `status` ever run.
pub(crate) const RUNS_KEPT: usize = 16;
use crate::model::{Cause, HistoryEntry};

/// The config's default retention: a week of who led when.
pub(crate) const RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);

/// The config's default size bound of the history database.
pub(crate) const MAX_BYTES: u64 = 64 << 20;

/// How long and how large a journal may grow, whatever its counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Keep {
    /// Records older than this are deleted, and not read back.
    pub retention: Duration,
    /// Past this many bytes in the database, its oldest half is deleted.
    pub max_bytes: u64,
}

impl Keep {
    /// No time or size bound (a test).
    #[cfg(test)]
    pub(crate) const UNBOUNDED: Keep = Keep {
        retention: Duration::MAX,
        max_bytes: u64::MAX,
    };

    /// The oldest time kept as of `now`; none when the retention reaches past the epoch.
    pub(crate) fn cutoff(&self, now: SystemTime) -> Option<SystemTime> {
        now.checked_sub(self.retention)
            .filter(|c| *c > SystemTime::UNIX_EPOCH)
    }
}

impl Default for Keep {
    fn default() -> Keep {
        Keep {
            retention: RETENTION,
            max_bytes: MAX_BYTES,
        }
    }
}

/// How much a journal keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Bound {
    /// The newest changes kept of each election.
    pub per_election: usize,
    /// The newest revision times kept.
    pub seen: usize,
    /// The retention and size bound.
    pub keep: Keep,
}

impl Bound {
    /// Keeps `per_election` changes of each election (at least one), [`SEEN_KEPT`] times,
    /// and `keep`'s retention and size bound.
    pub(crate) fn changes(per_election: usize, keep: Keep) -> Bound {
        Bound {
            per_election: per_election.max(1),
            seen: SEEN_KEPT,
            keep,
        }
    }
}

/// A change's identity: its election, the leaders before and after, and its revision where
/// the store has one (else its time: a flip back and forth is several changes). Borrowed
/// from the records: a journal of millions of changes is not copied to be deduplicated.
type ChangeKey<'a> = (
    &'a str,
    Option<i64>,
    Option<SystemTime>,
    Option<&'a str>,
    Option<&'a str>,
);

fn key<'a>(election: &'a str, e: &'a HistoryEntry) -> ChangeKey<'a> {
    let at = if e.revision.is_some() { None } else { e.at };
    (election, e.revision, at, e.from.as_deref(), e.to.as_deref())
}

/// Each change once: an admin action learnt after the change relabels it (a later line).
/// The first line's time is kept, with the last cause that is not `unknown` and the last
/// author.
fn dedupe(mut entries: Vec<Entry>) -> Vec<Entry> {
    // For each later line of a change, the index of its first.
    let mut first_of: Vec<Option<usize>> = vec![None; entries.len()];
    let mut first: HashMap<ChangeKey<'_>, usize, foldhash::fast::RandomState> =
        HashMap::with_capacity_and_hasher(entries.len(), Default::default());
    for (i, r) in entries.iter().enumerate() {
        if let Entry::Change { election, entry } = r {
            first_of[i] = match first.entry(key(election, entry)) {
                Occupied(f) => Some(*f.get()),
                Vacant(v) => {
                    v.insert(i);
                    None
                }
            };
        }
    }
    drop(first);
    if first_of.iter().all(Option::is_none) {
        return entries;
    }
    for (i, f) in first_of.iter().enumerate() {
        let (Some(f), Entry::Change { entry, .. }) = (f, &entries[i]) else {
            continue;
        };
        let (cause, by) = (entry.cause, entry.by.clone());
        if let Entry::Change { entry: kept, .. } = &mut entries[*f] {
            if cause != Cause::Unknown {
                kept.cause = cause;
            }
            if by.is_some() {
                kept.by = by;
            }
        }
    }
    entries
        .into_iter()
        .zip(first_of)
        .filter_map(|(r, f)| f.is_none().then_some(r))
        .collect()
}

/// The journal bounded as of now by counts and time: see [`bounded_at`].
pub(crate) fn bounded(entries: Vec<Entry>, bound: Bound) -> Vec<Entry> {
    bounded_at(entries, bound, SystemTime::now())
}

/// The journal bounded by counts and time: nothing older than the retention (a change with
/// no time stays), the newest `per_election` changes of each election, the newest `seen`
/// revision times, and the run markers no older than the oldest change kept (at most
/// [`RUNS_KEPT`] runs when that is older still). What it keeps of an election's changes
/// depends on that election's records alone.
pub(super) fn bounded_at(entries: Vec<Entry>, bound: Bound, now: SystemTime) -> Vec<Entry> {
    let mut entries = dedupe(entries);
    if let Some(cutoff) = bound.keep.cutoff(now) {
        entries.retain(|r| r.at().is_none_or(|at| at >= cutoff));
    }
    let mut left: HashMap<&str, usize, foldhash::fast::RandomState> = HashMap::default();
    let mut deposed_left: HashMap<&str, usize, foldhash::fast::RandomState> = HashMap::default();
    let (mut seen_left, mut outages_left) = (bound.seen, MARKS_KEPT);
    let mut keep = vec![false; entries.len()];
    for (i, r) in entries.iter().enumerate().rev() {
        let n = match r {
            Entry::Change { election, .. } => {
                left.entry(election).or_insert(bound.per_election.max(1))
            }
            Entry::Seen { .. } => &mut seen_left,
            Entry::Outage { .. } => &mut outages_left,
            Entry::Deposed(d) => deposed_left.entry(&d.election).or_insert(MARKS_KEPT),
            _ => continue,
        };
        if *n > 0 {
            *n -= 1;
            keep[i] = true;
        }
    }
    let oldest_change = entries
        .iter()
        .zip(&keep)
        .position(|(r, k)| *k && matches!(r, Entry::Change { .. }))
        .unwrap_or(entries.len());
    let mut runs = 0;
    // Of a run's `alive` lines, its last (what says how long a killed run watched).
    let mut last_of_run = true;
    for (i, r) in entries.iter().enumerate().rev() {
        let recent = i >= oldest_change || runs < RUNS_KEPT;
        match r {
            Entry::Watching(_) if recent => {
                runs += 1;
                keep[i] = true;
                last_of_run = true;
            }
            Entry::Stopped(_) if recent => {
                keep[i] = true;
                last_of_run = false;
            }
            Entry::Alive(_) if recent && last_of_run => {
                keep[i] = true;
                last_of_run = false;
            }
            _ => {}
        }
    }
    entries
        .into_iter()
        .zip(keep)
        .filter_map(|(r, k)| k.then_some(r))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + s)
    }

    fn change(election: &str, at: Option<SystemTime>, to: &str) -> Entry {
        Entry::Change {
            election: election.into(),
            entry: HistoryEntry {
                at,
                revision: None,
                from: None,
                to: Some(to.into()),
                cause: Cause::Elected,
                by: None,
            },
        }
    }

    fn bound(keep: Keep) -> Bound {
        Bound {
            per_election: 100,
            seen: 100,
            keep,
        }
    }

    /// Records older than the retention go, whatever their kind; a change with no time
    /// stays (its place in time is not known, so neither is its age).
    #[test]
    fn records_older_than_the_retention_are_dropped() {
        let keep = Keep {
            retention: Duration::from_secs(3600),
            max_bytes: u64::MAX,
        };
        let now = t(10 * 3600);
        let entries = vec![
            Entry::Watching(t(0)),
            change("jobs", Some(t(3600)), "a"),
            change("jobs", None, "b"),
            Entry::Seen {
                revision: 4,
                at: t(2 * 3600),
                cause: None,
            },
            Entry::Stopped(t(9 * 3600 - 1)),
            Entry::Watching(t(9 * 3600)),
            change("jobs", Some(t(9 * 3600 + 5)), "c"),
        ];
        let kept = bounded_at(entries, bound(keep), now);
        assert_eq!(
            kept,
            [
                change("jobs", None, "b"),
                Entry::Watching(t(9 * 3600)),
                change("jobs", Some(t(9 * 3600 + 5)), "c"),
            ]
        );
        let forever = bounded_at(vec![Entry::Watching(t(0))], bound(Keep::UNBOUNDED), now);
        assert_eq!(forever, [Entry::Watching(t(0))]);
    }

    /// Of a run's `alive` lines only its last is kept, and none of one that stopped cleanly
    /// (its `stopped` line says more).
    #[test]
    fn a_runs_last_alive_line_alone_is_kept() {
        let entries = vec![
            Entry::Watching(t(0)),
            Entry::Alive(t(1)),
            Entry::Alive(t(61)),
            Entry::Stopped(t(70)),
            Entry::Watching(t(100)),
            Entry::Alive(t(101)),
            Entry::Alive(t(161)),
            Entry::Watching(t(300)),
            Entry::Alive(t(301)),
            Entry::Alive(t(361)),
        ];
        let kept = bounded_at(entries, bound(Keep::UNBOUNDED), t(400));
        assert_eq!(
            kept,
            [
                Entry::Watching(t(0)),
                Entry::Stopped(t(70)),
                Entry::Watching(t(100)),
                Entry::Alive(t(161)),
                Entry::Watching(t(300)),
                Entry::Alive(t(361)),
            ]
        );
    }
}
