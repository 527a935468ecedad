//! The `e` overlay: every member of every clustered source, like `etcdctl endpoint status`,
//! so a dead member is visible without the source being shown as down.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Clear, Paragraph, Row, Table, Wrap};

use super::theme;
use crate::app::App;
use crate::model::{MemberStatus, escape_bytes, truncate_display};

fn size(bytes: i64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{:.1} GB", b as f64 / f64::from(1u32 << 30)),
        b if b >= 1 << 20 => format!("{:.1} MB", b as f64 / f64::from(1u32 << 20)),
        b => format!("{} kB", b / 1024),
    }
}

fn row(m: &MemberStatus) -> Row<'static> {
    let state = if m.up {
        Span::styled("up", theme::leader())
    } else {
        Span::styled("DOWN", theme::error())
    };
    let role = match m.is_leader {
        Some(true) => "leader",
        Some(false) => "follower",
        None => "",
    };
    let opt = |v: Option<String>| v.unwrap_or_default();
    Row::new(vec![
        Cell::from(format!(
            "{}{}",
            if m.serving { "▶" } else { " " },
            escape_bytes(m.endpoint.as_bytes())
        )),
        Cell::from(state),
        Cell::from(role),
        Cell::from(opt(m.raft_term.map(|t| t.to_string()))),
        Cell::from(opt(m.revision.map(|r| r.to_string()))),
        Cell::from(opt(m.db_size.map(size))),
        Cell::from(opt(m.id.clone())),
    ])
}

pub(super) fn draw(app: &App, frame: &mut Frame, area: Rect) {
    let popup = area.inner(ratatui::layout::Margin::new(2, 1));
    frame.render_widget(Clear, popup);
    let block = Block::default()
        .borders(Borders::ALL)
        .title(" Members · ▶ = read through · e/Esc close ");
    let inner = block.inner(popup);
    frame.render_widget(block, popup);
    let mut rows = Vec::new();
    let mut errors = Vec::new();
    for s in app.model.sources.iter().filter(|s| s.info.clustered) {
        rows.push(Row::new(vec![Cell::from(Span::styled(
            format!("{} {}", s.info.short, s.info.label),
            theme::title(),
        ))]));
        if s.members.is_empty() {
            rows.push(Row::new(vec![Cell::from(Span::styled(
                " not probed yet",
                theme::dim(),
            ))]));
        }
        for m in &s.members {
            rows.push(row(m));
            if let Some(e) = &m.error {
                errors.push(Line::from(Span::styled(
                    format!("{}: {}", m.endpoint, truncate_display(e, 300)),
                    theme::error(),
                )));
            }
        }
    }
    if rows.is_empty() {
        rows.push(Row::new(vec![Cell::from(Span::styled(
            "no clustered source (SQL sources have no members)",
            theme::dim(),
        ))]));
    }
    let height = inner.height.saturating_sub(errors.len().min(6) as u16);
    let [top, bottom] =
        ratatui::layout::Layout::vertical([Constraint::Length(height), Constraint::Min(0)])
            .areas(inner);
    let header = Row::new([
        "ENDPOINT", "STATUS", "RAFT", "TERM", "REVISION", "DB SIZE", "ID",
    ])
    .style(theme::header());
    let widths = [
        Constraint::Fill(3),
        Constraint::Length(6),
        Constraint::Length(8),
        Constraint::Length(5),
        Constraint::Length(9),
        Constraint::Length(8),
        Constraint::Length(16),
    ];
    frame.render_widget(
        Table::new(rows, widths).header(header).column_spacing(1),
        top,
    );
    frame.render_widget(Paragraph::new(errors).wrap(Wrap { trim: true }), bottom);
}
