use std::time::{Duration, SystemTime};

use super::super::{Bound, Entry, Journal, Keep, encode, load_elections, read};
use super::*;
use crate::model::{Cause, HistoryEntry};

fn t(s: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + s)
}

fn change(election: &str, s: u64, to: &str) -> Entry {
    Entry::Change {
        election: election.into(),
        entry: HistoryEntry {
            at: Some(t(s)),
            revision: None,
            from: Some("jobs".into()),
            to: Some(to.into()),
            cause: Cause::TakenOver,
            by: None,
        },
    }
}

fn bound() -> Bound {
    Bound {
        per_election: 1_000,
        seen: 10,
        keep: Keep::UNBOUNDED,
    }
}

const NAMES: [&str; 5] = ["jobs", "jobs2", "a\"b\\c", "e7", "nobody"];

/// Every election's records read by the index, as the scan of the whole file gives them.
fn same_as_the_scan(path: &Path) {
    let idx = std::fs::read(path_of(path)).ok();
    let by_index: Vec<Vec<Entry>> = NAMES
        .iter()
        .map(|n| load_elections(path, bound(), &[n.to_string()]))
        .collect();
    let _ = std::fs::remove_file(path_of(path));
    for (name, got) in NAMES.iter().zip(by_index) {
        let scanned = load_elections(path, bound(), &[name.to_string()]);
        assert_eq!(got, scanned, "{name}");
    }
    if let Some(idx) = idx {
        std::fs::write(path_of(path), idx).expect("put back");
    }
}

/// A journal of `n` changes over a few elections, written by a writer (so indexed).
fn written(path: &Path, n: u64) {
    let mut j = Journal::new(path.to_path_buf(), bound());
    j.preface(Entry::Watching(t(0))).expect("preface");
    for i in 0..n {
        let name = ["jobs", "jobs2", "a\"b\\c", "e7", "web"][i as usize % 5];
        j.append(&[change(name, i, "b")]).expect("append");
        j.flush().expect("flush");
    }
}

#[test]
fn a_lines_key_is_its_elections_and_a_sources_line_is_read_with_every_one() {
    for name in ["jobs", "a\"b\\c", "ünï", "x/y"] {
        assert_eq!(key_of(&change(name, 1, "b")), key_of_name(name), "{name}");
    }
    assert_eq!(key_of(&Entry::Watching(t(1))), SOURCE_WIDE);
    let seen = Entry::Seen {
        revision: 4,
        at: t(1),
        cause: None,
    };
    assert_eq!(key_of(&seen), SEEN);
    assert!(key_of_name("") >= KEY_MIN);
}

/// A writer's index gives each election's records as the scan does, the lines written
/// after its last records (not indexed yet) included, and a torn last line dropped.
#[test]
fn an_elections_records_by_the_index_are_what_the_scan_gives() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("h.jsonl");
    written(&path, 300);
    let f = File::open(&path).expect("open");
    let found = lookup(&f, &path, &[key_of_name("jobs")]).expect("an index");
    assert!(found.lines.len() >= 60, "{}", found.lines.len());
    same_as_the_scan(&path);
    // Lines no index has yet (a writer killed before its index's append).
    let mut text: String = (0..7)
        .map(|i| encode(&change("jobs", 400 + i, "c")) + "\n")
        .collect();
    text.push_str(&encode(&change("jobs", 999, "torn"))[..25]);
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .expect("append");
    same_as_the_scan(&path);
    let jobs = load_elections(&path, bound(), &["jobs".into()]);
    let changes = jobs.iter().filter(|e| matches!(e, Entry::Change { .. }));
    assert_eq!(changes.count(), 60 + 7, "the tail read too");
}

