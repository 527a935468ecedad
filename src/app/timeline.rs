//! The timeline view's interaction state (the window, how far it is panned back, the
//! cursor) and the pure mapping from times to the columns of a strip: what each column of
//! an election's strip shows. No terminal here, so all of it is tested as plain data; the
//! view (`ui::timeline`) only styles the cells.
//!
//! What is drawn is the read model's in-memory history of each election: what the history
//! journal held when the dashboard started (read back up to the dashboard's history limit)
//! and what it has seen since. A window reaching further back than that history shows blank
//! columns there, never a guess ([`crate::model::timeline`] says why).

use std::time::{Duration, SystemTime};

use super::{Action, App};
use crate::model::timeline::{Segment, Timeline, timeline};
use crate::model::{Election, HistoryEntry};

/// The windows `+` and `-` step through, narrowest first.
pub const ZOOMS: [Duration; 3] = [
    Duration::from_secs(5 * 60),
    Duration::from_secs(60 * 60),
    Duration::from_secs(24 * 60 * 60),
];

/// How many cursor steps a window holds: at 5 minutes, 5 s a step.
pub const CURSOR_STEPS: u32 = 60;

/// How far back a pan may go: the history kept is bounded anyway, and a window lost a year
/// back is no use.
const PAN_LIMIT: Duration = Duration::from_secs(30 * 24 * 60 * 60);

/// Where the strips look: interaction state, beside the read model, never in it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TimelineView {
    /// Index into [`ZOOMS`].
    pub zoom: usize,
    /// How far before now the window ends; zero: it ends now and follows the clock.
    pub back: Duration,
    /// The instant picked; `None`: the window's end (now, while not panned back).
    pub cursor: Option<SystemTime>,
}

impl TimelineView {
    pub fn span(&self) -> Duration {
        ZOOMS[self.zoom.min(ZOOMS.len() - 1)]
    }

    /// The window `[since, until]` at `now`.
    pub fn window(&self, now: SystemTime) -> (SystemTime, SystemTime) {
        let until = now.checked_sub(self.back).unwrap_or(SystemTime::UNIX_EPOCH);
        let since = until
            .checked_sub(self.span())
            .unwrap_or(SystemTime::UNIX_EPOCH);
        (since, until)
    }

    /// The cursor's instant, kept within the window.
    pub fn cursor_at(&self, now: SystemTime) -> SystemTime {
        let (since, until) = self.window(now);
        self.cursor.map_or(until, |c| c.clamp(since, until))
    }

    /// Applies a zoom, pan or cursor key; `false` for any other action.
    pub fn on_action(&mut self, action: Action, now: SystemTime) -> bool {
        let span = self.span();
        match action {
            Action::ZoomIn => self.zoom = self.zoom.saturating_sub(1),
            Action::ZoomOut => self.zoom = (self.zoom + 1).min(ZOOMS.len() - 1),
            Action::PanLeft => self.back = (self.back + span / 10).min(PAN_LIMIT),
            // Never past now.
            Action::PanRight => self.back = self.back.saturating_sub(span / 10),
            Action::CursorLeft | Action::CursorRight => self.move_cursor(action, now),
            _ => return false,
        }
        true
    }

    fn move_cursor(&mut self, action: Action, now: SystemTime) {
        let (since, until) = self.window(now);
        let step = self.span() / CURSOR_STEPS;
        let at = self.cursor_at(now);
        self.cursor = if action == Action::CursorLeft {
            Some(at.checked_sub(step).unwrap_or(since).max(since))
        } else {
            let next = at + step;
            // At the end of a window that ends now the cursor follows the clock again.
            (next < until || self.back > Duration::ZERO).then_some(next.min(until))
        };
    }
}

/// The zoom, pan or cursor keys: the timeline view's and the detail view's strip.
pub(crate) fn is_strip_key(action: Action) -> bool {
    matches!(
        action,
        Action::ZoomIn
            | Action::ZoomOut
            | Action::PanLeft
            | Action::PanRight
            | Action::CursorLeft
            | Action::CursorRight
    )
}

