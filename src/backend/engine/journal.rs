//! The one history journal every store keeps on disk, so a restarted electop still shows
//! what an earlier one saw: one file per source, JSON lines each carrying the format's
//! version (`"v":1`) and the kind of record (a leader change, the time a revision was seen
//! live, an electop starting or stopping to watch). docs/history.md describes the format.
//!
//! One writer per file: a lock file beside it (`<file>.writer`, `flock`) says which electop
//! records the source; another reads the file at its start and takes the turn when it is
//! free (at its next append), so nothing is written by two at once and nobody rewrites the
//! file under another's append. Records are buffered and written together, in one write, at
//! most [`batch::FLUSH_AFTER`] after the first of them ([`Batched`]) and at a clean stop: a
//! killed electop loses at most what it saw in its last 100 ms.
//!
//! The file is bounded ([`keep`]): past twice its counts, past its size bound, or holding
//! records well past the retention, the writer reads it back, keeps the newest records (per
//! election for changes) and writes them to `<file>.tmp`, synced and renamed over the file:
//! an interrupted rewrite leaves the old file whole and a stale temp file that no reader
//! looks at. A running batched journal prepares that rewrite off its lock ([`rewrite`]), the
//! lines appended meanwhile copied after the kept ones.
//!
//! A line that is not a record of this version is skipped when read ([`read`]). A torn last
//! line (a kill mid-write) is dropped when the writer takes its turn; other lines that are
//! no record (junk, another program's, an older format) are said, and the file is copied to
//! `<file>.bad` before the writer drops them; a file holding a later version's lines is
//! never written by this electop, so a newer one's records are not lost.

mod batch;
mod index;
mod keep;
mod line;
mod read;
mod rewrite;

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{Read as _, Seek as _, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::model::{Cause, HistoryEntry};

pub(crate) use batch::Batched;
pub(crate) use keep::{Bound, Keep, bounded, compact, set_keep};
pub(crate) use line::{decode, encode, unknown_kind};
pub(crate) use read::take_warnings;
pub(crate) use read::{load, load_elections, read};

/// The format written. Version 2 added the `outage` and `deposed` kinds, and readers of 2
/// skip a kind they do not know (a later one's) in silence; lines of 1 are read as ever, of
/// a later version skipped (and the file left to the electop that wrote them).
pub(crate) const VERSION: u32 = 2;

/// Changes kept per election whatever a run's own bound (the dashboard's default): `serve`
/// and `watch` keep 8 in memory but share the file with the dashboard.
pub(crate) const KEPT_AT_LEAST: usize = 200;

/// Revision times kept (etcd): enough for the changes a replay can show.
pub(crate) const SEEN_KEPT: usize = 50_000;

/// Run markers kept when no change is older: enough to say the last gaps, not a diary of
/// every `status` ever run.
pub(crate) const RUNS_KEPT: usize = 16;

/// Outage lines kept per source, and deposed lines per election: two lines (a start, an
/// end) for each of the 64 the read model keeps.
pub(crate) const MARKS_KEPT: usize = 128;

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
    /// That electop still watched (once a minute while the source answers): a run killed
    /// later is known to have watched up to its last such line.
    Alive(SystemTime),
    /// The source went without contact from `from` (its last answer before) to `to` (its
    /// first after); `to` is `None` on the line written when it went down, before its end
    /// was known. `down`: the connection was lost (else it was only stale).
    Outage {
        from: SystemTime,
        to: Option<SystemTime>,
        down: bool,
    },
    /// A deposed holder's stretch; `to` is `None` on the line written when it began.
    Deposed(crate::model::marks::Deposed),
}

impl Entry {
    pub(crate) fn at(&self) -> Option<SystemTime> {
        match self {
            Entry::Change { entry, .. } => entry.at,
            Entry::Seen { at, .. }
            | Entry::Watching(at)
            | Entry::Stopped(at)
            | Entry::Alive(at) => Some(*at),
            // When it was written (the end when known): what says the run was alive then.
            Entry::Outage { from, to, .. } => Some(to.unwrap_or(*from)),
            Entry::Deposed(d) => Some(d.to.unwrap_or(d.from)),
        }
    }
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
    fnv1a_bytes(text.as_bytes())
}

