//! The audit log, JSON lines in the platform data dir: an action's `attempt` before the
//! store is touched and its outcome after (a crash in between leaves the attempt on
//! record), an action refused before any store call, and an admin command that was not
//! understood (`usage`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::Serialize;

use super::{AdminRequest, Outcome};
use crate::model::Kept;
use crate::model::time;

pub(crate) fn default_path() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "electop").map(|d| d.data_dir().join("audit.jsonl"))
}

#[derive(Serialize)]
struct Line<'a> {
    at: String,
    /// `user@host` of whoever ran electop.
    by: String,
    /// Ties an action's `attempt` line to its outcome line.
    id: &'a str,
    source: &'a str,
    election: &'a str,
    #[serde(flatten)]
    action: &'a super::ActionKind,
    /// The leader as seen when the action was asked for.
    before: Option<&'a str>,
    /// Its lease (etcd), so a later electop can tell whether the holder it removed may
    /// still believe it leads.
    #[serde(skip_serializing_if = "Option::is_none")]
    before_lease: Option<i64>,
    /// Its session (ZooKeeper, `0x…`), for the same reason: a deposed client goes on
    /// believing it leads while that session lives.
    #[serde(skip_serializing_if = "Option::is_none")]
    before_session: Option<&'a str>,
    /// Its lock key's time left (Redis, ms, as of `at`), for the same reason: a deposed
    /// holder goes on believing it leads until its countdown would have ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    before_ttl_ms: Option<i64>,
    /// What the store holds after (or the reason nothing changed); none on an attempt.
    after: Option<&'a str>,
    /// `attempt` before the store is touched, then how it ended.
    outcome: &'static str,
}

/// A command line that was not understood: nothing was read or written.
#[derive(Serialize)]
struct UsageLine<'a> {
    at: String,
    by: String,
    id: &'a str,
    action: &'a str,
    election: Option<&'a str>,
    /// What was wrong with it.
    after: &'a str,
    outcome: &'static str,
}

/// One action's lines in the log at the default path (none when there is no data dir).
pub(crate) struct Trail {
    path: Option<PathBuf>,
    id: String,
}

impl Default for Trail {
    fn default() -> Self {
        Trail {
            path: default_path(),
            id: new_id(),
        }
    }
}

impl Trail {
    /// Records the attempt. An error means the action must not go ahead: it would not be
    /// on record.
    pub(crate) fn attempt(&self, req: &AdminRequest) -> Result<(), String> {
        match &self.path {
            Some(p) => record_attempt(p, &self.id, req).map_err(|e| {
                format!(
                    "cannot write the audit log {}: {e}; nothing was done",
                    p.display()
                )
            }),
            None => Ok(()),
        }
    }

    pub(crate) fn outcome(&self, req: &AdminRequest, outcome: &Outcome) -> Result<(), String> {
        match &self.path {
            Some(p) => record(p, &self.id, req, outcome)
                .map_err(|e| format!("cannot write the audit log {}: {e}", p.display())),
            None => Ok(()),
        }
    }
}

/// A fresh id for one action's lines: unique per process and instant.
pub(crate) fn new_id() -> String {
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{}-{nanos}", std::process::id())
}

/// The user name of this process's uid, from /etc/passwd.
fn passwd_user() -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let uid = std::fs::metadata("/proc/self").ok()?.uid().to_string();
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.get(2) == Some(&uid.as_str())).then(|| f[0].to_string())
    })
}

fn who() -> String {
    let user = std::env::var("USER")
        .or_else(|_| std::env::var("LOGNAME"))
        .ok()
        .or_else(passwd_user)
        .unwrap_or_else(|| "unknown".into());
    let host = std::fs::read_to_string("/etc/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".into());
    format!("{user}@{host}")
}

/// Appends an action's attempt, before the store is touched: a crash before its outcome
/// leaves the attempt on record.
pub(crate) fn record_attempt(path: &Path, id: &str, req: &AdminRequest) -> std::io::Result<()> {
    append(path, &line(id, req, None, "attempt"))
}

/// Appends how the action `id` ended (or, without an attempt line, why it was not tried).
pub(crate) fn record(
    path: &Path,
    id: &str,
    req: &AdminRequest,
    outcome: &Outcome,
) -> std::io::Result<()> {
    append(
        path,
        &line(id, req, Some(outcome.message()), outcome.label()),
    )
}

/// Appends an admin command that was not understood (exit 2): `action` as typed, the
/// election when it got that far, and what was wrong (no argument values: they may hold
/// passwords).
pub(crate) fn record_usage(
    path: &Path,
    action: &str,
    election: Option<&str>,
    error: &str,
) -> std::io::Result<()> {
    let line = UsageLine {
        at: time::rfc3339(SystemTime::now()),
        by: who(),
        id: &new_id(),
        action,
        election,
        after: error,
        outcome: "usage",
    };
    append(path, &line)
}

fn line<'a>(
    id: &'a str,
    req: &'a AdminRequest,
    after: Option<&'a str>,
    outcome: &'static str,
) -> Line<'a> {
    let before = req.seen.leader.as_ref().or(req.seen.candidates.first());
    let kept = req.seen.scheme.facts().kept;
    Line {
        at: time::rfc3339(SystemTime::now()),
        by: who(),
        id,
        source: &req.source_name,
        election: &req.seen.name,
        action: &req.kind,
        before: before.map(|c| c.id.as_str()),
        before_lease: before.and_then(|c| c.lease).filter(|l| *l != 0),
        before_session: before
            .filter(|_| kept == Kept::Session)
            .and_then(|c| c.stamp.as_deref()),
        before_ttl_ms: before
            .filter(|_| kept == Kept::TimeLeft)
            .and_then(|c| c.ttl)
            .map(|t| t.remaining_ms_at(std::time::Instant::now())),
        after,
        outcome,
    }
}

/// One JSON line, appended and synced: the record must outlive a crash right after.
fn append(path: &Path, line: &impl Serialize) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut text = serde_json::to_string(line)?;
    text.push('\n');
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    file.write_all(text.as_bytes())?;
    file.sync_data()
}
