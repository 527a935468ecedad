//! The history every store keeps, so a restarted electop still shows what an earlier one
//! saw: one SQLite database per user (`<data dir>/history.sqlite3`, WAL) shared by every
//! electop, its records kept by source ("journal"), run, kind, election and time
//! (docs/history.md). SQLite does what a shared file needs: many processes reading and
//! writing at once, a burst of records in one transaction, nothing committed lost to a kill,
//! retention and bounds by `DELETE`.
//!
//! Every run records what it sees, so nothing hands the writing from one electop to
//! another: a reader takes, at each moment, the records of the oldest run then watching
//! ([`runs::as_one_run`]), and the others' are copies. A journal of an earlier release (a
//! file of JSON lines) is imported once and left in place ([`import`]).

mod db;
mod import;
mod keep;
mod line;
mod runs;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, SystemTime};

use crate::model::{Cause, HistoryEntry};

pub(crate) use keep::{Bound, Keep, bounded};
pub(crate) use line::{decode, encode};

/// The format of a record's `line` (docs/history.md). Version 2 added the `outage` and
/// `deposed` kinds; a reader skips a kind it does not know, and a line of a later version.
pub(crate) const VERSION: u32 = 2;

/// Changes kept per election whatever a run's own bound (the dashboard's default): `serve`
/// and `watch` keep 8 in memory but share the history with the dashboard.
pub(crate) const KEPT_AT_LEAST: usize = 200;

/// Revision times kept (etcd): enough for the changes a replay can show.
pub(crate) const SEEN_KEPT: usize = 50_000;

/// Outages kept per source, and deposed stretches per election: two records (a start, an
/// end) for each of the 64 the read model keeps.
pub(crate) const MARKS_KEPT: usize = 128;

/// The longest a record waits in memory before it is written: a killed electop loses at
/// most what it saw in its last such stretch, and a burst goes out in one transaction.
pub(crate) const FLUSH_AFTER: Duration = Duration::from_millis(100);

/// One record of the journal.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Entry {
    /// A leader change as a tracker recorded it.
    Change {
        election: String,
        entry: HistoryEntry,
    },
    /// When a revision was seen live (etcd keeps no time for a revision), and the cause of
    /// its leader change where only a live watch can tell it (a resign, a lease's expiry or
    /// its revocation: a replay of the past cannot).
    Seen {
        revision: i64,
        at: SystemTime,
        cause: Option<Cause>,
    },
    /// An electop started watching (and recording) the source here.
    Watching(SystemTime),
    /// That electop stopped watching (a clean stop; a killed one leaves no record).
    Stopped(SystemTime),
    /// That electop still watched (while the source answers): a run killed later is known
    /// to have watched up to its last such record.
    Alive(SystemTime),
    /// The source went without contact from `from` (its last answer before) to `to` (its
    /// first after); `to` is `None` on the record written when it went down, before its end
    /// was known. `down`: the connection was lost (else it was only stale).
    Outage {
        from: SystemTime,
        to: Option<SystemTime>,
        down: bool,
    },
    /// A deposed holder's stretch; `to` is `None` on the record written when it began.
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

    fn election(&self) -> Option<&str> {
        match self {
            Entry::Change { election, .. } => Some(election),
            Entry::Deposed(d) => Some(&d.election),
            _ => None,
        }
    }
}

/// `<store>-<key escaped>-<hash>`: readable, and the hash keeps two sources whose keys
/// escape alike apart. (The names an earlier release gave its journal files, `.jsonl`
/// added: [`import`] finds them by it.)
pub(crate) fn key_of(store: &str, key: &str) -> String {
    let mut escaped = safe_name(key);
    escaped.truncate(80);
    format!("{store}-{escaped}-{:016x}", fnv1a(key.as_bytes()))
}

/// `text` with every character but ASCII letters, digits, `.` and `-` made `_`.
pub(crate) fn safe_name(text: &str) -> String {
    text.chars()
        .map(
            |c| match c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                true => c,
                false => '_',
            },
        )
        .collect()
}

/// FNV-1a: stable across Rust versions, unlike `DefaultHasher`, so a key is the same in
/// every release.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The history database of a process: opened at its first use, written in batches. Clones
/// share it; the last one dropped (a clean stop) writes what is queued.
#[derive(Clone)]
pub struct History(Arc<Shared>);

impl std::fmt::Debug for History {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("History").field(&self.0.path).finish()
    }
}

struct Shared {
    /// None: no data directory, nothing kept.
    path: Option<PathBuf>,
    keep: Keep,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Opened at the first use; why it cannot be, once said.
    db: Option<Result<db::Db, String>>,
    /// Records not yet written, and whether a timer will write them.
    pending: Vec<db::Row>,
    timer: bool,
    last_write: Option<tokio::time::Instant>,
    /// This process's run of each journal.
    runs: HashMap<String, i64>,
    /// What went wrong, for a command that prints to a terminal (`status`, `history`).
    warnings: Vec<(String, bool)>,
    /// Transactions written so far.
    writes: u64,
}

