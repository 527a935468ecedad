//! `view(&app, frame)` draws the state; one module per pane. Drawing reads the state and
//! never calls a backend.

mod describe;
mod detail;
mod dialog;
mod events;

mod help;
pub(crate) mod layout;
mod members;
pub(crate) mod osc52;
#[cfg(test)]
mod rows_in_view_tests;
mod status;
mod table;
pub mod theme;
mod timeline;
mod widths;

use crate::model::format;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use crate::app::alarm::Alarm;
use crate::app::{App, Screen};
pub use layout::{target_at, target_in};

/// Rows of the elections table that fit in a terminal of this size (for lease refreshes,
/// paging, and whether a change is in view and needs a frame). The table's area as drawn:
/// on a wide terminal it takes the whole height beside the detail, not the share it has
/// above the detail on a narrow one, so the width matters.
pub fn table_rows(width: u16, height: u16) -> usize {
    let table = layout::areas(Rect::new(0, 0, width, height)).table;
    table.height.saturating_sub(3) as usize
}

pub fn view(app: &App, frame: &mut Frame) {
    view_in(app, frame, frame.area());
}

/// The dashboard in `area` of the frame.
pub fn view_in(app: &App, frame: &mut Frame, area: Rect) {
    if panes(app, frame, area) {
        overlays(app, frame, area);
    }
}

/// The dashboard's panes in `area`, without the overlays (the demo draws those over its
/// node panes too). False when `area` is too small: the message is drawn instead.
pub fn panes(app: &App, frame: &mut Frame, area: Rect) -> bool {
    if area.width < theme::MIN_WIDTH || area.height < theme::MIN_HEIGHT {
        too_small(frame, area);
        return false;
    }
    let a = layout::areas(area);
    header(app, frame, a.header);
    match app.screen {
        Screen::Main => {
            table::draw(app, frame, a.table);
            let detail = a.candidates.union(a.history);
            detail::draw(app, frame, detail);
        }
        Screen::Events => events::draw(app, frame, a.body),
        Screen::Timeline => timeline::draw(app, frame, a.body),
    }
    if app.describe.is_some() {
        describe::draw(app, frame, a.body);
    }
    status::draw(app, frame, a.status);
    true
}

/// The members list, the help and a dialog, over `area`.
pub fn overlays(app: &App, frame: &mut Frame, area: Rect) {
    if app.show_members {
        members::draw(app, frame, area);
    }
    if app.show_help {
        let read_only = app.model.sources.iter().all(|s| s.info.read_only);
        help::draw(frame, area, read_only, app, app.screen);
    }
    if let Some(d) = &app.dialog {
        dialog::draw(d, frame, area);
    }
}

