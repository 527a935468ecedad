//! What `electop history` prints and `/api/v1/history` answers: each election's
//! [`Timeline`] over one window, as JSON or as a table per election.

use std::fmt::Write as _;
use std::time::SystemTime;

use serde::Serialize;

use crate::model::timeline::{self, Segment, Timeline};
use crate::model::{Scheme, time};
use crate::state::{Key, ReadModel};

/// `{"since":…,"until":…,"elections":[…]}`.
#[derive(Serialize)]
pub(crate) struct HistoryDoc<'a> {
    pub since: String,
    pub until: String,
    pub elections: Vec<ElectionHistory<'a>>,
}

#[derive(Serialize)]
pub(crate) struct ElectionHistory<'a> {
    pub name: &'a str,
    pub scheme: Scheme,
    pub source: &'a str,
    /// The source's handle, as `status` names it (`sql1`).
    pub source_id: &'a str,
    /// The leader now (as of the source's last contact when it is stale).
    pub leader: Option<&'a str>,
    /// No contact with the source for a while: the timeline ends at its last contact.
    pub stale: bool,
    #[serde(flatten)]
    pub timeline: Timeline,
    /// The source's outages that overlap the window (what this or an earlier electop saw,
    /// from the journal): who led in them is not known as it happened.
    pub outages: Vec<OutageJson>,
    /// Holders of this election deposed by an admin action while they may still have
    /// believed they led, overlapping the window.
    pub deposed: Vec<DeposedJson>,
}

/// A stretch the source did not answer: `down` the connection was lost, else stale.
#[derive(Serialize)]
pub(crate) struct OutageJson {
    pub start: String,
    pub end: String,
    pub duration_ms: i64,
    pub down: bool,
}

#[derive(Serialize)]
pub(crate) struct DeposedJson {
    pub holder: String,
    pub start: String,
    /// `None`: still deposed as of the last read.
    pub end: Option<String>,
}

/// The marks of election `name`'s source `src` that overlap `[since, until]`.
fn marks_in(
    src: &crate::state::SourceView,
    name: &str,
    (since, until): (SystemTime, SystemTime),
) -> (Vec<OutageJson>, Vec<DeposedJson>) {
    let outages = (src.marks.outages.iter())
        .filter(|o| o.to > since && o.from < until)
        .map(|o| OutageJson {
            start: time::rfc3339(o.from),
            end: time::rfc3339(o.to),
            duration_ms: o
                .to
                .duration_since(o.from)
                .map_or(0, |d| d.as_millis() as i64),
            down: o.down,
        })
        .collect();
    let deposed = (src.marks.deposed_in(name))
        .filter(|d| d.to.is_none_or(|to| to > since) && d.from < until)
        .map(|d| DeposedJson {
            holder: d.holder.clone(),
            start: time::rfc3339(d.from),
            end: d.to.map(time::rfc3339),
        })
        .collect();
    (outages, deposed)
}

/// The elections `election` names (`NAME` or `SOURCE/NAME`; every election when `None`),
/// or why none: its message names what was asked and some that are known.
pub(crate) fn select<'m>(
    model: &'m ReadModel,
    election: Option<&str>,
) -> Result<Vec<&'m Key>, String> {
    let qualified = |(src, name): &Key| {
        let short = model
            .sources
            .get(*src)
            .map_or("?", |s| s.info.short.as_str());
        format!("{short}/{name}")
    };
    let Some(wanted) = election else {
        return Ok(model.elections.keys().collect());
    };
    let found: Vec<&Key> = model
        .elections
        .keys()
        .filter(|k| k.1 == wanted || qualified(k) == wanted)
        .collect();
    if !found.is_empty() {
        return Ok(found);
    }
    const SHOWN: usize = 10;
    let mut known: Vec<String> = model.elections.keys().take(SHOWN).map(qualified).collect();
    if model.elections.len() > SHOWN {
        known.push(format!("… {} more", model.elections.len() - SHOWN));
    }
    Err(match known.is_empty() {
        true => format!("no election `{wanted}`: no election was found at all"),
        false => format!("no election `{wanted}`; known: {}", known.join(", ")),
    })
}

