//! The elections table: one row per election, in the order and through the filter the
//! state keeps, each alarmed row marked with its worst alarm's glyph. Columns are as wide
//! as what the rows on screen hold (`super::widths`), so a long name takes room only while
//! nothing else is cut; values that change with the clock take their widest usual form's
//! room, so no column moves between frames. The title says when rows are out of view.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Row, Table};

use super::theme;
use super::widths::{self, Col};
use crate::app::{App, Focus, SortKey};
use crate::model::format;
use crate::model::{Election, Scheme, cut_display};

/// Cells longer than this are cut before measuring: the detail view (`Enter`) shows them
/// whole.
const CELL_MAX: usize = 200;
/// Cells of the countdown bar.
const BAR: usize = 6;

fn scheme_short(s: Scheme) -> &'static str {
    s.facts().short
}

/// The leader (or since when there is none), and a deposed leader that may still believe it
/// leads beside it.
fn leader_cell(
    e: &Election,
    stale: bool,
    idle_is_normal: bool,
    hold: Option<crate::model::Hold>,
) -> Line<'static> {
    let lead_style = if stale { theme::dim() } else { theme::leader() };
    let id = |s: &str| cut_display(s, CELL_MAX);
    let mut spans = match &e.leader {
        // An action's hold first: who leads next and when, then what it is (cut first).
        _ if hold.is_some() => Vec::new(),
        Some(l) if stale => vec![
            Span::styled("last seen ", theme::stale()),
            Span::styled(id(&l.id), lead_style),
        ],
        Some(l) if l.zombie() => vec![
            Span::styled(id(&l.id), theme::leader()),
            Span::styled(" ⚠", theme::warn()),
        ],
        Some(l) => vec![Span::styled(id(&l.id), theme::leader())],
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
        // ZooKeeper: the session that may still act, beside the holder.
        let session = e
            .deposed_session_text(true)
            .map(|s| format!(", {s}"))
            .unwrap_or_default();
        spans.push(Span::styled(
            format!(" ⚠ deposed {}{session}", cut_display(&d.id, 16)),
            theme::warn(),
        ));
    }
    if let Some(h) = hold {
        let left = match h.left_ms {
            Some(ms) => format!("in {} s", ms.max(0) / 1000),
            None => "when its lease ends".to_string(),
        };
        let text = match h.next {
            Some(n) => format!("⏳ {} next {left} · {}", cut_display(n, 16), h.action),
            None => format!("⏳ {} ends {left}", h.action),
        };
        spans.insert(0, Span::styled(text, theme::warn()));
    }
    Line::from(spans)
}

/// One column of the table: its header, its sort key and its bounds.
struct Column {
    header: &'static str,
    sort: Option<SortKey>,
    col: Col,
}

/// With several sources, each row says which it is from: in a SOURCE column where the
/// screen leaves the leaders room to be read, else as `SOURCE/NAME` (as on the CLI).
#[derive(Clone, Copy, PartialEq)]
enum SourceShown {
    One,
    Column,
    Qualified,
}

fn source_shown(app: &App, width: u16) -> SourceShown {
    match (app.model.sources.len() > 1, width >= 90) {
        (false, _) => SourceShown::One,
        (true, true) => SourceShown::Column,
        (true, false) => SourceShown::Qualified,
    }
}

/// The columns, left to right; the widths follow from the content.
fn columns(source: SourceShown) -> Vec<Column> {
    let c = |header, sort, col| Column { header, sort, col };
    let mut cols = vec![
        c("!", Some(SortKey::Alarms), Col::fixed(2)),
        c(
            "ELECTION",
            Some(SortKey::Name),
            Col::content(8, 60).growing(),
        ),
        // The scheme is the first to go where room is short: the detail pane names it.
        c("SCHEME", None, Col::content(6, 9).spare().droppable(1)),
        c(
            "LEADER",
            Some(SortKey::Leader),
            Col::content(8, 60).growing(),
        ),
        // Numbers and countdowns take the room of their widest usual form, so the columns
        // stay put as values tick (a TTL from 10.0s to 9.9s, a count from 9 to 10).
        c(
            "TTL",
            Some(SortKey::Ttl),
            Col::content(4, BAR as u16 + 7).steady(BAR as u16 + 6),
        ),
        c("CHG", Some(SortKey::Changes), Col::content(4, 10)),
        // Candidates waiting behind the leader (the detail pane lists them): it makes room
        // for a leader that one more cell would show whole.
        c(
            "LINE",
            Some(SortKey::Line),
            Col::content(4, 8).yields().droppable(2),
        ),
        c(
            "RATE",
            Some(SortKey::Rate),
            Col::content(4, 7).steady(5).droppable(3),
        ),
        c(
            "LAST",
            Some(SortKey::Last),
            Col::content(5, 10).steady(7).droppable(4),
        ),
    ];
    if source == SourceShown::Column {
        cols.insert(1, c("SOURCE", None, Col::content(6, 16)));
    }
    cols
}