fn header(app: &App, frame: &mut Frame, area: Rect) {
    let mut spans = vec![Span::styled(" electop ", theme::title())];
    if let Some(ctx) = &app.contexts.current {
        spans.push(Span::raw(format!("· ctx {ctx} ")));
    }
    // Staleness first: it qualifies everything else on the screen. A source never reached
    // is down, not empty.
    for src in &app.model.sources {
        let never_read = src.last_contact.is_none();
        if never_read && matches!(src.conn, crate::model::ConnState::Down { .. }) {
            spans.push(Span::styled(
                format!("· DOWN — {} not read ", src.info.short),
                theme::stale(),
            ));
        }
        if let Some(age) = src.stale_for(app.model.now) {
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
    spans.extend(filter_span(app));
    spans.push(Span::raw(format!(
        "· {} ",
        format::count(app.model.elections.len(), "election", "elections")
    )));
    // Right after the count, which it qualifies: these are the elections read so far.
    if let Some(text) = loading(app) {
        spans.push(Span::styled(text, theme::warn()));
    }
    let rest = tail(app);
    let width = |s: &[Span]| s.iter().map(Span::width).sum::<usize>();
    let full = alarm_spans(app, false);
    let fits = width(&spans) + width(&full) + width(&rest) <= area.width as usize;
    spans.extend(if fits { full } else { alarm_spans(app, true) });
    spans.extend(rest);
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// `· ✖ 1 no leader ` for each alarm present, or `✖1 ` when room is short.
fn alarm_spans(app: &App, compact: bool) -> Vec<Span<'static>> {
    let mut spans = Vec::new();
    for alarm in Alarm::ALL {
        let n = app.model.alarm_counts()[alarm as usize];
        // Stale is already spelled out, source by source.
        if n == 0 || alarm == Alarm::Stale {
            continue;
        }
        let text = if compact {
            format!("{}{n} ", alarm.glyph())
        } else {
            format!("· {} {} ", alarm.glyph(), alarm.counted(n))
        };
        if compact && spans.is_empty() {
            spans.push(Span::raw("· "));
        }
        spans.push(Span::styled(
            text,
            theme::alarmed(alarm).add_modifier(ratatui::style::Modifier::BOLD),
        ));
    }
    spans
}

/// The filter in force on this screen: `· /jobs (2 of 50) `.
fn filter_span(app: &App) -> Option<Span<'static>> {
    let (f, shown) = match app.screen {
        Screen::Main | Screen::Timeline => (
            app.filter.as_ref()?,
            format!("{} of {}", app.rows.len(), app.model.elections.len()),
        ),
        Screen::Events => (
            app.events_filter.as_ref()?,
            format!(
                "{} of {}",
                app.visible_events().count(),
                app.model.events.entries.len()
            ),
        ),
    };
    Some(Span::styled(
        format!("· /{} ({shown}) ", f.text),
        theme::header(),
    ))
}

fn tail(app: &App) -> Vec<Span<'static>> {
    let mut spans = Vec::new();
    if app.model.replaying() {
        spans.push(Span::styled("· replaying history… ", theme::warn()));
    }
    if !app.model.sources.is_empty() && app.model.sources.iter().all(|s| s.info.read_only) {
        spans.push(Span::styled("· READ-ONLY ", theme::warn()));
    }
    spans.push(Span::styled("· ? help  q quit", theme::dim()));
    spans
}

/// "loading snapshot: 12,000 of 100,000 keys" while first snapshots are read (summed over
/// the sources still reading, by what they count; "12,000 znodes so far" where a total is
/// not known).
fn loading(app: &App) -> Option<String> {
    let mut by_what: Vec<(&str, usize, Option<usize>)> = Vec::new();
    for (read, total, what) in app.model.sources.iter().filter_map(|s| s.loading) {
        let total = (total > 0).then_some(total);
        match by_what.iter_mut().find(|(w, _, _)| *w == what) {
            Some((_, r, t)) => {
                *r += read;
                *t = t.zip(total).map(|(a, b)| a + b);
            }
            None => by_what.push((what, read, total)),
        }
    }
    let parts: Vec<String> = by_what
        .into_iter()
        .map(|(what, read, total)| match total {
            Some(t) => format!("{} of {} {what}", thousands(read), thousands(t)),
            None => format!("{} {what} so far", thousands(read)),
        })
        .collect();
    (!parts.is_empty()).then(|| format!("· loading snapshot: {} ", parts.join(", ")))
}

fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn too_small(frame: &mut Frame, area: Rect) {
    too_small_for(frame, area, (theme::MIN_WIDTH, theme::MIN_HEIGHT));
}

/// The message for a terminal smaller than `need` (width, height).
pub fn too_small_for(frame: &mut Frame, area: Rect, need: (u16, u16)) {
    let text = format!(
        "Terminal too small: {}x{}.\nelectop needs at least {}x{}.\nEnlarge the window or press q to quit.",
        area.width, area.height, need.0, need.1
    );
    frame.render_widget(
        Paragraph::new(text)
            .wrap(Wrap { trim: true })
            .style(theme::warn()),
        area,
    );
}
