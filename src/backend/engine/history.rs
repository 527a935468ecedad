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
pub(crate) fn bound(history: &History, history_limit: usize) -> Bound {
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

/// Tells the engine where the source's history is kept, and from when this run is recorded
/// there (none: it is not; see [`SourceEvent::Journal`]). Sent as the task starts, before
/// any other event of its, so the queue has room.
pub(crate) fn announce(
    io: &BackendIo,
    info: &SourceInfo,
    j: &Journal,
    record: Option<SystemTime>,
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

/// The source's journal: the changes recorded so far (oldest first), named to the engine,
/// which records there what this run sees ([`super::marks`]). With `only` (a command
/// reading those elections alone, `history ELECTION`) only theirs are read, and nothing is
/// recorded: the elections not read back have no past, so what this run sees of them is no
/// change to record.
pub(crate) fn open(
    io: &BackendIo,
    info: &SourceInfo,
    history: &History,
    history_limit: usize,
    only: &[String],
) -> Vec<Recorded> {
    let j = history.journal(&key(&info.name));
    let entries = j.load(bound(history, history_limit), only);
    let start = SystemTime::now();
    // Another electop watching now: the stretch up to now was watched.
    let watching = (!j.others_watching()).then_some(start);
    let past = super::marks::past_marks(&entries, watching);
    announce(io, info, &j, only.is_empty().then_some(start), Some(past));
    changes(entries)
}

/// `recorded` by election, each one's oldest first.
pub(crate) fn by_election(recorded: Vec<Recorded>) -> BTreeMap<String, Vec<HistoryEntry>> {
    let mut past: BTreeMap<String, Vec<HistoryEntry>> = BTreeMap::new();
    for (name, entry) in recorded {
        past.entry(name).or_default().push(entry);
    }
    past
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
        // What each one's recorder writes: its start, the change, and at a clean stop its end.
        let (w, other) = (one.journal("src"), two.journal("src"));
        let change = |to, ms| Entry::Change {
            election: "jobs".into(),
            entry: entry(to, ms),
        };
        w.append(&[Entry::Watching(now)]);
        other.append(&[Entry::Watching(now)]);
        w.append(&[change("b", 10)]);
        other.append(&[change("b", 12)]);
        let read = |h: &History| -> Vec<_> {
            load(&h.journal("src"), 8, &[])
                .into_iter()
                .map(|(_, h)| h.to)
                .collect()
        };
        assert_eq!(read(&two), [Some("b".to_string())], "once");
        w.append(&[Entry::Stopped(now + Duration::from_millis(20))]);
        other.append(&[change("c", 60_000)]);
        assert_eq!(read(&one), [Some("b".into()), Some("c".into())]);
    }

    #[test]
    fn source_names_become_safe_keys() {
        let k = key("postgres tester@127.0.0.1:5432/electop leaderlock");
        assert_eq!(k, "postgres_tester_127.0.0.1_5432_electop_leaderlock");
    }
}
