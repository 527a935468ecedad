//! The leader changes a source's election book recorded, kept in its history journal
//! ([`super::journal`]) so a restarted dashboard still shows them: SQL tables, SQL session
//! locks and Redis (etcd keeps its own history, and journals only when it saw each revision;
//! ZooKeeper's journal also marks the stretches no electop watched).

use std::collections::BTreeMap;
use std::time::SystemTime;

use super::journal::{Bound, Entry, History, Journal, KEPT_AT_LEAST, safe_name};
use crate::backend::BackendIo;
use crate::model::marks::PastMarks;
use crate::model::{HistoryEntry, SourceEvent, SourceInfo};

/// A leader change to persist: the election's name and the entry.
pub(crate) type Recorded = (String, HistoryEntry);

/// The journal of the source named `source_name`: its name made safe (what an earlier
/// release named its file).
pub(crate) fn key(source_name: &str) -> String {
    safe_name(source_name)
}

/// The journal's bound: a `serve` or `watch`, which keep few changes in memory, must not
/// cut what the next dashboard reads back.
fn bound(history: &History, history_limit: usize) -> Bound {
    Bound::changes(history_limit.max(KEPT_AT_LEAST), history.keep())
}

/// The changes recorded so far (bounded), oldest first: of the elections named in `only`
/// (a command asking for those alone), of all when it is empty.
#[cfg(test)]
fn load(j: &Journal, history_limit: usize, only: &[String]) -> Vec<Recorded> {
    changes(j.load(bound(j.history(), history_limit), only))
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

/// Tells the engine where the source's history is kept (see [`SourceEvent::Journal`]). Sent
/// as the task starts, before any other event of its, so the queue has room.
pub(crate) fn announce(
    io: &BackendIo,
    info: &SourceInfo,
    j: &Journal,
    record: bool,
    past: Option<PastMarks>,
) {
    let ev = SourceEvent::Journal {
        source: info.id,
        key: j.key().to_string(),
        record,
        past,
    };
    if io.events.try_send(ev).is_err() {
        tracing::warn!(source = %info.name, "the history's marks are not recorded: the queue is full");
    }
}

/// The source's journal: the changes recorded so far (oldest first), and the
/// writer for this run. With `only` (a command reading those elections alone, `history
/// ELECTION`) only theirs are read, and there is no writer: the elections not read back
/// have no past, so what this run sees of them is no change to record.
pub(crate) fn open(
    io: &BackendIo,
    info: &SourceInfo,
    history: &History,
    history_limit: usize,
    only: &[String],
) -> (Vec<Recorded>, Option<Writer>) {
    let j = history.journal(&key(&info.name));
    let entries = j.load(bound(history, history_limit), only);
    // This run's start, said once: what the next run reads back is what this one shows.
    let start = SystemTime::now();
    // Another electop watching now: the stretch up to now was watched.
    let watching = (!j.others_watching()).then_some(start);
    let past = super::marks::past_marks(&entries, watching);
    announce(io, info, &j, only.is_empty(), Some(past));
    let w = only
        .is_empty()
        .then(|| Writer::start(j, history_limit, start));
    (changes(entries), w)
}

/// `recorded` by election, each one's oldest first.
pub(crate) fn by_election(recorded: Vec<Recorded>) -> BTreeMap<String, Vec<HistoryEntry>> {
    let mut past: BTreeMap<String, Vec<HistoryEntry>> = BTreeMap::new();
    for (name, entry) in recorded {
        past.entry(name).or_default().push(entry);
    }
    past
}

/// The source's journal as this run records it.
pub(crate) struct Writer(Journal);

/// A clean stop says when this run stopped watching: the next run tells the stretch from it
/// as not watched.
impl Drop for Writer {
    fn drop(&mut self) {
        self.0.append(&[Entry::Stopped(SystemTime::now())]);
    }
}

impl Writer {
    /// Starts this run's record of `j`: its start (`at`) said, the journal kept within its
    /// bound.
    pub(crate) fn start(j: Journal, history_limit: usize, at: SystemTime) -> Writer {
        j.trim(bound(j.history(), history_limit));
        j.append(&[Entry::Watching(at)]);
        Writer(j)
    }

    /// The change an admin action relabelled in `e` (another electop's, learnt from the audit
    /// log after the change was recorded), appended again: the later record wins when it is
    /// read back, so a later `status` or dashboard tells it forced too.
    pub(crate) fn relabelled(&mut self, e: Option<&crate::model::Election>) {
        if let Some(h) = e.and_then(|e| e.relabelled_entry().map(|h| (e.name.clone(), h.clone()))) {
            self.record(&[h]);
        }
    }

    /// Appends `recorded`; the changes are shown whether or not they could be written.
    pub(crate) fn record(&mut self, recorded: &[Recorded]) {
        let entries: Vec<Entry> = recorded
            .iter()
            .map(|(election, entry)| Entry::Change {
                election: election.clone(),
                entry: entry.clone(),
            })
            .collect();
        if !entries.is_empty() {
            self.0.append(&entries);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::backend::engine::journal::Keep;
    use crate::model::Cause;

    /// Two electops on one source record each change; a reader tells it once, and when the
    /// older stops the younger's records carry on.
    #[test]
    fn two_electops_record_one_history() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("history.sqlite3");
        let now = SystemTime::now();
        let entry = |to: &str, ms| HistoryEntry {
            at: Some(now + Duration::from_millis(ms)),
            revision: None,
            from: Some("a".into()),
            to: Some(to.into()),
            cause: Cause::TakenOver,
            by: None,
        };
        let (one, two) = (
            History::at(path.clone(), Keep::UNBOUNDED),
            History::at(path, Keep::UNBOUNDED),
        );
        let mut w = Writer::start(one.journal("src"), 8, SystemTime::now());
        let mut other = Writer::start(two.journal("src"), 8, SystemTime::now());
        w.record(&[("jobs".into(), entry("b", 10))]);
        other.record(&[("jobs".into(), entry("b", 12))]);
        let read = |h: &History| -> Vec<_> {
            load(&h.journal("src"), 8, &[])
                .into_iter()
                .map(|(_, h)| h.to)
                .collect()
        };
        assert_eq!(read(&two), [Some("b".to_string())], "once");
        drop(w);
        other.record(&[("jobs".into(), entry("c", 60_000))]);
        assert_eq!(read(&one), [Some("b".into()), Some("c".into())]);
    }

    #[test]
    fn source_names_become_safe_keys() {
        let k = key("postgres tester@127.0.0.1:5432/electop leaderlock");
        assert_eq!(k, "postgres_tester_127.0.0.1_5432_electop_leaderlock");
    }
}