/// The timelines of `keys` over `[since, until]`, as of `now` (a stale source's as of its
/// last contact: what it shows then is not claimed to go on).
pub(crate) fn document<'m>(
    model: &'m ReadModel,
    keys: &[&Key],
    (since, until): (SystemTime, SystemTime),
    now: SystemTime,
) -> HistoryDoc<'m> {
    let until = until.min(now).max(since);
    let elections = keys
        .iter()
        .filter_map(|key| {
            let e = model.elections.get(*key)?;
            let src = model.sources.get(e.source)?;
            let stale = src.stale_for(model.now).is_some();
            let as_of = match (stale, src.last_contact) {
                (true, Some((_, wall))) => wall.min(now),
                _ => now,
            };
            let history: Vec<_> = e.history.iter().cloned().collect();
            let leader = e.leader.as_ref().map(|l| l.id.as_str());
            let unwatched: Vec<_> = (src.history_gaps.iter())
                .map(|g| (g.from, g.to, g.stop_recorded))
                .collect();
            let (outages, deposed) = marks_in(src, &e.name, (since, until));
            Some(ElectionHistory {
                outages,
                deposed,
                name: &e.name,
                scheme: e.scheme,
                source: &src.info.name,
                source_id: &src.info.short,
                leader,
                stale,
                timeline: timeline::timeline(&history, leader, since, until, as_of)
                    .without_unwatched(&unwatched),
            })
        })
        .collect();
    HistoryDoc {
        since: time::rfc3339(since),
        until: time::rfc3339(until),
        elections,
    }
}

/// One block per election: its tenures and gaps, one a line, then its summary.
pub(crate) fn render(doc: &HistoryDoc<'_>) -> String {
    let mut out = String::new();
    for (i, e) in doc.elections.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        block(&mut out, e);
    }
    if doc.elections.is_empty() {
        out.push_str("no elections\n");
    }
    out
}

fn block(out: &mut String, e: &ElectionHistory<'_>) {
    let tl = &e.timeline;
    let same_day = time::rfc3339(tl.since).get(..10) == time::rfc3339(tl.until).get(..10);
    let at = |t: SystemTime| match same_day {
        true => time::clock(t),
        false => time::rfc3339(t),
    };
    let stale = if e.stale {
        " (stale: as of its last contact)"
    } else {
        ""
    };
    let _ = writeln!(
        out,
        "{}/{} ({}) from {} to {}{stale}",
        e.source_id,
        e.name,
        e.scheme.as_str(),
        time::rfc3339(whole_seconds(tl.since)),
        time::rfc3339(whole_seconds(tl.until)),
    );
    let mut rows = vec![["HOLDER", "START", "END", "DURATION", "IN", "OUT", ""].map(String::from)];
    for s in &tl.segments {
        rows.push(row(s, &at));
    }
    if tl.segments.is_empty() {
        let _ = writeln!(out, "  no leader change known in this window");
    } else {
        table(out, &rows);
    }
    if let (Some(from), Some(who)) = (tl.known_from, &tl.led_before)
        && from > tl.since
    {
        let _ = writeln!(
            out,
            "  before {}: {} led, since when is not known",
            at(from),
            crate::model::shown(who)
        );
    }
    if tl.known_from.is_none()
        && let Some(who) = &tl.led_before
    {
        let who = crate::model::shown(who);
        let _ = writeln!(out, "  {who} leads, since before any change electop knows");
    }
    marks(out, e, &at);
    summary(out, &tl.summary);
}

/// `t` without its fraction of a second: a person reads the window's edges, not its nanos.
fn whole_seconds(t: SystemTime) -> SystemTime {
    let secs = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(secs)
}

