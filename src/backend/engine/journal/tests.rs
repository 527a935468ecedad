use std::time::{Duration, SystemTime};

use super::*;

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

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

fn bound(per_election: usize, seen: usize) -> Bound {
    Bound {
        per_election,
        seen,
        keep: Keep::UNBOUNDED,
    }
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

/// A kind this electop does not know, in a version it reads (a later electop's new kind),
/// is skipped in silence: not damage, and the file is not rewritten for it.
#[test]
fn an_unknown_kind_of_a_version_read_is_skipped_in_silence() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("h.jsonl");
    let good = encode(&Entry::Watching(t(1)));
    let unknown = r#"{"v":2,"kind":"paused","at":"2023-11-14T22:13:22Z"}"#;
    std::fs::write(&path, format!("{good}\n{unknown}\n")).expect("write");
    let (read_back, clean) = read(&path).expect("read");
    assert_eq!(read_back, [Entry::Watching(t(1))]);
    assert!(clean);
    let mut j = Journal::new(path.clone(), bound(5, 5));
    assert!(j.take_turn().expect("turn"));
    assert!(lines(&path).iter().any(|l| l == unknown), "kept");
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
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("h.jsonl");
    let good = encode(&Entry::Watching(t(1)));
    std::fs::write(
        &path,
        format!("{{\"rev\":5,\"at_ms\":1000}}\n{good}\n{{\"v\":1,\"kind\":\"wat"),
    )
    .expect("write");
    let (read_back, clean) = read(&path).expect("read");
    assert_eq!(read_back, [Entry::Watching(t(1))]);
    assert!(!clean);
}

/// A writer taking its turn on a file whose last line was torn (a crash mid-write) or that
/// holds another format's lines rewrites it first: its own lines start whole.
#[test]
fn a_writer_after_a_torn_line_writes_whole_lines() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("h.jsonl");
    let good = encode(&Entry::Watching(t(1)));
    std::fs::write(
        &path,
        format!("{{\"election\":\"j\",\"cause\":\"elected\"}}\n{good}\n{{\"v\":1,\"ki"),
    )
    .expect("write");
    let mut j = Journal::new(path.clone(), bound(5, 5));
    j.preface(Entry::Watching(t(2))).expect("preface");
    assert!(
        j.append(&[change("jobs", 3, Some(1), None, Some("a"))])
            .expect("append")
    );
    j.flush().expect("flush");
    let (entries, clean) = read(&path).expect("read");
    assert!(clean, "{:?}", lines(&path));
    assert_eq!(
        entries,
        [
            Entry::Watching(t(1)),
            Entry::Watching(t(2)),
            change("jobs", 3, Some(1), None, Some("a"))
        ]
    );
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
    let kept = compact(all, bound(3, 2));
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
    let kept = compact(runs, bound(5, 5));
    assert_eq!(kept.len(), RUNS_KEPT);
    assert_eq!(kept.last(), Some(&Entry::Watching(t(99))));
}

