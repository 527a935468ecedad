//! The one history journal every store keeps on disk, so a restarted electop still shows
//! what an earlier one saw: one file per source, JSON lines each carrying the format's
//! version (`"v":1`) and the kind of record (a leader change, the time a revision was seen
//! live, an electop starting or stopping to watch).
//!
//! One writer per file: a lock file beside it (`<file>.writer`, `flock`) says which electop
//! records the source; another reads the file at its start and takes the turn when it is
//! free (at its next append), so nothing is written by two at once and nobody rewrites the
//! file under another's append. The file is bounded: past twice its bound the writer reads
//! it back, keeps the newest records (per election for changes) and writes them to
//! `<file>.tmp`, synced and renamed over the file: an interrupted rewrite leaves the old
//! file whole and a stale temp file that no reader looks at.
//!
//! A line that is not a record of this version (a torn last line, a hand edit, a line of
//! the formats before this one, or of a later version) is skipped when read, and dropped
//! when the writer takes its turn and finds one.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::model::time::{parse_rfc3339, rfc3339};
use crate::model::{Cause, HistoryEntry};

/// The format written; lines of any other version are skipped.
pub(crate) const VERSION: u32 = 1;

/// Changes kept per election whatever a run's own bound (the dashboard's default): `serve`
/// and `watch` keep 8 in memory but share the file with the dashboard.
pub(crate) const KEPT_AT_LEAST: usize = 200;

/// Revision times kept (etcd): enough for the changes a replay can show.
pub(crate) const SEEN_KEPT: usize = 50_000;

/// Run markers kept when no change is older: enough to say the last gaps, not a diary of
/// every `status` ever run.
pub(crate) const RUNS_KEPT: usize = 16;

/// One record of the journal.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Entry {
    /// A leader change as a tracker recorded it.
    Change {
        election: String,
        entry: HistoryEntry,
    },
    /// When a revision was seen live (etcd keeps no time for a revision), and the cause of
    /// its leader change where only a live watch can tell it (a lease's expiry from its
    /// revocation: a replay of the past cannot).
    Seen {
        revision: i64,
        at: SystemTime,
        cause: Option<Cause>,
    },
    /// An electop started watching (and recording) the source here.
    Watching(SystemTime),
    /// That electop stopped watching (a clean stop; a killed one leaves no line).
    Stopped(SystemTime),
}

impl Entry {
    pub(crate) fn at(&self) -> Option<SystemTime> {
        match self {
            Entry::Change { entry, .. } => entry.at,
            Entry::Seen { at, .. } | Entry::Watching(at) | Entry::Stopped(at) => Some(*at),
        }
    }
}

/// How much the journal keeps after a rewrite.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Bound {
    /// The newest changes kept of each election.
    pub per_election: usize,
    /// The newest revision times kept.
    pub seen: usize,
}

impl Bound {
    /// Keeps `per_election` changes of each election (at least one), and [`SEEN_KEPT`] times.
    pub(crate) fn changes(per_election: usize) -> Bound {
        Bound {
            per_election: per_election.max(1),
            seen: SEEN_KEPT,
        }
    }
}

/// One line on disk. Every field but `v` and `kind` is left out where it has no value.
#[derive(Serialize, Deserialize)]
struct Line {
    v: u32,
    kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    election: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rev: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    to: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cause: Option<Cause>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    by: Option<String>,
}

impl Line {
    fn new(kind: &str, at: Option<SystemTime>) -> Line {
        Line {
            v: VERSION,
            kind: kind.into(),
            at: at.map(rfc3339),
            election: None,
            rev: None,
            from: None,
            to: None,
            cause: None,
            by: None,
        }
    }
}

/// One record as one line (no newline).
pub(crate) fn encode(e: &Entry) -> String {
    let line = match e {
        Entry::Change { election, entry } => Line {
            election: Some(election.clone()),
            rev: entry.revision,
            from: entry.from.clone(),
            to: entry.to.clone(),
            cause: Some(entry.cause),
            by: entry.by.clone(),
            ..Line::new("change", entry.at)
        },
        Entry::Seen {
            revision,
            at,
            cause,
        } => Line {
            rev: Some(*revision),
            cause: *cause,
            ..Line::new("seen", Some(*at))
        },
        Entry::Watching(at) => Line::new("watching", Some(*at)),
        Entry::Stopped(at) => Line::new("stopped", Some(*at)),
    };
    serde_json::to_string(&line).unwrap_or_default()
}

/// One line back; `None` for a line that is not a record of this version: skipped.
pub(crate) fn decode(text: &str) -> Option<Entry> {
    let l: Line = serde_json::from_str(text).ok()?;
    if l.v != VERSION {
        return None;
    }
    let at = match &l.at {
        Some(text) => Some(parse_rfc3339(text)?),
        None => None,
    };
    match l.kind.as_str() {
        "change" => Some(Entry::Change {
            election: l.election?,
            entry: HistoryEntry {
                at,
                revision: l.rev,
                from: l.from,
                to: l.to,
                cause: l.cause?,
                by: l.by,
            },
        }),
        "seen" => Some(Entry::Seen {
            revision: l.rev?,
            at: at?,
            cause: l.cause,
        }),
        "watching" => Some(Entry::Watching(at?)),
        "stopped" => Some(Entry::Stopped(at?)),
        _ => None,
    }
}

