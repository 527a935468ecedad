//! The status bar: each source's endpoint, connection state and revision.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::{format, theme};
use crate::app::App;
use crate::model::ConnState;

pub fn draw(app: &App, frame: &mut Frame, area: Rect) {
    let mut spans = Vec::new();
    for (i, s) in app.sources.iter().enumerate() {
        if i > 0 {
            spans.push(Span::styled(" │ ", theme::dim()));
        }
        match &s.conn {
            ConnState::Connecting => spans.push(Span::styled("◌ connecting ", theme::warn())),
            ConnState::Connected => spans.push(Span::styled("● ", theme::leader())),
            ConnState::Down { error, retry_at } => {
                let left = retry_at.saturating_duration_since(app.now).as_millis() as i64;
                spans.push(Span::styled(
                    format!("✖ DOWN, retry in {}: {error} ", format::duration_ms(left)),
                    theme::error(),
                ));
            }
        }
        spans.push(Span::raw(s.info.name.clone()));
        if let Some(rev) = s.revision {
            spans.push(Span::styled(format!(" rev {rev}"), theme::dim()));
        }
        if let Some(n) = &s.notice {
            spans.push(Span::styled(format!(" ⚠ {n}"), theme::warn()));
        }
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}
