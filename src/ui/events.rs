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
    // Each entry takes at least a line: no more than a screenful is built.
    let lines: Vec<Line> = app
        .visible_events()
        .skip(app.events_scroll)
        .take(area.height as usize)
        .map(line)
        .collect();
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
