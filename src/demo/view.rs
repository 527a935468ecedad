//! The demo screen: the dashboard beside one pane per node and the demo's events, a split
//! brain line, and a key line.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use super::state::{Demo, Proc, clock_tenths, secs};
use crate::ui::{self, theme};

/// Rows of the events pane beside the nodes (wide layout), borders included.
const EVENTS_HEIGHT: u16 = 8;
/// Below this width a column of events beside the node columns would be unreadable.
const EVENTS_MIN_WIDTH: u16 = 24;

pub fn view(d: &Demo, frame: &mut Frame) {
    let area = frame.area();
    if area.width < theme::MIN_WIDTH || area.height < theme::MIN_HEIGHT {
        ui::view(&d.app, frame);
        return;
    }
    let [main, split, keys] = Layout::vertical([
        Constraint::Min(0),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(area);
    let wide = area.width >= 120;
    let (dash, nodes_area) = if wide {
        let [l, r] = Layout::horizontal([Constraint::Percentage(62), Constraint::Percentage(38)])
            .areas(main);
        (l, r)
    } else {
        let [t, b] =
            Layout::vertical([Constraint::Percentage(60), Constraint::Percentage(40)]).areas(main);
        (t, b)
    };
    ui::view_in(&d.app, frame, dash);
    nodes_column(d, frame, nodes_area, wide);
    split_line(d, frame, split);
    key_line(d, frame, keys);
}

/// One pane per node, and the events after them where there is room.
fn nodes_column(d: &Demo, frame: &mut Frame, area: Rect, wide: bool) {
    let n = d.nodes.len().max(1) as u16;
    let mut constraints = vec![Constraint::Fill(1); n as usize];
    let events = if wide {
        area.height >= n * 4 + EVENTS_HEIGHT
    } else {
        area.width / (n + 1) >= EVENTS_MIN_WIDTH
    };
    if events {
        constraints.push(if wide {
            Constraint::Length(EVENTS_HEIGHT)
        } else {
            Constraint::Fill(1)
        });
    }
    let panes = if wide {
        Layout::vertical(constraints).split(area)
    } else {
        Layout::horizontal(constraints).split(area)
    };
    for (i, (n, pane)) in d.nodes.iter().zip(panes.iter()).enumerate() {
        node_pane(d, i, n, frame, *pane);
    }
    if events && let Some(pane) = panes.last() {
        events_pane(d, frame, *pane);
    }
}

fn key_line(d: &Demo, frame: &mut Frame, area: Rect) {
    let mut spans = vec![Span::styled(
        " 1-9 pick node · x kill · p pause/resume · r restart · F/R/S admin · ? help · q quit ",
        theme::dim(),
    )];
    if let Some((_, old)) = &d.failing_over {
        spans.push(Span::styled(
            format!("· {old} down, waiting for a new leader… "),
            theme::warn(),
        ));
    } else if let Some(f) = &d.last_failover {
        spans.push(Span::styled(format!("· {f} "), theme::leader()));
    }
    spans.push(Span::styled(format!("· {}", d.store), theme::dim()));
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn node_pane(d: &Demo, i: usize, n: &super::state::NodeView, frame: &mut Frame, area: Rect) {
    let state = match &n.proc_ {
        Proc::Running => "",
        Proc::Paused => " PAUSED",
        Proc::Killed => " KILLED",
        Proc::Exited(_) => " EXITED",
    };
    let split = n.belief == "LEADER" && d.in_split(&n.id);
    let style = if split {
        theme::alarm()
    } else if n.belief == "LEADER" {
        theme::leader()
    } else if n.proc_ != Proc::Running {
        theme::error()
    } else {
        ratatui::style::Style::new()
    };
    let border = if i == d.selected {
        theme::focused_border()
    } else {
        theme::dim()
    };
    let title = format!(" {} {}{state} ", i + 1, n.id);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(border)
        .title(title);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let belief = if split {
        format!("{} · SPLIT BRAIN", n.belief)
    } else {
        n.belief.clone()
    };
    let mut lines = vec![Line::from(Span::styled(
        belief,
        style.add_modifier(ratatui::style::Modifier::BOLD),
    ))];
    let room = inner.height.saturating_sub(1) as usize;
    let start = n.log.len().saturating_sub(room);
    lines.extend(
        n.log
            .iter()
            .skip(start)
            .map(|l| Line::from(Span::styled(l.clone(), theme::dim()))),
    );
    frame.render_widget(Paragraph::new(lines), inner);
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

/// Split brain: the one going on now in the alarm colour, else how many there were.
fn split_line(d: &Demo, frame: &mut Frame, area: Rect) {
    let now = d.app.wall;
    let summary = match d.split.longest(now) {
        Some(o) => format!(
            "split brains: {}, longest {} ({} and {} from {})",
            d.split.count(),
            secs(o.duration(now)),
            o.nodes[0],
            o.nodes[1],
            clock_tenths(o.start)
        ),
        None => "split brains: 0".to_string(),
    };
    let line = match d.split_now() {
        Some((o, more)) => {
            let more = if more > 0 {
                format!(" (+{more} more)")
            } else {
                String::new()
            };
            Line::from(vec![
                Span::styled(
                    format!(
                        " SPLIT BRAIN: {} and {} both believe they lead · {}{more} ",
                        o.nodes[0],
                        o.nodes[1],
                        secs(o.duration(now))
                    ),
                    theme::alarm(),
                ),
                Span::styled(format!(" {summary}"), theme::warn()),
            ])
        }
        None if d.split.count() > 0 => {
            Line::from(Span::styled(format!(" {summary}"), theme::warn()))
        }
        None => Line::from(Span::styled(format!(" {summary}"), theme::dim())),
    };
    frame.render_widget(Paragraph::new(line), area);
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant, SystemTime};

    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    use super::*;
    use crate::app::{self, App, Msg};
    use crate::model::{Scheme, SourceInfo};

    /// 2026-11-22 19:20:00 UTC.
    fn at(secs: f64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs_f64(1_795_375_200.0 + secs)
    }

    fn line(node: &str, secs: f64, belief: &str) -> String {
        let whole = secs.floor();
        let tenths = ((secs - whole) * 10.0).round();
        format!(
            r#"{{"at":"2026-11-22T19:20:{whole:02}.{tenths}Z","node":"{node}","election":"demo","belief":"{belief}"}}"#
        )
    }

    /// Three nodes: node-1 led, node-2 took over while node-1 was paused, and node-1 was
    /// resumed and noticed; now node-3 believes it leads beside node-2.
    fn demo(w: u16, h: u16) -> Demo {
        let info = SourceInfo {
            id: 0,
            name: "sqlite:///tmp/demo/elections.db leaderlock".into(),
            label: "sqlite leaderlock".into(),
            short: "sql1".into(),
            endpoints: "sqlite:///tmp/demo/elections.db".into(),
            scheme: Some(Scheme::SqlLease),
            read_only: false,
            clustered: false,
            idle_is_normal: false,
            notice: None,
        };
        let mut a = App::new(vec![info], Instant::now(), at(0.0));
        app::update(
            &mut a,
            Msg::Resize {
                width: w,
                height: h,
            },
        );
        let ids = ["node-1".to_string(), "node-2".into(), "node-3".into()];
        let mut d = Demo::new(
            a,
            &ids,
            "demo",
            "sql-lease on sqlite:///tmp/demo/elections.db",
        );
        d.node_line(0, &line("node-1", 1.0, "leader"));
        d.node_line(1, &line("node-2", 1.0, "follower"));
        d.node_line(2, &line("node-3", 1.0, "follower"));
        d.note(at(2.0), "node-1 paused (SIGSTOP)".into());
        d.nodes[0].proc_ = Proc::Paused;
        d.node_line(1, &line("node-2", 4.0, "leader"));
        d.note(at(5.2), "node-1 resumed (SIGCONT)".into());
        d.nodes[0].proc_ = Proc::Running;
        d.node_line(0, &line("node-1", 5.4, "follower"));
        d.node_line(2, &line("node-3", 8.0, "leader"));
        d.app.wall = at(8.7);
        d
    }

    fn render(d: &Demo, w: u16, h: u16) -> Terminal<TestBackend> {
        let mut t = Terminal::new(TestBackend::new(w, h)).expect("terminal");
        t.draw(|f| view(d, f)).expect("draw");
        t
    }

    #[test]
    fn split_brain_wide() {
        let d = demo(160, 40);
        let t = render(&d, 160, 40);
        insta::assert_snapshot!(t.backend());
        let screen = format!("{}", t.backend());
        assert!(screen.contains("SPLIT BRAIN: node-2 and node-3 both believe they lead · 0.7s"));
        assert!(
            screen.contains("split brains: 2, longest 1.4s (node-1 and node-2 from 19:20:04.0)")
        );
        // The line is drawn in the alarm colour.
        let row = (0..40)
            .find(|y| t.backend().buffer()[(1, *y)].symbol() == "S")
            .expect("the split brain line");
        assert_eq!(t.backend().buffer()[(1, row)].style().bg, theme::alarm().bg);
    }

    #[test]
    fn split_brain_narrow_and_at_the_smallest_size() {
        for (w, h) in [(100, 30), (60, 16)] {
            let d = demo(w, h);
            let t = render(&d, w, h);
            insta::assert_snapshot!(format!("split_brain_{w}x{h}"), t.backend());
            assert!(format!("{}", t.backend()).contains("SPLIT BRAIN: node-2 and node-3"));
        }
    }
}
