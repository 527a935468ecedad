//! One record as one line of the journal and back (docs/history.md gives the format).

use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use super::{Entry, VERSION};
use crate::model::time::{parse_rfc3339, rfc3339};
use crate::model::{Cause, HistoryEntry};

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
    /// The end of an outage or a deposed stretch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    until: Option<String>,
    /// An outage: the connection was lost (else stale).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    down: Option<bool>,
    /// A deposed holder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    holder: Option<String>,
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
            until: None,
            down: None,
            holder: None,
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
        Entry::Alive(at) => Line::new("alive", Some(*at)),
        Entry::Outage { from, to, down } => Line {
            until: to.map(rfc3339),
            down: Some(*down),
            ..Line::new("outage", Some(*from))
        },
        Entry::Deposed(d) => Line {
            election: Some(d.election.clone()),
            holder: Some(d.holder.clone()),
            until: d.to.map(rfc3339),
            ..Line::new("deposed", Some(d.from))
        },
    };
    serde_json::to_string(&line).unwrap_or_default()
}

/// One line back; `None` for a line that is not a record of this version: skipped.
pub(crate) fn decode(text: &str) -> Option<Entry> {
    let l: Line = serde_json::from_str(text).ok()?;
    if l.v == 0 || l.v > VERSION {
        return None;
    }
    let at = match &l.at {
        Some(text) => Some(parse_rfc3339(text)?),
        None => None,
    };
    let until = match &l.until {
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
        "alive" if l.v >= 2 => Some(Entry::Alive(at?)),
        "outage" if l.v >= 2 => Some(Entry::Outage {
            from: at?,
            to: until,
            down: l.down.unwrap_or(false),
        }),
        "deposed" if l.v >= 2 => Some(Entry::Deposed(crate::model::marks::Deposed {
            election: l.election?,
            holder: l.holder?,
            from: at?,
            to: until,
        })),
        _ => None,
    }
}
