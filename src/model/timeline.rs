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
    /// No electop watched the source (between two runs): who led is not known.
    Unwatched(Unwatched),
}

impl Segment {
    pub fn span(&self) -> (SystemTime, SystemTime) {
        match self {
            Segment::Tenure(t) => (t.start, t.end),
            Segment::Gap(g) => (g.start, g.end),
            Segment::Unwatched(u) => (u.start, u.end),
        }
    }

    /// The part of this segment within `[from, to]` (which overlaps it), and whether it
    /// ends before this one did.
    fn part(&self, from: SystemTime, to: SystemTime) -> Segment {
        let mut s = self.clone();
        let (start, end) = self.span();
        let (a, b) = (start.max(from), end.min(to));
        // After a stretch nobody watched: how this part began is not known.
        let (late, cut) = (a > start, b < end);
        match &mut s {
            Segment::Tenure(t) => {
                (t.start, t.end, t.duration_ms) = (a, b, ms(a, b));
                if cut {
                    (t.ongoing, t.cause_out, t.forced_out_by) = (false, None, None);
                }
                if late {
                    (t.cause_in, t.forced_in_by) = (Cause::Unknown, None);
                }
            }
            Segment::Gap(g) => {
                (g.start, g.end, g.duration_ms) = (a, b, ms(a, b));
                g.ongoing &= !cut;
                if late {
                    g.cause = Cause::Unknown;
                }
            }
            Segment::Unwatched(u) => (u.start, u.end, u.duration_ms) = (a, b, ms(a, b)),
        }
        s
    }
}

/// A stretch no electop watched: from the last record of the run before (its clean stop,
/// or where it was killed, its last line) to the next run's start.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Unwatched {
    #[serde(serialize_with = "rfc3339")]
    pub start: SystemTime,
    #[serde(serialize_with = "rfc3339")]
    pub end: SystemTime,
    pub duration_ms: i64,
    /// The run before stopped cleanly and said when (else it was killed or lost some time
    /// after `start`: its last line).
    pub stop_recorded: bool,
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

/// A stretch between two changes as the history is walked, borrowed from it: who held (or
/// nobody) from `start` to `end`, the change that began it and the one that ended it
/// (`None`: it goes on).
#[derive(Clone, Copy, Debug)]
pub struct Stretch<'a> {
    pub start: SystemTime,
    pub end: SystemTime,
    pub holder: Option<&'a str>,
    pub entry: &'a HistoryEntry,
    pub out: Option<&'a HistoryEntry>,
}

/// What a walk found beside its stretches.
pub struct Walked<'a> {
    /// Changes with no time, left out.
    pub untimed: usize,
    /// The oldest timed change.
    pub first: Option<&'a HistoryEntry>,
    pub known_from: Option<SystemTime>,
}

/// Walks `history` (oldest first) over `[since, until]`: `on_change` hears each timed change
/// in the window (after `since`), `on_stretch` each stretch of some length, in time order,
/// clipped to the window. Nothing is copied: the dashboard draws each strip from this.
pub fn walk<'a>(
    history: impl IntoIterator<Item = &'a HistoryEntry>,
    (since, until): (SystemTime, SystemTime),
    mut on_change: impl FnMut(&'a HistoryEntry),
    mut on_stretch: impl FnMut(Stretch<'a>),
) -> Walked<'a> {
    let mut w = Walked {
        untimed: 0,
        first: None,
        known_from: None,
    };
    // A stretch of no length (a change exactly at the window's end) draws nothing.
    let mut emit = |s: Stretch<'a>| {
        if s.end > s.start {
            on_stretch(s);
        }
    };
    let mut prev: Option<SystemTime> = None;
    let mut open: Option<(SystemTime, &'a HistoryEntry)> = None;
    for e in history {
        let Some(at) = e.at else {
            w.untimed += 1;
            continue;
        };
        if e.from.is_some() && e.from == e.to {
            continue;
        }
        // Oldest first as recorded; a clock step back is held at the time before it.
        let at = prev.map_or(at, |p| at.max(p));
        prev = Some(at);
        w.first.get_or_insert(e);
        if at > until {
            if let Some((start, o)) = open.take() {
                emit(stretch(start, until, o, Some(e)));
            }
            // The rest is after the window; only the untimed among it are still counted.
            continue;
        }
        if at > since {
            on_change(e);
        }
        let start = at.max(since);
        if let Some((o_start, o)) = open.take()
            && at > since
        {
            emit(stretch(o_start, start, o, Some(e)));
        }
        open = Some((start, e));
        w.known_from.get_or_insert(start);
    }
    if let Some((start, o)) = open.take() {
        emit(stretch(start, until, o, None));
    }
    w
}

