//! The events view: every change across elections and sources, newest first, each wrapped in
//! full rather than cut.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};

use super::theme;
use crate::app::App;
use crate::app::log::{LogEntry, Tone};
use crate::model::time;

pub(super) fn draw(app: &App, frame: &mut Frame, area: Rect) {
    let total = app.visible_events().count();
    let title = format!(
        " Events · {} · newest first · / filter · Esc back ",
        crate::model::format::count(total, "event", "events")
    );
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme::focused_border())
        .title(title);
    // What each source's status-bar notice says, whole: the bar cuts it at the screen's edge.
    let mut lines = pinned(app);
    // Each entry takes at least a line: no more than a screenful is built.
    lines.extend(
        app.visible_events()
            .skip(app.events_scroll)
            .take(area.height as usize)
            .map(line),
    );
    let body = if lines.is_empty() {
        let none = if app.events_filter.is_some() {
            "no event matches the filter"
        } else {
            "no change seen yet"
        };
        vec![Line::from(Span::styled(none, theme::dim()))]
    } else {
        lines
    };
    frame.render_widget(
        Paragraph::new(body).wrap(Wrap { trim: false }).block(block),
        area,
    );
}

/// Each source's standing problems (down, and its notices), pinned above the events while they
/// last: they leave when their cause does.
fn pinned(app: &App) -> Vec<Line<'_>> {
    let mut out = Vec::new();
    for s in &app.model.sources {
        if let crate::model::ConnState::Down { error, .. } = &s.conn {
            out.push(Line::from(Span::styled(
                format!("✖ {} DOWN: {error}", s.info.short),
                theme::error(),
            )));
        }
        let layout = s.info.notice.as_ref().map(|n| n.text());
        for n in layout.into_iter().chain(s.notice.as_deref()) {
            out.push(Line::from(Span::styled(
                format!("⚠ {}: {n}", s.info.short),
                theme::warn(),
            )));
        }
    }
    out
}

fn line(e: &LogEntry) -> Line<'_> {
    let when = match (e.at, e.revision) {
        (Some(at), _) => time::clock_ms(at, ::time::UtcOffset::UTC),
        (None, Some(r)) => format!("rev {r}"),
        (None, None) => "replayed".to_string(),
    };
    let style = match e.tone {
        Tone::Change => theme::leader(),
        Tone::Bad | Tone::Failed => theme::no_leader(),
        Tone::Done => theme::header(),
        Tone::Info => ratatui::style::Style::new(),
    };
    let mut spans = vec![
        Span::styled(format!("{when:>12} "), theme::dim()),
        Span::styled(format!("{} ", e.source), theme::dim()),
    ];
    if let Some(el) = &e.election {
        spans.push(Span::styled(format!("{el} "), theme::title()));
    }
    spans.push(Span::styled(e.text.as_str(), style));
    if let Some(c) = &e.cause {
        spans.push(Span::styled(format!(" ({c})"), theme::dim()));
    }
    Line::from(spans)
}
