//! The demo screen: the dashboard with one pane per node and the demo's events beside it
//! (wide) or under it, or, where rows are short (80x24), a compact block of one line per
//! node; then a split brain line and a key line.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Position, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};

use super::state::{Demo, NodeView, Proc, clock_tenths, secs};
use crate::app::App;
use crate::ui::{self, theme};

/// From this width the node panes go beside the dashboard.
const WIDE_WIDTH: u16 = 120;
/// Rows of the events pane beside the nodes (wide layout), borders included.
const EVENTS_HEIGHT: u16 = 8;
/// Below this width a column of events beside the node columns would be unreadable.
const EVENTS_MIN_WIDTH: u16 = 24;
/// A node pane under the dashboard: borders, the belief and a few of its lines.
const PANE_MIN_HEIGHT: u16 = 7;
/// Narrower node panes would cut beliefs such as `follower of node-1` into pieces.
const PANE_MIN_WIDTH: u16 = 24;
/// A column of node lines in the compact block: number, id, state and belief.
const LINE_COL_WIDTH: u16 = 36;

/// Where each part of the demo screen goes, computed the same way for drawing and clicks.
pub(super) struct DemoLayout {
    pub dash: Rect,
    /// Each node's pane, or its line in the compact block.
    pub nodes: Vec<Rect>,
    /// The compact block the node lines are in (its top border carries the title).
    pub block: Option<Rect>,
    pub events: Option<Rect>,
    pub split: Rect,
    pub keys: Rect,
}

