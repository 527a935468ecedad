use std::time::{Duration, SystemTime};

use super::*;
use crate::backend::engine::journal::keep::RUNS_KEPT;

fn t(s: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + s)
}

fn change(election: &str, s: u64, rev: Option<i64>, from: Option<&str>, to: Option<&str>) -> Entry {
    Entry::Change {
        election: election.into(),
        entry: HistoryEntry {
            at: Some(t(s)),
            revision: rev,
            from: from.map(str::to_string),
            to: to.map(str::to_string),
            cause: Cause::NodeGone,
            by: None,
        },
    }
}

fn bound(per_election: usize, seen: usize) -> Bound {
    Bound {
        per_election,
        seen,
        keep: Keep::UNBOUNDED,
    }
}

fn history(dir: &tempfile::TempDir, keep: Keep) -> History {
    History::at(dir.path().join("history.sqlite3"), keep)
}

#[test]
fn records_round_trip_with_their_version() {
    let mut forced = change("jobs", 5, Some(0x2a), Some("a"), Some("b"));
    if let Entry::Change { entry, .. } = &mut forced {
        entry.cause = Cause::ForcedReelection;
        entry.by = Some("ops@host".into());
        entry.at = Some(t(5) + Duration::from_millis(123));
    }
    let mut undated = change("jobs", 0, None, None, Some("a"));
    if let Entry::Change { entry, .. } = &mut undated {
        entry.at = None;
    }
    for e in [
        Entry::Watching(t(1)),
        change("jobs", 2, Some(7), None, Some("a")),
        change("jobs", 3, None, Some("a"), None),
        undated,
        forced,
        Entry::Seen {
            revision: 12,
            at: t(4),
            cause: Some(Cause::LeaseRevoked),
        },
        Entry::Stopped(t(9)),
        Entry::Outage {
            from: t(10),
            to: None,
            down: true,
        },
        Entry::Outage {
            from: t(10),
            to: Some(t(12)),
            down: false,
        },
        Entry::Deposed(crate::model::marks::Deposed {
            election: "jobs".into(),
            holder: "a".into(),
            from: t(13),
            to: Some(t(15)),
        }),
    ] {
        let line = encode(&e);
        assert!(!line.contains('\n'), "{line}");
        assert!(line.starts_with(r#"{"v":2,"kind":"#), "{line}");
        assert_eq!(decode(&line), Some(e), "{line}");
    }
    assert_eq!(
        encode(&change("jobs", 2, Some(7), Some("a"), Some("b"))),
        r#"{"v":2,"kind":"change","at":"2023-11-14T22:13:22Z","election":"jobs","rev":7,"from":"a","to":"b","cause":"node_gone"}"#
    );
    // Version 1's lines (an electop before the marks) are read as ever.
    let v1 = r#"{"v":1,"kind":"change","at":"2023-11-14T22:13:22Z","election":"jobs","rev":7,"from":"a","to":"b","cause":"node_gone"}"#;
    assert_eq!(
        decode(v1),
        Some(change("jobs", 2, Some(7), Some("a"), Some("b")))
    );
}

#[test]
fn torn_old_and_future_lines_are_skipped() {
    for line in [
        // A torn last line.
        r#"{"v":1,"kind":"change","at":"2023-11-14T22:13:22Z","elect"#,
        // The three formats before this one: SQL's, ZooKeeper's, etcd's times.
        r#"{"election":"jobs","at_ms":1700000000000,"from":"a","to":"b","cause":"taken_over"}"#,
        r#"{"at":"2023-11-14T22:13:22Z","election":"jobs","zxid":7,"cause":"node_gone"}"#,
        r#"{"at":"2023-11-14T22:13:22Z","run":"connected"}"#,
        r#"{"rev":5,"at_ms":1000}"#,
        // A later version, an unknown kind, a record missing what it needs.
        r#"{"v":3,"kind":"watching","at":"2023-11-14T22:13:22Z"}"#,
        r#"{"v":1,"kind":"paused","at":"2023-11-14T22:13:22Z"}"#,
        r#"{"v":1,"kind":"outage","at":"2023-11-14T22:13:22Z"}"#,
        r#"{"v":1,"kind":"seen","at":"2023-11-14T22:13:22Z"}"#,
        r#"{"v":1,"kind":"watching","at":"yesterday"}"#,
    ] {
        assert_eq!(decode(line), None, "{line}");
    }
}

#[test]
fn compaction_keeps_the_newest_of_each_election_and_of_the_times() {
    let mut all = vec![Entry::Watching(t(0))];
    for i in 0..10u64 {
        all.push(change(
            "jobs",
            10 + i,
            Some(100 + i as i64),
            None,
            Some("a"),
        ));
        all.push(Entry::Seen {
            revision: 100 + i as i64,
            at: t(10 + i),
            cause: None,
        });
    }
    all.push(change("cron", 5, Some(50), None, Some("x")));
    all.push(Entry::Watching(t(30)));
    let kept = bounded(all, bound(3, 2));
    let jobs: Vec<i64> = kept
        .iter()
        .filter_map(|r| match r {
            Entry::Change { election, entry } if election == "jobs" => entry.revision,
            _ => None,
        })
        .collect();
    assert_eq!(jobs, [107, 108, 109], "the newest three of jobs");
    let seen: Vec<i64> = kept
        .iter()
        .filter_map(|r| match r {
            Entry::Seen { revision, .. } => Some(*revision),
            _ => None,
        })
        .collect();
    assert_eq!(seen, [108, 109], "the newest two times");
    assert!(kept.contains(&change("cron", 5, Some(50), None, Some("x"))));
    assert!(kept.contains(&Entry::Watching(t(30))));
    assert!(
        kept.contains(&Entry::Watching(t(0))),
        "few runs: the old one stays"
    );
    let runs: Vec<Entry> = (0..100).map(|i| Entry::Watching(t(i))).collect();
    let kept = bounded(runs, bound(5, 5));
    assert_eq!(kept.len(), RUNS_KEPT);
    assert_eq!(kept.last(), Some(&Entry::Watching(t(99))));
}

#[test]
fn a_relabelled_change_is_one_and_a_flip_back_is_another() {
    let mut unknown = change("jobs", 8, Some(7), Some("a"), Some("b"));
    if let Entry::Change { entry, .. } = &mut unknown {
        entry.cause = Cause::Unknown;
    }
    let kept = bounded(
        vec![
            unknown,
            change("jobs", 9, Some(7), Some("a"), Some("b")),
            // No revisions (SQL): a→b twice is two changes.
            change("sql", 1, None, Some("a"), Some("b")),
            change("sql", 2, None, Some("b"), Some("a")),
            change("sql", 3, None, Some("a"), Some("b")),
        ],
        bound(10, 10),
    );
    assert_eq!(kept.len(), 4, "{kept:#?}");
    let Entry::Change { entry, .. } = &kept[0] else {
        panic!("{kept:?}")
    };
    assert_eq!(
        (entry.at, entry.cause),
        (Some(t(8)), Cause::NodeGone),
        "first seen, the cause that was seen"
    );
}

/// What one run appends is read back as written, by any process; a run's newest `alive`
/// record alone is kept.
#[test]
fn records_are_read_back_in_order_and_a_runs_newest_alive_alone_is_kept() {
    let dir = tempfile::tempdir().expect("tempdir");
    let j = history(&dir, Keep::UNBOUNDED).journal("src");
    let written = [
        Entry::Watching(t(0)),
        change("jobs", 1, None, None, Some("a")),
        Entry::Alive(t(2)),
        change("cron", 3, None, None, Some("b")),
        Entry::Alive(t(4)),
    ];
    j.append(&written);
    let other = history(&dir, Keep::UNBOUNDED).journal("src");
    let want = [
        written[0].clone(),
        written[1].clone(),
        written[3].clone(),
        written[4].clone(),
    ];
    assert_eq!(other.load(bound(10, 10), &[]), want);
    assert_eq!(
        history(&dir, Keep::UNBOUNDED)
            .journal("else")
            .load(bound(10, 10), &[]),
        []
    );
}

/// A trim deletes what is past the retention (a change without a time stays) and, of each
/// run, all but the newest changes of each election and the newest revision times.
#[test]
fn a_trim_deletes_past_the_retention_and_the_counts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let keep = Keep {
        retention: Duration::from_secs(3600),
        max_bytes: u64::MAX,
    };
    let j = history(&dir, keep).journal("src");
    let now = SystemTime::now();
    let at = |ago: u64, rev: i64| Entry::Change {
        election: "jobs".into(),
        entry: HistoryEntry {
            at: Some(now - Duration::from_secs(ago)),
            revision: Some(rev),
            from: None,
            to: Some("a".into()),
            cause: Cause::Elected,
            by: None,
        },
    };
    let mut undated = change("cron", 0, None, None, Some("x"));
    if let Entry::Change { entry, .. } = &mut undated {
        entry.at = None;
    }
    j.append(&[
        at(7200, 1),
        undated.clone(),
        at(30, 2),
        at(20, 3),
        at(10, 4),
    ]);
    j.append(&[
        Entry::Seen {
            revision: 2,
            at: now,
            cause: None,
        },
        Entry::Seen {
            revision: 3,
            at: now,
            cause: None,
        },
    ]);
    j.trim(Bound {
        per_election: 2,
        seen: 1,
        keep,
    });
    let all = Bound {
        keep: Keep::UNBOUNDED,
        ..bound(100, 100)
    };
    let kept = j.load(all, &[]);
    assert_eq!(
        kept,
        [
            undated,
            at(20, 3),
            at(10, 4),
            Entry::Seen {
                revision: 3,
                at: now,
                cause: None
            }
        ]
    );
}

/// Past its size bound the database deletes its oldest half.
#[test]
fn past_the_size_bound_the_oldest_half_goes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let keep = Keep {
        retention: Duration::MAX,
        max_bytes: 256 << 10,
    };
    let j = history(&dir, keep).journal("src");
    let many: Vec<Entry> = (0..4_000)
        .map(|i| {
            change(
                &format!("e{i}"),
                i,
                None,
                None,
                Some("a holder with a long name"),
            )
        })
        .collect();
    j.append(&many);
    j.trim(Bound {
        keep,
        ..bound(10, 10)
    });
    let kept = j.load(bound(10, 10), &[]);
    assert!(kept.len() <= 2_000, "{}", kept.len());
    assert_eq!(kept.last(), many.last(), "the newest stay");
}