impl History {
    /// The database at `path`, keeping `keep`.
    #[cfg(test)]
    pub(crate) fn at(path: PathBuf, keep: Keep) -> History {
        History::new(Some(path), keep)
    }

    /// `<data dir>/history.sqlite3`; none without a data directory.
    pub(crate) fn default_at(keep: Keep) -> History {
        let dirs = directories::ProjectDirs::from("", "", "electop");
        let path = dirs.map(|d| d.data_dir().join("history.sqlite3"));
        History::new(path, keep)
    }

    /// Nothing kept (a test of something else).
    #[cfg(test)]
    pub(crate) fn none() -> History {
        History::new(None, Keep::UNBOUNDED)
    }

    fn new(path: Option<PathBuf>, keep: Keep) -> History {
        let state = Mutex::new(State::default());
        History(Arc::new(Shared { path, keep, state }))
    }

    pub(crate) fn keep(&self) -> Keep {
        self.0.keep
    }

    /// The journal `key` (a source's, as its store names it), this process's run of it.
    pub(crate) fn journal(&self, key: &str) -> Journal {
        let mut g = self.lock();
        let n = g.runs.len() as u64;
        let run = *g.runs.entry(key.to_string()).or_insert_with(|| new_run(n));
        Journal {
            history: self.clone(),
            key: key.to_string(),
            run,
        }
    }

    /// What went wrong with the history not taken yet, each said once.
    pub(crate) fn take_warnings(&self) -> Vec<String> {
        let mut g = self.lock();
        let w = g.warnings.iter_mut().filter(|(_, taken)| !*taken);
        w.map(|(t, taken)| {
            *taken = true;
            t.clone()
        })
        .collect()
    }

    /// Why the history cannot be kept (the first thing that went wrong), if it cannot.
    pub(crate) fn failed(&self) -> Option<String> {
        self.lock().warnings.first().map(|(t, _)| t.clone())
    }

    /// Transactions written so far.
    #[cfg(test)]
    pub(crate) fn writes(&self) -> u64 {
        self.lock().writes
    }