/// Every record of the file, oldest first, and whether every line was one (and the file
/// ends a line). A missing file is an empty journal.
pub(crate) fn read(path: &Path) -> std::io::Result<(Vec<Entry>, bool)> {
    let text = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), true)),
        Err(e) => return Err(e),
    };
    let text = String::from_utf8_lossy(&text);
    let mut clean = text.is_empty() || text.ends_with('\n');
    let mut out = Vec::new();
    for line in text.lines() {
        match decode(line) {
            Some(e) => out.push(e),
            None => clean = false,
        }
    }
    Ok((out, clean))
}

/// The records a run starts from: the file read back and bounded as a rewrite would keep
/// it. A file that cannot be read is an empty journal (and said).
pub(crate) fn load(path: &Path, bound: Bound) -> Vec<Entry> {
    match read(path) {
        Ok((entries, _)) => compact(entries, bound),
        Err(e) => {
            tracing::warn!(path = %path.display(), %e, "cannot read the history journal");
            Vec::new()
        }
    }
}

/// A change's identity: its election, the leaders before and after, and its revision where
/// the store has one (else its time: a flip back and forth is several changes).
type ChangeKey = (
    String,
    Option<i64>,
    Option<SystemTime>,
    Option<String>,
    Option<String>,
);

fn key(election: &str, e: &HistoryEntry) -> ChangeKey {
    let at = if e.revision.is_some() { None } else { e.at };
    (
        election.into(),
        e.revision,
        at,
        e.from.clone(),
        e.to.clone(),
    )
}

/// Each change once: an admin action learnt after the change relabels it (a later line).
/// The first line's time is kept, with the last cause that is not `unknown` and the last
/// author.
fn dedupe(entries: Vec<Entry>) -> Vec<Entry> {
    let mut out: Vec<Entry> = Vec::with_capacity(entries.len());
    let mut seen: HashMap<ChangeKey, usize> = HashMap::new();
    for r in entries {
        let Entry::Change { election, entry } = &r else {
            out.push(r);
            continue;
        };
        let k = key(election, entry);
        if let Some(&i) = seen.get(&k) {
            if let Entry::Change { entry: kept, .. } = &mut out[i] {
                if entry.cause != Cause::Unknown {
                    kept.cause = entry.cause;
                }
                if entry.by.is_some() {
                    kept.by = entry.by.clone();
                }
            }
        } else {
            seen.insert(k, out.len());
            out.push(r);
        }
    }
    out
}

/// The journal bounded: the newest `per_election` changes of each election, the newest
/// `seen` revision times, and the run markers no older than the oldest change kept (at most
/// [`RUNS_KEPT`] runs when that is older still).
pub(crate) fn compact(entries: Vec<Entry>, bound: Bound) -> Vec<Entry> {
    let entries = dedupe(entries);
    let mut left: BTreeMap<&str, usize> = BTreeMap::new();
    let mut seen_left = bound.seen;
    let mut keep = vec![false; entries.len()];
    for (i, r) in entries.iter().enumerate().rev() {
        let n = match r {
            Entry::Change { election, .. } => {
                left.entry(election).or_insert(bound.per_election.max(1))
            }
            Entry::Seen { .. } => &mut seen_left,
            _ => continue,
        };
        if *n > 0 {
            *n -= 1;
            keep[i] = true;
        }
    }
    let oldest_change = entries
        .iter()
        .zip(&keep)
        .position(|(r, k)| *k && matches!(r, Entry::Change { .. }))
        .unwrap_or(entries.len());
    let mut runs = 0;
    for (i, r) in entries.iter().enumerate().rev() {
        let recent = i >= oldest_change || runs < RUNS_KEPT;
        match r {
            Entry::Watching(_) if recent => {
                runs += 1;
                keep[i] = true;
            }
            Entry::Stopped(_) if recent => keep[i] = true,
            _ => {}
        }
    }
    entries
        .into_iter()
        .zip(keep)
        .filter_map(|(r, k)| k.then_some(r))
        .collect()
}

/// `<store>-<key escaped>-<hash>.jsonl`: readable, and the hash keeps two sources whose
/// keys escape alike apart.
pub(crate) fn file_name(store: &str, key: &str) -> String {
    let mut escaped = safe_name(key);
    escaped.truncate(80);
    format!("{store}-{escaped}-{:016x}.jsonl", fnv1a(key))
}

