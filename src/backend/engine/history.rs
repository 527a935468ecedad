//! The leader changes a source's election book recorded, kept in its history journal
//! ([`super::journal`]) so a restarted dashboard still shows them: SQL tables, SQL session
//! locks and Redis (etcd keeps its own history, and journals only when it saw each revision;
//! ZooKeeper's journal also marks the stretches no electop watched). One writer per source at
//! a time: a second electop on the same source reads the journal and takes over the writing
//! when the first is gone.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use tracing::{info, warn};

use super::journal::{self, Batched, Bound, Entry, Journal, KEPT_AT_LEAST};
use crate::model::HistoryEntry;

/// A leader change to persist: the election's name and the entry.
pub(crate) type Recorded = (String, HistoryEntry);

/// `<data dir>/history/<source>.jsonl`, the source name made file-safe.
pub(crate) fn default_path(source_name: &str) -> Option<PathBuf> {
    let dirs = directories::ProjectDirs::from("", "", "electop")?;
    let safe = journal::safe_name(source_name);
    Some(
        dirs.data_dir()
            .join("history")
            .join(format!("{safe}.jsonl")),
    )
}

/// The journal's bound: a `serve` or `watch`, which keep few changes in memory, must not
/// cut what the next dashboard reads back.
fn bound(history_limit: usize) -> Bound {
    Bound::changes(history_limit.max(KEPT_AT_LEAST))
}

/// The changes recorded so far (bounded), oldest first: of the elections named in `only`
/// (a command asking for those alone), of all when it is empty.
pub(crate) fn load(path: &Path, history_limit: usize, only: &[String]) -> Vec<Recorded> {
    let entries = journal::load_elections(path, bound(history_limit), only);
    // Read alone (no writer's turn): the stretch since the last record was watched by
    // nobody unless another electop writes the journal now.
    let now = (!journal::written_now(path)).then(SystemTime::now);
    super::marks::stash(path, super::marks::past_marks(&entries, now));
    changes(entries)
}

fn changes(entries: Vec<Entry>) -> Vec<Recorded> {
    entries
        .into_iter()
        .filter_map(|e| match e {
            Entry::Change { election, entry } => Some((election, entry)),
            _ => None,
        })
        .collect()
}

/// The source named `source_name`'s journal at its default path, if there is one: the changes
/// recorded so far by election (oldest first), and the writer for this run. With `only`
/// (a command reading those elections alone, `history ELECTION`) only theirs are read, and
/// there is no writer: the elections not read back have no past, so what this run sees of
/// them is no change to record, and the journal is not read a second time for the turn.
pub(crate) fn open(
    source_name: &str,
    history_limit: usize,
    only: &[String],
) -> (BTreeMap<String, Vec<HistoryEntry>>, Option<Writer>) {
    let Some(path) = default_path(source_name) else {
        return (BTreeMap::new(), None);
    };
    super::marks::opened(source_name, &path);
    let mut past: BTreeMap<String, Vec<HistoryEntry>> = BTreeMap::new();
    let (recorded, w) = match only.is_empty() {
        true => {
            let (w, recorded) = Writer::open_reading(&path, history_limit);
            (recorded, Some(w))
        }
        false => (load(&path, history_limit, only), None),
    };
    for (name, entry) in recorded {
        past.entry(name).or_default().push(entry);
    }
    (past, w)
}

/// The source's journal, written while this run records the source: in batches, at most
/// 100 ms after a change, and at once when the writer is dropped.
pub(crate) struct Writer(Batched);

/// A clean stop says when this run stopped watching (if it wrote the journal): the next
/// run tells the stretch from it as not watched.
impl Drop for Writer {
    fn drop(&mut self) {
        if self.0.writing() {
            let _ = self.0.append(&[Entry::Stopped(SystemTime::now())]);
        }
    }
}

impl Writer {
    /// The journal at `path`, and whether this run records it (false: another electop does).
    #[cfg(test)]
    pub(crate) fn open(path: &Path, history_limit: usize) -> (Writer, std::io::Result<bool>) {
        let j = Batched::new(Journal::new(path.to_path_buf(), bound(history_limit)));
        let writing = j.take_turn();
        (Writer(j), writing)
    }

