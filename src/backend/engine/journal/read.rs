//! A journal file read back, and what in it is not a record of this version: said once per
//! file (in the log, and on stderr for `status` and `history`, which drain
//! [`take_warnings`]), never a failure, and the records around it kept.

use std::io::{Read as _, Seek as _};
use std::path::Path;
use std::sync::Mutex;

use memchr::memmem::Finder;
use serde::Deserialize;

use super::index::{self, Unusable};
use super::{Bound, Entry, VERSION, bounded, decode};

/// A file read back.
#[derive(Debug, Default)]
pub(crate) struct Read {
    /// Every record, oldest first.
    pub entries: Vec<Entry>,
    /// The file's length.
    pub bytes: u64,
    /// The last line has no newline: a write torn by a kill, or a hand edit.
    pub unterminated: bool,
    /// Lines (but a torn last one) that are no record of any electop's: junk, another
    /// program's, a format before this one.
    pub foreign: usize,
    /// The newest later format met (lines a newer electop wrote), and how many lines.
    pub later: Option<(u32, usize)>,
}

impl Read {
    /// Whether appends may start right after the last line, nothing to drop first.
    pub(crate) fn clean(&self) -> bool {
        !self.unterminated && self.foreign == 0 && self.later.is_none()
    }

    /// What is wrong with the file, for a person; none for a file of whole records or one
    /// whose only fault is a torn last line (what a kill mid-write leaves).
    pub(crate) fn damage(&self) -> Option<String> {
        let mut said = Vec::new();
        if self.foreign > 0 {
            said.push(format!(
                "{} line(s) that are not electop history records (junk, another \
                 program's, or a format before v{VERSION})",
                self.foreign
            ));
        }
        if let Some((v, n)) = self.later {
            said.push(format!(
                "{n} line(s) of a later format (v{v}) that this electop (v{VERSION}) cannot read"
            ));
        }
        (!said.is_empty()).then(|| said.join(" and "))
    }
}

/// Only the version of a line that is no record of this version.
#[derive(Deserialize)]
struct Versioned {
    v: u32,
}

/// The file at `path`; a missing file is an empty journal.
pub(crate) fn read_file(path: &Path) -> std::io::Result<Read> {
    scan(path, &[])
}

/// The file at `path` as [`read_file`] gives it, but only the records of the elections
/// named in `only` (all when empty) and of the source as a whole (runs, outages): by the
/// index beside the file where it has one of its own ([`index`]), the lines after its last
/// record and every line of a file without one by a search of the bytes: a line that
/// holds neither one of the names as a JSON string (`"jobs"`, as serde writes it) nor a
/// source-wide kind is skipped before it is decoded, so a journal of 10,000 elections
/// costs one election a search of its bytes, not 10,000 elections' decoding. Such a read's
/// `foreign` and `later` count only the lines looked at.
pub(crate) fn read_elections(path: &Path, only: &[String]) -> std::io::Result<Read> {
    scan(path, only)
}

/// Streams the file (a buffer reused, never the whole file held: a large source's journal
/// is far too big to hold). Every line is decoded, or with `only` just the lines
/// holding one of its names, found by a search of the buffer's bytes.
fn scan(path: &Path, only: &[String]) -> std::io::Result<Read> {
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Read::default()),
        Err(e) => return Err(e),
    };
    let mut needles: Vec<Vec<u8>> = only
        .iter()
        .map(|n| serde_json::to_vec(n).unwrap_or_default())
        .collect();
    if !only.is_empty() {
        // The source's own lines, read with every election (as electop writes them).
        for kind in SOURCE_WIDE {
            needles.push(format!("\"kind\":\"{kind}\"").into_bytes());
        }
    }
    let finders: Vec<Finder<'_>> = needles.iter().map(Finder::new).collect();
    let mut r = Read::default();
    if !only.is_empty() {
        let keys: Vec<u64> = only.iter().map(|n| index::key_of_name(n)).collect();
        match index::lookup(&file, path, &keys) {
            Ok(found) => match indexed(&file, &found, only) {
                Some(read) => {
                    r = read;
                    file.seek(std::io::SeekFrom::Start(found.covered))?;
                    r.bytes = found.covered;
                }
                None => warn(
                    path,
                    "its index does not fit it: ignored, the file read whole",
                ),
            },
            Err(Unusable::Damaged(why)) => warn(
                path,
                &format!("its index {why}: ignored, the file read whole"),
            ),
            Err(Unusable::Absent) => {}
        }
    }
    stream(&mut file, r, only, &finders)
}

/// The lines the index gives, each checked to be one whole line of the file; none when one
/// is not (the index is not the file's).
fn indexed(file: &std::fs::File, found: &index::Found, only: &[String]) -> Option<Read> {
    let mut r = Read::default();
    for span in &found.lines {
        let line = index::read_line(file, *span)?;
        take(&mut r, trim(&line), false, only);
    }
    Some(r)
}

/// The rest of the file from where it stands, into `r`.
fn stream(
    file: &mut std::fs::File,
    mut r: Read,
    only: &[String],
    finders: &[Finder<'_>],
) -> std::io::Result<Read> {
    let mut buf: Vec<u8> = Vec::with_capacity(CHUNK);
    loop {
        let kept = buf.len();
        buf.resize(kept + CHUNK, 0);
        let n = read_some(file, &mut buf[kept..])?;
        buf.truncate(kept + n);
        r.bytes += n as u64;
        if n == 0 {
            // What is left has no newline: a torn last line.
            r.unterminated = !buf.is_empty();
            lines(&mut r, &buf, true, only, finders);
            return Ok(r);
        }
        let Some(end) = memchr::memrchr(b'\n', &buf) else {
            continue;
        };
        lines(&mut r, &buf[..=end], false, only, finders);
        buf.drain(..=end);
    }
}

/// The kinds of the lines of the source as a whole: read with any election's.
const SOURCE_WIDE: [&str; 4] = ["watching", "stopped", "alive", "outage"];

/// Bytes read at a time.
const CHUNK: usize = 1 << 20;

/// `read`, again when interrupted.
fn read_some(file: &mut std::fs::File, into: &mut [u8]) -> std::io::Result<usize> {
    loop {
        match file.read(into) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            r => return r,
        }
    }
}