/// `text` with every character but ASCII letters, digits, `.` and `-` made `_`.
pub(crate) fn safe_name(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// FNV-1a: stable across Rust versions, unlike `DefaultHasher`, so the file is found again.
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// `path` with `suffix` added to its file name (`h.jsonl` → `h.jsonl.lock`).
fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(suffix);
    path.with_file_name(name)
}

/// The writer's hold on the file: the lock, and the file open for appending (held open:
/// opening it for each etcd watch message cost several system calls a message).
struct Turn {
    file: File,
    _lock: File,
}

/// One source's journal, as one run sees it: written while this run holds the turn.
pub(crate) struct Journal {
    path: PathBuf,
    bound: Bound,
    /// Records this run writes first when it takes the turn (its `Watching` line).
    preface: Vec<Entry>,
    turn: Option<Turn>,
    /// Lines in the file, elections with changes in it, and whether it has revision times:
    /// what decides when to rewrite.
    lines: usize,
    elections: BTreeSet<String>,
    seen: bool,
}

impl Journal {
    pub(crate) fn new(path: PathBuf, bound: Bound) -> Journal {
        Journal {
            path,
            bound,
            preface: Vec::new(),
            turn: None,
            lines: 0,
            elections: BTreeSet::new(),
            seen: false,
        }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Whether this run is the one recording the source.
    pub(crate) fn writing(&self) -> bool {
        self.turn.is_some()
    }

    /// `e` is written first when this run takes the turn (at once if it holds it).
    pub(crate) fn preface(&mut self, e: Entry) -> std::io::Result<()> {
        if self.writing() {
            return self.append(&[e]).map(|_| ());
        }
        self.preface.push(e);
        Ok(())
    }

    /// Takes the writer's turn unless another electop holds it: then false, and this run
    /// only reads. Taking it, a file with a line that is not a record (a torn write, an old
    /// format) or over its bound is rewritten first, so appends start on a line of their own.
    pub(crate) fn take_turn(&mut self) -> std::io::Result<bool> {
        if self.writing() {
            return Ok(true);
        }
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            // Not `<file>.lock`: an electop before the journal took that one for a moment
            // and would wait forever on a writer holding it for its whole run.
            .open(beside(&self.path, ".writer"))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return Ok(false),
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        }
        let (mut entries, clean) = read(&self.path)?;
        let total = entries.len();
        entries.extend(self.preface.iter().cloned());
        self.note(&entries);
        if !clean || total > self.threshold() {
            self.rewrite(compact(entries, self.bound))?;
            entries = Vec::new();
        } else {
            entries.drain(..total);
            self.lines = total;
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        self.turn = Some(Turn { file, _lock: lock });
        self.preface.clear();
        self.write(&entries)?;
        Ok(true)
    }

    /// Appends `entries` if this run records the source (taking the turn if it is free);
    /// false when another electop does. Rewrites the file once it is over twice its bound.
    pub(crate) fn append(&mut self, entries: &[Entry]) -> std::io::Result<bool> {
        if entries.is_empty() && self.writing() {
            return Ok(true);
        }
        if !self.take_turn()? {
            return Ok(false);
        }
        self.note(entries);
        self.write(entries)?;
        if self.lines > self.threshold() {
            let (now, _) = read(&self.path)?;
            self.rewrite(compact(now, self.bound))?;
            let file = OpenOptions::new().append(true).open(&self.path)?;
            if let Some(t) = self.turn.as_mut() {
                t.file = file;
            }
        }
        Ok(true)
    }

    /// One write for all of `entries`, so a crash tears at most the last line.
    fn write(&mut self, entries: &[Entry]) -> std::io::Result<()> {
        let Some(turn) = self.turn.as_mut() else {
            return Ok(());
        };
        if entries.is_empty() {
            return Ok(());
        }
        let text: String = entries.iter().map(|e| encode(e) + "\n").collect();
        turn.file.write_all(text.as_bytes())?;
        self.lines += entries.len();
        Ok(())
    }

    /// Twice what the bound keeps, so a rewrite comes once per many appends.
    fn threshold(&self) -> usize {
        let changes = self.bound.per_election * self.elections.len().max(1);
        let seen = if self.seen { self.bound.seen } else { 0 };
        2 * (changes + seen + 2 * RUNS_KEPT)
    }

    fn note(&mut self, entries: &[Entry]) {
        for e in entries {
            match e {
                Entry::Change { election, .. } if !self.elections.contains(election) => {
                    self.elections.insert(election.clone());
                }
                Entry::Seen { .. } => self.seen = true,
                _ => {}
            }
        }
    }

    /// Replaces the file by `entries` through a synced temp file renamed over it.
    fn rewrite(&mut self, entries: Vec<Entry>) -> std::io::Result<()> {
        let tmp = beside(&self.path, ".tmp");
        let text: String = entries.iter().map(|e| encode(e) + "\n").collect();
        let mut f = File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, &self.path)?;
        self.lines = entries.len();
        Ok(())
    }
}

#[cfg(test)]
mod tests;