/// A database of a later schema is read, never written: what this electop appends is
/// dropped (said once), and the records there stay as they are.
#[test]
fn a_later_schema_is_read_and_never_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    let h = history(&dir, Keep::UNBOUNDED);
    h.journal("src").append(&[Entry::Watching(t(1))]);
    drop(h);
    let conn = rusqlite::Connection::open(dir.path().join("history.sqlite3")).expect("open");
    conn.pragma_update(None, "user_version", 99)
        .expect("version");
    drop(conn);
    let h = history(&dir, Keep::UNBOUNDED);
    let j = h.journal("src");
    j.append(&[Entry::Stopped(t(2))]);
    assert_eq!(j.load(bound(5, 5), &[]), [Entry::Watching(t(1))]);
    let w = h.take_warnings();
    assert!(w.len() == 1 && w[0].contains("later electop"), "{w:?}");
}

/// An earlier release's journal file (v1 and v2 lines, with junk, a later version's line,
/// an unknown kind and a torn last line) is imported once, under its file's name, and left
/// in place.
#[test]
fn an_earlier_journal_file_is_imported_once_and_left_in_place() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("history")).expect("dir");
    let file = dir.path().join("history/sqlite-jobs.jsonl");
    let v1 = r#"{"v":1,"kind":"change","at":"2023-11-14T22:13:22Z","election":"jobs","rev":7,"from":"a","to":"b","cause":"node_gone"}"#;
    let text = format!(
        "{}\n{v1}\njunk\n{{\"v\":3,\"kind\":\"change\"}}\n{{\"v\":2,\"kind\":\"paused\",\"at\":\"2023-11-14T22:13:22Z\"}}\n{{\"v\":2,\"ki",
        encode(&Entry::Watching(t(1)))
    );
    std::fs::write(&file, &text).expect("write");
    let zk = dir.path().join("zookeeper-history-x.jsonl");
    std::fs::write(&zk, encode(&Entry::Watching(t(3))) + "\n").expect("write");
    std::fs::write(dir.path().join("audit.jsonl"), "{}\n").expect("write");
    let want = [
        Entry::Watching(t(1)),
        change("jobs", 2, Some(7), Some("a"), Some("b")),
    ];
    let read = |dir: &tempfile::TempDir| {
        history(dir, Keep::UNBOUNDED)
            .journal("sqlite-jobs")
            .load(bound(5, 5), &[])
    };
    assert_eq!(read(&dir), want);
    assert_eq!(read(&dir), want, "imported once");
    assert_eq!(std::fs::read_to_string(&file).expect("left"), text);
    let zk = history(&dir, Keep::UNBOUNDED)
        .journal("zookeeper-history-x")
        .load(bound(5, 5), &[]);
    assert_eq!(zk, [Entry::Watching(t(3))]);
}

