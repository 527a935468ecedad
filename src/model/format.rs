//! Turning times and countdowns into short text.

use std::time::{Duration, SystemTime};

use crate::model::{Candidate, Deadline, HistoryEntry};
use std::time::Instant;

pub(crate) use crate::model::time::duration_ms;

/// `1 election`, `3 elections`.
pub(crate) fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Leader changes per minute: `30/m`; nothing for none.
pub(crate) fn rate(per_min: f64) -> String {
    if per_min <= 0.0 {
        String::new()
    } else if per_min < 10.0 && per_min.fract() != 0.0 {
        format!("{per_min:.1}/m")
    } else {
        format!("{per_min:.0}/m")
    }
}

/// A countdown bar of `width` cells followed by the time left.
pub(crate) fn ttl_bar(d: &Deadline, now: Instant, width: usize) -> String {
    let ratio = d.ratio_at(now);
    let filled = (ratio * width as f64).round() as usize;
    let mut s = "█".repeat(filled.min(width));
    s.push_str(&"░".repeat(width - filled.min(width)));
    s.push(' ');
    s.push_str(&duration_ms(d.remaining_ms_at(now)));
    s
}

/// The TTL cell of a candidate: a bar, `∞ no lease` for a zombie, `…` before the first read.
pub(crate) fn ttl_cell(c: &Candidate, now: Instant, width: usize) -> String {
    if c.zombie() {
        return "∞ no lease".to_string();
    }
    match &c.ttl {
        Some(d) => ttl_bar(d, now, width),
        None => "…".to_string(),
    }
}

/// The TTL column of a candidate of `scheme`: a time to live, or `—` where the scheme has
/// none. ZooKeeper gives no per-node deadline and a session lock is held while its session
/// lasts: nothing counted down that the store did not say (the detail pane names the
/// session).
pub(crate) fn hold_cell(
    scheme: super::Scheme,
    c: &Candidate,
    now: Instant,
    width: usize,
) -> String {
    match held_without_ttl(scheme, c) {
        Some(text) => text.to_string(),
        None => ttl_cell(c, now, width),
    }
}

/// What the TTL column says of a candidate with nothing to count down: `—` where the scheme
/// holds for a session (the scheme facts say which), `no expiry` for a key whose own
/// countdown is not set (held until deleted: not "not read yet", never). `None`: a time to
/// live to show.
pub(crate) fn held_without_ttl(scheme: super::Scheme, c: &Candidate) -> Option<&'static str> {
    match scheme.facts().held {
        super::scheme::Held::Session => Some(NO_TTL),
        super::scheme::Held::Expiry if c.ttl.is_none() => Some("no expiry"),
        super::scheme::Held::Term | super::scheme::Held::Expiry => None,
    }
}

/// The TTL column where the scheme has no time to live.
pub(crate) const NO_TTL: &str = "—";

/// Who is in line, counted as the LINE column counts: `2 waiting` behind the leader (or,
/// with none, for the lead); `None` where the store keeps no line.
pub(crate) fn in_line(e: &super::Election) -> Option<String> {
    e.waiting().map(|n| format!("{n} waiting"))
}

/// `5s ago`, `3m ago`; `rev 42` for a replayed change with no time.
pub(crate) fn age(entry: &HistoryEntry, wall: SystemTime) -> String {
    match entry.at {
        Some(at) => {
            let d = wall.duration_since(at).unwrap_or(Duration::ZERO);
            let s = d.as_secs();
            if s < 60 {
                format!("{s}s ago")
            } else if s < 3600 {
                format!("{}m ago", s / 60)
            } else if s < 86_400 {
                format!("{}h ago", s / 3600)
            } else {
                format!("{}d ago", s / 86_400)
            }
        }
        None => entry
            .revision
            .map(|r| format!("rev {r}"))
            .unwrap_or_default(),
    }
}

/// A row's deadline as stored, readable: SQLite rows written as Unix seconds (or ms) show
/// as a UTC time with the number beside it; anything else as it is.
pub(crate) fn stamp(raw: &str) -> String {
    let Ok(n) = raw.trim().parse::<i64>() else {
        return raw.to_string();
    };
    // Seconds from 2001 to 2286, or milliseconds in the same span: a time, not a counter.
    let secs = match n {
        1_000_000_000..=9_999_999_999 => n,
        1_000_000_000_000..=9_999_999_999_999 => n / 1000,
        _ => return raw.to_string(),
    };
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs as u64);
    format!("{} ({raw})", super::time::rfc3339(at))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deadline_stored_as_unix_seconds_reads_as_a_time() {
        assert_eq!(stamp("1795478408"), "2026-11-24T00:00:08Z (1795478408)");
        assert_eq!(
            stamp("1795478408123"),
            "2026-11-24T00:00:08Z (1795478408123)"
        );
        assert_eq!(stamp("2026-11-23 22:40:08"), "2026-11-23 22:40:08");
        assert_eq!(stamp("42"), "42", "a small number is not a time");
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(duration_ms(12_345), "12.3s");
        assert_eq!(duration_ms(245_000), "4m05s");
        assert_eq!(duration_ms(7_800_000), "2h10m");
        assert_eq!(duration_ms(-5), "0.0s");
    }

    #[test]
    fn the_ttl_column_holds_a_time_to_live_or_a_dash() {
        use super::super::Scheme;
        let now = Instant::now();
        let mut c = Candidate::plain("latch-1", "/election/latch-0000000001");
        // A ZooKeeper holder's session id is not a time to live.
        c.stamp = Some("0x100001013600000".into());
        for s in [Scheme::ZkRecipe, Scheme::PgAdvisory, Scheme::MysqlLock] {
            assert_eq!(hold_cell(s, &c, now, 4), "—", "{s}");
        }
        assert_eq!(hold_cell(Scheme::RedisLock, &c, now, 4), "no expiry");
    }

    #[test]
    fn the_line_is_counted_behind_the_leader() {
        use super::super::{Election, Scheme};
        let mut e = Election::new(0, "jobs".into(), Scheme::EtcdElection);
        e.candidates = vec![Candidate::plain("a", "k/a"), Candidate::plain("b", "k/b")];
        e.leader = e.candidates.first().cloned();
        assert_eq!(e.waiting(), Some(1));
        assert_eq!(in_line(&e).as_deref(), Some("1 waiting"));
        e.leader = None;
        assert_eq!(in_line(&e).as_deref(), Some("2 waiting"));
    }

    #[test]
    fn bar_fills_with_the_ratio() {
        let now = Instant::now();
        let d = Deadline {
            granted_ms: 10_000,
            remaining_ms: 5_000,
            read_at: now,
        };
        assert_eq!(ttl_bar(&d, now, 4), "██░░ 5.0s");
    }
}