fn fnv1a_bytes(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Whether an electop writes the journal at `path` now (holds its writer's lock).
pub(crate) fn written_now(path: &Path) -> bool {
    let Ok(lock) = OpenOptions::new().write(true).open(beside(path, ".writer")) else {
        return false;
    };
    matches!(lock.try_lock(), Err(std::fs::TryLockError::WouldBlock))
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
/// Appends are buffered until [`Journal::flush`] (which [`Batched`] calls on a timer) or the
/// journal is dropped.
pub(crate) struct Journal {
    path: PathBuf,
    bound: Bound,
    /// Records this run writes first when it takes the turn (its `Watching` line).
    preface: Vec<Entry>,
    turn: Option<Turn>,
    /// Records appended and not yet written.
    pending: Vec<Entry>,
    /// Why this run never writes the file (it holds a later version's lines), once said.
    refused: bool,
    /// Lines and bytes in the file, elections with changes in it, whether it has revision
    /// times, and its oldest time: what decides when to rewrite.
    lines: usize,
    bytes: u64,
    /// (Hashed, foldhash: a start notes every record of the file, 10,000 elections' worth.)
    elections: HashSet<String, foldhash::fast::RandomState>,
    seen: bool,
    /// Whether it has outages or deposed holders.
    marks: bool,
    oldest: Option<SystemTime>,
    /// Writes of appended records so far (one per flush).
    writes: u64,
    /// Whether the records read when taking the turn are kept for
    /// [`Journal::take_read_back`] (only the first turn's, and only for a run that asks).
    keep_read_back: bool,
    /// The records the file held once this run took its turn, until taken: the run starts
    /// from them without reading the file a second time.
    read_back: Option<Vec<Entry>>,
    /// The index beside the file (`<file>.idx`), while this run writes both.
    index: Option<index::Writer>,
    /// A rewrite is being prepared off the lock ([`Journal::rewrite_due`]).
    rewriting: bool,
}

impl Journal {
    pub(crate) fn new(path: PathBuf, bound: Bound) -> Journal {
        Journal {
            path,
            bound,
            preface: Vec::new(),
            turn: None,
            pending: Vec::new(),
            refused: false,
            lines: 0,
            bytes: 0,
            elections: HashSet::default(),
            seen: false,
            marks: false,
            oldest: None,
            writes: 0,
            keep_read_back: false,
            read_back: None,
            index: None,
            rewriting: false,
        }
    }

    /// This journal keeps the records it reads when it first takes its turn, for
    /// [`Journal::take_read_back`].
    pub(crate) fn reading_back(mut self) -> Journal {
        self.keep_read_back = true;
        self
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Whether this run is the one recording the source.
    pub(crate) fn writing(&self) -> bool {
        self.turn.is_some()
    }

    /// Whether records wait for a flush.
    pub(crate) fn pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Writes of appended records so far.
    #[cfg(test)]
    pub(crate) fn writes(&self) -> u64 {
        self.writes
    }

    /// `e` is written first when this run takes the turn (with the next flush if it holds it).
    pub(crate) fn preface(&mut self, e: Entry) -> std::io::Result<()> {
        if self.writing() {
            return self.append(&[e]).map(|_| ());
        }
        self.preface.push(e);
        Ok(())
    }

    /// Takes the writer's turn unless another electop holds it: then false, and this run
    /// only reads. Taking it, a file with a line that is not a record (a torn write, an old
    /// format), over its bound, or with records past the retention is rewritten first, so
    /// appends start on a line of their own. A file with a later version's lines is left
    /// to the newer electop: an error the first time, then false.
    pub(crate) fn take_turn(&mut self) -> std::io::Result<bool> {
        if self.writing() {
            return Ok(true);
        }
        if self.refused {
            return Ok(false);
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
        // A rewrite a killed run was preparing: never put in place, never read.
        let _ = std::fs::remove_file(rewrite::temp_path(&self.path));
        let file = read::read_file(&self.path)?;
        if let Some((v, _)) = file.later {
            self.refused = true;
            let why = format!(
                "written by a later electop (format v{v}); this one (v{VERSION}) leaves it \
                 as it is and does not record this source's history"
            );
            read::warn(&self.path, &why);
            return Err(std::io::Error::other(format!(
                "{}: {why}",
                self.path.display()
            )));
        }
        self.keep_damaged(&file)?;
        let clean = file.clean();
        let (mut entries, total) = (file.entries, file.bytes);
        let n = entries.len();
        entries.extend(self.preface.iter().cloned());
        self.note(&entries);
        if !clean || n > self.threshold() || total > self.bound.keep.max_bytes || self.aged() {
            let kept = compact(entries, self.bound);
            self.rewrite(&kept)?;
            self.read_back = self.keep_read_back.then_some(kept);
            entries = Vec::new();
        } else {
            let preface = entries.split_off(n);
            let read = std::mem::replace(&mut entries, preface);
            self.read_back = self.keep_read_back.then_some(read);
            (self.lines, self.bytes) = (n, total);
        }
        self.keep_read_back = false;
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        self.turn = Some(Turn { file, _lock: lock });
        if self.index.is_none() {
            self.index = self.open_index();
        }
        self.preface.clear();
        self.pending.splice(0..0, entries);
        self.flush()?;
        Ok(true)
    }

    /// The index of the file as it is now, brought up to date or made anew; none (said) if
    /// it cannot be written: readers then read the file whole, nothing else is lost.
    fn open_index(&self) -> Option<index::Writer> {
        let made = File::open(&self.path).and_then(|f| index::Writer::open(&self.path, &f));
        made.map_err(|e| read::warn(&self.path, &format!("its index cannot be written: {e}")))
            .ok()
    }

    /// A file with lines that are no record (but a torn last one) is said, and copied to
    /// `<file>.bad` before the rewrite drops those lines: nothing of it is lost unseen.
    fn keep_damaged(&self, file: &read::Read) -> std::io::Result<()> {
        let Some(what) = file.damage() else {
            return Ok(());
        };
        let bad = beside(&self.path, ".bad");
        std::fs::copy(&self.path, &bad)?;
        let kept = file.entries.len();
        read::warn(
            &self.path,
            &format!(
                "{what}: copied to {} and rewritten with the {kept} record(s) it holds",
                bad.display()
            ),
        );
        Ok(())
    }

    /// The records the file held when this run took its turn (none if it has not, or they
    /// were taken): what a run reading the journal at its start would read.
    pub(crate) fn take_read_back(&mut self) -> Option<Vec<Entry>> {
        self.read_back.take()
    }

    /// Queues `entries` if this run records the source (taking the turn if it is free);
    /// false when another electop does. They are written at the next [`Journal::flush`].
    pub(crate) fn append(&mut self, entries: &[Entry]) -> std::io::Result<bool> {
        if entries.is_empty() && self.writing() {
            return Ok(true);
        }
        if !self.take_turn()? {
            return Ok(false);
        }
        self.note(entries);
        self.pending.extend_from_slice(entries);
        Ok(true)
    }

    /// Writes what is queued in one write, so a crash tears at most the last line; then
    /// rewrites the file in place if it is over its bound (unless a rewrite is being
    /// prepared off the lock: [`Journal::rewrite_due`]).
    pub(crate) fn flush(&mut self) -> std::io::Result<()> {
        self.write_queued()?;
        if !self.rewrite_wanted() {
            return Ok(());
        }
        let now = read::read_file(&self.path)?;
        self.note(&now.entries);
        self.rewrite(&compact(now.entries, self.bound))?;
        let file = OpenOptions::new().append(true).open(&self.path)?;
        if let Some(t) = self.turn.as_mut() {
            t.file = file;
        }
        Ok(())
    }

    /// Writes what is queued in one write, so a crash tears at most the last line. Queued
    /// records that cannot be written are dropped (the error says so): a full disk does
    /// not grow the memory without end.
    pub(crate) fn write_queued(&mut self) -> std::io::Result<()> {
        let Some(turn) = self.turn.as_mut() else {
            return Ok(());
        };
        if self.pending.is_empty() {
            return Ok(());
        }
        let entries = std::mem::take(&mut self.pending);
        let text: String = entries.iter().map(|e| encode(e) + "\n").collect();
        self.writes += 1;
        turn.file.write_all(text.as_bytes())?;
        if let Some(ix) = self.index.as_mut()
            && let Err(e) = ix.wrote(text.as_bytes(), self.bytes)
        {
            read::warn(&self.path, &format!("its index cannot be written: {e}"));
            self.index = None;
        }
        self.lines += entries.len();
        self.bytes += text.len() as u64;
        Ok(())
    }

    /// This run writes the file, no rewrite is being prepared, and the file is past twice
    /// its counts, past its size bound, or holds records well past the retention.
    fn rewrite_wanted(&self) -> bool {
        let over =
            self.lines > self.threshold() || self.bytes > self.bound.keep.max_bytes || self.aged();
        self.turn.is_some() && !self.rewriting && over
    }

    /// The rewrite due, if the file is over its bound, for [`rewrite::prepare`] off the
    /// lock; then none until [`Journal::adopt`] puts it in place.
    pub(crate) fn rewrite_due(&mut self) -> Option<rewrite::Job> {
        if !self.rewrite_wanted() {
            return None;
        }
        self.rewriting = true;
        Some(rewrite::Job {
            path: self.path.clone(),
            bound: self.bound,
            upto: self.bytes,
        })
    }

    /// Puts a prepared rewrite in place, the lines appended since it began after it; a
    /// failed one leaves the file as it was.
    pub(crate) fn adopt(
        &mut self,
        prepared: std::io::Result<rewrite::Prepared>,
    ) -> std::io::Result<()> {
        self.rewriting = false;
        let p = prepared?;
        let tmp = p.tmp.clone();
        let done = self.put_in_place(p);
        if done.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        done
    }

    fn put_in_place(&mut self, p: rewrite::Prepared) -> std::io::Result<()> {
        let Some(turn) = self.turn.as_mut() else {
            return Err(std::io::Error::other("this run no longer writes the file"));
        };
        let mut tail = Vec::new();
        let mut old = File::open(&self.path)?;
        old.seek(std::io::SeekFrom::Start(p.upto))?;
        old.read_to_end(&mut tail)?;
        // The tail is not synced: like every append, it is in the system's hands once
        // written; the compacted lines before it were synced.
        OpenOptions::new()
            .append(true)
            .open(&p.tmp)?
            .write_all(&tail)?;
        std::fs::rename(&p.tmp, &self.path)?;
        turn.file = OpenOptions::new().append(true).open(&self.path)?;
        let mut records = p.records;
        records.extend(index::records_of(&tail, p.bytes));
        self.index = index::Writer::of_records(&self.path, &records)
            .map_err(|e| read::warn(&self.path, &format!("its index cannot be written: {e}")))
            .ok();
        self.lines = p.lines + memchr::memchr_iter(b'\n', &tail).count();
        self.bytes = p.bytes + tail.len() as u64;
        self.oldest = p.oldest.or(self.oldest);
        Ok(())
    }

    /// Twice what the bound keeps, so a rewrite comes once per many appends.
    fn threshold(&self) -> usize {
        let changes = self.bound.per_election * self.elections.len().max(1);
        let seen = if self.seen { self.bound.seen } else { 0 };
        // The marks a rewrite keeps: outages, and deposed holders (a few elections').
        let marks = if self.marks { 2 * MARKS_KEPT } else { 0 };
        2 * (changes + seen + 2 * RUNS_KEPT + marks)
    }

    /// Whether the oldest record is well past the retention: an eighth of it past, so the
    /// file is rewritten for age once in a while, not at each flush.
    fn aged(&self) -> bool {
        let keep = self.bound.keep;
        let slack = keep.retention / 8;
        let cutoff = SystemTime::now()
            .checked_sub(keep.retention)
            .and_then(|c| c.checked_sub(slack));
        matches!((self.oldest, cutoff), (Some(o), Some(c)) if o < c)
    }

    fn note(&mut self, entries: &[Entry]) {
        for e in entries {
            match e {
                Entry::Change { election, .. } if !self.elections.contains(election) => {
                    self.elections.insert(election.clone());
                }
                Entry::Seen { .. } => self.seen = true,
                Entry::Outage { .. } | Entry::Deposed(_) => self.marks = true,
                _ => {}
            }
            if let Some(at) = e.at() {
                self.oldest = Some(self.oldest.map_or(at, |o| o.min(at)));
            }
        }
    }

    /// Replaces the file by `entries` through a synced temp file renamed over it.
    fn rewrite(&mut self, entries: &[Entry]) -> std::io::Result<()> {
        let tmp = beside(&self.path, ".tmp");
        let text: String = entries.iter().map(|e| encode(e) + "\n").collect();
        let mut f = File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, &self.path)?;
        self.index = index::Writer::rewritten(&self.path, text.as_bytes())
            .map_err(|e| read::warn(&self.path, &format!("its index cannot be written: {e}")))
            .ok();
        self.lines = entries.len();
        self.bytes = text.len() as u64;
        self.oldest = entries.iter().filter_map(Entry::at).min();
        Ok(())
    }
}

/// A clean stop (the follow task dropped as electop exits, a source removed) writes what
/// is queued.
impl Drop for Journal {
    fn drop(&mut self) {
        let flushed = self.flush();
        if let Some(Err(e)) = self.index.as_mut().map(index::Writer::flush) {
            read::warn(&self.path, &format!("its index cannot be written: {e}"));
        }
        if let Err(e) = flushed {
            read::warn(
                &self.path,
                &format!("the last records could not be written: {e}"),
            );
        }
    }
}

#[cfg(test)]
mod tests;
