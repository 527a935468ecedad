//! Where each pane goes, computed the same way for drawing and for finding what the mouse
//! points at.

use ratatui::layout::{Constraint, Layout, Position, Rect};

use super::theme;
use crate::app::{App, Focus, Hit, Screen};

pub(crate) struct Areas {
    pub header: Rect,
    /// Everything between the header and the status line (the events view uses all of it).
    pub body: Rect,
    pub table: Rect,
    pub candidates: Rect,
    pub history: Rect,
    pub status: Rect,
}

pub(crate) fn split_heights(height: u16) -> (u16, u16) {
    let body = height.saturating_sub(2);
    let table = (body * 2 / 5).max(6);
    (table, body.saturating_sub(table))
}

pub(crate) fn areas(area: Rect) -> Areas {
    let [header, body, status] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(0),
        Constraint::Length(1),
    ])
    .areas(area);
    let (table, detail) = if area.width >= 140 {
        let [l, r] = Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)])
            .areas(body);
        (l, r)
    } else {
        let (t, _) = split_heights(area.height);
        let [t, b] = Layout::vertical([Constraint::Length(t), Constraint::Min(0)]).areas(body);
        (t, b)
    };
    let [candidates, history] =
        Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(detail);
    Areas {
        header,
        body,
        table,
        candidates,
        history,
        status,
    }
}

/// The first row the table shows, so the selected one is in view.
pub(crate) fn table_offset(selected: usize, table: Rect) -> usize {
    let rows_fit = table.height.saturating_sub(3) as usize;
    selected.saturating_sub(rows_fit.saturating_sub(1))
}

/// What is at column `x`, row `y` of the dashboard as drawn for `app` on the whole terminal
/// (overlays take no clicks).
pub fn target_at(app: &App, x: u16, y: u16) -> Option<Hit> {
    target_in(app, Rect::new(0, 0, app.size.0, app.size.1), x, y)
}

/// The same for the dashboard drawn in `area` (the demo draws it beside its node panes).
pub fn target_in(app: &App, area: Rect, x: u16, y: u16) -> Option<Hit> {
    if area.width < theme::MIN_WIDTH
        || area.height < theme::MIN_HEIGHT
        || app.show_help
        || app.show_members
        || app.describe.is_some()
        || app.dialog.is_some()
    {
        return None;
    }
    let a = areas(area);
    let at = Position::new(x, y);
    if app.screen == Screen::Events {
        return a.body.contains(at).then_some(Hit::Events);
    }
    if app.screen == Screen::Timeline {
        return None;
    }
    if a.table.contains(at) {
        // Inside the border, below the column headers.
        let first = a.table.y + 2;
        let last = a.table.bottom().saturating_sub(1);
        if y >= first && y < last {
            let i = table_offset(app.selected, a.table) + (y - first) as usize;
            return Some(Hit::Row(i));
        }
        return Some(Hit::Pane(Focus::Elections));
    }
    if a.candidates.contains(at) {
        return Some(Hit::Pane(Focus::Candidates));
    }
    a.history.contains(at).then_some(Hit::Pane(Focus::History))
}
