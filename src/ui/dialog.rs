//! The admin dialogs as a centred popup. Every line is wrapped here, never cut, and the keys
//! always take the popup's last rows, whatever the length of what is above them: an operator
//! must never have to guess how to answer.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use super::theme;
use crate::admin::{self, AdminRequest, Plan};
use crate::app::Dialog;
use crate::app::details::{self, Tone};
use crate::model::{cut_display, display_width, wrap_display};

/// A dialog as drawn: its title, its lines (wrapped to the popup) and its keys.
struct Popup {
    title: String,
    /// Said in the body instead when the border has no room for `title`.
    short_title: &'static str,
    body: Vec<Line<'static>>,
    keys: Vec<Line<'static>>,
    /// Takes the screen's height (the details), not just what its lines need.
    tall: bool,
}

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

/// `text` wrapped at `width` in `style`, its continuation lines indented as its first.
fn para(out: &mut Vec<Line<'static>>, style: Style, text: &str, width: usize) {
    let lead = text.len() - text.trim_start_matches(' ').len();
    let indent = " ".repeat(lead);
    out.extend(
        wrap_display(text, width, &indent)
            .into_iter()
            .map(|l| Line::from(Span::styled(l, style))),
    );
}

fn keys_style() -> Style {
    theme::dim().add_modifier(Modifier::BOLD)
}

pub(super) fn draw(dialog: &Dialog, frame: &mut Frame, area: Rect) {
    let width = details::popup_width(area.width);
    let inner = width.saturating_sub(2) as usize;
    let mut p = content(dialog, area, inner);
    // The title in the border when it fits, else at the top of the body: never cut.
    let title = if display_width(&p.title) + 2 <= inner {
        format!(" {} ", p.title)
    } else {
        let mut head = Vec::new();
        para(&mut head, theme::title(), &p.title, inner);
        head.append(&mut p.body);
        p.body = head;
        format!(" {} ", p.short_title)
    };
    let keys = p.keys.len();
    let gap = usize::from(!p.body.is_empty() && keys > 0);
    let wanted = if p.tall {
        details::popup_height(area.height)
    } else {
        (p.body.len() + gap + keys + 2) as u16
    };
    let rect = popup(area, width, wanted);
    let room = (rect.height as usize).saturating_sub(2 + keys);
    let mut body = p.body;
    if body.len() > room {
        // Too little room for it all: say so where it stops, and where the rest is.
        body.truncate(room.saturating_sub(1));
        body.push(Line::from(Span::styled(
            cut_display("… more than fits: d shows the whole plan", inner),
            theme::dim(),
        )));
    }
    frame.render_widget(Clear, rect);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme::warn())
        .title(Span::styled(title, theme::title()));
    let inside = block.inner(rect);
    frame.render_widget(block, rect);
    let [top, bottom] =
        Layout::vertical([Constraint::Fill(1), Constraint::Length(keys as u16)]).areas(inside);
    frame.render_widget(Paragraph::new(body), top);
    frame.render_widget(Paragraph::new(p.keys), bottom);
}

/// The popup of `dialog`, its lines `inner` columns wide within `area`.
fn content(dialog: &Dialog, area: Rect, inner: usize) -> Popup {
    let keys = |text: &str| {
        let mut out = Vec::new();
        para(&mut out, keys_style(), text, inner);
        out
    };
    let plain = |title: &str, body: Vec<Line<'static>>, k: &str| Popup {
        title: title.to_string(),
        short_title: "",
        body,
        keys: keys(k),
        tall: false,
    };
    match dialog {
        Dialog::Pick { options, selected } => plain(
            "Force leader",
            pick_lines(options, *selected, area, inner),
            "↑/↓: move · Enter: choose · Esc: cancel",
        ),
        Dialog::Type { input } => {
            let mut body = Vec::new();
            para(
                &mut body,
                Style::default(),
                "This scheme has no line of candidates: type the new leader's id.",
                inner,
            );
            body.push(Line::from(""));
            body.push(Line::from(vec![
                Span::raw("id: "),
                Span::styled(format!("{input}▏"), theme::header()),
            ]));
            plain("Force leader", body, "Enter: continue · Esc: cancel")
        }
        Dialog::Unseen {
            request, warning, ..
        } => {
            let mut body = Vec::new();
            para(&mut body, theme::warn(), warning, inner);
            Popup {
                title: format!("Never seen · {}", admin::title(request)),
                short_title: "Never seen",
                body,
                keys: keys("y: yes, then the plan · n/Esc: cancel · d: details"),
                tall: false,
            }
        }
        Dialog::Confirm { plan, request } => Popup {
            title: admin::title(request),
            short_title: "Confirm",
            body: confirm_lines(plan, request, inner),
            keys: keys(&confirm_keys(plan)),
            tall: false,
        },
        Dialog::Details { under, scroll } => details_popup(under, *scroll, area, inner),
        Dialog::ConfirmQuit { what, under } => plain(
            "Quit?",
            quit_lines(what, under.as_deref(), inner),
            "y: quit · n/Esc: stay",
        ),
        Dialog::Running { summary, .. } => {
            let mut body = Vec::new();
            para(&mut body, Style::default(), &format!("{summary}…"), inner);
            Popup {
                keys: Vec::new(),
                ..plain("Working", body, "")
            }
        }
    }
}

