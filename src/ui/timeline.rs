//! The timeline view (`t`): who led each election when, a strip per row over the window,
//! with a time axis, the cursor's line and a legend. What each column shows is worked out
//! in `app::timeline` (pure); this only styles it. Every glyph tells its meaning without
//! colour too (a terminal without colours, or a `tmux capture-pane`): a tenure is `━` after
//! its holder's name (`┃` first where the name does not fit; `═` while a deposed holder lived
//! on), a gap `░`, a forced change `◆`, several changes in a column `*`, a past stretch the
//! source was down `×`, time after a stale source's last contact, in a past silence of it or
//! that no electop watched `┄`; nothing known is blank.

use std::time::{Duration, SystemTime};

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use super::theme;
use crate::app::timeline::{self as tl, Cell, Strip};
use crate::app::{App, RowInfo};
use crate::model::{cut_display, display_width, time};

/// Lines under the rows: the axis, the cursor's line, the legend.
const FOOT: u16 = 3;

pub(super) fn draw(app: &App, frame: &mut Frame, area: Rect) {
    let (since, until) = app.timeline.window(app.model.wall);
    let to = if app.timeline.back.is_zero() {
        "now".to_string()
    } else {
        time::clock(until)
    };
    let title = format!(
        " Timeline · {} to {to} · {} · +/- zoom ←/→ pan h/l cursor · Esc ",
        tl::span_label(app.timeline.span()),
        crate::model::format::count(app.rows.len(), "election", "elections"),
    );
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme::focused_border())
        .title(cut_display(&title, area.width.saturating_sub(2) as usize));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let rows_fit = inner.height.saturating_sub(FOOT) as usize;
    let start = app.selected.saturating_sub(rows_fit.saturating_sub(1));
    let shown: Vec<&RowInfo> = app.rows.iter().skip(start).take(rows_fit).collect();
    let label_w = label_width(&shown, inner.width as usize);
    let width = (inner.width as usize).saturating_sub(label_w + 1);
    let cursor = tl::column(app.timeline.cursor_at(app.model.wall), since, until, width);
    let mut lines = Vec::with_capacity(inner.height as usize);
    let mut holders: Vec<String> = Vec::new();
    for (i, r) in shown.iter().enumerate() {
        let Some(e) = app.model.elections.get(&r.key) else {
            continue;
        };
        let strip = tl::election_strip(app, e, width);
        for h in &strip.holders {
            if !holders.contains(h) {
                holders.push(h.clone());
            }
        }
        let style = if start + i == app.selected {
            theme::selected()
        } else if tl::stale_from(app, e).is_some() {
            theme::dim()
        } else {
            Style::new()
        };
        let mut spans = vec![Span::styled(
            format!("{:<label_w$} ", cut_display(&e.name, label_w)),
            style,
        )];
        spans.extend(strip_spans(&strip, cursor));
        lines.push(Line::from(spans));
    }
    if shown.is_empty() {
        lines.push(Line::from(Span::styled(
            "no election (or none matches the filter)",
            theme::dim(),
        )));
    }
    let foot_at = inner.height.saturating_sub(FOOT) as usize;
    lines.resize(foot_at.max(lines.len()), Line::from(""));
    lines.push(axis(
        label_w,
        width,
        (since, until),
        cursor,
        app.timeline.span(),
    ));
    lines.push(cursor_line(app, inner.width as usize));
    lines.push(legend(&holders, inner.width as usize));
    frame.render_widget(Paragraph::new(lines), inner);
}

/// The names' column: the longest name shown, within a quarter of the width.
fn label_width(rows: &[&RowInfo], width: usize) -> usize {
    let longest = rows
        .iter()
        .map(|r| display_width(&r.key.1))
        .max()
        .unwrap_or(8);
    longest.clamp(8, (width / 4).max(8))
}

/// A strip as styled text: each tenure its holder's name then `━`, in the holder's colour;
/// the cursor's column reversed.
pub(super) fn strip_spans(strip: &Strip, cursor: Option<usize>) -> Vec<Span<'static>> {
    let mut glyphs: Vec<(char, Style)> = Vec::with_capacity(strip.cells.len());
    let mut i = 0;
    // The holder whose name the runs just before (of that holder) show.
    let mut named: Option<usize> = None;
    while i < strip.cells.len() {
        let cell = strip.cells[i];
        if let Some((h, deposed)) = holder_of(cell) {
            let run = strip.cells[i..].iter().take_while(|c| **c == cell).count();
            let name = &strip.holders[h];
            let style = theme::holder(name);
            let before = i.checked_sub(1).and_then(|p| holder_of(strip.cells[p]));
            if before.is_none_or(|(p, _)| p != h) {
                named = None;
            }
            // The name once where a run has room for it and a stroke after; a deposed run
            // only with room for its `═` to show too, else the run after it names it.
            let room = if deposed { display_width(name) + 3 } else { 3 };
            let shown: Vec<char> = if named != Some(h) && run >= room {
                named = Some(h);
                cut_display(name, run - 1).chars().collect()
            } else {
                Vec::new()
            };
            // A run too short for the name after another holder's: the change as `┃`.
            let after_other = before.is_some_and(|(p, _)| p != h);
            let stroke = if deposed { '═' } else { '━' };
            for k in 0..run {
                match shown.get(k) {
                    Some(c) => glyphs.push((*c, style.add_modifier(Modifier::BOLD))),
                    None if k == 0 && after_other => glyphs.push(('┃', style)),
                    None => glyphs.push((stroke, style)),
                }
            }
            i += run;
            continue;
        }
        named = None;
        glyphs.push(match cell {
            Cell::Gap => ('░', theme::no_leader()),
            Cell::Forced => ('◆', theme::warn()),
            Cell::Changes => ('*', theme::warn()),
            Cell::Stale => ('┄', theme::dim()),
            Cell::Down => ('×', theme::error()),
            _ => (' ', Style::new()),
        });
        i += 1;
    }
    if let Some((_, s)) = cursor.and_then(|c| glyphs.get_mut(c)) {
        *s = s.add_modifier(Modifier::REVERSED);
    }
    // Runs of one style as one span.
    let mut spans: Vec<Span<'static>> = Vec::new();
    let mut text = String::new();
    let mut cur = None;
    for (c, s) in glyphs {
        if cur.is_some_and(|x| x != s) {
            spans.push(Span::styled(
                std::mem::take(&mut text),
                cur.unwrap_or_default(),
            ));
        }
        cur = Some(s);
        text.push(c);
    }
    if let Some(s) = cur {
        spans.push(Span::styled(text, s));
    }
    spans
}