fn row(s: &Segment, at: &dyn Fn(SystemTime) -> String) -> [String; 7] {
    let dur = |ms: i64| time::duration_ms(ms);
    match s {
        Segment::Tenure(t) => {
            let forced = [&t.forced_in_by, &t.forced_out_by]
                .into_iter()
                .flatten()
                .next()
                .map(|by| format!("forced by {by}"))
                .unwrap_or_default();
            [
                crate::model::shown(&t.holder).into_owned(),
                at(t.start),
                if t.ongoing { "now".into() } else { at(t.end) },
                dur(t.duration_ms),
                t.cause_in.as_str().into(),
                t.cause_out.map_or("", |c| c.as_str()).into(),
                forced,
            ]
        }
        Segment::Gap(g) => [
            "(no leader)".into(),
            at(g.start),
            if g.ongoing { "now".into() } else { at(g.end) },
            dur(g.duration_ms),
            g.cause.as_str().into(),
            String::new(),
            String::new(),
        ],
        Segment::Unwatched(u) => [
            "(not watched)".into(),
            at(u.start),
            at(u.end),
            dur(u.duration_ms),
            String::new(),
            String::new(),
            match u.stop_recorded {
                true => "no electop ran".into(),
                false => "no record (the electop before was killed or lost)".into(),
            },
        ],
    }
}

/// The source's outages and the deposed holders in the window, a line each.
fn marks(out: &mut String, e: &ElectionHistory<'_>, at: &dyn Fn(SystemTime) -> String) {
    let when = |text: &str| crate::model::time::parse_rfc3339(text).map_or(text.into(), at);
    for o in &e.outages {
        let what = match o.down {
            true => "down (connection lost)",
            false => "stale (no answer)",
        };
        let _ = writeln!(
            out,
            "  source {what} {} to {} ({}): who led then is not known as it happened",
            when(&o.start),
            when(&o.end),
            time::duration_ms(o.duration_ms)
        );
    }
    for d in &e.deposed {
        let end = d.end.as_deref().map_or("now".into(), when);
        let _ = writeln!(
            out,
            "  deposed: {} may have believed it led from {} to {end}",
            d.holder,
            when(&d.start)
        );
    }
}

/// Aligned columns, two spaces apart, indented under the election's line.
fn table(out: &mut String, rows: &[[String; 7]]) {
    let width = |c: usize| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0);
    let widths: Vec<usize> = (0..7).map(width).collect();
    for r in rows {
        let mut line = String::from(" ");
        for (cell, w) in r.iter().zip(&widths) {
            let _ = write!(line, " {cell:<w$} ");
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
}

/// Two lines: the changes, then the gaps (with the changes left out, if any).
fn summary(out: &mut String, s: &timeline::Summary) {
    let d = |ms: Option<i64>| ms.map_or("-".into(), time::duration_ms);
    let _ = writeln!(
        out,
        "  {} failover(s), {} forced; without a leader {} in {} gap(s)",
        s.failovers,
        s.forced,
        time::duration_ms(s.no_leader_ms),
        s.gaps,
    );
    let _ = write!(
        out,
        "  gaps: longest {}, p50 {}, p95 {}",
        d(s.longest_gap_ms),
        d(s.p50_gap_ms),
        d(s.p95_gap_ms),
    );
    if s.untimed > 0 {
        let _ = write!(out, "; {} change(s) with no time left out", s.untimed);
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Cause;
    use crate::model::timeline::fixtures::{change, t};

    #[test]
    fn the_table_has_a_line_per_tenure_and_gap_then_the_summary() {
        let h = [
            change(10, Some("a"), None, Cause::LeaseExpired),
            change(16, None, Some("b"), Cause::Elected),
        ];
        let doc = HistoryDoc {
            since: String::new(),
            until: String::new(),
            elections: vec![ElectionHistory {
                name: "jobs",
                scheme: Scheme::SqlLease,
                source: "sqlite:///e.db leaderlock",
                source_id: "sql1",
                leader: Some("b"),
                stale: false,
                timeline: timeline::timeline(&h, Some("b"), t(0), t(76), t(76)),
                outages: Vec::new(),
                deposed: Vec::new(),
            }],
        };
        let text = render(&doc);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "sql1/jobs (sql-lease) from 2027-01-15T08:00:00Z to 2027-01-15T08:01:16Z",
                "  HOLDER       START     END       DURATION  IN             OUT",
                "  (no leader)  08:00:10  08:00:16  6.0s      lease_expired",
                "  b            08:00:16  now       1m00s     elected",
                "  before 08:00:10: a led, since when is not known",
                "  1 failover(s), 0 forced; without a leader 6.0s in 1 gap(s)",
                "  gaps: longest 6.0s, p50 6.0s, p95 6.0s",
            ],
            "{text}"
        );
    }
}