fn regions(area: Rect) -> [Rect; 3] {
    Layout::vertical([
        Constraint::Min(0),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(area)
}

/// The demo's layout for `n` nodes, or the size it needs when `area` is too small.
pub(super) fn layout(area: Rect, n: usize) -> Result<DemoLayout, (u16, u16)> {
    let n = n.max(1) as u16;
    let [main, split, keys] = regions(area);
    let with = |(dash, nodes, block, events)| DemoLayout {
        dash,
        nodes,
        block,
        events,
        split,
        keys,
    };
    if area.width >= WIDE_WIDTH && main.height >= theme::MIN_HEIGHT.max(n * 3) {
        return Ok(with(wide(main, n)));
    }
    if main.height >= theme::MIN_HEIGHT + PANE_MIN_HEIGHT
        && main.width >= theme::MIN_WIDTH
        && main.width / n >= PANE_MIN_WIDTH
    {
        return Ok(with(stacked(main, n)));
    }
    compact(main, n).map(with).ok_or_else(|| {
        let cols = (area.width.max(theme::MIN_WIDTH) / LINE_COL_WIDTH).max(1);
        (theme::MIN_WIDTH, theme::MIN_HEIGHT + 3 + n.div_ceil(cols))
    })
}

type Parts = (Rect, Vec<Rect>, Option<Rect>, Option<Rect>);

/// The dashboard on the left; a column of node panes, then the events, on the right.
fn wide(main: Rect, n: u16) -> Parts {
    let [dash, right] =
        Layout::horizontal([Constraint::Percentage(62), Constraint::Percentage(38)]).areas(main);
    let events = right.height >= n * 4 + EVENTS_HEIGHT;
    let mut constraints = vec![Constraint::Fill(1); n as usize];
    if events {
        constraints.push(Constraint::Length(EVENTS_HEIGHT));
    }
    let mut panes = Layout::vertical(constraints).split(right).to_vec();
    let events = events.then(|| panes.pop()).flatten();
    (dash, panes, None, events)
}

/// The dashboard on top; node panes side by side under it, and the events if there is room.
fn stacked(main: Rect, n: u16) -> Parts {
    let nodes_h = (main.height * 2 / 5)
        .max(PANE_MIN_HEIGHT)
        .min(main.height - theme::MIN_HEIGHT);
    let [dash, bottom] =
        Layout::vertical([Constraint::Min(0), Constraint::Length(nodes_h)]).areas(main);
    let events = bottom.width / (n + 1) >= EVENTS_MIN_WIDTH;
    let panes = n + u16::from(events);
    let mut panes = Layout::horizontal(vec![Constraint::Fill(1); panes as usize])
        .split(bottom)
        .to_vec();
    let events = events.then(|| panes.pop()).flatten();
    (dash, panes, None, events)
}

/// The dashboard on top; under it a block of one line per node, in columns if rows are
/// short. `None` when even that leaves the dashboard too few rows.
fn compact(main: Rect, n: u16) -> Option<Parts> {
    let spare = main.height.checked_sub(theme::MIN_HEIGHT + 1)?;
    let max_cols = (main.width / LINE_COL_WIDTH).max(1);
    let cols = n.div_ceil(spare.max(1));
    if main.width < theme::MIN_WIDTH || spare == 0 || cols > max_cols {
        return None;
    }
    let rows = n.div_ceil(cols);
    let [dash, block] =
        Layout::vertical([Constraint::Min(0), Constraint::Length(rows + 1)]).areas(main);
    let col_width = block.width / cols;
    let nodes = (0..n)
        .map(|i| {
            let (col, row) = (i / rows, i % rows);
            let x = block.x + col * col_width;
            let width = if col + 1 == cols {
                block.right() - x
            } else {
                col_width
            };
            Rect::new(x, block.y + 1 + row, width, 1)
        })
        .collect();
    Some((dash, nodes, Some(block), None))
}

/// Rows of the elections table as the demo draws it, for the lease refreshes.
pub(super) fn table_rows(d: &Demo, app: &App) -> usize {
    let area = Rect::new(0, 0, app.size.0, app.size.1);
    match layout(area, d.nodes.len()) {
        Ok(l) => ui::table_rows(l.dash.width, l.dash.height),
        Err(_) => ui::table_rows(app.size.0, app.size.1),
    }
}

/// A click on a node pane picks that node, the wheel scrolls its lines; a click or the
/// wheel on the dashboard's part is the dashboard's.
pub(super) fn on_mouse(d: &mut Demo, app: &mut App, m: crossterm::event::MouseEvent) -> bool {
    use crossterm::event::{MouseButton, MouseEventKind};
    let area = Rect::new(0, 0, app.size.0, app.size.1);
    let Ok(l) = layout(area, d.nodes.len()) else {
        return false;
    };
    let overlay = app.show_help || app.show_members || app.dialog.is_some();
    let at = Position::new(m.column, m.row);
    if let Some(i) = l.nodes.iter().position(|r| r.contains(at))
        && !overlay
    {
        // A pane shows the belief and at least a line; the compact lines do not scroll.
        let shown = l.nodes[i].height.saturating_sub(3) as usize;
        return match m.kind {
            MouseEventKind::Down(MouseButton::Left) => {
                d.selected = i;
                true
            }
            MouseEventKind::ScrollUp if l.block.is_none() => scroll(&mut d.nodes[i], 3, shown),
            MouseEventKind::ScrollDown if l.block.is_none() => scroll(&mut d.nodes[i], -3, shown),
            _ => false,
        };
    }
    let target = ui::target_in(app, l.dash, m.column, m.row);
    crate::runtime::dashboard_mouse(app, target, m.kind)
}

/// Scrolls a node's lines back (`by` > 0) or forward, no further than its oldest line
/// at the top of the `shown` rows. Returns whether it moved.
fn scroll(n: &mut NodeView, by: isize, shown: usize) -> bool {
    let max = n.log.len().saturating_sub(shown.max(1));
    let to = n.scroll.saturating_add_signed(by).min(max);
    std::mem::replace(&mut n.scroll, to) != to
}

pub(crate) fn view(d: &Demo, app: &App, frame: &mut Frame) {
    let area = frame.area();
    let l = match layout(area, d.nodes.len()) {
        Ok(l) => l,
        Err(need) => {
            ui::too_small_for(frame, area, need);
            // `q` asks before the nodes are stopped: the question must show even here.
            if app.dialog.is_some() {
                ui::overlays(app, frame, area);
            }
            return;
        }
    };
    ui::panes(app, frame, l.dash);
    match l.block {
        Some(block) => node_lines(d, frame, block, &l.nodes),
        None => {
            for (i, (n, pane)) in d.nodes.iter().zip(&l.nodes).enumerate() {
                node_pane(d, i, n, frame, *pane);
            }
        }
    }
    if let Some(events) = l.events {
        events_pane(d, frame, events);
    }
    split_line(d, app, frame, l.split);
    // The compact block's title names the store already.
    key_line(d, app, frame, l.keys, l.block.is_none());
    // Over everything: the help and the dialogs need the room.
    ui::overlays(app, frame, area);
}

/// What stands out in a node's belief: a split brain, a leader, a stopped process.
fn belief_style(d: &Demo, n: &NodeView) -> (String, Style) {
    let split = n.belief == "LEADER" && d.in_split(&n.id);
    let style = if split {
        theme::alarm()
    } else if n.belief == "LEADER" {
        theme::leader()
    } else if n.proc_ != Proc::Running {
        theme::error()
    } else {
        Style::new()
    };
    let text = if split {
        format!("{} · SPLIT BRAIN", n.belief)
    } else {
        n.belief.clone()
    };
    (text, style.add_modifier(Modifier::BOLD))
}

fn proc_label(p: &Proc) -> &'static str {
    match p {
        Proc::Running => "",
        Proc::Paused => "PAUSED",
        Proc::Killed => "KILLED",
        Proc::Exited(_) => "EXITED",
    }
}

fn node_pane(d: &Demo, i: usize, n: &NodeView, frame: &mut Frame, area: Rect) {
    let state = proc_label(&n.proc_);
    let border = if i == d.selected {
        theme::focused_border()
    } else {
        theme::dim()
    };
    let back = if n.scroll > 0 {
        format!(" ↑{}", n.scroll)
    } else {
        String::new()
    };
    let title = format!(" {} {} {state}{back}", i + 1, n.id);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(border)
        .title(format!("{} ", title.trim_end()));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    // The belief whole, wrapped if the pane is narrow; the node's latest lines under it.
    let (belief, style) = belief_style(d, n);
    let belief_rows = (belief.chars().count() as u16)
        .div_ceil(inner.width.max(1))
        .clamp(1, inner.height.max(1));
    let [top, rest] =
        Layout::vertical([Constraint::Length(belief_rows), Constraint::Min(0)]).areas(inner);
    frame.render_widget(
        Paragraph::new(Span::styled(belief, style)).wrap(Wrap { trim: false }),
        top,
    );
    let end = n.log.len().saturating_sub(n.scroll);
    let start = end.saturating_sub(rest.height as usize);
    let lines: Vec<Line> = n
        .log
        .iter()
        .take(end)
        .skip(start)
        .map(|l| Line::from(Span::styled(l.clone(), theme::dim())))
        .collect();
    frame.render_widget(Paragraph::new(lines), rest);
}

/// One line per node: number, id, state if not running, the whole belief, then its last
/// line as far as it fits.
fn node_lines(d: &Demo, frame: &mut Frame, block: Rect, lines: &[Rect]) {
    let title = Line::from(vec![
        Span::styled(" nodes ", theme::title()),
        Span::styled(format!("· {} ", d.store), theme::dim()),
    ]);
    frame.render_widget(
        Block::default()
            .borders(Borders::TOP)
            .border_style(theme::dim())
            .title(title),
        block,
    );
    for (i, (n, area)) in d.nodes.iter().zip(lines).enumerate() {
        let (belief, style) = belief_style(d, n);
        let mark = if i == d.selected { "▶" } else { " " };
        let mut spans = vec![
            Span::styled(format!("{mark}{} ", i + 1), theme::focused_border()),
            Span::styled(format!("{} ", n.id), theme::header()),
        ];
        let state = proc_label(&n.proc_);
        if !state.is_empty() {
            spans.push(Span::styled(format!("{state} "), theme::error()));
        }
        spans.push(Span::styled(belief, style));
        // Its last line, unless that only repeats the belief; for a stopped node, then,
        // the time it says (when it was killed, not when it last believed something).
        let last = n.log.back();
        let when = last
            .and_then(|l| l.strip_suffix(n.belief.as_str()))
            .map(str::trim);
        match (last, when) {
            (Some(l), None) => spans.push(Span::styled(format!("  {l}"), theme::dim())),
            (Some(_), Some(t)) if n.proc_ != Proc::Running && !t.is_empty() => {
                spans.push(Span::styled(format!(" at {t}"), theme::dim()));
            }
            _ => {}
        }
        frame.render_widget(Paragraph::new(Line::from(spans)), *area);
    }
}

/// The keys, from the longest that fits to the shortest.
const KEYS: [&str; 4] = [
    " 1-9 pick node · x kill · p pause/resume · r restart · F/R/S admin · ? help · q quit ",
    " 1-9 node · x kill · p pause · r restart · ? keys · q quit ",
    " x kill · p pause · r restart · ? keys ",
    " ? keys · q quit ",
];

/// The failover under way or last timed first (it is what the demo is about), then the keys
/// that fit, then the store.
fn key_line(d: &Demo, app: &App, frame: &mut Frame, area: Rect, store: bool) {
    let mut spans = Vec::new();
    if let Some((since, old)) = &d.failing_over {
        let took = app.model.now.saturating_duration_since(*since);
        spans.push(Span::styled(
            format!(" {old} down {}, waiting for a new leader… ", secs(took)),
            theme::warn(),
        ));
    } else if let Some((f, _)) = &d.last_failover {
        spans.push(Span::styled(format!(" {f} "), theme::leader()));
    }
    let used: usize = spans.iter().map(Span::width).sum();
    let room = (area.width as usize).saturating_sub(used);
    let keys = KEYS
        .iter()
        .find(|k| k.chars().count() <= room)
        .unwrap_or(&KEYS[3]);
    let sep = if spans.is_empty() { "" } else { "·" };
    spans.push(Span::styled(format!("{sep}{keys}"), theme::dim()));
    if store {
        spans.push(Span::styled(format!("· {}", d.store), theme::dim()));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// The demo's events, newest at the bottom.
fn events_pane(d: &Demo, frame: &mut Frame, area: Rect) {
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme::dim())
        .title(" events ");
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let start = d.events.len().saturating_sub(inner.height as usize);
    let lines: Vec<Line> = d
        .events
        .iter()
        .skip(start)
        .map(|e| {
            let style = if e.alarm {
                theme::alarm()
            } else {
                theme::dim()
            };
            Line::from(Span::styled(e.line.clone(), style))
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), inner);
}

/// Split brain: the one going on now in the alarm colour, else how many there were. Where
/// the line is short, the summary says less rather than be cut: the count is kept whole.
fn split_line(d: &Demo, app: &App, frame: &mut Frame, area: Rect) {
    let now = app.model.wall;
    let count = d.split.count();
    let mut summaries = Vec::new();
    if let Some(o) = d.split.longest(now) {
        let longest = format!("split brains: {count}, longest {}", secs(o.duration(now)));
        summaries.push(format!(
            "{longest} ({} and {} from {})",
            o.nodes[0],
            o.nodes[1],
            clock_tenths(o.start)
        ));
        summaries.push(longest);
    }
    summaries.push(format!("split brains: {count}"));
    let width = area.width as usize;
    let fits = |used: usize| {
        summaries
            .iter()
            .find(|s| used + 1 + Span::raw(s.as_str()).width() <= width)
    };
    let tone = if count > 0 {
        theme::warn()
    } else {
        theme::dim()
    };
    let line = match d.split_now(now) {
        Some((o, more)) => {
            let more = if more > 0 {
                format!(" (+{more} more)")
            } else {
                String::new()
            };
            let going_on = Span::styled(
                format!(
                    " SPLIT BRAIN: {} and {} both believe they lead · {}{more} ",
                    o.nodes[0],
                    o.nodes[1],
                    secs(o.duration(now))
                ),
                theme::alarm(),
            );
            // The one going on first; the summary only if it fits whole.
            let summary = fits(going_on.width()).map_or(String::new(), |s| format!(" {s}"));
            Line::from(vec![going_on, Span::styled(summary, theme::warn())])
        }
        None => {
            let summary = fits(0).or(summaries.last()).cloned().unwrap_or_default();
            Line::from(Span::styled(format!(" {summary}"), tone))
        }
    };
    frame.render_widget(Paragraph::new(line), area);
}