/// The cells of one election's row, and the style of the whole row.
fn cells(
    app: &App,
    i: usize,
    r: &crate::app::RowInfo,
    e: &Election,
    source: SourceShown,
) -> (Vec<Line<'static>>, Style) {
    // A stale source's rows are frozen at the last contact and dimmed.
    let stale = app.model.stale_for(e.source).is_some();
    let at = app.model.as_of(e.source);
    let ttl = match &e.leader {
        Some(l) => {
            let style = match (&l.ttl, l.zombie()) {
                _ if stale => theme::dim(),
                (_, true) => theme::warn(),
                (Some(d), _) => theme::ttl(d.ratio_at(at)),
                (None, _) => theme::dim(),
            };
            Line::from(Span::styled(format::hold_cell(e.scheme, l, at, BAR), style))
        }
        None => Line::from(""),
    };
    let age = e
        .last_change()
        .map(|h| format::age(h, app.model.wall))
        .unwrap_or_default();
    let worst = r.alarms.worst();
    let mark = worst.map(|a| a.glyph()).unwrap_or(" ");
    let short = app
        .model
        .sources
        .get(e.source)
        .map(|s| s.info.short.as_str());
    let name = match (source, short) {
        (SourceShown::Qualified, Some(s)) => format!("{s}/{}", e.name),
        _ => e.name.clone(),
    };
    let mut line = vec![
        Line::from(mark),
        Line::from(cut_display(&name, CELL_MAX)),
        Line::from(scheme_short(e.scheme)),
        leader_cell(
            e,
            stale,
            app.model.idle_is_normal(e.source),
            e.hold_at(app.model.now),
        ),
        ttl,
        Line::from(e.transitions.to_string()),
        match e.waiting() {
            Some(n) => Line::from(n.to_string()),
            None => Line::from(Span::styled("-", theme::dim())),
        },
        Line::from(format::rate(r.rate)),
        Line::from(age),
    ];
    if source == SourceShown::Column {
        line.insert(1, Line::from(cut_display(short.unwrap_or(""), CELL_MAX)));
    }
    let style = match (i == app.selected, stale, worst) {
        (true, _, _) => theme::selected(),
        (false, true, _) => theme::dim(),
        (false, false, Some(w)) => theme::alarmed(w),
        (false, false, None) => Style::new(),
    };
    (line, style)
}