#[test]
fn a_relabelled_change_is_one_and_a_flip_back_is_another() {
    let mut unknown = change("jobs", 8, Some(7), Some("a"), Some("b"));
    if let Entry::Change { entry, .. } = &mut unknown {
        entry.cause = Cause::Unknown;
    }
    let kept = compact(
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

/// Appends past twice the bound rewrite the file, through a temp file renamed over it; a
/// temp file left by an interrupted rewrite is never read, and the next rewrite replaces it.
#[test]
fn the_file_stays_bounded_and_a_stale_temp_file_is_ignored() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("data/h.jsonl");
    std::fs::create_dir_all(dir.path().join("data")).expect("dir");
    let tmp = dir.path().join("data/h.jsonl.tmp");
    std::fs::write(&tmp, "half a rewr").expect("stale temp file");
    let mut j = Journal::new(path.clone(), bound(2, 3));
    for i in 0..200u64 {
        let rev = i as i64;
        let at = t(i);
        let batch = [
            change("jobs", i, Some(rev), None, Some("a")),
            Entry::Seen {
                revision: rev,
                at,
                cause: None,
            },
        ];
        assert!(j.append(&batch).expect("append"));
        j.flush().expect("flush");
        let n = lines(&path).len();
        assert!(n <= j.threshold() + 2, "{n} lines at {i}");
    }
    assert!(
        !tmp.exists(),
        "the stale temp file was renamed over the journal"
    );
    let kept = load(&path, bound(2, 3));
    let revs: Vec<_> = kept
        .iter()
        .filter_map(|e| match e {
            Entry::Change { entry, .. } => entry.revision,
            _ => None,
        })
        .collect();
    assert_eq!(revs, [198, 199]);
    // A rewrite interrupted before its rename leaves the journal whole.
    std::fs::write(&tmp, "{\"v\":1,\"kind\":\"watch").expect("interrupted rewrite");
    assert_eq!(load(&path, bound(2, 3)), kept);
}

/// One writer per file: a second journal reads but does not write while the first holds
/// the turn, and takes it (its preface first) at its next append once the first is gone.
#[test]
fn one_writer_at_a_time_and_the_turn_passes_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("h.jsonl");
    let mut a = Journal::new(path.clone(), bound(10, 10));
    let mut b = Journal::new(path.clone(), bound(10, 10));
    a.preface(Entry::Watching(t(0))).expect("a's preface");
    b.preface(Entry::Watching(t(1))).expect("b's preface");
    assert!(a.take_turn().expect("a"));
    assert!(!b.take_turn().expect("b"), "a records the source");
    assert!(
        !b.append(&[change("j", 2, Some(2), None, Some("x"))])
            .expect("b")
    );
    assert!(
        a.append(&[change("j", 2, Some(2), None, Some("x"))])
            .expect("a")
    );
    a.flush().expect("flush");
    assert_eq!(lines(&path).len(), 2, "a's lines only: {:?}", lines(&path));
    a.append(&[Entry::Stopped(t(3))]).expect("a stops");
    drop(a);
    assert!(
        b.append(&[change("j", 4, Some(4), Some("x"), Some("y"))])
            .expect("b")
    );
    assert!(b.writing());
    b.flush().expect("flush");
    let (entries, clean) = read(&path).expect("read");
    assert!(clean);
    assert_eq!(
        entries,
        [
            Entry::Watching(t(0)),
            change("j", 2, Some(2), None, Some("x")),
            Entry::Stopped(t(3)),
            Entry::Watching(t(1)),
            change("j", 4, Some(4), Some("x"), Some("y")),
        ]
    );
}

#[test]
fn file_names_are_safe_and_tell_sources_apart() {
    let a = file_name("zookeeper-history", "zk1:2181,zk2:2181/app /election ");
    assert!(
        a.starts_with("zookeeper-history-zk1_2181_zk2_2181_app__election_-"),
        "{a}"
    );
    assert!(a.ends_with(".jsonl"));
    assert!(!a.contains('/'));
    assert_ne!(
        a,
        file_name("zookeeper-history", "zk1:2181,zk2:2181/app /election_")
    );
    assert_eq!(
        a,
        file_name("zookeeper-history", "zk1:2181,zk2:2181/app /election "),
        "stable"
    );
}

/// A file holding a later version's lines is left to the electop that wrote them: taking
/// the turn is an error once (said), then this run only reads; the file is untouched.
#[test]
fn a_later_versions_file_is_never_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("h.jsonl");
    let text = format!(
        "{}\n{{\"v\":3,\"kind\":\"change\",\"term\":2}}\n",
        encode(&Entry::Watching(t(1)))
    );
    std::fs::write(&path, &text).expect("write");
    let mut j = Journal::new(path.clone(), bound(5, 5));
    let e = j.take_turn().expect_err("a later version");
    assert!(e.to_string().contains("later electop (format v3)"), "{e}");
    assert!(!j.append(&[Entry::Stopped(t(2))]).expect("reads only"));
    drop(j);
    assert_eq!(std::fs::read_to_string(&path).expect("read"), text);
    assert_eq!(load(&path, bound(5, 5)), [Entry::Watching(t(1))]);
}

