//! The timeline's cursor line: what is known of an election at one instant, the marks over
//! its strip included (an outage, a deposed holder, a leader stopped from outside).

use std::time::SystemTime;

use super::{App, of, stale_from};
use crate::model::Election;
use crate::model::time::{clock, stretch};
use crate::model::timeline::{Gap, Segment, Tenure};

/// What the cursor line says of `e` at instant `at`: who led then, since when, and the
/// causes in and out; or that nobody did, or that it is not known.
pub fn who_led(app: &App, e: &Election, at: SystemTime) -> String {
    let stale = stale_from(app, e);
    if let Some(s) = stale.filter(|s| at > *s) {
        return format!("not known: no contact with the source since {}", clock(s));
    }
    if let Some(why) = not_watched(app, e, at) {
        return format!("not known: {why}");
    }
    let now = stale.unwrap_or(app.model.wall);
    // The whole history, unclipped, so "since" is when the tenure really began.
    let t = of(e, SystemTime::UNIX_EPOCH, now, now);
    let found = t.segments.iter().find(|s| {
        let (a, b) = s.span();
        a <= at && (at < b || (at == b && b == t.until))
    });
    let said = match found {
        Some(Segment::Tenure(tn)) => match stopped_at(app, e, &tn.holder, at) {
            Some(s) => stopped(tn, s),
            None => tenure(tn),
        },
        Some(Segment::Gap(g)) => gap(g),
        Some(Segment::Unwatched(u)) => {
            format!("not watched {}", stretch(u.start, u.end))
        }
        None => match (t.known_from, &t.led_before) {
            (Some(from), Some(b)) => format!(
                "not known: history starts {}; {b} led before it",
                clock(from)
            ),
            (Some(from), None) => format!("not known: history starts {}", clock(from)),
            (None, Some(l)) => format!("{l} leads; since when is not known"),
            (None, None) => "no leader change known".to_string(),
        },
    };
    said + &deposed_at(app, e, at)
}

/// Why nothing is known at `at` of `e`'s source: no electop watched, or the source was
/// down or silent then.
fn not_watched(app: &App, e: &Election, at: SystemTime) -> Option<String> {
    let s = app.model.sources.get(e.source)?;
    if let Some(g) = s.history_gaps.iter().find(|g| g.from < at && at < g.to) {
        return Some(g.describe());
    }
    let o = s.marks.outages.iter().find(|o| o.from < at && at < o.to)?;
    let what = if o.down {
        "the source was down"
    } else {
        "no contact with the source"
    };
    Some(format!("{what} {}", stretch(o.from, o.to)))
}

/// The stretch `holder` was stopped from outside the store at `at`, if it was.
fn stopped_at<'a>(
    app: &'a App,
    e: &Election,
    holder: &str,
    at: SystemTime,
) -> Option<&'a super::Stopped> {
    app.around.stopped.iter().find(|s| {
        s.election == e.name && s.holder == holder && s.from <= at && s.to.is_none_or(|t| at < t)
    })
}

fn forced(by: &Option<String>) -> String {
    by.as_ref()
        .map(|b| format!(", forced by {b}"))
        .unwrap_or_default()
}

fn tenure(tn: &Tenure) -> String {
    let out = match &tn.cause_out {
        Some(c) => format!(
            " until {} ({}{})",
            clock(tn.end),
            c.as_str(),
            forced(&tn.forced_out_by)
        ),
        None => ", still leads".to_string(),
    };
    format!(
        "{} led since {} ({}{}){out}",
        tn.holder,
        clock(tn.start),
        tn.cause_in.as_str(),
        forced(&tn.forced_in_by)
    )
}

/// The store still named a holder that was stopped: nobody led.
fn stopped(tn: &Tenure, s: &super::Stopped) -> String {
    let named = match &tn.cause_out {
        Some(c) => format!("until {} ({})", clock(tn.end), c.as_str()),
        None => "still".to_string(),
    };
    format!(
        "NO LEADER at work: {} {} at {}; the store named it {named}",
        s.holder,
        s.how,
        clock(s.from)
    )
}

fn gap(g: &Gap) -> String {
    let end = if g.ongoing {
        ", still none".to_string()
    } else {
        format!(" until {}", clock(g.end))
    };
    let after = g
        .after
        .as_ref()
        .map(|a| format!(", after {a}"))
        .unwrap_or_default();
    format!(
        "NO LEADER since {} ({}{after}){end}",
        clock(g.start),
        g.cause.as_str()
    )
}

/// `; node-a deposed 11:05:10, may still believe it leads (to 11:05:40)`, where a deposed
/// holder lived on at `at`.
fn deposed_at(app: &App, e: &Election, at: SystemTime) -> String {
    let Some(s) = app.model.sources.get(e.source) else {
        return String::new();
    };
    let d = s
        .marks
        .deposed_in(&e.name)
        .find(|d| d.from <= at && d.to.is_none_or(|t| at < t));
    match d {
        Some(d) => {
            let to =
                d.to.map_or_else(|| "still".into(), |t| format!("to {}", clock(t)));
            format!(
                "; {} deposed {}, may believe it leads ({to})",
                d.holder,
                clock(d.from)
            )
        }
        None => String::new(),
    }
}
