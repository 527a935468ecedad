//! When electop saw each etcd change live, kept in the source's history journal
//! ([`crate::backend::engine::journal`]: `seen` records of a revision and its time), so a
//! dashboard started later shows times, not bare revisions, for everything some electop saw
//! before. etcd keeps no time for a revision; this journal does. One journal per cluster and
//! prefix, whatever the source's name.

use std::collections::HashMap;
use std::time::SystemTime;

use crate::backend::BackendIo;
use crate::backend::engine::history::announce;
use crate::backend::engine::journal::{Bound, Entry, History, Journal, key_of};
use crate::model::{Cause, SourceInfo};

/// What is read back of the journal: the revision times (one change per election, which
/// are not read here), within the history's retention and size bound.
fn bound(history: &History) -> Bound {
    Bound::changes(1, history.keep())
}

/// `etcd-<cluster id>-<prefix>-<hash>`.
pub(super) fn key(cluster_id: u64, prefix: &str) -> String {
    key_of(&format!("etcd-{cluster_id:x}"), prefix)
}

/// What was seen live of a revision: when, and the cause of its leader change where only a
/// live watch tells it.
pub(crate) type Seen = (SystemTime, Option<Cause>);

/// What was recorded of revisions: the first time each was seen, and a cause any run saw.
pub(super) fn load(j: &Journal) -> HashMap<i64, Seen> {
    let mut seen: HashMap<i64, Seen> = HashMap::new();
    for e in j.load(bound(j.history()), &[]) {
        if let Entry::Seen {
            revision,
            at,
            cause,
        } = e
        {
            let s = seen.entry(revision).or_insert((at, cause));
            s.1 = s.1.or(cause);
        }
    }
    seen
}

/// One source's times journal (shared by the watch's tasks).
pub(super) struct TimesFile {
    journal: Journal,
}

impl TimesFile {
    /// The journal `key` of `history`, named to the engine as the source's: the engine
    /// records there this run, its leader changes and the timeline's marks.
    pub(super) fn new(
        history: &History,
        key: &str,
        io: &BackendIo,
        info: &SourceInfo,
    ) -> TimesFile {
        let journal = history.journal(key);
        announce(io, info, &journal, Some(SystemTime::now()), None);
        TimesFile { journal }
    }

    pub(super) fn journal(&self) -> &Journal {
        &self.journal
    }

    /// Keeps when each leader change of `events` was seen live, and how a key with a lease
    /// went (what a replay cannot tell: whether its holder resigned, or its lease expired or
    /// was revoked), for dashboards started later.
    pub(super) fn record(&self, events: &[crate::model::Event]) {
        use crate::model::EventKind::{LeaderChanged, LeaderElected, LeaderLost};
        let mut seen: Vec<(i64, Seen)> = Vec::new();
        let changes = events
            .iter()
            .filter(|e| matches!(e.kind, LeaderElected | LeaderChanged | LeaderLost));
        for e in changes {
            let (Some(revision), Some(at)) = (e.revision, e.at) else {
                continue;
            };
            let cause = e.cause.filter(|c| {
                matches!(
                    c,
                    Cause::LeaseExpired | Cause::LeaseRevoked | Cause::Resigned
                )
            });
            match seen.iter_mut().find(|(r, _)| *r == revision) {
                Some((_, (_, known))) => *known = known.or(cause),
                None => seen.push((revision, (at, cause))),
            }
        }
        self.append(&seen);
    }

    /// Queues what was seen live.
    pub(super) fn append(&self, seen: &[(i64, Seen)]) {
        if seen.is_empty() {
            return;
        }
        let entries: Vec<Entry> = seen
            .iter()
            .map(|&(revision, (at, cause))| Entry::Seen {
                revision,
                at,
                cause,
            })
            .collect();
        self.journal.append(&entries);
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;
    use crate::backend::engine::journal::Keep;

    /// Two electops on one cluster both record the times; the first seen of each revision
    /// is read back, with a cause either saw.
    #[test]
    fn times_load_back_whoever_recorded_them() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("history.sqlite3");
        let t = |ms| UNIX_EPOCH + Duration::from_millis(ms);
        let (one, two) = (
            History::at(p.clone(), Keep::UNBOUNDED),
            History::at(p, Keep::UNBOUNDED),
        );
        let (a, b) = (one.journal("etcd-1"), two.journal("etcd-1"));
        let at = |j: &Journal, seen: &[(i64, Seen)]| {
            let f = TimesFile { journal: j.clone() };
            f.append(seen);
            std::mem::forget(f);
        };
        let expired = Some(Cause::LeaseExpired);
        at(&a, &[(5, (t(1_000), None)), (6, (t(2_000), None))]);
        at(&b, &[(6, (t(2_001), expired)), (7, (t(3_000), None))]);
        let got = load(&a);
        assert_eq!(got.get(&5), Some(&(t(1_000), None)));
        assert_eq!(
            got.get(&6),
            Some(&(t(2_000), expired)),
            "a's time, b's cause"
        );
        assert_eq!(got.get(&7), Some(&(t(3_000), None)), "b's alone");
        assert_eq!(got.len(), 3);
    }

    #[test]
    fn each_prefix_of_a_cluster_has_its_journal() {
        let (a, b) = (key(0xabc, "/a/"), key(0xabc, "/b/"));
        assert_ne!(a, b);
        assert!(a.starts_with("etcd-abc-_a_-"), "{a:?}");
    }
}
