//! Following the shared audit log: an admin action another electop carried out on a store
//! this one watches is recognised, so its leader change is recorded as forced, and by whom,
//! rather than as what the store alone suggests.

use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;

use serde::Deserialize;

use crate::model::Cause;

/// A finished action from the log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Done {
    /// The process that wrote it (the id's prefix).
    pub pid: Option<u32>,
    pub source: String,
    pub election: String,
    pub cause: Cause,
    pub by: String,
    pub before: Option<String>,
    /// The removed leader's lease (etcd), where the line has it.
    pub before_lease: Option<i64>,
    /// The removed leader's session (ZooKeeper, `0x…`), where the line has it.
    pub before_session: Option<String>,
    /// The removed holder's lock key's time left as of `at` (Redis, ms), where the line has
    /// it.
    pub before_ttl_ms: Option<i64>,
    pub at: Option<std::time::SystemTime>,
}

#[derive(Deserialize)]
struct Line {
    id: Option<String>,
    source: Option<String>,
    election: Option<String>,
    action: Option<String>,
    before: Option<String>,
    before_lease: Option<i64>,
    before_session: Option<String>,
    before_ttl_ms: Option<i64>,
    outcome: Option<String>,
    by: Option<String>,
    at: Option<String>,
}

/// A `done` line, or nothing (attempts, refusals, usage errors, anything unreadable).
pub(crate) fn parse(line: &str) -> Option<Done> {
    let l: Line = serde_json::from_str(line).ok()?;
    if l.outcome.as_deref() != Some("done") {
        return None;
    }
    let cause = match l.action.as_deref()? {
        "force-leader" => Cause::ForcedLeader,
        "reelect" => Cause::ForcedReelection,
        "resign" => Cause::ForcedResign,
        _ => return None,
    };
    Some(Done {
        pid: l.id.as_deref()?.split('-').next()?.parse().ok(),
        source: l.source?,
        election: l.election?,
        cause,
        by: l.by.unwrap_or_else(|| "another electop".into()),
        before: l.before,
        before_lease: l.before_lease,
        before_session: l.before_session,
        before_ttl_ms: l.before_ttl_ms,
        at: l.at.as_deref().and_then(crate::model::time::parse_rfc3339),
    })
}

/// How much of the log's end is read for the actions that still matter when electop starts
/// (a holder an admin removed whose lease lives on): the newest actions, quickly, however
/// long the log has grown.
const RECENT_BYTES: u64 = 1 << 20;

/// The finished actions on `source` in the last part of the log at `path`, oldest first.
pub(crate) fn recent(path: &std::path::Path, source: &str) -> Vec<Done> {
    let Ok(mut f) = std::fs::File::open(path) else {
        return Vec::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let from = len.saturating_sub(RECENT_BYTES);
    let mut buf = Vec::new();
    if f.seek(SeekFrom::Start(from)).is_err() || f.read_to_end(&mut buf).is_err() {
        return Vec::new();
    }
    let text = String::from_utf8_lossy(&buf);
    // Started mid-line: the first line is a fragment.
    let whole = if from > 0 {
        text.split_once('\n').map_or("", |(_, rest)| rest)
    } else {
        &text
    };
    whole
        .lines()
        .filter_map(parse)
        .filter(|d| d.source == source)
        .collect()
}

/// Reads what was appended to the log since the last call.
pub(crate) struct Tail {
    path: PathBuf,
    offset: u64,
    partial: String,
}

impl Tail {
    /// From the log's current end: only actions from now on matter.
    pub(crate) fn from_end(path: PathBuf) -> Tail {
        let offset = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        Tail {
            path,
            offset,
            partial: String::new(),
        }
    }

    pub(crate) fn read_new(&mut self) -> Vec<Done> {
        let Ok(mut f) = std::fs::File::open(&self.path) else {
            return Vec::new();
        };
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        if len < self.offset {
            // Rotated or truncated: start over from its beginning.
            self.offset = 0;
            self.partial.clear();
        }
        let mut buf = Vec::new();
        if f.seek(SeekFrom::Start(self.offset)).is_err() || f.read_to_end(&mut buf).is_err() {
            return Vec::new();
        }
        self.offset += buf.len() as u64;
        self.partial.push_str(&String::from_utf8_lossy(&buf));
        let Some(cut) = self.partial.rfind('\n') else {
            return Vec::new();
        };
        let complete: String = self.partial.drain(..=cut).collect();
        complete.lines().filter_map(parse).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn done_lines_are_read_as_they_are_appended() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("audit.jsonl");
        std::fs::write(&path, "{\"outcome\":\"done\",\"action\":\"reelect\"}\n").expect("w");
        let mut t = Tail::from_end(path.clone());
        assert!(t.read_new().is_empty(), "what was there before is not news");
        let attempt = r#"{"id":"42-1","source":"etcd a /e/","election":"jobs","action":"resign","before":"node-a","outcome":"attempt","by":"ops@h"}"#;
        let done = attempt.replace("attempt", "done");
        let text = format!("{attempt}\n{done}\n{{\"id\":\"42-2\",\"outc");
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .expect("open");
        std::io::Write::write_all(&mut f, text.as_bytes()).expect("append");
        let got = t.read_new();
        assert_eq!(
            got,
            [Done {
                pid: Some(42),
                source: "etcd a /e/".into(),
                election: "jobs".into(),
                cause: Cause::ForcedResign,
                by: "ops@h".into(),
                before: Some("node-a".into()),
                before_lease: None,
                before_session: None,
                before_ttl_ms: None,
                at: None,
            }]
        );
        assert!(t.read_new().is_empty(), "a half-written line waits");
    }
}
