//! electop's own record of a ZooKeeper source's leader changes, across runs: ZooKeeper
//! keeps no history, so each change the tracker records is appended as a JSON line to a
//! file per source (connect string, chroot, prefix and preset) beside the audit log, with a
//! line when a run connects and when it stops. The next run loads it at its first read, so
//! the history starts where the record does, and the time no electop watched is said.
//!
//! The record is bounded: past a bound the file is rewritten with the last `limit` changes
//! of each election. A file that cannot be written is logged once and said in the source's
//! notice; it never stops the source.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use tracing::warn;

use crate::model::time::{parse_rfc3339, rfc3339};
use crate::model::{Cause, HistoryEntry, HistoryGap};

/// Changes kept per election in the file whatever the run's own bound (the dashboard's
/// default): `serve` and `watch` keep 8 in memory but share the file with the dashboard.
pub(crate) const KEPT_AT_LEAST: usize = 200;

/// Run markers kept when no change is older: enough to say the last gaps, not a diary of
/// every `status` ever run.
const RUNS_KEPT: usize = 16;

/// One line of the record.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Rec {
    /// A leader change as the tracker recorded it.
    Change {
        election: String,
        entry: HistoryEntry,
    },
    /// An electop connected (its first session) and watched from here.
    Connected(SystemTime),
    /// That electop stopped watching (a clean stop; a killed one leaves no line).
    Stopped(SystemTime),
}

impl Rec {
    fn at(&self) -> Option<SystemTime> {
        match self {
            Rec::Change { entry, .. } => entry.at,
            Rec::Connected(t) | Rec::Stopped(t) => Some(*t),
        }
    }
}

#[derive(Serialize, Deserialize)]
struct Line {
    at: String,
    /// `connected` or `stopped` on a run's line; absent on a change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    run: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    election: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    zxid: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    to: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cause: Option<Cause>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    by: Option<String>,
}

pub(crate) fn encode(r: &Rec) -> String {
    let at = rfc3339(r.at().unwrap_or(SystemTime::UNIX_EPOCH));
    let run = |kind: &str| Line {
        at: at.clone(),
        run: Some(kind.into()),
        election: None,
        zxid: None,
        from: None,
        to: None,
        cause: None,
        by: None,
    };
    let line = match r {
        Rec::Connected(_) => run("connected"),
        Rec::Stopped(_) => run("stopped"),
        Rec::Change { election, entry } => Line {
            at: at.clone(),
            run: None,
            election: Some(election.clone()),
            zxid: entry.revision,
            from: entry.from.clone(),
            to: entry.to.clone(),
            cause: Some(entry.cause),
            by: entry.by.clone(),
        },
    };
    serde_json::to_string(&line).unwrap_or_default()
}

/// One line back; `None` for a line that is not one (a torn write, a hand edit): skipped.
pub(crate) fn decode(text: &str) -> Option<Rec> {
    let l: Line = serde_json::from_str(text).ok()?;
    let at = parse_rfc3339(&l.at)?;
    match l.run.as_deref() {
        Some("connected") => Some(Rec::Connected(at)),
        Some("stopped") => Some(Rec::Stopped(at)),
        Some(_) => None,
        None => Some(Rec::Change {
            election: l.election?,
            entry: HistoryEntry {
                at: Some(at),
                revision: l.zxid,
                from: l.from,
                to: l.to,
                cause: l.cause?,
                by: l.by,
            },
        }),
    }
}

/// A change's identity: its election, zxid, and the leaders before and after.
type ChangeKey = (String, Option<i64>, Option<String>, Option<String>);

/// Each change once: two electops watching at once both record it, and an admin action
/// learnt after the change relabels it (a later line). The first sighting's time is kept,
/// with the last cause that is not `unknown` and the last author.
fn dedupe(recs: Vec<Rec>) -> Vec<Rec> {
    let mut out: Vec<Rec> = Vec::with_capacity(recs.len());
    let mut seen: HashMap<ChangeKey, usize> = HashMap::new();
    for r in recs {
        let Rec::Change { election, entry } = &r else {
            out.push(r);
            continue;
        };
        let key = (
            election.clone(),
            entry.revision,
            entry.from.clone(),
            entry.to.clone(),
        );
        match seen.get(&key) {
            Some(&i) => {
                if let Rec::Change { entry: kept, .. } = &mut out[i] {
                    if entry.cause != Cause::Unknown {
                        kept.cause = entry.cause;
                    }
                    if entry.by.is_some() {
                        kept.by = entry.by.clone();
                    }
                }
            }
            None => {
                seen.insert(key, out.len());
                out.push(r);
            }
        }
    }
    out
}

