//! The index beside a journal (`<file>.idx`), so one election's records are read without
//! reading the whole file: `history ELECTION` reads its own election's lines, not every
//! election's (docs/PERFORMANCE.md). The journal's own format is unchanged; the index is
//! a cache of where its lines start, and a reader that cannot trust it reads the journal
//! whole.
//!
//! Format (docs/history.md): a 32-byte header (`ELECTOPX`, the index's version as a
//! little-endian u32, 4 zero bytes, the journal's inode and a hash of its first line, each a
//! little-endian u64: the journal it was made for), then one 16-byte record per journal
//! line, in the file's order: the line's key and its offset, little-endian u64s. The key
//! is the FNV-1a hash of the line's `election` as its JSON text (quotes included), at least
//! [`KEY_MIN`]; [`SOURCE_WIDE`] for a line of the source as a whole (a run's start or stop,
//! an outage), [`SEEN`] for an etcd revision's time.
//!
//! The writer appends records for the lines it wrote at most once a second (and at a clean
//! stop), so the last lines may not be indexed yet: a reader reads the lines after the last
//! indexed one by a search of their bytes. Each rewrite of the journal writes its index
//! anew (a temp file renamed over it, after the journal's). An index made for another file
//! (the journal rewritten since, by an electop before the index or by hand) is ignored and
//! remade by the next writer; one whose records do not fall on the journal's lines is
//! damaged: said, ignored, remade.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;
use std::time::{Duration, Instant};

use super::{beside, fnv1a_bytes};

const MAGIC: &[u8; 8] = b"ELECTOPX";
/// The index's own version (the journal's is in each line).
const INDEX_VERSION: u32 = 1;
const HEADER: usize = 32;
const RECORD: usize = 16;
/// A line of the source as a whole: read with every election.
pub(crate) const SOURCE_WIDE: u64 = 0;
/// An etcd revision's time: read with no election.
pub(crate) const SEEN: u64 = 1;
/// The least key of an election's line.
pub(crate) const KEY_MIN: u64 = 2;
/// How often a writer appends the records of the lines it wrote (the journal itself is
/// written every 100 ms at most): at most one more write a second.
const APPEND_EVERY: Duration = Duration::from_secs(1);

/// `<file>.idx`.
pub(crate) fn path_of(journal: &Path) -> std::path::PathBuf {
    beside(journal, ".idx")
}

/// The key of an election named `name`, as a reader asks for it.
pub(crate) fn key_of_name(name: &str) -> u64 {
    let token = serde_json::to_vec(name).unwrap_or_default();
    fnv1a_bytes(&token).max(KEY_MIN)
}

/// The key of one journal line as electop writes it (compact JSON): its `election`'s JSON
/// text hashed, else [`SEEN`] or [`SOURCE_WIDE`] by its kind.
pub(crate) fn key_of_line(line: &[u8]) -> u64 {
    const FIELD: &[u8] = b"\"election\":";
    if let Some(at) = memchr::memmem::find(line, FIELD) {
        let rest = &line[at + FIELD.len()..];
        if let Some(token) = json_string(rest) {
            return fnv1a_bytes(token).max(KEY_MIN);
        }
    }
    match memchr::memmem::find(line, b"\"kind\":\"seen\"") {
        Some(_) => SEEN,
        None => SOURCE_WIDE,
    }
}

/// The JSON string at the start of `text`, quotes included.
fn json_string(text: &[u8]) -> Option<&[u8]> {
    if text.first() != Some(&b'"') {
        return None;
    }
    let mut i = 1;
    while i < text.len() {
        match text[i] {
            b'\\' => i += 2,
            b'"' => return Some(&text[..=i]),
            _ => i += 1,
        }
    }
    None
}

/// Which journal an index was made for: its inode and its first line's hash (0: it had
/// none yet).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Made {
    inode: u64,
    first: u64,
}

