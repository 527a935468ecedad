//! Wall-clock formatting shared by the JSON output and the screen.

use std::time::SystemTime;

use serde::Serializer;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

pub(crate) fn rfc3339(t: SystemTime) -> String {
    OffsetDateTime::from(t)
        .format(&Rfc3339)
        .unwrap_or_else(|_| "?".to_string())
}

/// An RFC 3339 time as [`rfc3339`] writes it, back into a `SystemTime`.
pub(crate) fn parse_rfc3339(text: &str) -> Option<SystemTime> {
    OffsetDateTime::parse(text, &Rfc3339)
        .ok()
        .map(SystemTime::from)
}

/// `HH:MM:SS` in UTC, for the history timeline.
pub(crate) fn clock(t: SystemTime) -> String {
    let dt = OffsetDateTime::from(t);
    format!("{:02}:{:02}:{:02}", dt.hour(), dt.minute(), dt.second())
}

/// `from HH:MM:SS to HH:MM:SS`; where both ends fall in one second, to the millisecond
/// (`from 22:18:36.120 to 22:18:36.870`): a stretch is never shown as if it had no length.
pub(crate) fn stretch(from: SystemTime, to: SystemTime) -> String {
    let (a, b) = (clock(from), clock(to));
    if a != b {
        return format!("from {a} to {b}");
    }
    let utc = time::UtcOffset::UTC;
    format!("from {} to {}", clock_ms(from, utc), clock_ms(to, utc))
}

pub(crate) fn serialize_opt<S: Serializer>(
    t: &Option<SystemTime>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) => s.serialize_str(&rfc3339(*t)),
        None => s.serialize_none(),
    }
}

/// `12.3s`, `4m05s`, `2h10m`.
pub(crate) fn duration_ms(ms: i64) -> String {
    let ms = ms.max(0);
    if ms < 60_000 {
        format!("{}.{}s", ms / 1000, (ms % 1000) / 100)
    } else if ms < 3_600_000 {
        format!("{}m{:02}s", ms / 60_000, (ms % 60_000) / 1000)
    } else {
        format!("{}h{:02}m", ms / 3_600_000, (ms % 3_600_000) / 60_000)
    }
}

/// `HH:MM:SS.mmm` at `offset` from UTC: the screen passes UTC, like its other times; `watch`
/// the local offset.
pub(crate) fn clock_ms(t: SystemTime, offset: time::UtcOffset) -> String {
    let dt = OffsetDateTime::from(t).to_offset(offset);
    format!(
        "{:02}:{:02}:{:02}.{:03}",
        dt.hour(),
        dt.minute(),
        dt.second(),
        dt.millisecond()
    )
}