/// The line of candidates, scrolled so the selected one shows.
fn pick_lines(options: &[String], selected: usize, area: Rect, inner: usize) -> Vec<Line<'static>> {
    let mut lines = vec![Line::from("Who should lead?"), Line::from("")];
    let rows = (area.height as usize).saturating_sub(9).max(3);
    let start = selected.saturating_sub(rows.saturating_sub(1));
    for (i, o) in options.iter().enumerate().skip(start).take(rows) {
        let text = format!(" {} ", cut_display(o, inner.saturating_sub(4)));
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

/// The confirmation's keys: `r` too where the plan offers a re-election instead (a resign
/// its participants would not notice).
fn confirm_keys(plan: &Plan) -> String {
    let mut keys = "y: do it · n/Esc: cancel · d: details".to_string();
    if plan.reelect_instead {
        keys.push_str(" · r: re-election instead");
    }
    keys
}

/// What will happen, in the plan's three lines, and on which store.
fn confirm_lines(plan: &Plan, request: &AdminRequest, inner: usize) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    let g = &plan.gist;
    para(&mut lines, Style::default(), &g.next, inner);
    para(&mut lines, Style::default(), &g.gap, inner);
    if let Some(d) = &g.deposed {
        para(&mut lines, theme::warn(), d, inner);
    }
    lines.push(Line::from(""));
    para(
        &mut lines,
        theme::dim(),
        &format!(
            "Written to {} only if nothing changed since you looked.",
            request.source_name
        ),
        inner,
    );
    lines
}

/// The details: the whole plan, from line `scroll`, as many lines as the popup holds.
fn details_popup(under: &Dialog, scroll: usize, area: Rect, inner: usize) -> Popup {
    let Some((request, plan, warning)) = details::parts(under) else {
        return Popup {
            title: "Details".into(),
            short_title: "Details",
            body: Vec::new(),
            keys: Vec::new(),
            tall: false,
        };
    };
    let all = details::lines(request, plan, warning, inner);
    let page = details::page(area.width, area.height);
    let start = scroll.min(all.len().saturating_sub(page));
    let end = (start + page).min(all.len());
    let body = all[start..end]
        .iter()
        .map(|(tone, text)| {
            let style = match tone {
                Tone::Heading => theme::header(),
                Tone::Text => Style::default(),
                Tone::Warn => theme::warn(),
                Tone::Dim => theme::dim(),
            };
            Line::from(Span::styled(text.clone(), style))
        })
        .collect();
    let mut keys = Vec::new();
    para(&mut keys, keys_style(), details::HINT, inner);
    Popup {
        title: format!(
            "The whole plan · lines {}–{end} of {}",
            start + 1,
            all.len()
        ),
        short_title: "The whole plan",
        body,
        keys,
        tall: true,
    }
}

/// What quitting stops, and the action still under way, which quitting waits for.
fn quit_lines(what: &str, under: Option<&Dialog>, inner: usize) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    para(
        &mut lines,
        theme::title(),
        &format!("Quitting {what}."),
        inner,
    );
    if let Some(Dialog::Running { summary, .. }) = under {
        lines.push(Line::from(""));
        para(
            &mut lines,
            theme::warn(),
            &format!("Still under way: {summary}; quitting waits for it to finish."),
            inner,
        );
    }
    lines
}