impl Made {
    fn of(file: &File) -> std::io::Result<Made> {
        let inode = file.metadata()?.ino();
        let mut head = vec![0u8; 4096];
        let n = file.read_at(&mut head, 0)?;
        head.truncate(n);
        let first = match memchr::memchr(b'\n', &head) {
            Some(end) => fnv1a_bytes(&head[..end]),
            None => 0,
        };
        Ok(Made { inode, first })
    }

    /// Whether `header` is of an index made for this journal: its inode, and its first
    /// line unless the index was made while the journal had none.
    fn made(self, header: &[u8]) -> bool {
        let mine = self.header();
        let first = u64_at(header, 24);
        header[..24] == mine[..24] && (first == 0 || first == self.first)
    }

    fn header(self) -> [u8; HEADER] {
        let mut h = [0u8; HEADER];
        h[..8].copy_from_slice(MAGIC);
        h[8..12].copy_from_slice(&INDEX_VERSION.to_le_bytes());
        h[16..24].copy_from_slice(&self.inode.to_le_bytes());
        h[24..32].copy_from_slice(&self.first.to_le_bytes());
        h
    }
}

fn record(key: u64, offset: u64) -> [u8; RECORD] {
    let mut r = [0u8; RECORD];
    r[..8].copy_from_slice(&key.to_le_bytes());
    r[8..].copy_from_slice(&offset.to_le_bytes());
    r
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

/// The records of `text` (whole lines) written at `base` in the journal.
pub(crate) fn records_of(text: &[u8], base: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() / 8);
    let mut at = 0;
    for line in text.split_inclusive(|b| *b == b'\n') {
        if line.ends_with(b"\n") {
            out.extend_from_slice(&record(key_of_line(line), base + at as u64));
        }
        at += line.len();
    }
    out
}

/// The records of the whole lines of `journal` from `from` on, read a chunk at a time.
fn records_from(journal: &File, from: u64) -> std::io::Result<Vec<u8>> {
    const CHUNK: usize = 1 << 20;
    let mut out = Vec::new();
    let mut buf = vec![0u8; CHUNK];
    let mut at = from;
    loop {
        let n = journal.read_at(&mut buf, at)?;
        if n == 0 {
            return Ok(out);
        }
        let Some(end) = memchr::memrchr(b'\n', &buf[..n]) else {
            if n < buf.len() {
                // The torn last line: not indexed until it is whole.
                return Ok(out);
            }
            buf.resize(buf.len() * 2, 0);
            continue;
        };
        out.extend(records_of(&buf[..=end], at));
        at += end as u64 + 1;
    }
}

/// What a valid index says of its journal.
pub(crate) struct Found {
    /// The offsets and ends of the lines of the keys asked for, in the file's order.
    pub lines: Vec<(u64, u64)>,
    /// Where the indexed lines end: the lines from here on are not indexed.
    pub covered: u64,
}

/// Why an index was not used.
#[derive(Debug)]
pub(crate) enum Unusable {
    /// None, or made for another file: remade by the next writer, nothing to say.
    Absent,
    /// Its records do not fall on the journal's lines.
    Damaged(String),
}