/// The lines of `text` (whole lines, or the file's torn last one) into `r`: each of them,
/// or with `finders` those holding one of the names, found by searching `text` at once
/// (a search per line costs more than the search's own work on lines this short).
fn lines(r: &mut Read, text: &[u8], torn: bool, only: &[String], finders: &[Finder<'_>]) {
    if finders.is_empty() {
        for line in text.split_inclusive(|b| *b == b'\n') {
            take(r, trim(line), torn, only);
        }
        return;
    }
    let mut hits: Vec<(usize, usize)> = finders
        .iter()
        .flat_map(|f| f.find_iter(text))
        .map(|at| {
            let start = memchr::memrchr(b'\n', &text[..at]).map_or(0, |i| i + 1);
            let end = memchr::memchr(b'\n', &text[at..]).map_or(text.len(), |i| at + i);
            (start, end)
        })
        .collect();
    hits.sort_unstable();
    hits.dedup();
    for (start, end) in hits {
        take(r, trim(&text[start..end]), torn, only);
    }
}

/// A line without its end (`\n` or `\r\n`).
fn trim(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// One line into `r`: its record (when it is one, and of an election of `only`), or counted
/// as a later version's or no record at all.
fn take(r: &mut Read, line: &[u8], torn: bool, only: &[String]) {
    let line = String::from_utf8_lossy(line);
    if let Some(e) = decode(&line) {
        let wanted = match &e {
            _ if only.is_empty() => true,
            Entry::Change { election, .. } => only.contains(election),
            Entry::Deposed(d) => only.contains(&d.election),
            Entry::Seen { .. } => false,
            Entry::Watching(_) | Entry::Stopped(_) | Entry::Alive(_) | Entry::Outage { .. } => true,
        };
        if wanted {
            r.entries.push(e);
        }
        return;
    }
    if super::unknown_kind(&line) {
        return;
    }
    match serde_json::from_str::<Versioned>(&line) {
        Ok(l) if l.v > VERSION => {
            let (v, n) = r.later.unwrap_or((l.v, 0));
            r.later = Some((v.max(l.v), n + 1));
        }
        _ if torn => {}
        _ => r.foreign += 1,
    }
}

/// The records of `text`, whole lines this electop wrote (a rewrite's read of what it
/// appended since it took its turn).
pub(super) fn parse(text: &[u8]) -> Read {
    let mut r = Read {
        bytes: text.len() as u64,
        ..Read::default()
    };
    lines(&mut r, text, false, &[], &[]);
    r
}

/// Every record of the file, oldest first, and whether every line was one (and the file
/// ends a line). A missing file is an empty journal; lines that are no record are said.
pub(crate) fn read(path: &Path) -> std::io::Result<(Vec<Entry>, bool)> {
    said(path, read_file(path)?)
}

/// The records of `r` read from `path`, what is wrong with it said.
fn said(path: &Path, r: Read) -> std::io::Result<(Vec<Entry>, bool)> {
    if let Some(what) = r.damage() {
        warn(
            path,
            &format!("{what}: skipped; the records around them are read"),
        );
    }
    let clean = r.clean();
    Ok((r.entries, clean))
}

/// The records a run starts from: the file read back and bounded by counts and time as a
/// rewrite keeps it, but not by size (the writer keeps the file within its size bound):
/// so reading one election's records ([`load_elections`]) gives what reading all of them
/// gives of it. A file that cannot be read is an empty journal (and said).
pub(crate) fn load(path: &Path, bound: Bound) -> Vec<Entry> {
    load_elections(path, bound, &[])
}

/// As [`load`], only the records of the elections named in `only` and of the source as a
/// whole (every record when it is empty): see [`read_elections`].
pub(crate) fn load_elections(path: &Path, bound: Bound, only: &[String]) -> Vec<Entry> {
    match read_elections(path, only).and_then(|r| said(path, r)) {
        Ok((entries, _)) => bounded(entries, bound),
        Err(e) => {
            warn(path, &format!("cannot be read: {e}"));
            Vec::new()
        }
    }
}

/// Warnings about journal files not yet shown on stderr: each said once per process.
static WARNINGS: Mutex<Vec<(String, bool)>> = Mutex::new(Vec::new());

/// Logs `what` of the journal at `path`, and keeps it for [`take_warnings`]: the same
/// warning twice (a run reads a file, then takes its turn on it) is said once.
pub(crate) fn warn(path: &Path, what: &str) {
    let text = format!("history journal {}: {what}", path.display());
    let mut w = WARNINGS.lock().unwrap_or_else(|p| p.into_inner());
    if w.iter().any(|(t, _)| *t == text) {
        return;
    }
    tracing::warn!("{text}");
    // A dashboard never drains them: a few per file at most, kept.
    w.push((text, false));
}

/// The journal warnings not taken yet, for a command that prints to a terminal's stderr
/// (`status`, `history`); the TUI leaves them in the log.
pub(crate) fn take_warnings() -> Vec<String> {
    let mut w = WARNINGS.lock().unwrap_or_else(|p| p.into_inner());
    w.iter_mut()
        .filter(|(_, taken)| !*taken)
        .map(|(t, taken)| {
            *taken = true;
            t.clone()
        })
        .collect()
}
