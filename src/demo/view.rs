//! The demo screen: the dashboard beside one pane per node, and a key line.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use super::state::{Demo, Proc};
use crate::ui::{self, theme};

pub fn view(d: &Demo, frame: &mut Frame) {
    let area = frame.area();
    if area.width < theme::MIN_WIDTH || area.height < theme::MIN_HEIGHT {
        ui::view(&d.app, frame);
        return;
    }
    let [main, keys] = Layout::vertical([Constraint::Min(0), Constraint::Length(1)]).areas(area);
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
    let constraints = vec![Constraint::Fill(1); d.nodes.len().max(1)];
    let panes = if wide {
        Layout::vertical(constraints).split(nodes_area)
    } else {
        Layout::horizontal(constraints).split(nodes_area)
    };
    for (i, (n, pane)) in d.nodes.iter().zip(panes.iter()).enumerate() {
        node_pane(d, i, n, frame, *pane);
    }
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
    frame.render_widget(Paragraph::new(Line::from(spans)), keys);
}

fn node_pane(d: &Demo, i: usize, n: &super::state::NodeView, frame: &mut Frame, area: Rect) {
    let state = match &n.proc_ {
        Proc::Running => "",
        Proc::Paused => " PAUSED",
        Proc::Killed => " KILLED",
        Proc::Exited(_) => " EXITED",
    };
    let style = if n.belief == "LEADER" {
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
    let mut lines = vec![Line::from(Span::styled(
        n.belief.clone(),
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