/// One election's records read alone are what reading every record gives of it: a name
/// that is the prefix of another's, a name that is another election's leader, a name JSON
/// escapes, a relabelled change.
#[test]
fn one_elections_records_read_alone_are_what_reading_all_gives_of_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let j = history(&dir, Keep::UNBOUNDED).journal("src");
    let mut records = vec![Entry::Watching(t(0))];
    for i in 0..2_000u64 {
        let e = format!("e{}", i % 100);
        records.push(change(&e, i, None, Some("a"), Some("b")));
    }
    records.push(change("jobs", 1, Some(3), None, Some("a")));
    records.push(change("jobs2", 2, Some(4), None, Some("a")));
    records.push(change("web", 3, Some(5), Some("jobs"), Some("jobs")));
    records.push(change("a\"b\\c", 4, Some(6), None, Some("x")));
    let mut relabel = change("jobs", 1, Some(3), None, Some("a"));
    if let Entry::Change { entry, .. } = &mut relabel {
        (entry.cause, entry.by) = (Cause::ForcedReelection, Some("ops".into()));
    }
    records.push(relabel);
    j.append(&records);
    let b = bound(3, 10);
    let all = j.load(b, &[]);
    for name in ["jobs", "jobs2", "web", "a\"b\\c", "e7", "nobody"] {
        let alone = j.load(b, &[name.to_string()]);
        let of_it: Vec<Entry> = all
            .iter()
            .filter(|e| match e {
                Entry::Change { election, .. } => election == name,
                Entry::Deposed(_) => false,
                _ => true,
            })
            .cloned()
            .collect();
        assert_eq!(alone, of_it, "{name}");
    }
    let jobs = j.load(b, &["jobs".into()]);
    assert!(
        matches!(&jobs[..], [Entry::Watching(_), Entry::Change { entry, .. }] if entry.cause == Cause::ForcedReelection),
        "{jobs:?}"
    );
    assert_eq!(j.load(b, &["e7".into()]).len(), 1 + 3);
}

/// A record after a quiet spell is written at once; the burst after it waits for the
/// 100 ms to pass and goes out in one transaction; a clean stop writes what is queued.
#[tokio::test(start_paused = true)]
async fn a_burst_is_one_transaction_within_100_ms() {
    let dir = tempfile::tempdir().expect("tempdir");
    let h = history(&dir, Keep::UNBOUNDED);
    let j = h.journal("src");
    j.append(&[Entry::Watching(t(0))]);
    assert_eq!(h.writes(), 1, "at once");
    for i in 0..100 {
        j.append(&[change("jobs", i, None, None, Some("a"))]);
    }
    assert_eq!(h.writes(), 1, "the burst waits");
    tokio::time::sleep(FLUSH_AFTER).await;
    tokio::task::yield_now().await;
    assert_eq!(h.writes(), 2, "in one transaction");
    j.append(&[Entry::Stopped(t(200))]);
    drop(j);
    drop(h);
    let read = history(&dir, Keep::UNBOUNDED)
        .journal("src")
        .load(bound(200, 10), &[]);
    assert_eq!(read.len(), 102, "the stop written at the drop");
}
