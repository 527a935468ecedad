//! The changes electop's own record kept from earlier runs, put back at the first read;
//! a leader that differs from the one the record ends with changed while no electop
//! watched, which this read is the first to see.

use std::collections::BTreeMap;
use std::time::SystemTime;

use super::ZkTracker;
use crate::backend::change::Changes;
use crate::model::{Election, HistoryEntry};

impl ZkTracker {
    /// After [`ZkTracker::load`]: each election's recorded changes (oldest first) become
    /// its history; a leader other than the record's last (another id, or another node of
    /// the same id) is a change seen at `at` in this read, cause `unknown` unless an admin
    /// action of the audit log made it (`Book::first_read`).
    pub(crate) fn restore(
        &mut self,
        past: &BTreeMap<String, Vec<HistoryEntry>>,
        at: SystemTime,
    ) -> Changes {
        let mut out = Changes::default();
        for (name, entries) in past {
            let Some(last) = entries.last() else { continue };
            let mut e = match self.elections.get(name) {
                Some(e) => e.clone(),
                // Gone while no electop watched: said once, then the record ends leaderless.
                None if last.to.is_some() => {
                    Election::new(self.source, name.clone(), self.layout.scheme())
                }
                None => continue,
            };
            e.history = Default::default();
            e.transitions = 0;
            self.book.preload(&mut e, entries.iter().cloned());
            // A node is one tenure: the same id in a node created since is a change too.
            let revision = e.leader.as_ref().map(|c| c.create_revision);
            self.book.first_read(&mut e, (at, revision), &mut out);
            if !self.elections.contains_key(name)
                && let Some(parent) = self.layout.parent_of(&self.prefix, name)
            {
                self.parents.insert(name.clone(), parent);
            }
            self.elections.insert(name.clone(), e.clone());
            out.changed.push(e);
        }
        out
    }
}
