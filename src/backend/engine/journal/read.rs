//! A journal file read back, and what in it is not a record of this version: said once per
//! file (in the log, and on stderr for `status` and `history`, which drain
//! [`take_warnings`]), never a failure, and the records around it kept.

use std::path::Path;
use std::sync::Mutex;

use serde::Deserialize;

use super::{Bound, Entry, VERSION, compact, decode};

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
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Read::default()),
        Err(e) => return Err(e),
    };
    let text = String::from_utf8_lossy(&bytes);
    let mut r = Read {
        bytes: bytes.len() as u64,
        unterminated: !text.is_empty() && !text.ends_with('\n'),
        ..Read::default()
    };
    let count = text.lines().count();
    for (i, line) in text.lines().enumerate() {
        if let Some(e) = decode(line) {
            r.entries.push(e);
            continue;
        }
        let torn = r.unterminated && i + 1 == count;
        match serde_json::from_str::<Versioned>(line) {
            Ok(l) if l.v > VERSION => {
                let (v, n) = r.later.unwrap_or((l.v, 0));
                r.later = Some((v.max(l.v), n + 1));
            }
            _ if torn => {}
            _ => r.foreign += 1,
        }
    }
    Ok(r)
}

/// Every record of the file, oldest first, and whether every line was one (and the file
/// ends a line). A missing file is an empty journal; lines that are no record are said.
pub(crate) fn read(path: &Path) -> std::io::Result<(Vec<Entry>, bool)> {
    let r = read_file(path)?;
    if let Some(what) = r.damage() {
        warn(
            path,
            &format!("{what}: skipped; the records around them are read"),
        );
    }
    let clean = r.clean();
    Ok((r.entries, clean))
}

/// The records a run starts from: the file read back and bounded as a rewrite would keep
/// it. A file that cannot be read is an empty journal (and said).
pub(crate) fn load(path: &Path, bound: Bound) -> Vec<Entry> {
    match read(path) {
        Ok((entries, _)) => compact(entries, bound),
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