/// The holder a cell draws, and whether a deposed holder lived on beside it.
fn holder_of(cell: Cell) -> Option<(usize, bool)> {
    match cell {
        Cell::Tenure(h) => Some((h, false)),
        Cell::Deposed(h) => Some((h, true)),
        _ => None,
    }
}

/// Ticks a window of `span` has: round times a label apart.
fn tick_every(span: Duration) -> Duration {
    match span.as_secs() {
        s if s <= 600 => Duration::from_secs(60),
        s if s <= 2 * 3600 => Duration::from_secs(600),
        _ => Duration::from_secs(4 * 3600),
    }
}

/// The time axis: the window under the names, each round time (UTC) at its column, the
/// cursor as `▲`.
fn axis(
    label_w: usize,
    width: usize,
    (since, until): (SystemTime, SystemTime),
    cursor: Option<usize>,
    span: Duration,
) -> Line<'static> {
    let mut cells: Vec<char> = vec!['─'; width];
    let every = tick_every(span).as_secs();
    let from = since
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    // The first round time at or after the window's start, its fraction of a second too: a
    // tick before the window would end the labelling at once (a second each minute at 5m).
    let from = from.as_secs() + u64::from(from.subsec_nanos() > 0);
    let mut tick = from.div_ceil(every) * every;
    let mut free = 0;
    while let Some(col) = tl::column(
        SystemTime::UNIX_EPOCH + Duration::from_secs(tick),
        since,
        until,
        width,
    ) {
        let text = time::clock(SystemTime::UNIX_EPOCH + Duration::from_secs(tick));
        let label: Vec<char> = format!("┴{}", &text[..5]).chars().collect();
        if col >= free && col + label.len() <= width {
            cells[col..col + label.len()].copy_from_slice(&label);
            free = col + label.len() + 1;
        }
        tick += every;
    }
    if let Some(c) = cursor.filter(|c| *c < width) {
        cells[c] = '▲';
    }
    Line::from(vec![
        Span::styled(
            format!("{:<label_w$} ", format!("UTC {}", tl::span_label(span))),
            theme::dim(),
        ),
        Span::styled(cells.into_iter().collect::<String>(), theme::dim()),
    ])
}

/// `▲ 06:58:12 jobs: node-a led since 06:55:01 (elected), still leads`.
fn cursor_line(app: &App, width: usize) -> Line<'static> {
    let at = app.timeline.cursor_at(app.model.wall);
    let Some(e) = app.selected_election() else {
        return Line::from(Span::styled(
            format!("▲ {} · no election selected", time::clock(at)),
            theme::dim(),
        ));
    };
    let said = tl::who_led(app, e, at);
    let style = if said.starts_with("NO LEADER") {
        theme::no_leader()
    } else if said.starts_with("not known") {
        theme::dim()
    } else {
        Style::new()
    };
    Line::from(vec![
        Span::styled(format!("▲ {} ", time::clock(at)), theme::header()),
        Span::styled(
            cut_display(&format!("{}: {said}", e.name), width.saturating_sub(11)),
            style,
        ),
    ])
}

/// The holders of the rows shown in their colours, then what the marks mean; shortened to
/// the width (names cut, then `+N`).
fn legend(holders: &[String], width: usize) -> Line<'static> {
    let marks = if width >= 120 {
        "░ no leader  ◆ forced  ═ deposed lives  * changes  × down  ┄ no contact"
    } else {
        "░gap ◆forced ═deposed ×down ┄stale"
    };
    let cut = if width >= 120 { 24 } else { 10 };
    let mut room = width.saturating_sub(display_width(marks) + 2);
    let mut spans = Vec::new();
    for (i, h) in holders.iter().enumerate() {
        let text = format!("━{} ", cut_display(h, cut));
        let more = holders.len() - i;
        let tail = if more > 1 { 5 } else { 0 };
        if display_width(&text) + tail > room {
            spans.push(Span::styled(format!("+{more} "), theme::dim()));
            break;
        }
        room -= display_width(&text);
        spans.push(Span::styled(text, theme::holder(h)));
    }
    spans.push(Span::styled(format!(" {marks}"), theme::dim()));
    Line::from(spans)
}

/// The strip of the described election, one line: the detail view's top.
pub(super) fn detail_line(app: &App, e: &crate::model::Election, width: usize) -> Line<'static> {
    let label = format!("{} ", tl::span_label(app.timeline.span()));
    let w = width.saturating_sub(label.len());
    let (since, until) = app.timeline.window(app.model.wall);
    let cursor = tl::column(app.timeline.cursor_at(app.model.wall), since, until, w);
    let mut spans = vec![Span::styled(label, theme::dim())];
    spans.extend(strip_spans(&tl::election_strip(app, e, w), cursor));
    Line::from(spans)
}