/// An index made for another file is not used (the file rewritten by an electop before
/// the index); one whose records are not the file's lines is said and not used; the next
/// writer makes either anew.
#[test]
fn an_index_not_of_the_file_is_ignored_and_made_anew() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("h.jsonl");
    written(&path, 50);
    let idx = std::fs::read(path_of(&path)).expect("index");
    // Rewritten by hand (a new file renamed over it): another inode.
    let text: String = (0..5)
        .map(|i| encode(&change("e7", i, "z")) + "\n")
        .collect();
    let tmp = dir.path().join("new");
    std::fs::write(&tmp, &text).expect("write");
    std::fs::rename(&tmp, &path).expect("rename");
    let f = File::open(&path).expect("open");
    assert!(matches!(lookup(&f, &path, &[]), Err(Unusable::Absent)));
    assert_eq!(load_elections(&path, bound(), &["e7".into()]).len(), 5);
    // Damaged: the header right, the offsets not the file's lines.
    let mut bad = Made::of(&f).expect("made").header().to_vec();
    bad.extend(record(key_of_name("e7"), 3));
    bad.extend(record(key_of_name("e7"), 2));
    std::fs::write(path_of(&path), &bad).expect("write");
    assert!(matches!(lookup(&f, &path, &[]), Err(Unusable::Damaged(_))));
    assert_eq!(load_elections(&path, bound(), &["e7".into()]).len(), 5);
    // Offsets in order but inside lines: the read checks each line.
    let mut inside = Made::of(&f).expect("made").header().to_vec();
    inside.extend(record(key_of_name("e7"), 3));
    std::fs::write(path_of(&path), &inside).expect("write");
    assert_eq!(load_elections(&path, bound(), &["e7".into()]).len(), 5);
    let said = read::take_warnings();
    assert!(said.iter().any(|w| w.contains("index")), "{said:?}");
    drop(f);
    let mut j = Journal::new(path.clone(), bound());
    assert!(j.take_turn().expect("turn"));
    drop(j);
    assert_ne!(std::fs::read(path_of(&path)).expect("index"), idx);
    let f = File::open(&path).expect("open");
    let found = lookup(&f, &path, &[key_of_name("e7")]).expect("made anew");
    assert_eq!(found.lines.len(), 5);
    same_as_the_scan(&path);
}

/// A rewrite (the file past its bound) writes the index anew, for the new file.
#[test]
fn a_rewrite_makes_its_index_anew() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("h.jsonl");
    let small = Bound {
        per_election: 3,
        ..bound()
    };
    let mut j = Journal::new(path.clone(), small);
    for i in 0..400 {
        j.append(&[change("jobs", i, "b")]).expect("append");
        j.flush().expect("flush");
    }
    drop(j);
    let f = File::open(&path).expect("open");
    let found = lookup(&f, &path, &[key_of_name("jobs")]).expect("an index");
    let lines = read(&path).expect("read").0.len();
    assert!(found.lines.len() <= lines && lines < 400, "{lines}");
    same_as_the_scan(&path);
}

/// A journal written over in place (truncated, same inode: another program, a bench) is
/// told apart from the one its index was made for: by its first line, named at the first
/// append, or by records that do not start its lines.
#[test]
fn a_journal_written_over_in_place_is_not_read_by_the_old_index() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("h.jsonl");
    written(&path, 20);
    let f = File::open(&path).expect("open");
    let idx = std::fs::read(path_of(&path)).expect("index");
    assert_ne!(u64_at(&idx, 24), 0, "the first line named");
    assert!(lookup(&f, &path, &[]).is_ok());
    // Written over in place, its first line the same: the records fall inside lines.
    let first = std::fs::read_to_string(&path).expect("read");
    let first = first.lines().next().expect("a line").to_string();
    let mut text = format!("{first}\n");
    for i in 0..30 {
        text.push_str(&format!(
            "{}\n",
            encode(&change("jobsjobsjobs", 700 + i, "zz"))
        ));
    }
    std::fs::write(&path, &text).expect("write over");
    assert!(matches!(lookup(&f, &path, &[]), Err(Unusable::Damaged(_))));
    same_as_the_scan(&path);
}