/// Lines that are no record are copied with the whole file to `<file>.bad` before the
/// writer drops them; the records around them stay.
#[test]
fn a_damaged_file_is_kept_aside_before_the_rewrite() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("h.jsonl");
    let (a, b) = (
        encode(&Entry::Watching(t(1))),
        encode(&Entry::Stopped(t(2))),
    );
    let text = format!("{a}\n\u{0}\u{1}junk\n{{\"other\":\"program\"}}\n{b}\n");
    std::fs::write(&path, &text).expect("write");
    let mut j = Journal::new(path.clone(), bound(5, 5));
    assert!(j.take_turn().expect("turn"));
    let bad = dir.path().join("h.jsonl.bad");
    assert_eq!(std::fs::read_to_string(bad).expect(".bad"), text);
    assert_eq!(lines(&path), [a, b]);
}

/// Past its size bound the file is rewritten with the newest records that fit in half of
/// it: it never holds much more than the bound.
#[test]
fn the_file_stays_within_its_size_bound() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("h.jsonl");
    let max_bytes = 4_096;
    let b = Bound {
        per_election: 1_000,
        seen: 1_000,
        keep: Keep {
            retention: Duration::MAX,
            max_bytes,
        },
    };
    let mut j = Journal::new(path.clone(), b);
    for i in 0..500u64 {
        j.append(&[change("jobs", i, Some(i as i64), None, Some("a"))])
            .expect("append");
        j.flush().expect("flush");
        let size = std::fs::metadata(&path).expect("size").len();
        assert!(size <= max_bytes, "{size} bytes after {i}");
    }
    let kept = load(&path, b);
    assert!(kept.len() > 10, "{}", kept.len());
    assert_eq!(
        kept.last(),
        Some(&change("jobs", 499, Some(499), None, Some("a")))
    );
}

/// A writer taking its turn on a file with records past the retention rewrites it without
/// them.
#[test]
fn records_past_the_retention_go_when_the_writer_takes_its_turn() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("h.jsonl");
    let now = SystemTime::now();
    let old = Entry::Watching(now - Duration::from_secs(30 * 86_400));
    let fresh = Entry::Watching(now - Duration::from_secs(60));
    std::fs::write(&path, format!("{}\n{}\n", encode(&old), encode(&fresh))).expect("write");
    let b = Bound {
        keep: Keep {
            retention: Duration::from_secs(7 * 86_400),
            max_bytes: u64::MAX,
        },
        ..bound(5, 5)
    };
    let mut j = Journal::new(path.clone(), b);
    assert!(j.take_turn().expect("turn"));
    assert_eq!(lines(&path), [encode(&fresh)]);
}

/// One election's records read alone (its lines found by their bytes, the rest never
/// decoded) are what reading every record and bounding them gives of that election: over
/// reads of more than one buffer, a name that is the prefix of another's, a name that is
/// another election's leader, a name JSON escapes, a relabelled change and a torn last line.
#[test]
fn one_elections_records_read_alone_are_what_reading_all_gives_of_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("h.jsonl");
    let mut records = vec![Entry::Watching(t(0))];
    for i in 0..20_000u64 {
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
    let mut text: String = records.iter().map(|e| encode(e) + "\n").collect();
    text.push_str(&encode(&change("jobs", 9, Some(9), None, Some("torn")))[..20]);
    assert!(text.len() > 2 << 20, "more than one buffer: {}", text.len());
    std::fs::write(&path, text).expect("write");
    let b = bound(3, 10);
    let all = load(&path, b);
    for name in ["jobs", "jobs2", "web", "a\"b\\c", "e7", "nobody"] {
        let alone = load_elections(&path, b, &[name.to_string()]);
        let of_it: Vec<Entry> = all
            .iter()
            .filter(|e| match e {
                Entry::Change { election, .. } => election == name,
                Entry::Seen { .. } | Entry::Deposed(_) => false,
                _ => true,
            })
            .cloned()
            .collect();
        assert_eq!(alone, of_it, "{name}");
    }
    let jobs = load_elections(&path, b, &["jobs".into()]);
    assert!(
        matches!(&jobs[..], [Entry::Watching(_), Entry::Change { entry, .. }] if entry.cause == Cause::ForcedReelection),
        "{jobs:?}"
    );
    assert_eq!(load_elections(&path, b, &["e7".into()]).len(), 1 + 3);
    let r = read::read_elections(&path, &["jobs".into()]).expect("read");
    assert!(r.unterminated && r.foreign == 0, "{r:?}");
}

