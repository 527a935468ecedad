//! The detail view (`Enter`): the lines `app::describe` builds, styled, over the body of
//! the dashboard, from the line it is scrolled to.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use super::theme;
use crate::app::App;
use crate::app::describe::{self, Tone};

fn style(t: Tone) -> Style {
    match t {
        Tone::Label => theme::header(),
        Tone::Text => Style::new(),
        Tone::Leader => theme::leader(),
        Tone::Dim => theme::dim(),
        Tone::Warn => theme::warn(),
        Tone::Bad => theme::no_leader(),
        Tone::Heading => theme::title().add_modifier(Modifier::BOLD),
    }
}

pub(super) fn draw(app: &App, frame: &mut Frame, area: Rect) {
    frame.render_widget(Clear, area);
    let inner_w = area.width.saturating_sub(2) as usize;
    let rows = area.height.saturating_sub(2 + describe::STRIP_LINES as u16) as usize;
    let Some(e) = describe::election(app) else {
        let p = Paragraph::new("The election is gone (nothing left in the store). Esc closes.")
            .block(Block::default().borders(Borders::ALL).title(" Detail "));
        frame.render_widget(p, area);
        return;
    };
    // Only the lines on screen are made: a line of thousands costs a screenful.
    let total = describe::len(app, e, inner_w);
    let start = app
        .describe
        .as_ref()
        .map(|d| d.scroll)
        .unwrap_or(0)
        .min(total.saturating_sub(rows));
    let shown: Vec<Line> = describe::window(app, e, inner_w, start, rows)
        .into_iter()
        .map(|l| {
            Line::from(
                l.into_iter()
                    .map(|(t, s)| Span::styled(s, style(t)))
                    .collect::<Vec<_>>(),
            )
        })
        .collect();
    let title = format!(
        " {} · {}-{}/{total} · j/k PgUp/PgDn · y/Y copy · Esc ",
        crate::model::cut_display(&e.name, 24),
        start + 1,
        (start + rows).min(total),
    );
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme::focused_border())
        .title(title);
    // Its strip over the timeline's window stays on top while the rest scrolls.
    let mut all = vec![super::timeline::detail_line(app, e, inner_w)];
    all.extend(shown);
    frame.render_widget(Paragraph::new(all).block(block), area);
}