fn stretch<'a>(
    start: SystemTime,
    end: SystemTime,
    entry: &'a HistoryEntry,
    out: Option<&'a HistoryEntry>,
) -> Stretch<'a> {
    Stretch {
        start,
        end,
        holder: entry.to.as_deref(),
        entry,
        out,
    }
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
    let mut summary = Summary::default();
    let mut segments = Vec::new();
    let w = walk(
        history,
        (since, until),
        |e| count(&mut summary, e),
        |s| segments.push(close(s)),
    );
    summary.untimed = w.untimed;
    gap_figures(&mut summary, &segments);
    Timeline {
        since,
        until,
        known_from: w.known_from,
        led_before: match w.first {
            Some(e) => e.from.clone(),
            None => leader.map(str::to_string),
        },
        segments,
        summary,
    }
}

impl Timeline {
    /// The timeline with the stretches no electop watched (`unwatched`, each `(from, to,
    /// stop_recorded)`, in time order) cut out of its tenures and gaps: what was not
    /// observed is not claimed as a tenure or a gap. A tenure cut before its end has no
    /// cause out (it is not known how it ended, or whether it did), the part after the
    /// stretch an `unknown` cause in (the next run found it so); the summary's gaps count
    /// the known parts only.
    pub fn without_unwatched(mut self, unwatched: &[(SystemTime, SystemTime, bool)]) -> Timeline {
        let spans: Vec<&(SystemTime, SystemTime, bool)> = unwatched
            .iter()
            .filter(|(a, b, _)| *b > self.since && *a < self.until && b > a)
            .collect();
        if spans.is_empty() {
            return self;
        }
        let mut out = Vec::new();
        for seg in std::mem::take(&mut self.segments) {
            let (start, end) = seg.span();
            let mut at = start;
            for &&(from, b, stop_recorded) in &spans {
                let (a, b) = (from.max(start), b.min(end));
                if b <= a || b <= at {
                    continue;
                }
                // A change that is a run's last record (the run killed just after it): the
                // change is known, at its time, though nothing after it is.
                if a > at || (from == start && at == start) {
                    out.push(seg.part(at, a));
                }
                let (ua, ub) = (a.max(at), b);
                let u = Unwatched {
                    start: ua,
                    end: ub,
                    duration_ms: ms(ua, ub),
                    stop_recorded,
                };
                // Two segments under one stretch: one unwatched segment.
                match out.last_mut() {
                    Some(Segment::Unwatched(prev)) if prev.end == ua => {
                        prev.end = ub;
                        prev.duration_ms = ms(prev.start, ub);
                    }
                    _ => out.push(Segment::Unwatched(u)),
                }
                at = ub;
            }
            if at < end {
                out.push(seg.part(at, end));
            }
        }
        self.segments = out;
        gap_figures(&mut self.summary, &self.segments);
        self
    }
}

/// A stretch as a segment of its own.
fn close(s: Stretch<'_>) -> Segment {
    let (start, end, duration_ms, ongoing) = (s.start, s.end, ms(s.start, s.end), s.out.is_none());
    match s.holder {
        Some(holder) => Segment::Tenure(Tenure {
            holder: holder.to_string(),
            start,
            end,
            duration_ms,
            ongoing,
            cause_in: s.entry.cause,
            cause_out: s.out.map(|e| e.cause),
            forced_in_by: forced_by(s.entry),
            forced_out_by: s.out.and_then(forced_by),
        }),
        None => Segment::Gap(Gap {
            start,
            end,
            duration_ms,
            ongoing,
            cause: s.entry.cause,
            after: s.entry.from.clone(),
        }),
    }
}

pub fn is_forced(e: &HistoryEntry) -> bool {
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
            Segment::Tenure(_) | Segment::Unwatched(_) => None,
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

/// Changes at fixed times, for the timeline's tests here and in `app` and `output`.
#[cfg(test)]
pub(crate) mod fixtures {
    use std::time::{Duration, SystemTime};

    use crate::model::{Cause, HistoryEntry};

    /// `s` seconds after a fixed origin (2027-01-15T08:00:00Z).
    pub(crate) fn t(s: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000 + s)
    }

    /// A change at `t(at)`.
    pub(crate) fn change(
        at: u64,
        from: Option<&str>,
        to: Option<&str>,
        cause: Cause,
    ) -> HistoryEntry {
        HistoryEntry {
            at: Some(t(at)),
            revision: None,
            from: from.map(str::to_string),
            to: to.map(str::to_string),
            cause,
            by: None,
        }
    }
}

#[cfg(test)]
mod tests;
