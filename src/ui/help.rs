//! The `?` overlay, generated from the key tables: every key of the screen it is opened on;
//! on the dashboard, the alarm marks and, as far as the rows allow, what its words mean.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use super::theme;
use crate::app::alarm::Alarm;
use crate::app::keys::{self, Bound, KeyMap};
use crate::app::{Action, App, Screen};
use crate::model::Cause;

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
    let strip = crate::app::timeline::is_strip_key;
    let shown: Vec<&Bound> = keys
        .normal()
        .iter()
        .filter(|b| match screen {
            // The strip's keys in one row: they act in the timeline and the detail.
            Screen::Main => !strip(b.action),
            Screen::Events => keys::on_events_screen(b.action),
            Screen::Timeline => crate::app::timeline::on_timeline_screen(b.action),
        })
        .collect();
    let mut main = folded(&shown, bound);
    if screen == Screen::Main {
        main.push(row("+-←→ hl", "strip: zoom, pan, cursor", false));
    }
    let mut more = Vec::new();
    if !extra.is_empty() {
        more.push(section("Demo"));
        more.extend(extra.iter().map(|(k, h)| row(k, h, false)));
    }
    if screen == Screen::Timeline {
        more.push(section("Strip (UTC)"));
        more.extend(STRIP_MARKS.iter().map(|(k, h)| row(k, h, false)));
    }
    more.push(section("In the / and : bars"));
    more.extend(keys::PROMPT_KEYS.iter().map(|(k, h)| row(k, h, false)));
    // The timeline takes no clicks.
    if screen != Screen::Timeline {
        more.push(section("Mouse"));
        more.extend(keys::MOUSE_KEYS.iter().map(|(k, h)| row(k, h, false)));
    }
    if screen == Screen::Main {
        more.push(section("In dialogs"));
        // A binding without help is named by the row before it.
        more.extend(
            keys.dialog()
                .iter()
                .filter(|b| !b.help.is_empty())
                .map(bound),
        );
    }
    (main, more)
}

/// The keys' rows, each pair of [`FOLDS`] in one row while both keep their default keys.
fn folded<'a>(shown: &[&'a Bound], bound: impl Fn(&'a Bound) -> Line<'a>) -> Vec<Line<'a>> {
    let fold = |a: Action, label: &str| {
        keys::BINDINGS
            .iter()
            .any(|d| d.action == a && d.label == label)
    };
    let mut main = Vec::with_capacity(shown.len() + 1);
    for (i, b) in shown.iter().enumerate() {
        // The second of a pair told in one row is left out.
        if i > 0 && FOLDS.iter().any(|f| f.1 == b.action && fold(f.1, &b.label)) {
            let prev = shown[i - 1];
            if FOLDS
                .iter()
                .any(|f| f.0 == prev.action && fold(f.0, &prev.label))
            {
                continue;
            }
        }
        let next = shown.get(i + 1);
        match FOLDS.iter().find(|f| f.0 == b.action) {
            Some(f)
                if fold(f.0, &b.label)
                    && next.is_some_and(|n| n.action == f.1 && fold(f.1, &n.label)) =>
            {
                main.push(row(f.2, f.3, false));
            }
            _ => main.push(bound(b)),
        }
    }
    main
}

/// Pairs of keys the help tells in one row while both keep their default keys, so every
/// key of the elections fits 80x24.
const FOLDS: &[(Action, Action, &str, &str)] = &[
    (Action::Up, Action::Down, "↑/k ↓/j", "previous / next row"),
    (
        Action::PageUp,
        Action::PageDown,
        "PgUp/Dn",
        "page up / down",
    ),
    (
        Action::Top,
        Action::Bottom,
        "g/G",
        "first / last row (Home/End)",
    ),
];

/// What the timeline's strips draw: each mark readable without colour.
const STRIP_MARKS: &[(&str, &str)] = &[
    ("name━━━", "a holder's tenure, own colour"),
    ("┃━", "tenure too short for a name"),
    ("═", "tenure, deposed holder alive"),
    ("░", "no leader (alarm colour)"),
    ("◆", "forced change (admin action)"),
    ("*", "several changes in a column"),
    ("×", "source down: not known"),
    ("┄", "no contact, or not watched"),
    ("blank", "not known (before history)"),
    ("▲", "cursor: its line says who led"),
];

