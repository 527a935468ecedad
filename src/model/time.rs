//! Wall-clock formatting shared by the JSON output and the screen.

use std::time::SystemTime;

use serde::Serializer;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

pub fn rfc3339(t: SystemTime) -> String {
    OffsetDateTime::from(t)
        .format(&Rfc3339)
        .unwrap_or_else(|_| "?".to_string())
}

/// `HH:MM:SS` in UTC, for the history timeline.
pub fn clock(t: SystemTime) -> String {
    let dt = OffsetDateTime::from(t);
    format!("{:02}:{:02}:{:02}", dt.hour(), dt.minute(), dt.second())
}

pub fn serialize_opt<S: Serializer>(t: &Option<SystemTime>, s: S) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) => s.serialize_str(&rfc3339(*t)),
        None => s.serialize_none(),
    }
}
