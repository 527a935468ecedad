//! The admin dialogs as a centred popup.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use super::theme;
use crate::app::Dialog;
use crate::model::truncate_display;

fn popup(area: Rect, width: u16, height: u16) -> Rect {
    let [_, mid, _] = Layout::vertical([
        Constraint::Fill(1),
        Constraint::Length(height.min(area.height)),
        Constraint::Fill(1),
    ])
    .areas(area);
    let [_, p, _] = Layout::horizontal([
        Constraint::Fill(1),
        Constraint::Length(width.min(area.width)),
        Constraint::Fill(1),
    ])
    .areas(mid);
    p
}

pub(super) fn draw(dialog: &Dialog, frame: &mut Frame, area: Rect) {
    let width = area.width.saturating_sub(8).clamp(40, 100);
    let inner = width.saturating_sub(2) as usize;
    let (title, lines) = content(dialog, area, inner);
    // Height from the wrapped text, within the screen.
    let rows: usize = lines
        .iter()
        .map(|l| l.width().max(1).div_ceil(inner.max(1)))
        .sum();
    let rect = popup(area, width, rows as u16 + 2);
    frame.render_widget(Clear, rect);
    frame.render_widget(
        Paragraph::new(lines).wrap(Wrap { trim: false }).block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(theme::warn())
                .title(title),
        ),
        rect,
    );
}

/// The title and lines of `dialog`, for a popup `inner` columns wide within `area`.
fn content(dialog: &Dialog, area: Rect, inner: usize) -> (&'static str, Vec<Line<'static>>) {
    match dialog {
        Dialog::Pick { options, selected } => (
            " Force leader ",
            pick_lines(options, *selected, area, inner),
        ),
        Dialog::Type { input } => (
            " Force leader ",
            vec![
                Line::from("This scheme has no line of candidates: type the new leader's id."),
                Line::from(""),
                Line::from(vec![
                    Span::raw("id: "),
                    Span::styled(format!("{input}▏"), theme::header()),
                ]),
                Line::from(""),
                Line::from(Span::styled("Enter: continue   Esc: cancel", theme::dim())),
            ],
        ),
        Dialog::Unseen { plan, warning, .. } => (
            " Never seen ",
            vec![
                Line::from(Span::styled(plan.summary.clone(), theme::title())),
                Line::from(""),
                Line::from(Span::styled(warning.clone(), theme::warn())),
                Line::from(""),
                Line::from(Span::styled(
                    "y/Enter: force it anyway (the plan comes next)   n/Esc: cancel",
                    theme::dim(),
                )),
            ],
        ),
        Dialog::Confirm { plan, request } => (" Confirm ", confirm_lines(plan, request)),
        Dialog::ConfirmQuit { what, under } => (" Quit? ", quit_lines(what, under.as_deref())),
        Dialog::Running { summary, .. } => (" Working ", vec![Line::from(format!("{summary}…"))]),
    }
}

/// The line of candidates, scrolled so the selected one shows.
fn pick_lines(options: &[String], selected: usize, area: Rect, inner: usize) -> Vec<Line<'static>> {
    let mut lines = vec![
        Line::from("Who should lead? (Enter: choose, Esc: cancel)"),
        Line::from(""),
    ];
    let rows = (area.height as usize).saturating_sub(8).max(3);
    let start = selected.saturating_sub(rows.saturating_sub(1));
    for (i, o) in options.iter().enumerate().skip(start).take(rows) {
        let text = format!(" {} ", truncate_display(o, inner.saturating_sub(4)));
        lines.push(if i == selected {
            Line::from(Span::styled(format!("▶{text}"), theme::selected()))
        } else {
            Line::from(format!(" {text}"))
        });
    }
    if options.is_empty() {
        lines.push(Line::from(Span::styled(
            "nobody else is in line",
            theme::dim(),
        )));
    }
    lines
}

/// What will be written, the plan's warnings, and the keys.
fn confirm_lines(
    plan: &crate::admin::Plan,
    request: &crate::admin::AdminRequest,
) -> Vec<Line<'static>> {
    let mut lines = vec![
        Line::from(Span::styled(plan.summary.clone(), theme::title())),
        Line::from(""),
    ];
    lines.push(Line::from(Span::styled("Will write:", theme::header())));
    lines.extend(
        plan.writes()
            .into_iter()
            .map(|w| Line::from(format!("  {w}"))),
    );
    if !plan.notes.is_empty() {
        lines.push(Line::from(""));
        lines.extend(
            plan.notes
                .iter()
                .map(|n| Line::from(Span::styled(format!("⚠ {n}"), theme::warn()))),
        );
    }
    if request.kind == crate::admin::ActionKind::Resign
        && request.seen.scheme == crate::model::Scheme::EtcdElection
    {
        lines.push(Line::from(Span::styled(
            "⚠ etcdctl elect and Go/Node election clients do not notice a resign: the deposed leader may go on believing it leads until its lease ends.   r: force a re-election instead (ends its session)",
            theme::warn(),
        )));
    }
    lines.push(Line::from(""));
    lines.push(Line::from(Span::styled(
        "Nothing is written if the store changed since you looked.   y/Enter: do it   n/Esc: cancel",
        theme::dim().add_modifier(Modifier::BOLD),
    )));
    lines
}

/// What quitting stops, and the action still under way, which quitting waits for.
fn quit_lines(what: &str, under: Option<&Dialog>) -> Vec<Line<'static>> {
    let mut lines = vec![
        Line::from(Span::styled(format!("Quitting {what}."), theme::title())),
        Line::from(""),
    ];
    if let Some(Dialog::Running { summary, .. }) = under {
        lines.push(Line::from(Span::styled(
            format!("Still under way: {summary}; quitting waits for it to finish."),
            theme::warn(),
        )));
        lines.push(Line::from(""));
    }
    lines.push(Line::from(Span::styled(
        "y/Enter: quit   n/Esc: stay",
        theme::dim().add_modifier(Modifier::BOLD),
    )));
    lines
}