    /// The journal at `path`, its writer's turn taken if it is free (said if not), and the
    /// changes recorded so far (bounded), oldest first: those the turn read, so the file is
    /// read once at a run's start, or the file read when another electop writes it.
    pub(crate) fn open_reading(path: &Path, history_limit: usize) -> (Writer, Vec<Recorded>) {
        let mut journal = Journal::new(path.to_path_buf(), bound(history_limit)).reading_back();
        let now = SystemTime::now();
        // This run's start, written when it takes the turn: the next run tells the stretch
        // no electop watched from the `stopped` line (or the last line) to its own.
        let _ = journal.preface(Entry::Watching(now));
        let j = Batched::new(journal);
        match j.take_turn() {
            Ok(true) => {}
            Ok(false) => {
                info!(path = %path.display(), "another electop records this source's history")
            }
            Err(e) => warn!(path = %path.display(), %e, "cannot record history"),
        }
        let recorded = match j.take_read_back() {
            Some(read) => {
                let read = journal::bounded(read, bound(history_limit));
                super::marks::stash(path, super::marks::past_marks(&read, Some(now)));
                changes(read)
            }
            None => load(path, history_limit, &[]),
        };
        (Writer(j), recorded)
    }

    /// The change an admin action relabelled in `e` (another electop's, learnt from the audit
    /// log after the change was recorded), appended again: the later line wins when it is
    /// read back, so a later `status` or dashboard tells it forced too.
    pub(crate) fn relabelled(&mut self, e: Option<&crate::model::Election>) {
        if let Some(h) = e.and_then(|e| e.relabelled_entry().map(|h| (e.name.clone(), h.clone()))) {
            self.record(&[h]);
        }
    }

    /// Appends `recorded` if this run records the source (taking the turn when it is free);
    /// a failure is logged, and the changes are shown all the same.
    pub(crate) fn record(&mut self, recorded: &[Recorded]) {
        if recorded.is_empty() {
            return;
        }
        if let Err(e) = self.append(recorded) {
            warn!(%e, "cannot append to the history file");
        }
    }

    /// Queues `recorded` if this run records the source (taking the turn when it is free).
    pub(crate) fn append(&mut self, recorded: &[Recorded]) -> std::io::Result<()> {
        let entries: Vec<Entry> = recorded
            .iter()
            .map(|(election, entry)| Entry::Change {
                election: election.clone(),
                entry: entry.clone(),
            })
            .collect();
        self.0.append(&entries).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;
    use crate::model::{Cause, HistoryEntry};

    #[test]
    fn appended_history_loads_back_and_one_writer_at_a_time() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("h").join("src.jsonl");
        let at = UNIX_EPOCH + Duration::from_millis(1_795_000_000_123);
        let entry = |to: &str| HistoryEntry {
            at: Some(at),
            revision: None,
            from: Some("a".into()),
            to: Some(to.into()),
            cause: Cause::TakenOver,
            by: None,
        };
        let (mut w, writing) = Writer::open(&path, 8);
        assert!(writing.expect("open"), "first writer");
        let (mut other, writing) = Writer::open(&path, 8);
        assert!(!writing.expect("open"), "second writer waits its turn");
        w.append(&[("jobs".into(), entry("b"))]).expect("append");
        other
            .append(&[("jobs".into(), entry("x"))])
            .expect("not written");
        assert_eq!(load(&path, 8, &[]), vec![("jobs".to_string(), entry("b"))]);
        drop(w);
        other
            .append(&[("jobs".into(), entry("c"))])
            .expect("takes over");
        let to: Vec<_> = load(&path, 8, &[]).into_iter().map(|(_, h)| h.to).collect();
        assert_eq!(to, [Some("b".into()), Some("c".into())]);
    }

    #[test]
    fn source_names_become_safe_file_names() {
        let p = default_path("postgres tester@127.0.0.1:5432/electop leaderlock").expect("dirs");
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        assert_eq!(
            name,
            "postgres_tester_127.0.0.1_5432_electop_leaderlock.jsonl"
        );
    }
}
