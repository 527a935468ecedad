//! electop's own record of a ZooKeeper source's leader changes, across runs: ZooKeeper
//! keeps no history, so each change the tracker records goes into the source's history
//! journal ([`crate::backend::engine::journal`]), a file per source (connect string,
//! chroot, prefix and preset) beside the audit log, with a line when a run starts watching
//! and when it stops. The next run loads it at its first read, so the history starts where
//! the record does, and the time no electop watched is said.
//!
//! The record is also the source's journal of the timeline's marks (outages, deposed
//! holders: [`crate::backend::engine::marks`]), said so when it is opened.
//!
//! One run writes the record at a time; another on the same source reads it and takes
//! over when the first is gone (its own `watching` line first). A record that cannot be
//! written is logged once and said in the source's notice; it never stops the source.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::SystemTime;

use tracing::warn;

use crate::backend::engine::journal::{self, Batched, Bound, Entry, Journal};
use crate::backend::engine::marks;
use crate::model::{HistoryEntry, HistoryGap};

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

/// `zookeeper-history-<source>-<hash>.jsonl`: readable, and the hash keeps two sources that
/// escape alike apart.
pub(crate) fn file_name(key: &str) -> String {
    journal::file_name("zookeeper-history", key)
}

/// The record of one source, appended to as the run goes.
pub(crate) struct Record {
    /// Written in batches, within 100 ms of a change.
    journal: Batched,
    limit: usize,
    /// Why the record could not be read or written, said once.
    pub(crate) failed: Option<String>,
    /// This run has started: its stop is said when the record is dropped.
    started: bool,
}

impl Record {
    /// The record of the source named by `key`, beside the audit log; none without a data dir.
    pub(crate) fn open(key: &str, limit: usize) -> Option<Record> {
        let dir = crate::admin::audit::default_path()?.parent()?.to_path_buf();
        Some(Record::at(dir.join(file_name(key)), limit))
    }

    pub(crate) fn at(path: PathBuf, limit: usize) -> Record {
        let limit = limit.max(1);
        Record {
            journal: Batched::new(Journal::new(path, Bound::changes(limit))),
            limit,
            failed: None,
            started: false,
        }
    }

    /// Reads the record (bounded), and marks this run as watching from `now`.
    pub(crate) fn start(&mut self, now: SystemTime) -> Past {
        let path = self.journal.path().to_path_buf();
        let mut entries = match journal::read(&path) {
            Ok((entries, _)) => entries,
            Err(e) => {
                self.fail(format!("cannot read {}: {e}", path.display()));
                Vec::new()
            }
        };
        self.started = true;
        let writing = match self
            .journal
            .preface(Entry::Watching(now))
            .and_then(|()| self.journal.take_turn())
        {
            Ok(w) => w,
            Err(e) => {
                self.fail(format!("cannot write {}: {e}", path.display()));
                true
            }
        };
        // Another run records the source now: it watches, so no gap ends here.
        if writing {
            entries.push(Entry::Watching(now));
        }
        let kept = journal::compact(entries, Bound::changes(self.limit));
        // The timeline's outages and deposed holders, for the source's recorder to hand
        // on; the stretches no electop watched are this record's gaps, said once.
        marks::stash(&path, marks::past_outages(&kept, None));
        past(&kept)
    }

    pub(crate) fn path(&self) -> &std::path::Path {
        self.journal.path()
    }

    pub(crate) fn append(&mut self, r: &Entry) {
        if self.failed.is_some() {
            return;
        }
        if let Err(e) = self.journal.append(std::slice::from_ref(r)) {
            let path = self.journal.path().display().to_string();
            self.fail(format!("cannot write {path}: {e}"));
        }
    }

    fn fail(&mut self, why: String) {
        if self.failed.is_none() {
            warn!(error = %why, "electop's ZooKeeper history record");
            self.failed = Some(why);
        }
    }
}

/// A clean stop (the follow task dropped as electop exits) says when: the next run's gap
/// then starts here, not at this run's last change. A killed electop says nothing.
impl Drop for Record {
    fn drop(&mut self) {
        if self.started {
            self.append(&Entry::Stopped(SystemTime::now()));
        }
    }
}

#[cfg(test)]
mod tests;