/// The keys the timeline view answers (for its help): the rows', the window's, the
/// cursor's and the views'.
pub(crate) fn on_timeline_screen(action: Action) -> bool {
    super::keys::on_events_screen(action)
        || is_strip_key(action)
        || matches!(
            action,
            Action::ToggleTimeline | Action::Describe | Action::CycleSort
        )
}

/// `5m`, `1h`, `24h`.
pub fn span_label(span: Duration) -> String {
    let s = span.as_secs();
    if s >= 3600 && s.is_multiple_of(3600) {
        format!("{}h", s / 3600)
    } else {
        format!("{}m", s / 60)
    }
}

/// What a column of a strip shows, most telling first when several things fall in it: time
/// without a leader (a gap of a second in a day's window still shows), then a forced
/// change, then several changes, then the holder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cell {
    /// Nothing known: before the history's oldest change, or outside the window.
    Unknown,
    /// Index into [`Strip::holders`].
    Tenure(usize),
    Gap,
    /// More than one change in the column, none forced and no gap.
    Changes,
    /// A change an admin action made.
    Forced,
    /// After the source's last contact, or in a past stretch without contact (or that no
    /// electop watched): not known.
    Stale,
    /// In a past stretch the source was down: not known.
    Down,
    /// Index into [`Strip::holders`]: its tenure while a holder an admin action removed
    /// lived on, and may still have believed it led.
    Deposed(usize),
}

/// One election's strip over a window.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Strip {
    pub cells: Vec<Cell>,
    /// The holders the cells name, in the order first drawn.
    pub holders: Vec<String>,
}

/// The column (of `width` over `[since, until]`) holding `t`: the window's end falls in the
/// last column. `None` outside the window.
pub fn column(t: SystemTime, since: SystemTime, until: SystemTime, width: usize) -> Option<usize> {
    if width == 0 || t < since || t > until {
        return None;
    }
    let span = until.duration_since(since).ok()?.as_nanos();
    if span == 0 {
        return Some(width - 1);
    }
    let at = t.duration_since(since).ok()?.as_nanos() * width as u128;
    // In 64 bits where it fits (a day's window at any width): a 128-bit division was most
    // of a redraw's time at 24 h, once per stretch of every row.
    let col = match (u64::try_from(at), u64::try_from(span)) {
        (Ok(a), Ok(s)) => a / s,
        _ => (at / span) as u64,
    };
    Some((col as usize).min(width - 1))
}

/// The instant column `col` begins at.
pub fn column_start(col: usize, since: SystemTime, until: SystemTime, width: usize) -> SystemTime {
    let span = until.duration_since(since).unwrap_or_default();
    if width == 0 {
        return since;
    }
    since + span.mul_f64(col.min(width) as f64 / width as f64)
}

/// The columns `[first, last]` a stretch `[a, b)` touches, clipped to the window; `None` if
/// it is outside. A stretch shorter than a column still takes one.
fn columns(
    (a, b): (SystemTime, SystemTime),
    since: SystemTime,
    until: SystemTime,
    width: usize,
) -> Option<(usize, usize)> {
    if b < since || a > until || width == 0 {
        return None;
    }
    let first = column(a.max(since), since, until, width)?;
    // The column holding the stretch's last instant, not the next one's first.
    let end = b.min(until);
    let mut last = column(end, since, until, width)?;
    if last > first && column_start(last, since, until, width) >= end {
        last -= 1;
    }
    Some((first, last))
}

