//! The `?` overlay, generated from the key table.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use super::theme;
use crate::app::Action;
use crate::app::keys::{Bound, KeyMap};

pub fn draw(frame: &mut Frame, area: Rect, read_only: bool, keys: &KeyMap) {
    let height = (keys.normal().len() as u16 + keys.dialog().len() as u16 + 7).min(area.height);
    let width = 70.min(area.width);
    let [_, mid, _] = Layout::vertical([
        Constraint::Fill(1),
        Constraint::Length(height),
        Constraint::Fill(1),
    ])
    .areas(area);
    let [_, popup, _] = Layout::horizontal([
        Constraint::Fill(1),
        Constraint::Length(width),
        Constraint::Fill(1),
    ])
    .areas(mid);
    let admin = |a: Action| matches!(a, Action::ForceLeader | Action::Reelect | Action::Resign);
    let row = |b: &Bound| {
        let off = read_only && admin(b.action);
        Line::from(vec![
            Span::styled(
                format!(" {:<8}", b.label),
                if off { theme::dim() } else { theme::header() },
            ),
            Span::styled(
                b.help,
                if off {
                    theme::dim()
                } else {
                    ratatui::style::Style::new()
                },
            ),
            Span::styled(if off { "  (off: read-only)" } else { "" }, theme::warn()),
        ])
    };
    let mut lines: Vec<Line> = keys.normal().iter().map(row).collect();
    lines.push(Line::from(Span::styled(" In dialogs", theme::title())));
    lines.extend(keys.dialog().iter().map(row));
    lines.push(Line::from(Span::styled(
        " ⚠ no lease (never expires) · ◐ stale (no contact with the store)",
        theme::dim(),
    )));
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(" Keys ")),
        popup,
    );
}