/// The lines of `keys` (and [`SOURCE_WIDE`]) in `journal` by its index, read a chunk at a
/// time (at 2,000,000 lines the index is 32 MB).
pub(crate) fn lookup(journal: &File, path: &Path, keys: &[u64]) -> Result<Found, Unusable> {
    let Ok(idx) = File::open(path_of(path)) else {
        return Err(Unusable::Absent);
    };
    let made = Made::of(journal).map_err(|_| Unusable::Absent)?;
    let mut header = [0u8; HEADER];
    if idx.read_exact_at(&mut header, 0).is_err() || !made.made(&header) {
        return Err(Unusable::Absent);
    }
    let len = journal.metadata().map_err(|_| Unusable::Absent)?.len();
    let mut walk = Walk {
        keys,
        len,
        lines: Vec::new(),
        first: None,
        prev: None,
        want: None,
    };
    let mut buf = vec![0u8; RECORD << 16];
    let mut at = HEADER as u64;
    loop {
        let n = idx.read_at(&mut buf, at).map_err(|_| Unusable::Absent)?;
        // A torn last record (a kill mid-append) is not one.
        let whole = n / RECORD * RECORD;
        if whole == 0 {
            break;
        }
        walk.records(&buf[..whole])?;
        at += whole as u64;
    }
    for at in [walk.first, walk.prev].into_iter().flatten() {
        if !starts_line(journal, at) {
            let why = "has records that do not start the journal's lines";
            return Err(Unusable::Damaged(why.into()));
        }
    }
    let covered = match walk.prev {
        None => 0,
        Some(last) => line_end(journal, last, len).map_err(|_| Unusable::Absent)?,
    };
    if let Some(start) = walk.want {
        walk.lines.push((start, covered));
    }
    Ok(Found {
        lines: walk.lines,
        covered,
    })
}

/// The index's records walked in order: the lines of the keys asked for.
struct Walk<'k> {
    keys: &'k [u64],
    len: u64,
    lines: Vec<(u64, u64)>,
    first: Option<u64>,
    prev: Option<u64>,
    /// The start of a line wanted, whose end is the next record's offset.
    want: Option<u64>,
}

impl Walk<'_> {
    fn records(&mut self, records: &[u8]) -> Result<(), Unusable> {
        for r in records.chunks_exact(RECORD) {
            let (key, offset) = (u64_at(r, 0), u64_at(r, 8));
            if self.prev.is_some_and(|p| offset <= p) || offset >= self.len {
                let why = "its offsets are not the journal's lines in order";
                return Err(Unusable::Damaged(why.into()));
            }
            if let Some(start) = self.want.take() {
                self.lines.push((start, offset));
            }
            if key == SOURCE_WIDE || self.keys.contains(&key) {
                self.want = Some(offset);
            }
            self.first.get_or_insert(offset);
            self.prev = Some(offset);
        }
        Ok(())
    }
}

/// Whether a line of the journal starts at `at` (one of its records: `{` after a newline).
fn starts_line(journal: &File, at: u64) -> bool {
    let mut b = [0u8; 2];
    match at.checked_sub(1) {
        None => journal.read_exact_at(&mut b[1..], 0).is_ok() && b[1] == b'{',
        Some(before) => journal.read_exact_at(&mut b, before).is_ok() && b == *b"\n{",
    }
}

/// The end (after its newline) of the line at `at`; `at` itself when it has none yet.
fn line_end(journal: &File, at: u64, len: u64) -> std::io::Result<u64> {
    let mut buf = vec![0u8; 4096];
    let mut from = at;
    while from < len {
        let n = journal.read_at(&mut buf, from)?;
        if n == 0 {
            break;
        }
        if let Some(i) = memchr::memchr(b'\n', &buf[..n]) {
            return Ok(from + i as u64 + 1);
        }
        from += n as u64;
    }
    Ok(at)
}

/// Reads `[start, end)` of the journal, and checks it is one whole line that begins one.
pub(crate) fn read_line(journal: &File, (start, end): (u64, u64)) -> Option<Vec<u8>> {
    let from = start.checked_sub(1);
    let mut buf = vec![0u8; (end - from.unwrap_or(start)) as usize];
    journal
        .read_exact_at(&mut buf, from.unwrap_or(start))
        .ok()?;
    if from.is_some() && buf.first() != Some(&b'\n') {
        return None;
    }
    let line = if from.is_some() { &buf[1..] } else { &buf[..] };
    if line.last() != Some(&b'\n') || memchr::memchr(b'\n', &line[..line.len() - 1]).is_some() {
        return None;
    }
    Some(line.to_vec())
}

