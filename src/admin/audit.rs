//! The audit log: every attempted action as a JSON line in the platform data dir, whatever
//! its outcome.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::Serialize;

use super::{AdminRequest, Outcome};
use crate::model::time;

pub fn default_path() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "electop").map(|d| d.data_dir().join("audit.jsonl"))
}

#[derive(Serialize)]
struct Line<'a> {
    at: String,
    /// `user@host` of whoever ran electop.
    by: String,
    source: &'a str,
    election: &'a str,
    #[serde(flatten)]
    action: &'a super::ActionKind,
    /// The leader as seen when the action was asked for.
    before: Option<&'a str>,
    /// What the store holds after (or the reason nothing changed).
    after: &'a str,
    outcome: &'static str,
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

/// Appends one action to the log at `path`.
pub fn record(path: &Path, req: &AdminRequest, outcome: &Outcome) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let line = Line {
        at: time::rfc3339(SystemTime::now()),
        by: who(),
        source: &req.source_name,
        election: &req.seen.name,
        action: &req.kind,
        before: req
            .seen
            .leader
            .as_ref()
            .or(req.seen.candidates.first())
            .map(|c| c.id.as_str()),
        after: outcome.message(),
        outcome: outcome.label(),
    };
    let mut text = serde_json::to_string(&line)?;
    text.push('\n');
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?
        .write_all(text.as_bytes())
}
