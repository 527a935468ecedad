//! The elections table: one row per election.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Row, Table};

use super::{format, theme};
use crate::app::{App, Focus};
use crate::model::{Scheme, truncate_display};

fn scheme_short(s: Scheme) -> &'static str {
    match s {
        Scheme::EtcdElection => "election",
        Scheme::EtcdLeaseKey => "lease-key",
        Scheme::SqlLease => "sql-lease",
        Scheme::SqlHeartbeat => "heartbeat",
        Scheme::Patroni => "patroni",
    }
}

pub fn draw(app: &App, frame: &mut Frame, area: Rect) {
    let rows_fit = area.height.saturating_sub(3) as usize;
    let offset = app.selected.saturating_sub(rows_fit.saturating_sub(1));
    let bar = 6;
    let rows = app
        .elections
        .values()
        .enumerate()
        .skip(offset)
        .take(rows_fit)
        .map(|(i, e)| {
            // A stale source's rows are frozen at the last contact and dimmed.
            let stale = app.stale_for(e.source).is_some();
            let at = app.as_of(e.source);
            let lead_style = if stale { theme::dim() } else { theme::leader() };
            let leader = match &e.leader {
                Some(l) if stale => Cell::from(Line::from(vec![
                    Span::styled("last seen ", theme::stale()),
                    Span::styled(truncate_display(&l.id, 24), lead_style),
                ])),
                Some(l) if l.zombie() => Cell::from(Line::from(vec![
                    Span::styled(truncate_display(&l.id, 24), theme::leader()),
                    Span::styled(" ⚠", theme::warn()),
                ])),
                Some(l) => Cell::from(Span::styled(truncate_display(&l.id, 24), theme::leader())),
                None if app.idle_is_normal(e.source) => {
                    Cell::from(Span::styled("idle", theme::dim()))
                }
                None => Cell::from(Span::styled(
                    match e.no_leader_since() {
                        Some(t) => format!("none since {}", crate::model::time::clock(t)),
                        None => "— none —".to_string(),
                    },
                    theme::no_leader(),
                )),
            };
            // A deposed leader that may still believe it leads is an alarm on the row, after
            // the leader itself.
            let leader = match &e.deposed {
                Some(d) => {
                    let mut spans: Vec<Span> = match &e.leader {
                        Some(l) if !stale => vec![
                            Span::styled(truncate_display(&l.id, 24), theme::leader()),
                            Span::raw(" "),
                        ],
                        _ => Vec::new(),
                    };
                    spans.push(Span::styled(
                        format!("⚠ deposed {}", truncate_display(&d.id, 16)),
                        theme::warn(),
                    ));
                    Cell::from(Line::from(spans))
                }
                None => leader,
            };
            let ttl = match &e.leader {
                Some(l) => {
                    let style = match (&l.ttl, l.zombie()) {
                        _ if stale => theme::dim(),
                        (_, true) => theme::warn(),
                        (Some(d), _) => theme::ttl(d.ratio_at(at)),
                        (None, _) => theme::dim(),
                    };
                    Cell::from(Span::styled(format::ttl_cell(l, at, bar), style))
                }
                None => Cell::from(""),
            };
            let age = e
                .last_change()
                .map(|h| format::age(h, app.wall))
                .unwrap_or_default();
            let row = Row::new(vec![
                Cell::from(truncate_display(&e.name, 40)),
                Cell::from(scheme_short(e.scheme)),
                leader,
                ttl,
                Cell::from(e.transitions.to_string()),
                Cell::from(age),
            ]);
            match (i == app.selected, stale) {
                (true, _) => row.style(theme::selected()),
                (false, true) => row.style(theme::dim()),
                (false, false) => row,
            }
        });
    let header =
        Row::new(["ELECTION", "SCHEME", "LEADER", "TTL", "CHG", "LAST"]).style(theme::header());
    let widths = [
        Constraint::Fill(1),
        Constraint::Length(9),
        Constraint::Fill(1),
        Constraint::Length(bar as u16 + 7),
        Constraint::Length(4),
        Constraint::Length(9),
    ];
    let border = if app.focus == Focus::Elections {
        theme::focused_border()
    } else {
        theme::dim()
    };
    let title = if app.elections.is_empty() {
        " Elections (none found yet) ".to_string()
    } else {
        format!(" Elections {}/{} ", app.selected + 1, app.elections.len())
    };
    let table = Table::new(rows, widths)
        .header(header)
        .column_spacing(1)
        .block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(border)
                .title(title),
        );
    frame.render_widget(table, area);
}