/// The strip of `t` in `width` columns; `stale_from`: the source's last contact when it is
/// stale now (what follows it is not known); `unwatched`: stretches no electop watched
/// (electop's own record of earlier runs), where a tenure drawn through would be a guess.
pub fn strip(
    t: &Timeline,
    width: usize,
    stale_from: Option<SystemTime>,
    unwatched: &[(SystemTime, SystemTime)],
) -> Strip {
    let mut p = Painter::new((t.since, t.until), width);
    for seg in &t.segments {
        match seg {
            Segment::Tenure(tn) => p.paint(seg.span(), Some(&tn.holder), tn.forced_in_by.is_some()),
            Segment::Gap(g) => p.paint(seg.span(), None, is_forced(g.cause)),
            // Drawn by `finish`, from the same stretches.
            Segment::Unwatched(_) => {}
        }
    }
    p.finish(stale_from, unwatched)
}

/// A strip being drawn, a stretch at a time, oldest first.
struct Painter {
    since: SystemTime,
    until: SystemTime,
    /// The window's length in ns (a day is 8.6e13: 64 bits hold it times any width).
    span_ns: u128,
    cells: Vec<Cell>,
    holders: Vec<String>,
    /// Changes beginning in each column.
    changes: Vec<u8>,
}

impl Painter {
    fn new((since, until): (SystemTime, SystemTime), width: usize) -> Painter {
        Painter {
            since,
            until,
            span_ns: until.duration_since(since).unwrap_or_default().as_nanos(),
            cells: vec![Cell::Unknown; width],
            holders: Vec::new(),
            changes: vec![0u8; width],
        }
    }

    /// The stretch `span` that `holder` led (`None`: nobody); `forced`: an admin action
    /// began it.
    fn paint(&mut self, span: (SystemTime, SystemTime), holder: Option<&str>, forced: bool) {
        let since = self.since;
        let Some((c0, c1)) = self.columns(span) else {
            return;
        };
        // A change in the window begins this stretch (not the window's own start).
        if span.0 > since {
            self.changes[c0] = self.changes[c0].saturating_add(1);
        }
        let cell = match holder {
            Some(h) => Cell::Tenure(self.holder_index(h)),
            None => Cell::Gap,
        };
        let cells = &mut self.cells;
        // Time without a leader is never hidden: a gap takes its columns from anything
        // else, a tenure only those with nothing more telling.
        let gap_before = cells[c0] == Cell::Gap;
        for c in &mut cells[c0..=c1] {
            if cell == Cell::Gap || !matches!(*c, Cell::Gap | Cell::Forced) {
                *c = cell;
            }
        }
        // A forced change is marked where it does not cover a gap: a forced resignation's
        // gap keeps its other columns, one of a single column stays a gap (the cursor's
        // line tells the cause).
        let covers_gap = if cell == Cell::Gap {
            c1 == c0
        } else {
            gap_before
        };
        if forced && !covers_gap && span.0 > since {
            cells[c0] = Cell::Forced;
        }
    }

    /// [`columns`] of a stretch, in whole numbers: what each row's every stretch costs,
    /// where the clock's arithmetic and floats were most of a redraw at 24 h.
    fn columns(&self, (a, b): (SystemTime, SystemTime)) -> Option<(usize, usize)> {
        let width = self.cells.len();
        if b < self.since || a > self.until || width == 0 {
            return None;
        }
        if self.span_ns == 0 {
            return Some((width - 1, width - 1));
        }
        let off = |t: SystemTime| {
            let ns = t.duration_since(self.since).unwrap_or_default().as_nanos();
            ns.min(self.span_ns) * width as u128
        };
        let col = |scaled: u128| -> usize {
            let c = match (u64::try_from(scaled), u64::try_from(self.span_ns)) {
                (Ok(x), Ok(s)) => x / s,
                _ => (scaled / self.span_ns) as u64,
            };
            (c as usize).min(width - 1)
        };
        let first = col(off(a));
        // The column holding the stretch's last instant, not the next one's first.
        let end = off(b);
        let mut last = col(end);
        if last > first && self.span_ns * last as u128 >= end {
            last -= 1;
        }
        Some((first, last))
    }

