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
fn file_names_keep_their_place() {
    let a = file_name("zk1:2181/app /election ");
    assert!(
        a.starts_with("zookeeper-history-zk1_2181_app__election_-"),
        "{a}"
    );
    assert!(a.ends_with(".jsonl"));
}

#[test]
fn a_run_appends_and_the_next_reads_it_back_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data/h.jsonl");
    let mut r = Record::at(path.clone(), 2);
    assert_eq!(r.start(t(0)).since, Some(t(0)));
    for i in 0..100u64 {
        r.append(&change("jobs", 1 + i, i as i64, None, Some("a")));
    }
    r.append(&Entry::Stopped(t(150)));
    assert!(r.failed.is_none());
    let lines = std::fs::read_to_string(&path).unwrap().lines().count();
    // Twice what is kept: two changes and the run lines.
    let bound = 2 * (2 + 2 * journal::RUNS_KEPT);
    assert!(lines <= bound, "rewritten past the bound: {lines} lines");
    drop(r);
    let mut next = Record::at(path.clone(), 2);
    // The drop said when the run stopped (now).
    let later = SystemTime::now() + Duration::from_secs(60);
    let p = next.start(later);
    let revs: Vec<_> = p.changes["jobs"].iter().map(|h| h.revision).collect();
    assert_eq!(revs, [Some(98), Some(99)]);
    let gap = p.gaps.last().expect("a gap");
    assert!(gap.stop_recorded && gap.to == later, "{gap:?}");
}

#[test]
fn a_record_that_cannot_be_written_says_why_once_and_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    // A file where the directory should be: nothing can be created below it.
    std::fs::write(dir.path().join("data"), "").unwrap();
    let mut r = Record::at(dir.path().join("data/h.jsonl"), 2);
    let p = r.start(t(0));
    assert_eq!(p.since, Some(t(0)), "history still starts at the connect");
    let why = r.failed.clone().expect("failed");
    assert!(
        why.starts_with("cannot ") && why.contains("h.jsonl"),
        "{why}"
    );
    r.append(&change("jobs", 1, 1, None, Some("a")));
    assert_eq!(r.failed, Some(why));
}

/// Two runs on one source: the second only reads while the first records, sees no gap
/// at its start (the first watches), and takes over when the first stops; the record then
/// shows no gap where the second was watching all along.
#[test]
fn a_second_run_reads_then_takes_over_without_a_false_gap() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("record.jsonl");
    let mut one = Record::at(path.clone(), 10);
    one.start(t(0));
    one.append(&change("jobs", 5, 1, None, Some("a")));
    let mut two = Record::at(path.clone(), 10);
    let p = two.start(t(10));
    assert_eq!(p.gaps, [], "the first run watches");
    assert_eq!(p.changes["jobs"].len(), 1);
    two.append(&change("jobs", 15, 2, Some("a"), Some("b")));
    drop(one);
    two.append(&change("jobs", 25, 3, Some("b"), Some("c")));
    drop(two);
    let p = Record::at(path, 10).start(SystemTime::now());
    let revs: Vec<_> = p.changes["jobs"].iter().map(|h| h.revision).collect();
    assert_eq!(
        revs,
        [Some(1), Some(3)],
        "the first run's and the second's after"
    );
    assert_eq!(p.since, Some(t(0)));
    assert_eq!(
        p.gaps.len(),
        1,
        "only the stretch up to this run: {:?}",
        p.gaps
    );
}
