//! What a strip marks over its tenures and gaps, from outside the history: the source's
//! past outages (the read model's [`crate::state::marks`]), holders deposed while they may
//! still believe they lead, and leaders stopped from outside the store (the demo's kills
//! and pauses, [`Stopped`]), whose tenure the store still showed while nobody led.

use std::time::SystemTime;

use super::{Cell, Strip, columns};
use crate::app::App;
use crate::model::Election;
use crate::state::marks::Outage;

/// A holder stopped from outside the store (the demo killed or paused it): from `from` to
/// `to` (restarted, resumed; `None`: still stopped) it led nothing, whatever the store says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stopped {
    pub election: String,
    pub holder: String,
    pub from: SystemTime,
    pub to: Option<SystemTime>,
    /// `killed (SIGKILL)`, `paused (SIGSTOP)`.
    pub how: String,
}

/// A stretch of `holder` over an election's strip; `to: None` runs to the window's end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HolderSpan {
    pub holder: String,
    pub from: SystemTime,
    pub to: Option<SystemTime>,
}

/// Everything marked over one election's strip.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Overlay {
    pub outages: Vec<Outage>,
    /// Holders deposed: the tenures beside them are drawn `═`.
    pub deposed: Vec<HolderSpan>,
    /// Holders stopped: their own tenure in the stretch is a gap.
    pub stopped: Vec<HolderSpan>,
}

/// Marks `o` over `strip` (made over `[since, until]`): a tenure in a deposed holder's
/// stretch becomes [`Cell::Deposed`], a stopped holder's own tenure a [`Cell::Gap`], and a
/// past outage's columns [`Cell::Down`] or [`Cell::Stale`] where they held a tenure (a gap
/// or forced change seen in it stays). An outage shorter than a column takes its middle one.
pub fn overlay(strip: &mut Strip, (since, until): (SystemTime, SystemTime), o: &Overlay) {
    let width = strip.cells.len();
    let span = |from: SystemTime, to: Option<SystemTime>| {
        columns((from, to.unwrap_or(until)), since, until, width)
    };
    for d in &o.deposed {
        let Some((c0, c1)) = span(d.from, d.to) else {
            continue;
        };
        for c in &mut strip.cells[c0..=c1] {
            if let Cell::Tenure(h) = *c {
                *c = Cell::Deposed(h);
            }
        }
    }
    for s in &o.stopped {
        let Some(h) = strip.holders.iter().position(|x| *x == s.holder) else {
            continue;
        };
        let Some((c0, c1)) = span(s.from, s.to) else {
            continue;
        };
        for c in &mut strip.cells[c0..=c1] {
            if matches!(*c, Cell::Tenure(x) | Cell::Deposed(x) if x == h) {
                *c = Cell::Gap;
            }
        }
    }
    for out in &o.outages {
        let Some((c0, c1)) = span(out.from, Some(out.to)) else {
            continue;
        };
        // Its first and last columns hold what was seen either side.
        let (a, b) = match c1 > c0 + 1 {
            true => (c0 + 1, c1 - 1),
            false => {
                let mid = super::column(mid(out.from, out.to), since, until, width).unwrap_or(c0);
                (mid, mid)
            }
        };
        let mark = if out.down { Cell::Down } else { Cell::Stale };
        for c in &mut strip.cells[a..=b] {
            if matches!(*c, Cell::Tenure(_) | Cell::Deposed(_) | Cell::Changes) {
                *c = mark;
            }
        }
    }
}

/// What is marked over `e`'s strip over `[since, until]`: its source's outages and deposed
/// holders, and the holders stopped from outside the store (`app.around`).
pub(super) fn of(app: &App, e: &Election, (since, until): (SystemTime, SystemTime)) -> Overlay {
    let within =
        |from: SystemTime, to: Option<SystemTime>| from <= until && to.is_none_or(|t| t >= since);
    let mut o = Overlay::default();
    if let Some(s) = app.model.sources.get(e.source) {
        o.outages = s
            .marks
            .outages
            .iter()
            .filter(|x| within(x.from, Some(x.to)))
            .copied()
            .collect();
        o.deposed = s
            .marks
            .deposed_in(&e.name)
            .filter(|d| within(d.from, d.to))
            .map(|d| HolderSpan {
                holder: d.holder.clone(),
                from: d.from,
                to: d.to,
            })
            .collect();
    }
    o.stopped = app
        .around
        .stopped
        .iter()
        .filter(|s| s.election == e.name && within(s.from, s.to))
        .map(|s| HolderSpan {
            holder: s.holder.clone(),
            from: s.from,
            to: s.to,
        })
        .collect();
    o
}

fn mid(a: SystemTime, b: SystemTime) -> SystemTime {
    a + b.duration_since(a).unwrap_or_default() / 2
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::timeline::strip;
    use crate::app::timeline::tests::text;
    use crate::model::timeline::fixtures::{change, t};
    use crate::model::timeline::timeline;
    use crate::model::{Cause, HistoryEntry};

    fn span(holder: &str, from: u64, to: Option<u64>) -> HolderSpan {
        HolderSpan {
            holder: holder.into(),
            from: t(from),
            to: to.map(t),
        }
    }

    fn drawn(h: &[HistoryEntry], o: &Overlay) -> String {
        let tl = timeline(h, None, t(0), t(100), t(100));
        let mut s = strip(&tl, 10, None, &[]);
        overlay(&mut s, (t(0), t(100)), o);
        text(&s)
    }

    #[test]
    fn a_reelection_marks_the_new_tenure_while_the_deposed_holder_lives_on() {
        let h = [
            change(0, None, Some("a"), Cause::Elected),
            change(30, Some("a"), Some("b"), Cause::ForcedReelection),
        ];
        let o = Overlay {
            deposed: vec![span("a", 30, Some(60))],
            ..Overlay::default()
        };
        assert_eq!(drawn(&h, &o), "aaa◆BBbbbb");
        let open = Overlay {
            deposed: vec![span("a", 30, None)],
            ..Overlay::default()
        };
        assert_eq!(drawn(&h, &open), "aaa◆BBBBBB", "still deposed: to the end");
    }

    #[test]
    fn outages_are_marked_where_a_tenure_was_drawn_and_a_short_one_takes_a_column() {
        let h = [
            change(0, None, Some("a"), Cause::Elected),
            change(50, Some("a"), None, Cause::LeaseExpired),
            change(60, None, Some("b"), Cause::Elected),
        ];
        let outage = |from, to, down| Outage {
            from: t(from),
            to: t(to),
            down,
        };
        let o = Overlay {
            outages: vec![outage(5, 42, true), outage(71, 73, false)],
            ..Overlay::default()
        };
        assert_eq!(drawn(&h, &o), "a×××a░b┄bb");
    }

    #[test]
    fn a_stopped_leader_s_tenure_is_a_gap_until_the_next_holder() {
        let h = [
            change(0, None, Some("a"), Cause::Elected),
            change(62, Some("a"), Some("b"), Cause::TakenOver),
        ];
        let o = Overlay {
            stopped: vec![span("a", 40, None), span("b", 90, Some(95))],
            ..Overlay::default()
        };
        // b paused at 90 for 5 s, but b is the leader: its own column goes too.
        assert_eq!(drawn(&h, &o), "aaaa░░bbb░");
    }
}
