use std::time::{Duration, SystemTime};

use super::*;

fn t(s: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + s)
}

fn change(election: &str, s: u64, zxid: i64, from: Option<&str>, to: Option<&str>) -> Rec {
    Rec::Change {
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
fn lines_round_trip_and_torn_lines_are_skipped() {
    let mut forced = change("jobs", 5, 0x2a, Some("a"), Some("b"));
    if let Rec::Change { entry, .. } = &mut forced {
        entry.cause = Cause::ForcedReelection;
        entry.by = Some("ops@host".into());
    }
    for r in [
        Rec::Connected(t(1)),
        change("jobs", 2, 7, None, Some("a")),
        change("jobs", 3, 9, Some("a"), None),
        forced,
        Rec::Stopped(t(9)),
    ] {
        let line = encode(&r);
        assert!(!line.contains('\n'), "{line}");
        assert_eq!(decode(&line), Some(r), "{line}");
    }
    assert_eq!(
        encode(&change("jobs", 2, 7, Some("a"), Some("b"))),
        r#"{"at":"2023-11-14T22:13:22Z","election":"jobs","zxid":7,"from":"a","to":"b","cause":"node_gone"}"#
    );
    assert_eq!(decode(r#"{"at":"2023-11-14T22:13:22Z","elect"#), None);
    assert_eq!(decode(r#"{"at":"yesterday","run":"connected"}"#), None);
    assert_eq!(
        decode(r#"{"at":"2023-11-14T22:13:22Z","run":"paused"}"#),
        None
    );
}

#[test]
fn compaction_keeps_the_last_changes_of_each_election() {
    let mut recs = vec![Rec::Connected(t(0))];
    for i in 0..10u64 {
        recs.push(change("jobs", 10 + i, 100 + i as i64, None, Some("a")));
    }
    recs.push(change("cron", 5, 50, None, Some("x")));
    recs.push(Rec::Connected(t(30)));
    let kept = compact(recs, 3);
    let jobs: Vec<i64> = kept
        .iter()
        .filter_map(|r| match r {
            Rec::Change { election, entry } if election == "jobs" => entry.revision,
            _ => None,
        })
        .collect();
    assert_eq!(jobs, [107, 108, 109], "the newest three of jobs");
    assert!(
        kept.contains(&change("cron", 5, 50, None, Some("x"))),
        "another election's only change stays"
    );
    assert!(kept.contains(&Rec::Connected(t(30))));
    // The old run's line is older than the oldest change kept, but few runs are on
    // record: it stays, and history still starts there.
    assert_eq!(past(&kept).since, Some(t(0)));
}

#[test]
fn compaction_bounds_the_runs_without_changes() {
    let recs: Vec<Rec> = (0..100).map(|i| Rec::Connected(t(i))).collect();
    let kept = compact(recs, 5);
    assert_eq!(kept.len(), RUNS_KEPT);
    assert_eq!(kept.last(), Some(&Rec::Connected(t(99))));
}

#[test]
fn the_same_change_recorded_twice_is_one_with_its_best_cause() {
    let mut unknown = change("jobs", 8, 7, Some("a"), Some("b"));
    if let Rec::Change { entry, .. } = &mut unknown {
        entry.cause = Cause::Unknown;
    }
    let kept = compact(
        vec![
            unknown,
            change("jobs", 9, 7, Some("a"), Some("b")),
            change("jobs", 12, 8, Some("b"), Some("c")),
        ],
        10,
    );
    let p = past(&kept);
    let jobs = &p.changes["jobs"];
    assert_eq!(jobs.len(), 2);
    assert_eq!(jobs[0].at, Some(t(8)), "first seen");
    assert_eq!(
        jobs[0].cause,
        Cause::NodeGone,
        "the cause that was seen wins"
    );
}

#[test]
fn gaps_between_runs_say_whether_the_stop_was_recorded() {
    let recs = vec![
        Rec::Connected(t(0)),
        change("jobs", 5, 7, None, Some("a")),
        Rec::Stopped(t(20)),
        Rec::Connected(t(60)),
        change("jobs", 70, 9, Some("a"), Some("b")),
        // Killed: no stop line; the record shows it watching until the change.
        Rec::Connected(t(100)),
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
    assert_eq!(past(&[Rec::Connected(t(0))]).gaps, []);
}

#[test]
fn file_names_are_safe_and_tell_sources_apart() {
    let a = file_name("zk1:2181,zk2:2181/app /election ");
    assert!(
        a.starts_with("zookeeper-history-zk1_2181_zk2_2181_app__election_-"),
        "{a}"
    );
    assert!(a.ends_with(".jsonl"));
    assert!(!a.contains('/'));
    assert_ne!(a, file_name("zk1:2181,zk2:2181/app /election_"));
    assert_eq!(a, file_name("zk1:2181,zk2:2181/app /election "), "stable");
}

#[test]
fn a_run_appends_and_the_next_reads_it_back_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data/h.jsonl");
    let mut r = Record::at(path.clone(), 2);
    assert_eq!(r.start(t(0)).since, Some(t(0)));
    for i in 0..40u64 {
        r.append(&change("jobs", 1 + i, i as i64, None, Some("a")));
    }
    r.append(&Rec::Stopped(t(50)));
    assert!(r.failed.is_none());
    let lines = std::fs::read_to_string(&path).unwrap().lines().count();
    assert!(
        lines <= r.bound(),
        "rewritten past the bound: {lines} lines"
    );
    let mut next = Record::at(path.clone(), 2);
    let p = next.start(t(60));
    let revs: Vec<_> = p.changes["jobs"].iter().map(|h| h.revision).collect();
    assert_eq!(revs, [Some(38), Some(39)]);
    assert_eq!(p.gaps.last().map(|g| (g.from, g.to)), Some((t(50), t(60))));
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

/// Two electops on one source share the file: while one keeps rewriting it (as it does
/// past its bound), every line the other appends is still there afterwards.
#[test]
fn a_rewrite_by_one_run_loses_no_line_another_appends() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("record.jsonl");
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let rewriter = {
        let (path, done) = (path.clone(), done.clone());
        std::thread::spawn(move || {
            let mut other = Record::at(path, 10_000);
            let mut rewrites = 0;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                other.reread_and_rewrite();
                rewrites += 1;
            }
            rewrites
        })
    };
    let mut one = Record::at(path.clone(), 10_000);
    const N: i64 = 2_000;
    for i in 0..N {
        one.append(&change(&format!("e{i}"), i as u64, i, None, Some("a")));
    }
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let rewrites = rewriter.join().expect("rewriter");
    assert!(
        rewrites > 1,
        "the other run rewrote the file while this one appended"
    );
    let text = std::fs::read_to_string(&path).expect("read the record");
    let changes = text
        .lines()
        .filter_map(decode)
        .filter(|r| matches!(r, Rec::Change { .. }))
        .count();
    assert_eq!(changes, N as usize, "lines lost to a rewrite");
}
