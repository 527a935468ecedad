//! The changes electop's own record kept from earlier runs, put back at the first read;
//! a leader that differs from the one the record ends with changed while no electop
//! watched, which this read is the first to see.

use std::collections::BTreeMap;
use std::time::SystemTime;

use super::ZkTracker;
use crate::backend::change;
use crate::backend::change::Changes;
use crate::model::{Cause, Election, HistoryEntry};

impl ZkTracker {
    /// After [`ZkTracker::load`]: each election's recorded changes (oldest first) become
    /// its history; a leader other than the record's last (another id, or another node of
    /// the same id) is a change seen at `at` in this read, cause `unknown`.
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
            let skip = entries.len().saturating_sub(self.history_limit);
            e.history = entries.iter().skip(skip).cloned().collect();
            e.transitions = entries.len() as u64;
            let now = e.leader.as_ref();
            let same = match (last.to.as_deref(), now) {
                (Some(to), Some(c)) => to == c.id && last.revision == Some(c.create_revision),
                (None, None) => true,
                _ => false,
            };
            if !same {
                let decided = change::decide(
                    last.to.as_deref(),
                    now.map(|c| c.id.as_str()),
                    false,
                    || Cause::Unknown,
                    Cause::Unknown,
                );
                if let Some(c) = decided {
                    let revision = now.map(|c| c.create_revision);
                    let recorded = c.record(&mut e, None, (Some(at), revision), self.history_limit);
                    out.events
                        .push(recorded.event(&self.source_name, name, false));
                }
            }
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
