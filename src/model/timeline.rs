//! Who led when: an election's history (oldest first) turned into the stretches each holder
//! led and the stretches nobody did, over a window of time, with a summary. Pure: every
//! time comes in as an argument. `electop history`, `/api/v1/history` and (later) the
//! dashboard's timeline strip read the same [`Timeline`].
//!
//! What is claimed is only what the history says:
//! - Nothing before the oldest change with a time: who led then, and since when, is not
//!   known (the history may have been cut, or no electop watched). The strip is blank there;
//!   [`Timeline::led_before`] names who led just before that change, without a start.
//! - Changes with no time (`at: None`: etcd revisions replayed from before any electop saw
//!   them live) are **left out**, not placed between their neighbours: their place in time
//!   is not known, and a guessed one would draw a tenure that did not happen. They are
//!   counted in [`Summary::untimed`]; a holder's stretch runs on to the next timed change.
//! - A change that keeps the holder (etcd's Proclaim of a new value) does not split its
//!   tenure.

use std::time::{Duration, SystemTime};

use serde::{Serialize, Serializer};

use super::{Cause, HistoryEntry};

/// One election's leadership over `[since, until]`, in time order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Timeline {
    #[serde(serialize_with = "rfc3339")]
    pub since: SystemTime,
    /// The window's end, never later than `now`.
    #[serde(serialize_with = "rfc3339")]
    pub until: SystemTime,
    /// From when the history tells who led: the window's start, or the oldest timed change
    /// if later; `None` when no timed change is known at or before `until`.
    #[serde(serialize_with = "super::time::serialize_opt")]
    pub known_from: Option<SystemTime>,
    /// Who led just before `known_from` (the oldest change's `from`), or, with no timed
    /// change at all, the leader now: since when is not known.
    pub led_before: Option<String>,
    /// Tenures and gaps, each starting where the one before ends, clipped to the window.
    pub segments: Vec<Segment>,
    pub summary: Summary,
}

/// A stretch of the strip: a holder leading, or nobody.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Segment {
    Tenure(Tenure),
    Gap(Gap),
}

impl Segment {
    pub fn span(&self) -> (SystemTime, SystemTime) {
        match self {
            Segment::Tenure(t) => (t.start, t.end),
            Segment::Gap(g) => (g.start, g.end),
        }
    }
}

/// A holder's stretch as leader.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Tenure {
    pub holder: String,
    /// When it began, or the window's start if earlier.
    #[serde(serialize_with = "rfc3339")]
    pub start: SystemTime,
    /// When it ended, or the window's end if later (or it goes on).
    #[serde(serialize_with = "rfc3339")]
    pub end: SystemTime,
    /// Within the window.
    pub duration_ms: i64,
    /// No later change is known: it goes on (as of the history read).
    pub ongoing: bool,
    pub cause_in: Cause,
    /// `None` while it goes on.
    pub cause_out: Option<Cause>,
    /// Who forced the change that began it (`force-leader`), if forced.
    pub forced_in_by: Option<String>,
    /// Who forced the change that ended it (`resign`, `reelect`), if forced.
    pub forced_out_by: Option<String>,
}

/// A stretch without a leader.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Gap {
    #[serde(serialize_with = "rfc3339")]
    pub start: SystemTime,
    #[serde(serialize_with = "rfc3339")]
    pub end: SystemTime,
    pub duration_ms: i64,
    pub ongoing: bool,
    /// The cause of the change that left the election without a leader.
    pub cause: Cause,
    /// The holder that change ended.
    pub after: Option<String>,
}

/// The window in figures. Durations are those within the window (a gap begun before it
/// counts from its start).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Timed changes in the window.
    pub changes: usize,
    /// Changes away from a holder (to another or to nobody).
    pub failovers: usize,
    pub gaps: usize,
    pub no_leader_ms: i64,
    pub longest_gap_ms: Option<i64>,
    pub p50_gap_ms: Option<i64>,
    pub p95_gap_ms: Option<i64>,
    /// Changes an admin action made (force-leader, reelect, resign).
    pub forced: usize,
    /// Changes with no time, left out (see the module's doc).
    pub untimed: usize,
}

/// Where the window starts or ends, as typed: a time, or a duration before now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum When {
    Ago(Duration),
    At(SystemTime),
}

impl When {
    pub fn resolve(self, now: SystemTime) -> SystemTime {
        match self {
            When::Ago(d) => now.checked_sub(d).unwrap_or(SystemTime::UNIX_EPOCH),
            When::At(t) => t,
        }
    }
}

/// `90m`, `1h`, `24h`, `30s`, `500ms` (a duration before now) or an RFC 3339 time. A bare
/// number is refused: seconds or minutes, a reader could not tell.
pub fn parse_when(text: &str) -> Result<When, String> {
    let t = text.trim();
    if let Some(at) = super::time::parse_rfc3339(t) {
        return Ok(When::At(at));
    }
    let bad = || format!("`{t}` is neither a duration (1h, 90m, 30s) nor an RFC 3339 time");
    let split = t
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .ok_or_else(bad)?;
    let (num, unit) = t.split_at(split);
    let n: f64 = num.parse().map_err(|_| bad())?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => return Err(bad()),
    };
    Duration::try_from_secs_f64(secs)
        .map(When::Ago)
        .map_err(|_| bad())
}

