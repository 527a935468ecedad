//! The `?` overlay, generated from the key tables: every key of the screen it is opened on.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use super::theme;
use crate::app::alarm::Alarm;
use crate::app::keys::{self, Bound, KeyMap};
use crate::app::{Action, App, Screen};

fn row<'a>(label: &str, help: &'a str, off: bool) -> Line<'a> {
    Line::from(vec![
        Span::styled(
            format!(" {label:<8}"),
            if off { theme::dim() } else { theme::header() },
        ),
        Span::styled(
            help,
            if off {
                theme::dim()
            } else {
                ratatui::style::Style::new()
            },
        ),
        Span::styled(if off { "  (off: read-only)" } else { "" }, theme::warn()),
    ])
}

fn section(title: &str) -> Line<'_> {
    Line::from(Span::styled(format!(" {title}"), theme::title()))
}

/// The screen's own keys, then the bars', the mouse's and (on the dashboard) the dialogs'.
fn lines<'a>(
    keys: &'a KeyMap,
    extra: &'static [(&'static str, &'static str)],
    read_only: bool,
    screen: Screen,
) -> (Vec<Line<'a>>, Vec<Line<'a>>) {
    let admin = |a: Action| matches!(a, Action::ForceLeader | Action::Reelect | Action::Resign);
    let bound = |b: &'a Bound| row(&b.label, b.help, read_only && admin(b.action));
    let main: Vec<Line> = keys
        .normal()
        .iter()
        .filter(|b| screen == Screen::Main || keys::on_events_screen(b.action))
        .map(bound)
        .collect();
    let mut more = Vec::new();
    if !extra.is_empty() {
        more.push(section("Demo"));
        more.extend(extra.iter().map(|(k, h)| row(k, h, false)));
    }
    more.push(section("In the / and : bars"));
    more.extend(keys::PROMPT_KEYS.iter().map(|(k, h)| row(k, h, false)));
    more.push(section("Mouse"));
    more.extend(keys::MOUSE_KEYS.iter().map(|(k, h)| row(k, h, false)));
    if screen == Screen::Main {
        more.push(section("In dialogs"));
        // A binding without help is named by the row before it.
        more.extend(
            keys.dialog()
                .iter()
                .filter(|b| !b.help.is_empty())
                .map(bound),
        );
        // The alarm marks, three a line so the legend fits a column.
        for three in Alarm::ALL.chunks(3) {
            let legend: Vec<String> = three
                .iter()
                .map(|a| format!("{} {}", a.glyph(), a.code()))
                .collect();
            more.push(Line::from(Span::styled(
                format!(" {}", legend.join("  ")),
                theme::dim(),
            )));
        }
    }
    (main, more)
}

pub(super) fn draw(frame: &mut Frame, area: Rect, read_only: bool, app: &App, screen: Screen) {
    let (main, more) = lines(&app.keys, app.around.extra_keys, read_only, screen);
    // One column when it fits, else two side by side.
    let two = main.len() + more.len() + 2 > area.height as usize && area.width >= 80;
    let height = if two {
        main.len().max(more.len()) + 2
    } else {
        main.len() + more.len() + 2
    };
    let width = if two { 140 } else { 70 }.min(area.width);
    let [_, mid, _] = Layout::vertical([
        Constraint::Fill(1),
        Constraint::Length((height as u16).min(area.height)),
        Constraint::Fill(1),
    ])
    .areas(area);
    let [_, popup, _] = Layout::horizontal([
        Constraint::Fill(1),
        Constraint::Length(width),
        Constraint::Fill(1),
    ])
    .areas(mid);
    let title = match screen {
        Screen::Main => " Keys · elections ",
        Screen::Events => " Keys · events ",
    };
    frame.render_widget(Clear, popup);
    let block = Block::default().borders(Borders::ALL).title(title);
    let inner = block.inner(popup);
    frame.render_widget(block, popup);
    if two {
        let [l, r] = Layout::horizontal([Constraint::Fill(1), Constraint::Fill(1)]).areas(inner);
        frame.render_widget(Paragraph::new(main).wrap(Wrap { trim: false }), l);
        frame.render_widget(Paragraph::new(more).wrap(Wrap { trim: false }), r);
    } else {
        let mut all = main;
        all.extend(more);
        frame.render_widget(Paragraph::new(all), inner);
    }
}