/// The record bounded: the last `limit` changes of each election, and the run lines no
/// older than the oldest change kept (at most [`RUNS_KEPT`] runs when that is older still).
pub(crate) fn compact(recs: Vec<Rec>, limit: usize) -> Vec<Rec> {
    let recs = dedupe(recs);
    let mut left: BTreeMap<&str, usize> = BTreeMap::new();
    let mut keep = vec![false; recs.len()];
    for (i, r) in recs.iter().enumerate().rev() {
        if let Rec::Change { election, .. } = r {
            let n = left.entry(election).or_insert(limit.max(1));
            if *n > 0 {
                *n -= 1;
                keep[i] = true;
            }
        }
    }
    let oldest_change = keep.iter().position(|k| *k).unwrap_or(recs.len());
    let mut runs = 0;
    for (i, r) in recs.iter().enumerate().rev() {
        match r {
            Rec::Change { .. } => {}
            Rec::Connected(_) if i >= oldest_change || runs < RUNS_KEPT => {
                runs += 1;
                keep[i] = true;
            }
            Rec::Stopped(_) if i >= oldest_change || runs < RUNS_KEPT => keep[i] = true,
            _ => {}
        }
    }
    recs.into_iter()
        .zip(keep)
        .filter_map(|(r, k)| k.then_some(r))
        .collect()
}

/// What the record says at a run's start (its own `Connected` line last).
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Past {
    /// The oldest line's time: history starts there.
    pub since: Option<SystemTime>,
    /// The stretches no electop watched, oldest first (the last ends at this connect).
    pub gaps: Vec<HistoryGap>,
    /// Each election's changes, oldest first.
    pub changes: BTreeMap<String, Vec<HistoryEntry>>,
}

pub(crate) fn past(recs: &[Rec]) -> Past {
    let mut p = Past {
        since: recs.iter().filter_map(Rec::at).min(),
        ..Past::default()
    };
    let mut last: Option<&Rec> = None;
    for r in recs {
        match r {
            Rec::Change { election, entry } => p
                .changes
                .entry(election.clone())
                .or_default()
                .push(entry.clone()),
            Rec::Connected(to) => {
                if let Some(prev) = last
                    && let Some(from) = prev.at()
                    && !matches!(prev, Rec::Connected(t) if t == to)
                {
                    p.gaps.push(HistoryGap {
                        from,
                        to: *to,
                        stop_recorded: matches!(prev, Rec::Stopped(_)),
                    });
                }
            }
            Rec::Stopped(_) => {}
        }
        last = Some(r);
    }
    p
}

/// `zookeeper-history-<source>-<hash>.jsonl`: readable, and the hash keeps two sources that
/// escape alike apart.
pub(crate) fn file_name(key: &str) -> String {
    let mut escaped: String = key
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    escaped.truncate(80);
    format!("zookeeper-history-{escaped}-{:016x}.jsonl", fnv1a(key))
}

/// FNV-1a: stable across Rust versions, unlike `DefaultHasher`, so the file is found again.
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The record file of one source, appended to as the run goes.
pub(crate) struct Record {
    path: PathBuf,
    limit: usize,
    /// Lines in the file, to know when to rewrite it.
    lines: usize,
    elections: BTreeSet<String>,
    /// Why the file could not be read or written, said once.
    pub(crate) failed: Option<String>,
    /// This run's `Connected` line is in: its stop is said when the record is dropped.
    started: bool,
}

impl Record {
    /// The record of the source named by `key`, beside the audit log; none without a data dir.
    pub(crate) fn open(key: &str, limit: usize) -> Option<Record> {
        let dir = crate::admin::audit::default_path()?.parent()?.to_path_buf();
        Some(Record::at(dir.join(file_name(key)), limit))
    }

    pub(crate) fn at(path: PathBuf, limit: usize) -> Record {
        Record {
            path,
            limit: limit.max(1),
            lines: 0,
            elections: BTreeSet::new(),
            failed: None,
            started: false,
        }
    }

