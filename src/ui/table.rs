//! The elections table: one row per election, in the order and through the filter the
//! state keeps, each alarmed row marked with its worst alarm's glyph.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Row, Table};

use super::{format, theme};
use crate::app::{App, Focus, SortKey};
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

/// The leader (or since when there is none), and a deposed leader that may still believe it
/// leads beside it.
fn leader_cell(e: &crate::model::Election, stale: bool, idle_is_normal: bool) -> Cell<'static> {
    let lead_style = if stale { theme::dim() } else { theme::leader() };
    let mut spans = match &e.leader {
        Some(l) if stale => vec![
            Span::styled("last seen ", theme::stale()),
            Span::styled(truncate_display(&l.id, 24), lead_style),
        ],
        Some(l) if l.zombie() => vec![
            Span::styled(truncate_display(&l.id, 24), theme::leader()),
            Span::styled(" ⚠", theme::warn()),
        ],
        Some(l) => vec![Span::styled(truncate_display(&l.id, 24), theme::leader())],
        None if idle_is_normal => vec![Span::styled("idle", theme::dim())],
        None => vec![Span::styled(
            match e.no_leader_since() {
                Some(t) => format!("none since {}", crate::model::time::clock(t)),
                None => "— none —".to_string(),
            },
            theme::no_leader(),
        )],
    };
    if let Some(d) = &e.deposed {
        spans.push(Span::styled(
            format!(" ⚠ deposed {}", truncate_display(&d.id, 16)),
            theme::warn(),
        ));
    }
    Cell::from(Line::from(spans))
}

pub fn draw(app: &App, frame: &mut Frame, area: Rect) {
    let rows_fit = area.height.saturating_sub(3) as usize;
    let offset = super::layout::table_offset(app.selected, area);
    let bar = 6;
    let source_col = source_width(app, area.width);
    // Too narrow for the column: the name says its source, as `SOURCE/NAME` on the CLI.
    let qualify = source_col.is_none() && app.sources.len() > 1;
    let rows = app
        .rows
        .iter()
        .enumerate()
        .skip(offset)
        .take(rows_fit)
        .filter_map(|(i, r)| app.elections.get(&r.key).map(|e| (i, r, e)))
        .map(|(i, r, e)| {
            // A stale source's rows are frozen at the last contact and dimmed.
            let stale = app.stale_for(e.source).is_some();
            let at = app.as_of(e.source);
            let leader = leader_cell(e, stale, app.idle_is_normal(e.source));
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
            let worst = r.alarms.worst();
            let mark = worst.map(|a| a.glyph()).unwrap_or(" ");
            let mut cells = vec![
                Cell::from(mark),
                Cell::from(match app.sources.get(e.source) {
                    Some(s) if qualify => {
                        truncate_display(&format!("{}/{}", s.info.short, e.name), 40)
                    }
                    _ => truncate_display(&e.name, 40),
                }),
                Cell::from(scheme_short(e.scheme)),
                leader,
                ttl,
                Cell::from(e.transitions.to_string()),
                Cell::from(format::rate(r.rate)),
                Cell::from(age),
            ];
            if let Some(short) = source_col.and(app.sources.get(e.source)) {
                cells.insert(1, Cell::from(short.info.short.clone()));
            }
            let row = Row::new(cells);
            match (i == app.selected, stale, worst) {
                (true, _, _) => row.style(theme::selected()),
                (false, true, _) => row.style(theme::dim()),
                (false, false, Some(w)) => row.style(theme::alarmed(w)),
                (false, false, None) => row,
            }
        });
    let mut names = headers(app);
    if source_col.is_some() {
        names.insert(1, "SOURCE".to_string());
    }
    let header = Row::new(names).style(theme::header());
    // The scheme only where it leaves the names room to be read.
    let scheme = if area.width >= 90 { 9 } else { 0 };
    let mut widths = vec![
        Constraint::Length(2),
        Constraint::Fill(1),
        Constraint::Length(scheme),
        Constraint::Fill(1),
        Constraint::Length(bar as u16 + 7),
        Constraint::Length(4),
        Constraint::Length(5),
        Constraint::Length(9),
    ];
    if let Some(w) = source_col {
        widths.insert(1, Constraint::Length(w));
    }
    let border = if app.focus == Focus::Elections {
        theme::focused_border()
    } else {
        theme::dim()
    };
    let title = if app.elections.is_empty() {
        " Elections (none found yet) ".to_string()
    } else if app.rows.is_empty() {
        format!(
            " Elections · none of {} match the filter ",
            app.elections.len()
        )
    } else {
        format!(" Elections {}/{} ", app.selected + 1, app.rows.len())
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

/// With several sources, each row says which it is from: the SOURCE column's width, as wide
/// as the longest name (at most 16), where it leaves the leaders room to be read.
fn source_width(app: &App, width: u16) -> Option<u16> {
    if app.sources.len() < 2 || width < 90 {
        return None;
    }
    let longest = app
        .sources
        .iter()
        .map(|s| s.info.short.chars().count())
        .max()
        .unwrap_or(0);
    Some(longest.clamp(6, 16) as u16)
}

/// Column headers, the sorted one with its direction (`TTL▲`).
fn headers(app: &App) -> Vec<String> {
    let cols = [
        (Some(SortKey::Alarms), "!"),
        (Some(SortKey::Name), "ELECTION"),
        (None, "SCHEME"),
        (Some(SortKey::Leader), "LEADER"),
        (Some(SortKey::Ttl), "TTL"),
        (Some(SortKey::Changes), "CHG"),
        (Some(SortKey::Rate), "RATE"),
        (Some(SortKey::Last), "LAST"),
    ];
    cols.iter()
        .map(|(key, name)| match key {
            Some(k) if *k == app.sort.key => format!("{name}{}", k.arrow(app.sort.reversed)),
            _ => name.to_string(),
        })
        .collect()
}
