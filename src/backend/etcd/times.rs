//! When electop saw each etcd change live, kept in the source's history journal
//! ([`crate::backend::engine::journal`]: `seen` records of a revision and its time), so a
//! dashboard started later shows times, not bare revisions, for everything some electop saw
//! before. etcd keeps no time for a revision; this file does. One journal per cluster and
//! prefix; one electop writes it at a time, and the others take over when it is gone.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::backend::engine::journal::{self, Batched, Bound, Entry, Journal};
use crate::backend::engine::marks;
use crate::model::Cause;

/// The revision times kept (no changes are written to this journal), and the process's
/// retention and size bound.
fn bound() -> Bound {
    Bound {
        per_election: 1,
        ..Bound::changes(1)
    }
}

/// `<data dir>/history/etcd-<cluster id>-<prefix>-<hash>.jsonl`.
pub(super) fn path(cluster_id: u64, prefix: &str) -> Option<PathBuf> {
    let dirs = directories::ProjectDirs::from("", "", "electop")?;
    let name = journal::file_name(&format!("etcd-{cluster_id:x}"), prefix);
    Some(dirs.data_dir().join("history").join(name))
}

/// What was seen live of a revision: when, and the cause of its leader change where only a
/// live watch tells it.
pub(crate) type Seen = (SystemTime, Option<Cause>);

/// What was recorded of revisions.
pub(super) fn load(path: &Path) -> HashMap<i64, Seen> {
    journal::load(path, bound())
        .into_iter()
        .filter_map(|e| match e {
            Entry::Seen {
                revision,
                at,
                cause,
            } => Some((revision, (at, cause))),
            _ => None,
        })
        .collect()
}

/// One source's times journal, held open between appends (shared by the watch's tasks),
/// written in batches: at most 100 ms after a change, and at once when
/// dropped.
pub(super) struct TimesFile {
    path: PathBuf,
    journal: Batched,
    /// This run's start was said (the first opening): its clean stop is said too.
    started: bool,
}

/// A clean stop says when, if this run writes the journal: an outage under way ends there
/// for the next run, not at this run's last line.
impl Drop for TimesFile {
    fn drop(&mut self) {
        if self.started && self.journal.writing() {
            let _ = self.journal.append(&[Entry::Stopped(SystemTime::now())]);
        }
    }
}

impl TimesFile {
    /// The journal at `path` of the source named `source`, said to be its journal (the
    /// timeline's marks go there). Opened first in this run, it hands back the outages and
    /// deposed holders it holds, and this run's start is written when it takes the turn: a
    /// killed run's open outage ends there, and its clean stop when it is dropped.
    pub(super) fn new(path: PathBuf, source: &str) -> TimesFile {
        let journal = Batched::new(Journal::new(path.clone(), bound()));
        let started = marks::opened(source, &path);
        if started {
            let entries = journal::load(&path, bound());
            // Read alone: the open stretches end at the last line, unless another electop
            // writes the journal now (then they may still be under way).
            let now = (!journal::written_now(&path)).then(SystemTime::now);
            marks::stash(&path, marks::past_outages(&entries, now));
            let _ = journal.preface(Entry::Watching(SystemTime::now()));
        }
        TimesFile {
            journal,
            path,
            started,
        }
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// Keeps when each leader change of `events` was seen live, and a lease's cause (what a
    /// replay cannot tell: whether it expired or was revoked), for dashboards started later.
    /// A failure is logged: the changes are shown all the same.
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
            let cause = e
                .cause
                .filter(|c| matches!(c, Cause::LeaseExpired | Cause::LeaseRevoked));
            match seen.iter_mut().find(|(r, _)| *r == revision) {
                Some((_, (_, known))) => *known = known.or(cause),
                None => seen.push((revision, (at, cause))),
            }
        }
        if let Err(e) = self.append(&seen) {
            let path = self.path.display();
            tracing::warn!(%e, %path, "cannot record when changes were seen");
        }
    }

    /// Queues what was seen live if this electop records the source.
    pub(super) fn append(&self, seen: &[(i64, Seen)]) -> std::io::Result<()> {
        if seen.is_empty() {
            return Ok(());
        }
        let entries: Vec<Entry> = seen
            .iter()
            .map(|&(revision, (at, cause))| Entry::Seen {
                revision,
                at,
                cause,
            })
            .collect();
        self.journal.append(&entries).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    #[test]
    fn times_load_back_and_one_electop_writes_them() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("h").join("etcd-1.jsonl");
        let t = |ms| UNIX_EPOCH + Duration::from_millis(ms);
        let src = "times test";
        let (a, b) = (
            TimesFile::new(p.clone(), src),
            TimesFile::new(p.clone(), src),
        );
        let expired = Some(Cause::LeaseExpired);
        a.append(&[(5, (t(1_000), None)), (6, (t(2_000), expired))])
            .expect("append");
        b.append(&[(6, (t(2_001), None))]).expect("b reads only");
        let got = load(&p);
        assert_eq!(got.get(&5), Some(&(t(1_000), None)));
        assert_eq!(got.get(&6), Some(&(t(2_000), expired)), "a's, not b's");
        assert_eq!(got.len(), 2);
        drop(a);
        b.append(&[(7, (t(3_000), None))]).expect("b takes over");
        assert_eq!(load(&p).get(&7), Some(&(t(3_000), None)));
    }

    /// etcd's bound (one change per election: it journals none) keeps every outage and
    /// deposed line within the retention, with the runs' lines, and none older.
    #[test]
    fn a_rewrite_keeps_the_marks_within_the_retention() {
        use crate::backend::engine::journal::Keep;
        use crate::model::marks::Deposed;
        let now = SystemTime::now();
        let ago = |s: u64| now - Duration::from_secs(s);
        let outage = |from, to: Option<u64>| Entry::Outage {
            from: ago(from),
            to: to.map(ago),
            down: true,
        };
        let deposed = |election: &str, from, to: Option<u64>| {
            Entry::Deposed(Deposed {
                election: election.into(),
                holder: "a".into(),
                from: ago(from),
                to: to.map(ago),
            })
        };
        let old = [outage(7200, Some(7100)), deposed("jobs", 7000, Some(6900))];
        let kept = vec![
            Entry::Watching(ago(3000)),
            outage(2000, None),
            outage(2000, Some(1990)),
            deposed("jobs", 1500, None),
            deposed("cron", 1400, None),
            deposed("jobs", 1500, Some(1000)),
            Entry::Seen {
                revision: 9,
                at: ago(900),
                cause: None,
            },
            Entry::Stopped(ago(800)),
        ];
        let mut entries = old.to_vec();
        entries.extend(kept.iter().cloned());
        let b = Bound {
            keep: Keep {
                retention: Duration::from_secs(3600),
                max_bytes: 1 << 20,
            },
            ..bound()
        };
        assert_eq!(journal::compact(entries, b), kept);
    }

    #[test]
    fn each_prefix_of_a_cluster_has_its_journal() {
        let (a, b) = (path(0xabc, "/a/"), path(0xabc, "/b/"));
        assert_ne!(a, b);
        let name = a
            .as_ref()
            .and_then(|p| p.file_name()?.to_str().map(str::to_string));
        assert!(
            name.is_some_and(|n| n.starts_with("etcd-abc-_a_-")),
            "{a:?}"
        );
    }
}