    /// Reads the record (bounded), and marks this run as connected at `now`.
    pub(crate) fn start(&mut self, now: SystemTime) -> Past {
        let path = self.path.clone();
        let read = exclusive(&path, || {
            let text = match std::fs::read_to_string(&path) {
                Ok(t) => t,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
                Err(e) => {
                    self.fail(format!("cannot read {}: {e}", path.display()));
                    String::new()
                }
            };
            let mut recs: Vec<Rec> = text.lines().filter_map(decode).collect();
            let total = recs.len();
            recs.push(Rec::Connected(now));
            let recs = compact(recs, self.limit);
            self.lines = total;
            self.note(&recs);
            if recs.len() < total {
                self.rewrite(&recs);
            } else if self.failed.is_none() {
                match append_line(&path, &encode(&Rec::Connected(now))) {
                    Ok(()) => self.lines += 1,
                    Err(e) => self.fail(format!("cannot write {}: {e}", path.display())),
                }
            }
            Ok(recs)
        });
        self.started = true;
        let recs = read.unwrap_or_else(|e| {
            self.fail(format!("cannot lock {}: {e}", self.path.display()));
            Vec::new()
        });
        past(&recs)
    }

    pub(crate) fn append(&mut self, r: &Rec) {
        if self.failed.is_some() {
            return;
        }
        self.note(std::slice::from_ref(r));
        if let Err(e) = exclusive(&self.path, || append_line(&self.path, &encode(r))) {
            return self.fail(format!("cannot write {}: {e}", self.path.display()));
        }
        self.lines += 1;
        if self.lines > self.bound() {
            self.reread_and_rewrite();
        }
    }

    /// Twice what the bound keeps, so a rewrite comes once per many changes.
    fn bound(&self) -> usize {
        2 * (self.limit * self.elections.len().max(1) + 2 * RUNS_KEPT)
    }

    fn note(&mut self, recs: &[Rec]) {
        for r in recs {
            if let Rec::Change { election, .. } = r
                && !self.elections.contains(election)
            {
                self.elections.insert(election.clone());
            }
        }
    }

    fn reread_and_rewrite(&mut self) {
        let path = self.path.clone();
        let reread = exclusive(&path, || {
            let text = std::fs::read_to_string(&path)?;
            let recs = compact(text.lines().filter_map(decode).collect(), self.limit);
            self.rewrite(&recs);
            Ok(())
        });
        if let Err(e) = reread {
            self.fail(format!("cannot read {}: {e}", self.path.display()));
        }
    }

    /// Replaces the file by `recs` through a file renamed over it: a crash leaves the old.
    fn rewrite(&mut self, recs: &[Rec]) {
        let tmp = self.path.with_extension("jsonl.new");
        let text: String = recs.iter().map(|r| encode(r) + "\n").collect();
        let written = create_dir(&self.path)
            .and_then(|_| std::fs::write(&tmp, text))
            .and_then(|_| std::fs::rename(&tmp, &self.path));
        match written {
            Ok(()) => self.lines = recs.len(),
            Err(e) => self.fail(format!("cannot write {}: {e}", self.path.display())),
        }
    }

    fn fail(&mut self, why: String) {
        if self.failed.is_none() {
            warn!(error = %why, "electop's ZooKeeper history record");
            self.failed = Some(why);
        }
    }
}

/// A clean stop (the follow task dropped as electop exits) says when: the next run's gap
/// then starts here, not at this run's last change. A killed electop says nothing.
impl Drop for Record {
    fn drop(&mut self) {
        if self.started {
            self.append(&Rec::Stopped(SystemTime::now()));
        }
    }
}

fn create_dir(path: &Path) -> std::io::Result<()> {
    match path.parent() {
        Some(dir) => std::fs::create_dir_all(dir),
        None => Ok(()),
    }
}

/// Runs `f` holding an exclusive lock on the record (`flock` on a `.lock` file beside it):
/// two electops on the same source share the file, and a line one appends between the
/// other's reading and renaming for a rewrite would be lost with the old file.
fn exclusive<T>(path: &Path, f: impl FnOnce() -> std::io::Result<T>) -> std::io::Result<T> {
    use std::os::fd::AsRawFd;
    let lock = create_dir(path).and_then(|()| {
        std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path.with_extension("jsonl.lock"))
    });
    // A directory where no lock can be made cannot take the record either: `f` finds that
    // out and says it, so go on without the lock.
    let Ok(lock) = lock else { return f() };
    // SAFETY: flock on a file descriptor this function owns for the call; closing the
    // file when it drops releases the lock. Not held across an await: the record is
    // written from the follow task between reads, and each hold is one small file write.
    if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let done = f();
    drop(lock);
    done
}

/// One line appended, as the audit log does (not synced: a change lost in a crash is not
/// an admin action lost).
fn append_line(path: &Path, line: &str) -> std::io::Result<()> {
    create_dir(path)?;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    file.write_all(format!("{line}\n").as_bytes())
}

#[cfg(test)]
mod tests;
