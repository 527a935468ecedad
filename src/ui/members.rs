//! The `e` overlay: every member of every clustered source, like `etcdctl endpoint status`,
//! so a dead member is visible without the source being shown as down.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Clear, Paragraph, Row, Table, Wrap};

use super::theme;
use crate::app::App;
use crate::model::format;
use crate::model::{MemberStatus, cut_display, escape_bytes};

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
    // ZooKeeper says its mode (`standalone` too); etcd, whether it leads raft.
    let role = match (&m.mode, m.is_leader) {
        (Some(mode), _) => mode.clone(),
        (None, Some(true)) => "leader".into(),
        (None, Some(false)) => "follower".into(),
        (None, None) => String::new(),
    };
    // ZooKeeper's zxid as its own tools print it, in hex.
    let revision = match (&m.mode, m.revision) {
        (Some(_), Some(z)) => Some(format!("0x{:x}", z as u64)),
        (_, r) => r.map(|r| r.to_string()),
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
        Cell::from(opt(revision)),
        Cell::from(opt(m.db_size.map(size).or(m.latency.clone()))),
        Cell::from(opt(m.id.clone().or(m.version.clone()))),
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
        let session = s
            .session
            .as_ref()
            .map(|(id, t)| {
                format!(
                    " · electop's session {id}, timeout {}",
                    format::duration_ms(t.as_millis() as i64)
                )
            })
            .unwrap_or_default();
        rows.push(Row::new(vec![Cell::from(Span::styled(
            format!("{} {}{session}", s.info.short, s.info.label),
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
                    format!("{}: {}", m.endpoint, cut_display(e, 300)),
                    theme::error(),
                )));
            }
            if let Some(n) = &m.note {
                errors.push(Line::from(Span::styled(
                    format!("{}: {}", m.endpoint, cut_display(n, 300)),
                    theme::warn(),
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
        "ENDPOINT", "STATUS", "ROLE", "TERM", "REV/ZXID", "SIZE/LAT", "ID/VER",
    ])
    .style(theme::header());
    let widths = [
        Constraint::Fill(3),
        Constraint::Length(6),
        Constraint::Length(10),
        Constraint::Length(5),
        Constraint::Length(11),
        Constraint::Length(12),
        Constraint::Length(16),
    ];
    frame.render_widget(
        Table::new(rows, widths).header(header).column_spacing(1),
        top,
    );
    frame.render_widget(Paragraph::new(errors).wrap(Wrap { trim: true }), bottom);
}