/// The alarm marks on one line: the help's bottom border where it fits.
fn alarm_legend() -> String {
    let marks: Vec<String> = Alarm::ALL
        .iter()
        .map(|a| format!("{} {}", a.glyph(), a.code()))
        .collect();
    format!(" {} ", marks.join(" "))
}

/// The alarm marks three a line, where the border is too narrow for them.
fn alarm_lines() -> Vec<Line<'static>> {
    Alarm::ALL
        .chunks(3)
        .map(|three| {
            let legend: Vec<String> = three
                .iter()
                .map(|a| format!("{} {}", a.glyph(), a.code()))
                .collect();
            Line::from(Span::styled(
                format!(" {}", legend.join("  ")),
                theme::dim(),
            ))
        })
        .collect()
}

/// What the dashboard's words mean, most asked first: shown as far as there is room, each
/// line whole.
fn notes() -> Vec<Line<'static>> {
    vec![
        row("causes", "see the detail view (Enter)", false),
        row("LINE", "waiting behind the leader", false),
        row("TTL —", "no TTL: held by a session", false),
        row("rev N", "store revision of a change", false),
    ]
}

/// Every cause of a leader change and what it means: shown whole or not at all.
fn causes() -> Vec<Line<'static>> {
    let name_w = Cause::ALL
        .iter()
        .map(|c| c.as_str().len())
        .max()
        .unwrap_or(0);
    let mut out = vec![section("Causes of a leader change")];
    out.extend(Cause::ALL.iter().map(|c| {
        Line::from(vec![
            Span::styled(format!(" {:<name_w$} ", c.as_str()), theme::header()),
            Span::raw(c.meaning()),
        ])
    }));
    out
}

/// The notes that fit under `more`, in a column of `col` cells and `rows` rows (`beside`
/// rows already used in it by the keys' column in one-column layout).
fn add_notes<'a>(more: &mut Vec<Line<'a>>, col: usize, rows: usize, beside: usize) {
    for note in notes() {
        if beside + more.len() >= rows || note.width() > col {
            return;
        }
        more.push(note);
    }
    let causes = causes();
    let fits = causes.iter().all(|l| l.width() <= col);
    if fits && beside + more.len() + causes.len() <= rows {
        more.extend(causes);
    }
}

pub(super) fn draw(frame: &mut Frame, area: Rect, read_only: bool, app: &App, screen: Screen) {
    let (main, mut more) = lines(&app.keys, app.around.extra_keys, read_only, screen);
    let main_screen = screen == Screen::Main;
    // The alarm marks in the bottom border where they fit (they take no row there).
    let legend = alarm_legend();
    let narrowest = area.width.min(70) as usize;
    let in_border = main_screen && Span::raw(legend.as_str()).width() + 2 <= narrowest;
    if main_screen && !in_border {
        more.extend(alarm_lines());
    }
    // One column when it fits, with the notes too where the screen is wide enough for
    // two; else two side by side.
    let rows = area.height.saturating_sub(2) as usize;
    let notes = if main_screen {
        notes().len() + causes().len()
    } else {
        0
    };
    let keys = main.len() + more.len();
    let two = area.width >= 80 && keys + notes > rows;
    let width = if two { 140 } else { 70 }.min(area.width);
    // The notes fill the rows left, never more: the keys come first.
    if main_screen {
        let inner = (width as usize).saturating_sub(2);
        match two {
            true => add_notes(&mut more, inner / 2, rows, 0),
            false => add_notes(&mut more, inner, rows, main.len()),
        }
    }
    let height = if two {
        main.len().max(more.len()) + 2
    } else {
        main.len() + more.len() + 2
    };
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
        Screen::Timeline => " Keys · timeline ",
    };
    frame.render_widget(Clear, popup);
    let mut block = Block::default().borders(Borders::ALL).title(title);
    if in_border {
        block = block.title_bottom(Line::from(Span::styled(legend, theme::dim())));
    }
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
