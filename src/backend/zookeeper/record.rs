//! electop's own record of a ZooKeeper source's leader changes, across runs: ZooKeeper
//! keeps no history, so each change the tracker records goes into the source's history
//! journal ([`crate::backend::engine::journal`]), one per source (connect string, chroot,
//! prefix and preset), with a record when a run starts watching and when it stops. The next
//! run loads it at its first read, so the history starts where the record does, and the
//! time no electop watched is said.
//!
//! The record is also the source's journal of the timeline's marks (outages, deposed
//! holders: [`crate::backend::engine::marks`]), named to the engine when it is opened. A
//! record that cannot be written is said in the source's notice; it never stops the source.

use std::collections::BTreeMap;
use std::time::SystemTime;

use crate::backend::BackendIo;
use crate::backend::engine::history::announce;
use crate::backend::engine::journal::{Bound, Entry, History, Journal, key_of};
use crate::model::{HistoryEntry, HistoryGap, SourceInfo};

pub(crate) use crate::backend::engine::journal::KEPT_AT_LEAST;

/// What the record says at a run's start.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Past {
    /// The oldest line's time: history starts there.
    pub since: Option<SystemTime>,
    /// The stretches no electop watched, oldest first (the last ends at this run's start).
    pub gaps: Vec<HistoryGap>,
    /// Each election's changes, oldest first.
    pub changes: BTreeMap<String, Vec<HistoryEntry>>,
}

/// What `entries` (a run's own `Watching` line last, unless another run watches now) say.
/// A run that took over from one still watching wrote its `Watching` line late, with its
/// own start: a stretch that ends before it starts is no gap.
pub(crate) fn past(entries: &[Entry]) -> Past {
    let mut p = Past {
        since: entries.iter().filter_map(Entry::at).min(),
        ..Past::default()
    };
    let mut last: Option<&Entry> = None;
    for r in entries {
        match r {
            Entry::Change { election, entry } => p
                .changes
                .entry(election.clone())
                .or_default()
                .push(entry.clone()),
            Entry::Watching(to) => {
                if let Some(prev) = last
                    && let Some(from) = prev.at()
                    && from < *to
                    && !matches!(prev, Entry::Watching(_))
                {
                    p.gaps.push(HistoryGap {
                        from,
                        to: *to,
                        stop_recorded: matches!(prev, Entry::Stopped(_)),
                    });
                }
            }
            _ => {}
        }
        last = Some(r);
    }
    p
}

/// `zookeeper-history-<source>-<hash>`: readable, and the hash keeps two sources that
/// escape alike apart.
pub(crate) fn key(source: &str) -> String {
    key_of("zookeeper-history", source)
}

/// The record of one source: read at a run's start; the engine appends to it as the run
/// goes.
pub(crate) struct Record {
    journal: Journal,
    limit: usize,
}

impl Record {
    /// The record of the source named by `source` (see [`key`]), keeping `limit` changes of
    /// each election.
    pub(crate) fn new(history: &History, source: &str, limit: usize) -> Record {
        Record {
            journal: history.journal(&key(source)),
            limit: limit.max(1),
        }
    }

    /// Reads the record (bounded) and names it to the engine, which records this run in it
    /// from `now` on.
    pub(crate) fn start(&mut self, io: &BackendIo, info: &SourceInfo, now: SystemTime) -> Past {
        let bound = Bound::changes(self.limit, self.journal.history().keep());
        let mut entries = self.journal.load(bound, &[]);
        // Another run records the source now: it watches, so no gap ends here.
        let others = self.journal.others_watching();
        let marks = crate::backend::engine::marks::past_outages(&entries, (!others).then_some(now));
        announce(io, info, &self.journal, Some(now), Some(marks));
        if !others {
            entries.push(Entry::Watching(now));
        }
        past(&entries)
    }

    /// Why the record cannot be kept, if it cannot.
    pub(crate) fn failed(&self) -> Option<String> {
        self.journal.history().failed()
    }
}

#[cfg(test)]
mod tests;