fn rfc3339<S: Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&super::time::rfc3339(*t))
}

fn ms(from: SystemTime, to: SystemTime) -> i64 {
    to.duration_since(from)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Who held from a change on: the holder (or nobody), and the change that began it.
struct Open<'a> {
    start: SystemTime,
    holder: Option<&'a str>,
    entry: &'a HistoryEntry,
}

/// The timeline of one election over `[since, until]` (`until` taken no later than `now`),
/// from its `history`, oldest first, and its `leader` now.
///
/// `history` is any walk of the entries (a ring's two halves, chained), so a bounded
/// history is never copied to be drawn.
pub fn timeline<'a>(
    history: impl IntoIterator<Item = &'a HistoryEntry>,
    leader: Option<&str>,
    since: SystemTime,
    until: SystemTime,
    now: SystemTime,
) -> Timeline {
    let until = until.min(now).max(since);
    let history = history.into_iter();
    let mut timed: Vec<(SystemTime, &HistoryEntry)> = Vec::with_capacity(history.size_hint().0);
    let mut untimed = 0;
    for e in history {
        let Some(at) = e.at else {
            untimed += 1;
            continue;
        };
        if e.from.is_some() && e.from == e.to {
            continue;
        }
        // Oldest first as recorded; a clock step back is held at the time before it.
        let at = timed.last().map_or(at, |(prev, _)| at.max(*prev));
        timed.push((at, e));
    }
    let mut summary = Summary {
        untimed,
        ..Summary::default()
    };
    let led_before = match timed.first() {
        Some((_, e)) => e.from.clone(),
        None => leader.map(str::to_string),
    };
    let mut t = Timeline {
        since,
        until,
        known_from: None,
        led_before,
        segments: Vec::new(),
        summary: Summary::default(),
    };
    let mut open: Option<Open> = None;
    for (at, e) in &timed {
        if *at > until {
            if let Some(o) = open.take() {
                t.segments.push(close(o, until, Some(e)));
            }
            break;
        }
        if *at > since {
            count(&mut summary, e);
        }
        let start = (*at).max(since);
        if let Some(o) = open.take()
            && *at > since
        {
            t.segments.push(close(o, start, Some(e)));
        }
        open = Some(Open {
            start,
            holder: e.to.as_deref(),
            entry: e,
        });
        t.known_from.get_or_insert(start);
    }
    if let Some(o) = open.take() {
        t.segments.push(close(o, until, None));
    }
    // A change exactly at the window's end opens a stretch of no length: nothing to draw.
    t.segments.retain(|s| {
        let (a, b) = s.span();
        b > a
    });
    gap_figures(&mut summary, &t.segments);
    t.summary = summary;
    t
}

/// The stretch `o` opened, ended at `end` by the change `out` (`None`: it goes on).
fn close(o: Open<'_>, end: SystemTime, out: Option<&&HistoryEntry>) -> Segment {
    let (start, duration_ms, ongoing) = (o.start, ms(o.start, end), out.is_none());
    match o.holder {
        Some(holder) => Segment::Tenure(Tenure {
            holder: holder.to_string(),
            start,
            end,
            duration_ms,
            ongoing,
            cause_in: o.entry.cause,
            cause_out: out.map(|e| e.cause),
            forced_in_by: forced_by(o.entry),
            forced_out_by: out.and_then(|e| forced_by(e)),
        }),
        None => Segment::Gap(Gap {
            start,
            end,
            duration_ms,
            ongoing,
            cause: o.entry.cause,
            after: o.entry.from.clone(),
        }),
    }
}

fn is_forced(e: &HistoryEntry) -> bool {
    matches!(
        e.cause,
        Cause::ForcedLeader | Cause::ForcedReelection | Cause::ForcedResign
    )
}

fn forced_by(e: &HistoryEntry) -> Option<String> {
    is_forced(e).then(|| {
        e.by.clone()
            .unwrap_or_else(|| "an admin action".to_string())
    })
}

fn count(s: &mut Summary, e: &HistoryEntry) {
    s.changes += 1;
    if e.from.is_some() {
        s.failovers += 1;
    }
    if is_forced(e) {
        s.forced += 1;
    }
}

/// Total, longest, p50 and p95 of the gaps' lengths within the window (nearest rank).
fn gap_figures(s: &mut Summary, segments: &[Segment]) {
    let mut gaps: Vec<i64> = segments
        .iter()
        .filter_map(|seg| match seg {
            Segment::Gap(g) => Some(g.duration_ms),
            Segment::Tenure(_) => None,
        })
        .collect();
    gaps.sort_unstable();
    s.gaps = gaps.len();
    s.no_leader_ms = gaps.iter().sum();
    s.longest_gap_ms = gaps.last().copied();
    s.p50_gap_ms = percentile(&gaps, 50);
    s.p95_gap_ms = percentile(&gaps, 95);
}

/// The nearest-rank percentile of sorted values: the smallest value with at least `p`% of
/// the values at or below it.
fn percentile(sorted: &[i64], p: usize) -> Option<i64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (p * sorted.len()).div_ceil(100).max(1);
    sorted.get(rank - 1).copied()
}

#[cfg(test)]
mod tests;