    fn holder_index(&mut self, holder: &str) -> usize {
        match self.holders.iter().position(|h| h == holder) {
            Some(i) => i,
            None => {
                self.holders.push(holder.to_string());
                self.holders.len() - 1
            }
        }
    }

    fn finish(
        self,
        stale_from: Option<SystemTime>,
        unwatched: &[(SystemTime, SystemTime)],
    ) -> Strip {
        let Painter {
            since,
            until,
            mut cells,
            holders,
            changes,
            ..
        } = self;
        let width = cells.len();
        for (c, n) in cells.iter_mut().zip(&changes) {
            if *n > 1 && matches!(c, Cell::Tenure(_)) {
                *c = Cell::Changes;
            }
        }
        for span in unwatched {
            let Some((c0, c1)) = columns(*span, since, until, width) else {
                continue;
            };
            // Its first and last columns hold what was seen either side: only those between.
            for c in cells.iter_mut().take(c1).skip(c0 + 1) {
                if !matches!(*c, Cell::Gap | Cell::Forced) {
                    *c = Cell::Stale;
                }
            }
        }
        if let Some(from) = stale_from.and_then(|s| column(s, since, until, width)) {
            cells[from + 1..].fill(Cell::Stale);
        }
        Strip { cells, holders }
    }
}

fn is_forced(c: crate::model::Cause) -> bool {
    use crate::model::Cause;
    matches!(
        c,
        Cause::ForcedLeader | Cause::ForcedReelection | Cause::ForcedResign
    )
}

/// When `e`'s source was last heard from, if it is stale now: its strip ends there.
pub fn stale_from(app: &App, e: &Election) -> Option<SystemTime> {
    let s = app.model.sources.get(e.source)?;
    s.stale_for(app.model.now)?;
    s.last_contact.map(|(_, wall)| wall)
}

fn of(e: &Election, since: SystemTime, until: SystemTime, now: SystemTime) -> Timeline {
    let leader = e.leader.as_ref().map(|c| c.id.as_str());
    // Only the changes from just before the window on can draw in it: a day's history seen
    // through a 5-minute window is walked from its end, not from its start.
    let from = first_needed(&e.history, since);
    timeline(e.history.range(from..), leader, since, until, now)
}

/// The index of the newest timed change at or before `since` (it says who led as the
/// window opens), or 0.
fn first_needed(history: &std::collections::VecDeque<HistoryEntry>, since: SystemTime) -> usize {
    history
        .iter()
        .rposition(|h| h.at.is_some_and(|at| at <= since))
        .unwrap_or(0)
}

/// The strip of `e` in `width` columns over the view's window, ended at its source's last
/// contact when stale, with its marks. Drawn straight from the history (every frame, for
/// every row on screen): walked from just before the window, nothing copied.
pub fn election_strip(app: &App, e: &Election, width: usize) -> Strip {
    let now = app.model.wall;
    let window = app.timeline.window(now);
    let (since, until) = window;
    let stale = stale_from(app, e);
    let end = stale.unwrap_or(now).min(until).max(since);
    let mut p = Painter::new(window, width);
    let from = first_needed(&e.history, since);
    crate::model::timeline::walk(
        e.history.range(from..),
        (since, end),
        |_| {},
        |s| {
            p.paint(
                (s.start, s.end),
                s.holder,
                crate::model::timeline::is_forced(s.entry),
            )
        },
    );
    let unwatched: Vec<(SystemTime, SystemTime)> = app
        .model
        .sources
        .get(e.source)
        .map(|s| s.history_gaps.iter().map(|g| (g.from, g.to)).collect())
        .unwrap_or_default();
    let mut s = p.finish(stale, &unwatched);
    overlay(&mut s, window, &marks::of(app, e, window));
    s
}

mod marks;
mod said;

pub use marks::{HolderSpan, Overlay, Stopped, overlay};
pub use said::who_led;

#[cfg(test)]
mod tests;
