//! The status line: the `/` or `:` bar while typing; else the latest action outcome (for a
//! few seconds), then each source's connection state, name and label, the store and revision.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::theme;
use crate::app::{App, Prompt, PromptKind};
use crate::model::ConnState;
use crate::model::{display_width, format};

pub(super) fn draw(app: &App, frame: &mut Frame, area: Rect) {
    if let Some(p) = &app.prompt {
        let ids = crate::app::prompt::completions(&p.text, &app.completion_args(&p.text));
        frame.render_widget(Paragraph::new(prompt_line(p, &ids)), area);
        return;
    }
    let mut spans = Vec::new();
    if let Some(f) = &app.flash {
        let style = if f.error {
            theme::error()
        } else {
            theme::leader()
        };
        spans.push(Span::styled(
            format!("{} ", f.text),
            style.add_modifier(ratatui::style::Modifier::BOLD),
        ));
        spans.push(Span::styled("│ ", theme::dim()));
    }
    let problems = problem_spans(app);
    let width = |s: &[Span]| s.iter().map(Span::width).sum::<usize>();
    let labelled = source_spans(app, true);
    let room = area.width as usize;
    if width(&spans) + width(&labelled) + width(&problems) <= room {
        spans.extend(labelled);
        spans.extend(problems);
    } else {
        // Too narrow for all: the problems first (a reason cut says where it is whole),
        // then the sources by name, cut at the end if need be.
        let left = room.saturating_sub(width(&spans));
        if !problems.is_empty() {
            spans.extend(fit_problems(problems, left));
            spans.push(Span::styled("│ ", theme::dim()));
        }
        spans.extend(source_spans(app, false));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// What follows a reason cut short in the status line: where it is whole.
const WHOLE_AT: &str = "… v: whole reason";

/// `problems` in `room` columns, without their leading `│`; the last that does not fit cut,
/// saying where the whole of it is (the events view).
fn fit_problems(problems: Vec<Span<'static>>, room: usize) -> Vec<Span<'static>> {
    let mut out = Vec::new();
    let mut used = 0;
    for (i, p) in problems.into_iter().enumerate() {
        let text = match i {
            0 => p.content.trim_start_matches([' ', '│']).to_string() + " ",
            _ => p.content.to_string(),
        };
        let w = display_width(&text);
        if used + w <= room {
            used += w;
            out.push(Span::styled(text, p.style));
            continue;
        }
        let keep = room.saturating_sub(used + display_width(WHOLE_AT));
        if keep > 8 {
            let cut: String = text.chars().take(keep).collect();
            out.push(Span::styled(format!("{cut}{WHOLE_AT}"), p.style));
        }
        break;
    }
    out
}

/// `● etcd1 /e/ ● sql1 sqlite leaderlock · ENDPOINTS rev N`: each source by its configured
/// name (two sources may share a label), with its label when `labelled` (dropped when the line
/// is too narrow, the name alone still tells them apart).
fn source_spans(app: &App, labelled: bool) -> Vec<Span<'static>> {
    let mut spans = Vec::new();
    let mut endpoints: Vec<&str> = Vec::new();
    for s in &app.model.sources {
        spans.push(match &s.conn {
            ConnState::Connecting => Span::styled("◌ ", theme::warn()),
            ConnState::Connected if s.stale_for(app.model.now).is_some() => {
                Span::styled("◐ ", theme::stale())
            }
            ConnState::Connected => Span::styled("● ", theme::leader()),
            ConnState::Down { .. } => Span::styled("✖ ", theme::error()),
        });
        spans.push(Span::raw(format!("{} ", s.info.short)));
        if labelled && s.info.label != s.info.short {
            spans.push(Span::styled(format!("{} ", s.info.label), theme::dim()));
        }
        let down = s.members.iter().filter(|m| !m.up).count();
        if down > 0 {
            spans.push(Span::styled(
                format!("{down}/{} members down ", s.members.len()),
                theme::warn(),
            ));
        }
        if !endpoints.contains(&s.info.endpoints.as_str()) {
            endpoints.push(&s.info.endpoints);
        }
    }
    spans.push(Span::styled(
        format!("· {}", endpoints.join(" ")),
        theme::dim(),
    ));
    if let Some(rev) = app.model.sources.iter().filter_map(|s| s.revision).max() {
        spans.push(Span::styled(format!(" rev {rev}"), theme::dim()));
    }
    spans
}

/// Problems last and loud: what is down, when the next try is, and notices, each under the
/// source's name.
fn problem_spans(app: &App) -> Vec<Span<'static>> {
    let mut spans = Vec::new();
    for s in &app.model.sources {
        if let ConnState::Down {
            error, retry_at, ..
        } = &s.conn
        {
            let left = retry_at
                .saturating_duration_since(app.model.now)
                .as_millis() as i64;
            spans.push(Span::styled(
                format!(
                    " │ DOWN {}: retry in {} ({error})",
                    s.info.short,
                    format::duration_ms(left)
                ),
                theme::error(),
            ));
        }
        if let Some(crate::model::SourceNotice::Found(t)) = &s.info.notice {
            spans.push(Span::styled(
                format!(" │ {}: {t}", s.info.short),
                theme::dim(),
            ));
        }
        let layout = s
            .info
            .notice
            .as_ref()
            .filter(|n| !matches!(n, crate::model::SourceNotice::Found(_)))
            .map(|n| n.text());
        for n in layout.into_iter().chain(s.notice.as_deref()) {
            spans.push(Span::styled(
                format!(" │ ⚠ {}: {n}", s.info.short),
                theme::warn(),
            ));
        }
    }
    spans
}

/// `/text▏` or `:text▏  sort  events …` (what Tab can complete to), and any error.
fn prompt_line<'a>(p: &'a Prompt, completions: &[String]) -> Line<'a> {
    let sigil = match p.kind {
        PromptKind::Filter => "/",
        PromptKind::Command => ":",
    };
    let mut spans = vec![
        Span::styled(sigil, theme::header()),
        Span::raw(p.text.as_str()),
        Span::styled("▏", theme::header()),
    ];
    if let Some(e) = &p.error {
        spans.push(Span::styled(format!("  {e}"), theme::error()));
    } else if p.kind == PromptKind::Command {
        let shown: Vec<&str> = completions.iter().take(12).map(String::as_str).collect();
        spans.push(Span::styled(
            format!("   {}", shown.join("  ")),
            theme::dim(),
        ));
        spans.push(Span::styled(
            "   Tab complete · Enter run · Esc cancel",
            theme::dim(),
        ));
    } else {
        spans.push(Span::styled(
            "   text, or re:REGEX · Enter keep · Esc clear",
            theme::dim(),
        ));
    }
    Line::from(spans)
}