/// The writer's side: the index of the journal it holds, appended at most once a second.
pub(crate) struct Writer {
    /// The journal's path.
    path: std::path::PathBuf,
    file: File,
    /// Records of lines written to the journal and not yet to the index.
    pending: Vec<u8>,
    last_write: Option<Instant>,
}

impl Writer {
    /// Makes the index of `journal` (at `path`) anew from its bytes, through a temp file.
    pub(crate) fn make(path: &Path, journal: &File) -> std::io::Result<Writer> {
        let mut body = Made::of(journal)?.header().to_vec();
        body.extend(records_from(journal, 0)?);
        Writer::replace(path, &body)
    }

    /// The index of `journal` (at `path`) brought up to its end: kept when it is its own,
    /// its records of the lines after `covered` appended; made anew otherwise (said when
    /// it was damaged).
    pub(crate) fn open(path: &Path, journal: &File) -> std::io::Result<Writer> {
        let found = lookup(journal, path, &[]);
        let covered = match found {
            Ok(f) => f.covered,
            Err(Unusable::Absent) => return Writer::make(path, journal),
            Err(Unusable::Damaged(why)) => {
                super::read::warn(path, &format!("its index {why}: made anew"));
                return Writer::make(path, journal);
            }
        };
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(path_of(path))?;
        file.write_all(&records_from(journal, covered)?)?;
        Ok(Writer {
            path: path.to_path_buf(),
            file,
            pending: Vec::new(),
            last_write: None,
        })
    }

    /// The index of `entries` as just written to `path` (a rewrite), replacing the old.
    pub(crate) fn rewritten(path: &Path, text: &[u8]) -> std::io::Result<Writer> {
        Writer::of_records(path, &records_of(text, 0))
    }

    /// The index of the file just put at `path`, from its lines' `records` (made before, off
    /// the writer's lock), replacing the old.
    pub(crate) fn of_records(path: &Path, records: &[u8]) -> std::io::Result<Writer> {
        let journal = File::open(path)?;
        let mut body = Made::of(&journal)?.header().to_vec();
        body.extend_from_slice(records);
        Writer::replace(path, &body)
    }

    fn replace(path: &Path, body: &[u8]) -> std::io::Result<Writer> {
        let idx = path_of(path);
        let tmp = beside(&idx, ".tmp");
        let mut f = File::create(&tmp)?;
        f.write_all(body)?;
        drop(f);
        std::fs::rename(&tmp, &idx)?;
        let file = std::fs::OpenOptions::new().append(true).open(&idx)?;
        Ok(Writer {
            path: path.to_path_buf(),
            file,
            pending: Vec::new(),
            last_write: None,
        })
    }

    /// `text` was appended to the journal at `base`: its records are written with the next
    /// append that is a second after the last (or at [`Writer::flush`]).
    pub(crate) fn wrote(&mut self, text: &[u8], base: u64) -> std::io::Result<()> {
        if base == 0 {
            // The journal's first line: the index made anew, to name it (made on an empty
            // file, it could not), so a file written over in place is told apart.
            let journal = File::open(&self.path)?;
            let mut body = Made::of(&journal)?.header().to_vec();
            body.extend(records_of(text, 0));
            *self = Writer::replace(&self.path, &body)?;
            return Ok(());
        }
        self.pending.extend(records_of(text, base));
        let due = self.last_write.is_none_or(|w| w.elapsed() >= APPEND_EVERY);
        match due {
            true => self.flush(),
            false => Ok(()),
        }
    }

    /// Writes the records waiting, in one write.
    pub(crate) fn flush(&mut self) -> std::io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        self.last_write = Some(Instant::now());
        let pending = std::mem::take(&mut self.pending);
        self.file.write_all(&pending)
    }
}

/// An [`Entry`]'s line is keyed as [`key_of_line`] keys its text.
#[cfg(test)]
pub(crate) fn key_of(e: &super::Entry) -> u64 {
    key_of_line(super::encode(e).as_bytes())
}

#[cfg(test)]
mod tests;
