use std::time::{Duration, SystemTime};

use super::*;
use crate::model::Cause;

fn t(s: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + s)
}

fn change(election: &str, s: u64, zxid: i64, from: Option<&str>, to: Option<&str>) -> Entry {
    Entry::Change {
        election: election.into(),
        entry: HistoryEntry {
            at: Some(t(s)),
            revision: Some(zxid),
            from: from.map(str::to_string),
            to: to.map(str::to_string),
            cause: Cause::NodeGone,
            by: None,
        },
    }
}

#[test]
fn gaps_between_runs_say_whether_the_stop_was_recorded() {
    let recs = vec![
        Entry::Watching(t(0)),
        change("jobs", 5, 7, None, Some("a")),
        Entry::Stopped(t(20)),
        Entry::Watching(t(60)),
        change("jobs", 70, 9, Some("a"), Some("b")),
        // Killed: no stop line; the record shows it watching until the change.
        Entry::Watching(t(100)),
    ];
    let p = past(&recs);
    assert_eq!(p.since, Some(t(0)));
    assert_eq!(
        p.gaps,
        [
            HistoryGap {
                from: t(20),
                to: t(60),
                stop_recorded: true
            },
            HistoryGap {
                from: t(70),
                to: t(100),
                stop_recorded: false
            },
        ]
    );
    assert_eq!(
        p.gaps[0].describe(),
        "not watched from 22:13:40 to 22:14:20"
    );
    assert_eq!(p.gaps[1].describe(), "no record from 22:14:30 to 22:15:00");
    assert_eq!(p.changes["jobs"].len(), 2);
    assert_eq!(past(&[Entry::Watching(t(0))]).gaps, []);
}

#[test]
fn keys_keep_their_place() {
    let a = key("zk1:2181/app /election ");
    assert!(
        a.starts_with("zookeeper-history-zk1_2181_app__election_-"),
        "{a}"
    );
}

fn io() -> (
    BackendIo,
    tokio::sync::mpsc::Receiver<crate::model::SourceEvent>,
) {
    let (events, rx) = tokio::sync::mpsc::channel(8);
    let (_tx, commands) = tokio::sync::mpsc::channel(1);
    let cancel = tokio_util::sync::CancellationToken::new();
    (
        BackendIo {
            events,
            commands,
            cancel,
        },
        rx,
    )
}

fn history(dir: &tempfile::TempDir) -> History {
    let keep = crate::backend::engine::journal::Keep::UNBOUNDED;
    History::at(dir.path().join("data/history.sqlite3"), keep)
}

/// What the engine does with the journal a run names (`rx`): keeps it within `limit`
/// changes an election, and records the run in it until the recorder is dropped.
fn engine(
    rx: &mut tokio::sync::mpsc::Receiver<crate::model::SourceEvent>,
    h: &History,
    limit: usize,
) -> crate::backend::engine::marks::Recorder {
    let Ok(crate::model::SourceEvent::Journal {
        key, record, past, ..
    }) = rx.try_recv()
    else {
        panic!("the record is named to the engine");
    };
    assert!(past.is_some(), "with what the record says of the marks");
    let bound = Bound::changes(limit, h.keep());
    let mut r = crate::backend::engine::marks::Recorder::new(h.clone(), Some(bound));
    r.journal(&key, record, past);
    r
}

#[test]
fn a_run_appends_and_the_next_reads_it_back_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let (io, mut rx) = io();
    let info = SourceInfo::test_etcd();
    let h = history(&dir);
    let mut r = Record::new(&h, "zk", 2);
    assert_eq!(r.start(&io, &info, t(0)).since, Some(t(0)));
    let recorder = engine(&mut rx, &h, 2);
    for i in 0..100u64 {
        r.journal
            .append(&[change("jobs", 1 + i, i as i64, None, Some("a"))]);
    }
    assert!(r.failed().is_none());
    // The engine's recorder dropped: a clean stop, said (now).
    drop(recorder);
    let mut next = Record::new(&h, "zk", 2);
    let later = SystemTime::now() + Duration::from_secs(60);
    let p = next.start(&io, &info, later);
    drop(engine(&mut rx, &h, 2));
    let revs: Vec<_> = p.changes["jobs"].iter().map(|h| h.revision).collect();
    assert_eq!(revs, [Some(98), Some(99)]);
    let gap = p.gaps.last().expect("a gap");
    assert!(gap.stop_recorded && gap.to == later, "{gap:?}");
    // Trimmed in the database, not only in what is read back.
    let all = next
        .journal
        .load(Bound::changes(1_000, next.journal.history().keep()), &[]);
    let changes = all
        .iter()
        .filter(|e| matches!(e, Entry::Change { .. }))
        .count();
    assert_eq!(changes, 2, "{all:?}");
}

#[test]
fn a_record_that_cannot_be_written_says_why_and_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    // A file where the directory should be: nothing can be created below it.
    std::fs::write(dir.path().join("data"), "").unwrap();
    let (io, _rx) = io();
    let mut r = Record::new(&history(&dir), "zk", 2);
    let p = r.start(&io, &SourceInfo::test_etcd(), t(0));
    assert_eq!(p.since, Some(t(0)), "history still starts at the connect");
    let why = r.failed().expect("failed");
    assert!(
        why.contains("cannot ") && why.contains("history.sqlite3"),
        "{why}"
    );
    r.journal.append(&[change("jobs", 1, 1, None, Some("a"))]);
    assert_eq!(r.failed(), Some(why));
}

/// Two runs on one source: the second sees no gap at its start (the first watches); both
/// record, and what is read back is the first run's while it watched and the second's after;
/// no gap where the second was watching all along.
#[test]
fn a_second_run_carries_on_without_a_false_gap() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (io, mut rx) = io();
    let info = SourceInfo::test_etcd();
    let h = history(&dir);
    let base = SystemTime::now() - Duration::from_secs(2);
    let ms = |n: u64| base + Duration::from_millis(n);
    let at = |n: u64, zxid: i64, from: Option<&str>, to: &str| Entry::Change {
        election: "jobs".into(),
        entry: HistoryEntry {
            at: Some(ms(n)),
            revision: Some(zxid),
            from: from.map(str::to_string),
            to: Some(to.into()),
            cause: Cause::NodeGone,
            by: None,
        },
    };
    let mut one = Record::new(&h, "zk", 10);
    one.start(&io, &info, ms(0));
    let one_run = engine(&mut rx, &h, 10);
    one.journal.append(&[at(500, 1, None, "a")]);
    // Another electop: its own history handle, so its own run.
    let h2 = history(&dir);
    let mut two = Record::new(&h2, "zk", 10);
    let p = two.start(&io, &info, ms(1_000));
    let two_run = engine(&mut rx, &h2, 10);
    assert_eq!(p.gaps, [], "the first run watches");
    assert_eq!(p.changes["jobs"].len(), 1);
    one.journal.append(&[at(1_500, 2, Some("a"), "b")]);
    two.journal.append(&[at(1_500, 2, Some("a"), "b")]);
    drop(one_run);
    two.journal.append(&[at(60_000, 3, Some("b"), "c")]);
    drop(two_run);
    let p =
        Record::new(&h, "zk", 10).start(&io, &info, SystemTime::now() + Duration::from_secs(120));
    let revs: Vec<_> = p.changes["jobs"].iter().map(|h| h.revision).collect();
    assert_eq!(revs, [Some(1), Some(2), Some(3)], "each change once");
    assert_eq!(p.since, Some(ms(0)));
    assert_eq!(
        p.gaps.len(),
        1,
        "only the stretch up to this run: {:?}",
        p.gaps
    );
}