/// A run that asks for them gets the records its turn read (no second read of the file),
/// once; the pending preface is not among them.
#[test]
fn the_turn_hands_back_what_it_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("h.jsonl");
    let records = [
        change("jobs", 1, None, None, Some("a")),
        change("web", 2, None, None, Some("b")),
    ];
    let text: String = records.iter().map(|e| encode(e) + "\n").collect();
    std::fs::write(&path, text).expect("write");
    let mut j = Journal::new(path.clone(), bound(5, 5)).reading_back();
    j.preface(Entry::Watching(t(3))).expect("preface");
    assert!(j.take_turn().expect("turn"));
    assert_eq!(j.take_read_back(), Some(records.to_vec()));
    assert_eq!(j.take_read_back(), None);
    let mut plain = Journal::new(dir.path().join("other.jsonl"), bound(5, 5));
    assert!(plain.take_turn().expect("turn"));
    assert_eq!(plain.take_read_back(), None, "kept only when asked for");
}

/// A rewrite prepared off the lock: the lines written to the old file meanwhile follow the
/// kept ones in the new file, the index fits it, and the temp file is gone.
#[test]
fn a_rewrite_prepared_aside_keeps_the_lines_written_meanwhile() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("h.jsonl");
    let mut j = Journal::new(path.clone(), bound(2, 10));
    assert!(j.take_turn().expect("turn"));
    let before: Vec<Entry> = (0..100)
        .map(|i| {
            change(
                &format!("e{}", i % 4),
                i,
                None,
                None,
                Some(&format!("n{i}")),
            )
        })
        .collect();
    j.append(&before).expect("append");
    j.write_queued().expect("write");
    let job = j
        .rewrite_due()
        .expect("over its bound: 100 lines, 2 kept of each of 4 elections");
    assert!(j.rewrite_due().is_none(), "one at a time");
    let prepared = rewrite::prepare(&job);
    // Written to the old file while the rewrite was prepared.
    let meanwhile = change("e1", 100, None, Some("n97"), Some("late"));
    j.append(std::slice::from_ref(&meanwhile)).expect("append");
    j.write_queued().expect("write");
    j.adopt(prepared).expect("adopt");
    assert!(!rewrite::temp_path(&path).exists());
    let (entries, clean) = read(&path).expect("read");
    assert!(clean);
    assert_eq!(
        entries.len(),
        9,
        "2 of each of 4 elections, then the late one"
    );
    assert_eq!(entries.last(), Some(&meanwhile));
    // The index is the new file's and covers it whole: an election's lines found by it.
    // (Asked of the index itself: the read warnings are one list for every test thread.)
    let file = File::open(&path).expect("open");
    let found = index::lookup(&file, &path, &[index::key_of_name("e1")]).expect("the index fits");
    let len = std::fs::metadata(&path).expect("metadata").len();
    assert_eq!((found.lines.len(), found.covered), (3, len));
    let e1 = read::read_elections(&path, &["e1".to_string()]).expect("read e1");
    assert_eq!(e1.entries.len(), 3, "{:?}", e1.entries);
    // Appends go on in the new file.
    let after = change("e2", 200, None, None, Some("after"));
    j.append(std::slice::from_ref(&after)).expect("append");
    drop(j);
    assert_eq!(read(&path).expect("read").0.last(), Some(&after));
}