/// `line` cut to `width` cells, with `…` where it was cut.
pub(super) fn fit(line: Line<'static>, width: usize) -> Line<'static> {
    if line.width() <= width {
        return line;
    }
    let mut left = width.saturating_sub(1);
    let mut spans = Vec::new();
    for span in line.spans {
        if left == 0 {
            break;
        }
        let mut text = String::new();
        for c in span.content.chars() {
            let w = Span::raw(c.to_string()).width();
            if w > left {
                left = 0;
                break;
            }
            left -= w;
            text.push(c);
        }
        spans.push(Span::styled(text, span.style));
    }
    spans.push(Span::styled("…", theme::dim()));
    Line::from(spans).style(line.style)
}

pub(super) fn draw(app: &App, frame: &mut Frame, area: Rect) {
    let rows_fit = area.height.saturating_sub(3) as usize;
    let offset = super::layout::table_offset(app.selected, area);
    let source = source_shown(app, area.width);
    let visible: Vec<(Vec<Line<'static>>, Style)> = app
        .rows
        .iter()
        .enumerate()
        .skip(offset)
        .take(rows_fit)
        .filter_map(|(i, r)| {
            let e = app.model.elections.get(&r.key)?;
            Some(cells(app, i, r, e, source))
        })
        .collect();
    let mut cols = columns(source);
    let headers = headers(app, &cols);
    for (c, h) in cols.iter_mut().zip(&headers) {
        c.col.fit(Span::raw(h.as_str()).width());
    }
    for (line, _) in &visible {
        for (c, cell) in cols.iter_mut().zip(line) {
            c.col.fit(cell.width());
        }
    }
    let specs: Vec<Col> = cols.iter().map(|c| c.col).collect();
    let hidden = Hidden {
        above: offset,
        below: app.rows.len().saturating_sub(offset + visible.len()),
    };
    // Inside the borders, less one cell so the last column does not touch the right one.
    let w = widths::allocate(&specs, area.width.saturating_sub(3), 1);
    // A dropped column is left out, not drawn 0 wide: its spacing would still be drawn.
    let shown = |cells: Vec<Line<'static>>| -> Vec<Line<'static>> {
        cells
            .into_iter()
            .zip(&w)
            .filter(|(_, w)| **w > 0)
            .map(|(cell, w)| fit(cell, *w as usize))
            .collect()
    };
    let header =
        Row::new(shown(headers.into_iter().map(Line::from).collect())).style(theme::header());
    let rows = visible
        .into_iter()
        .map(|(line, style)| Row::new(shown(line)).style(style));
    let constraints: Vec<Constraint> = w
        .iter()
        .filter(|w| **w > 0)
        .map(|w| Constraint::Length(*w))
        .collect();
    let table = Table::new(rows, constraints)
        .header(header)
        .column_spacing(1)
        .block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(border(app))
                .title(title(app, hidden)),
        );
    frame.render_widget(table, area);
}

fn border(app: &App) -> Style {
    if app.focus == Focus::Elections {
        theme::focused_border()
    } else {
        theme::dim()
    }
}

/// Rows that are there but not drawn: the title says so, with the way to scroll to them.
#[derive(Clone, Copy)]
struct Hidden {
    above: usize,
    below: usize,
}

impl Hidden {
    /// ` · 2 above ↑ · 1 more below ↓`, or nothing when every row is drawn.
    fn text(self) -> String {
        let mut s = String::new();
        if self.above > 0 {
            s.push_str(&format!(" · {} above ↑", self.above));
        }
        if self.below > 0 {
            s.push_str(&format!(" · {} more below ↓", self.below));
        }
        s
    }
}

fn title(app: &App, hidden: Hidden) -> String {
    let down = |read: bool| -> Vec<&str> {
        app.model
            .sources
            .iter()
            .filter(|s| matches!(s.conn, crate::model::ConnState::Down { .. }))
            .filter(|s| s.last_contact.is_some() == read)
            .map(|s| s.info.short.as_str())
            .collect()
    };
    // A source down since electop last read it: its rows are that read's, dimmed. One never
    // read: what it holds is unknown.
    let (stale, unread) = (down(true), down(false));
    if app.model.elections.is_empty() && !(stale.is_empty() && unread.is_empty()) {
        // Not "none found": a store that cannot be read holds what it holds, unseen.
        let all: Vec<&str> = stale.iter().chain(&unread).copied().collect();
        format!(" Elections (unknown: {} DOWN) ", all.join(", "))
    } else if app.model.elections.is_empty() {
        " Elections (none found yet) ".to_string()
    } else if app.rows.is_empty() {
        format!(
            " Elections · none of {} match the filter ",
            app.model.elections.len()
        )
    } else {
        let mut notes = String::new();
        if !stale.is_empty() {
            notes.push_str(&format!(" · {} DOWN: rows as last read", stale.join(", ")));
        }
        // The rows are some sources' only: the others' elections are unknown, not absent.
        if !unread.is_empty() {
            notes.push_str(&format!(" · {} DOWN: not shown", unread.join(", ")));
        }
        format!(
            " Elections {}/{}{}{notes} ",
            app.selected + 1,
            app.rows.len(),
            hidden.text()
        )
    }
}

/// Column headers, the sorted one with its direction (`TTL▲`).
fn headers(app: &App, cols: &[Column]) -> Vec<String> {
    cols.iter()
        .map(|c| match c.sort {
            Some(k) if k == app.sort.key => format!("{}{}", c.header, k.arrow(app.sort.reversed)),
            _ => c.header.to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_too_wide_is_cut_with_an_ellipsis() {
        let cut = fit(Line::from("payments-reconciliation"), 10);
        assert_eq!(cut.to_string(), "payments-…");
        assert_eq!(cut.width(), 10);
        let two = Line::from(vec![Span::raw("node-a"), Span::raw(" ⚠ deposed b-1")]);
        assert_eq!(fit(two, 9).to_string(), "node-a ⚠…");
        assert_eq!(fit(Line::from("short"), 9).to_string(), "short");
    }
}
