//! `view(&app, frame)` draws the state; one module per pane. Drawing reads the state and
//! never calls a backend.

mod detail;
mod dialog;
pub mod format;
mod help;
mod members;
mod status;
mod table;
pub mod theme;

use ratatui::Frame;
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use crate::app::App;

/// Rows of the elections table that fit in a terminal of this size (for lease refreshes
/// and paging).
pub fn table_rows(height: u16) -> usize {
    let (table, _) = split_heights(height);
    table.saturating_sub(3) as usize
}

fn split_heights(height: u16) -> (u16, u16) {
    let body = height.saturating_sub(2);
    let table = (body * 2 / 5).max(6);
    (table, body.saturating_sub(table))
}

pub fn view(app: &App, frame: &mut Frame) {
    view_in(app, frame, frame.area());
}

/// The dashboard in `area` of the frame (the demo puts node panes beside it).
pub fn view_in(app: &App, frame: &mut Frame, area: Rect) {
    if area.width < theme::MIN_WIDTH || area.height < theme::MIN_HEIGHT {
        too_small(frame, area);
        return;
    }
    let [title, body, status] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(0),
        Constraint::Length(1),
    ])
    .areas(area);
    header(app, frame, title);
    let wide = area.width >= 140;
    let (top, bottom) = if wide {
        let [l, r] = Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)])
            .areas(body);
        (l, r)
    } else {
        let (t, _) = split_heights(area.height);
        let [t, b] = Layout::default()
            .direction(Direction::Vertical)
            .constraints([Constraint::Length(t), Constraint::Min(0)])
            .areas(body);
        (t, b)
    };
    table::draw(app, frame, top);
    detail::draw(app, frame, bottom);
    status::draw(app, frame, status);
    if app.show_members {
        members::draw(app, frame, area);
    }
    if app.show_help {
        let read_only = app.sources.iter().all(|s| s.info.read_only);
        help::draw(frame, area, read_only, &app.keys);
    }
    if let Some(d) = &app.dialog {
        dialog::draw(d, frame, area);
    }
}

fn header(app: &App, frame: &mut Frame, area: Rect) {
    let leaderless = app
        .elections
        .values()
        .filter(|e| e.leader.is_none() && !app.idle_is_normal(e.source))
        .count();
    let mut spans = vec![Span::styled(" electop ", theme::title())];
    // Staleness first: it qualifies everything else on the screen.
    for src in &app.sources {
        if let Some(age) = src.stale_for(app.now) {
            spans.push(Span::styled(
                format!(
                    "· STALE — no contact with {} for {}s ",
                    src.info.short,
                    age.as_secs()
                ),
                theme::stale(),
            ));
        }
    }
    spans.push(Span::raw(format!("· {} elections ", app.elections.len())));
    if leaderless > 0 {
        spans.push(Span::styled(
            format!("· {leaderless} without leader "),
            theme::no_leader(),
        ));
    }
    if app.replaying() {
        spans.push(Span::styled("· replaying history… ", theme::warn()));
    }
    if !app.sources.is_empty() && app.sources.iter().all(|s| s.info.read_only) {
        spans.push(Span::styled("· READ-ONLY ", theme::warn()));
    }
    match &app.flash {
        Some(f) => spans.push(Span::styled(
            format!("· {}", f.text),
            if f.error {
                theme::error()
            } else {
                theme::leader()
            },
        )),
        None => spans.push(Span::styled("· ? help  q quit", theme::dim())),
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn too_small(frame: &mut Frame, area: Rect) {
    let text = format!(
        "Terminal too small: {}x{}.\nelectop needs at least {}x{}.\nEnlarge the window or press q to quit.",
        area.width,
        area.height,
        theme::MIN_WIDTH,
        theme::MIN_HEIGHT
    );
    frame.render_widget(
        Paragraph::new(text)
            .wrap(Wrap { trim: true })
            .style(theme::warn()),
        area,
    );
}
