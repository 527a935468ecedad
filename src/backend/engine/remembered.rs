//! The elections a source's history holds that its store no longer does (a lease that ran
//! out, a lock whose holder died, a node gone with its session): listed all the same, for
//! every store, once the source's first read is done, so what one electop saw of them the
//! next one started tells: no leader, since when, and how the last tenure ended.

use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, SystemTime};

use super::journal::{Bound, Entry, Journal};
use crate::backend::change::decide;
use crate::model::{Cause, Election, Scheme, SourceEvent, SourceInfo};

/// What a source showed before its first read was done, and what to list after it.
pub(crate) struct Remembered {
    info: SourceInfo,
    /// The names of the elections the source showed; `None` once its first read is done.
    shown: Option<HashSet<String>>,
    /// An election's scheme where the source's is not known yet (autodetected).
    scheme: Option<Scheme>,
    /// How long an election with nothing in the store stays listed after its last change.
    keep: Duration,
    limit: usize,
    /// The elections a command asked for alone; empty: every election.
    only: Vec<String>,
}

impl Remembered {
    pub(crate) fn new(info: &SourceInfo, opts: &crate::backend::BackendOptions) -> Remembered {
        Remembered {
            info: info.clone(),
            shown: Some(HashSet::new()),
            scheme: info.scheme,
            keep: opts.retention,
            limit: opts.history_limit.max(1),
            only: opts.only_elections(&info.short),
        }
    }

    /// Notes what `ev` shows of the source before its first read is done.
    pub(crate) fn see(&mut self, ev: &SourceEvent) {
        let Some(shown) = self.shown.as_mut() else {
            return;
        };
        match ev {
            SourceEvent::Elections { elections, .. } => {
                for e in elections {
                    shown.insert(e.name.clone());
                    self.scheme = self.scheme.or(Some(e.scheme));
                }
            }
            SourceEvent::Info(info) => {
                self.scheme = info.scheme.or(self.scheme);
                self.info = info.clone();
            }
            _ => {}
        }
    }

    /// At the source's first `Synced`: the elections `journal` holds a change of within
    /// the retention that the source did not show, with what to send of them (before the
    /// `Synced`). A history that ends with a leader lost that leader while no electop
    /// watched: this read is the first to see it (cause unknown).
    pub(crate) fn at_first_sync(&mut self, journal: Option<&Journal>) -> Vec<SourceEvent> {
        let Some(shown) = self.shown.take() else {
            return Vec::new();
        };
        let (Some(j), Some(scheme)) = (journal, self.scheme) else {
            return Vec::new();
        };
        let now = SystemTime::now();
        let since = now.checked_sub(self.keep).unwrap_or(SystemTime::UNIX_EPOCH);
        let wanted = |name: &String| self.only.is_empty() || self.only.contains(name);
        let names: Vec<String> = j
            .elections_since(since)
            .into_iter()
            .filter(|n| !shown.contains(n) && wanted(n))
            .collect();
        if names.is_empty() {
            return Vec::new();
        }
        let bound = Bound::changes(self.limit, j.history().keep());
        let mut elections: BTreeMap<String, Election> = BTreeMap::new();
        for entry in j.load(bound, &names) {
            if let Entry::Change { election, entry } = entry {
                let id = self.info.id;
                let new = || Election::new(id, election.clone(), scheme);
                let e = elections.entry(election.clone()).or_insert_with(new);
                e.record(entry, self.limit);
            }
        }
        let mut elections: Vec<Election> = elections.into_values().collect();
        let mut events = Vec::new();
        for e in &mut elections {
            let gone = e.history.back().and_then(|h| h.to.clone());
            let Some(was) = gone.as_deref() else { continue };
            let Some(change) = decide(Some(was), None, false, || Cause::Unknown, Cause::Unknown)
            else {
                continue;
            };
            let recorded = change.record(e, None, (Some(now), None), self.limit);
            events.push(SourceEvent::Happened(recorded.event(
                &self.info.name,
                &e.name,
                false,
            )));
        }
        let source = self.info.id;
        let mut out = vec![SourceEvent::Elections { source, elections }];
        out.extend(events);
        out
    }
}

#[cfg(test)]
mod tests;