    /// Writes what is queued now.
    pub(crate) fn flush(&self) {
        let mut g = self.lock();
        write_pending(&self.0, &mut g);
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.0.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues `rows`: written at once after a quiet spell, else when the last write is
    /// [`FLUSH_AFTER`] old (a timer of the runtime; outside one, at once).
    fn queue(&self, rows: Vec<db::Row>) {
        let mut g = self.lock();
        g.pending.extend(rows);
        if g.timer || g.pending.is_empty() {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return write_pending(&self.0, &mut g);
        };
        let now = tokio::time::Instant::now();
        let turn = g.last_write.map(|w| w + FLUSH_AFTER).filter(|t| *t > now);
        let Some(turn) = turn else {
            g.last_write = Some(now);
            return write_pending(&self.0, &mut g);
        };
        g.timer = true;
        // Weak: the timer does not keep a dropped history alive (its drop writes the rest).
        rt.spawn(flush_later(Arc::downgrade(&self.0), turn));
    }

    /// Runs `f` on the database, opened (and earlier journals imported) at the first use;
    /// none when it cannot be (said once).
    fn with_db<T>(&self, f: impl FnOnce(&mut db::Db) -> rusqlite::Result<T>) -> Option<T> {
        let mut g = self.lock();
        with_db(&self.0, &mut g, f)
    }
}

/// A run's id: this process's id in the high half (so whether it still runs can be asked,
/// [`gone`]), a hash of the time and a count in the low half, unique among the runs of a
/// journal. Never 0 (the run of imported records).
fn new_run(n: u64) -> i64 {
    let ns = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let low = fnv1a(&[ns.to_le_bytes(), n.to_le_bytes()].concat()) & 0xffff_ffff;
    (i64::from(std::process::id()) << 32) | low as i64
}

/// Whether the process that ran `run` is gone from this machine: killed, it left no
/// `stopped` record, and its last `alive` one looks like a run still watching.
fn gone(run: i64) -> bool {
    let pid = (run >> 32) as libc::pid_t;
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 sends nothing; it only asks whether the process exists.
    let alive = unsafe { libc::kill(pid, 0) } == 0
        || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    !alive
}

fn with_db<T>(
    s: &Shared,
    g: &mut State,
    f: impl FnOnce(&mut db::Db) -> rusqlite::Result<T>,
) -> Option<T> {
    let path = s.path.as_deref()?;
    if g.db.is_none() {
        let (db, said) = open(path);
        g.db = Some(db);
        for w in said {
            warn(g, path, &w);
        }
    }
    let opened = g.db.as_mut()?;
    let db = match opened {
        Ok(db) => db,
        Err(why) => {
            let why = why.clone();
            warn(g, path, &why);
            return None;
        }
    };
    match f(db) {
        Ok(v) => Some(v),
        Err(e) => {
            warn(g, path, &format!("cannot use it: {e}"));
            None
        }
    }
}

/// The database at `path`, the earlier journals beside it imported; what went wrong.
fn open(path: &Path) -> (Result<db::Db, String>, Vec<String>) {
    let mut db = match db::Db::open(path) {
        Ok(db) => db,
        Err(e) => return (Err(format!("cannot open it: {e}")), Vec::new()),
    };
    let said = path.parent().map(|dir| import::journals(&mut db, dir));
    (Ok(db), said.unwrap_or_default())
}

/// Logs `what` of the database at `path` and keeps it for [`History::take_warnings`], once.
fn warn(g: &mut State, path: &Path, what: &str) {
    let text = format!("history {}: {what}", path.display());
    if g.warnings.iter().any(|(t, _)| *t == text) {
        return;
    }
    tracing::warn!("{text}");
    g.warnings.push((text, false));
}

fn write_pending(s: &Shared, g: &mut State) {
    if g.pending.is_empty() {
        return;
    }
    let rows = std::mem::take(&mut g.pending);
    let keep = s.keep;
    g.writes += 1;
    // Records that cannot be written are dropped (said): a full disk does not grow the
    // memory without end.
    with_db(s, g, |db| db.write(&rows, keep));
}

async fn flush_later(shared: Weak<Shared>, turn: tokio::time::Instant) {
    tokio::time::sleep_until(turn).await;
    let Some(s) = shared.upgrade() else { return };
    let mut g = s.state.lock().unwrap_or_else(|p| p.into_inner());
    g.timer = false;
    g.last_write = Some(tokio::time::Instant::now());
    write_pending(&s, &mut g);
}

/// A clean stop writes what is queued.
impl Drop for Shared {
    fn drop(&mut self) {
        let mut g = std::mem::take(self.state.get_mut().unwrap_or_else(|p| p.into_inner()));
        write_pending(self, &mut g);
    }
}

/// One source's journal, as this run records and reads it.
#[derive(Clone)]
pub(crate) struct Journal {
    history: History,
    key: String,
    run: i64,
}

impl Journal {
    pub(crate) fn key(&self) -> &str {
        &self.key
    }

    pub(crate) fn history(&self) -> &History {
        &self.history
    }

    /// Queues `entries`, written within [`FLUSH_AFTER`].
    pub(crate) fn append(&self, entries: &[Entry]) {
        let rows = entries
            .iter()
            .map(|e| db::Row::of(&self.key, self.run, e))
            .collect();
        self.history.queue(rows);
    }

    /// The records so far, as one run's ([`runs::as_one_run`]) and bounded: of the
    /// elections named in `only` and of the source as a whole, of every election when it
    /// is empty. This run's own records are among them.
    pub(crate) fn load(&self, bound: Bound, only: &[String]) -> Vec<Entry> {
        self.history.flush();
        let rows = self.history.with_db(|db| db.read(&self.key, only));
        let entries = runs::as_one_run(rows.unwrap_or_default());
        bounded(entries, bound)
    }

    /// The records that say the runs, outages and deposed stretches (no change, no revision
    /// time: the store reads those itself), as one run's.
    pub(crate) fn load_marks(&self) -> Vec<Entry> {
        self.history.flush();
        let rows = self.history.with_db(|db| db.read_marks(&self.key));
        runs::as_one_run(rows.unwrap_or_default())
    }

    /// The elections with a change recorded since `since`, by name.
    pub(crate) fn elections_since(&self, since: SystemTime) -> Vec<String> {
        self.history.flush();
        let names = self
            .history
            .with_db(|db| db.elections_since(&self.key, since));
        names.unwrap_or_default()
    }

    /// Whether another electop watches the source now: it said so lately, did not stop,
    /// and its process still runs.
    pub(crate) fn others_watching(&self) -> bool {
        let since = SystemTime::now() - Duration::from_secs(5);
        let (key, run) = (&self.key, self.run);
        let others = self.history.with_db(|db| db.others_since(key, run, since));
        others.unwrap_or_default().into_iter().any(|r| !gone(r))
    }

    /// Keeps the journal within `bound` (and the history's retention and size bound).
    pub(crate) fn trim(&self, bound: Bound) {
        self.history.flush();
        let key = &self.key;
        self.history.with_db(|db| db.trim(key, bound));
    }
}

#[cfg(test)]
mod tests;
