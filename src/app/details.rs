//! The details of a confirmation (`d`): the whole plan, every write with what it is compared
//! on, what the store does after, and every note, wrapped to the dialog's width and never
//! cut. The lines are made here from the plan the confirmation and the execution read, so
//! the scroll is bounded without a terminal; the view styles and draws them.

use super::{Action, App, Dialog};
use crate::admin::{AdminRequest, Plan};
use crate::model::{display_width, wrap_display};

/// What a line of the details is, for the view to style.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tone {
    Heading,
    Text,
    Warn,
    Dim,
}

pub(crate) type DetailLine = (Tone, String);

/// The keys of the details view, always under the plan.
pub(crate) const HINT: &str = "y: do it · d/Esc: back · j/k PgUp/PgDn: scroll";

/// Columns a dialog takes on a terminal `w` wide.
pub(crate) fn popup_width(w: u16) -> u16 {
    w.saturating_sub(8).clamp(40, 100).min(w)
}

/// Columns of text inside a dialog's borders, on a terminal `w` wide.
pub(crate) fn text_width(w: u16) -> usize {
    popup_width(w).saturating_sub(2) as usize
}

/// Rows the details take on a terminal `h` high: all but a row above and below.
pub(crate) fn popup_height(h: u16) -> u16 {
    h.saturating_sub(2).max(6).min(h)
}

/// Rows of the plan the details show at once on a `w` x `h` terminal: the popup less its
/// borders and the keys.
pub(crate) fn page(w: u16, h: u16) -> usize {
    let hint = wrap_display(HINT, text_width(w), "").len();
    (popup_height(h) as usize).saturating_sub(2 + hint).max(1)
}

/// What a confirmation dialog is about: its request, its plan, and the question asked first
/// for an id never seen.
pub(crate) fn parts(d: &Dialog) -> Option<(&AdminRequest, &Plan, Option<&str>)> {
    match d {
        Dialog::Confirm { request, plan } => Some((request, plan, None)),
        Dialog::Unseen {
            request,
            plan,
            warning,
        } => Some((request, plan, Some(warning))),
        Dialog::Details { under, .. } => parts(under),
        _ => None,
    }
}

/// `text` wrapped at `width`, its continuation lines indented two more than its own.
fn wrapped(out: &mut Vec<DetailLine>, tone: Tone, text: &str, width: usize) {
    let lead = text.len() - text.trim_start_matches(' ').len();
    let indent = " ".repeat(lead + 2);
    out.extend(
        wrap_display(text, width, &indent)
            .into_iter()
            .map(|l| (tone, l)),
    );
}

/// Every line of the details at `width` columns.
pub(crate) fn lines(
    request: &AdminRequest,
    plan: &Plan,
    warning: Option<&str>,
    width: usize,
) -> Vec<DetailLine> {
    let mut out = Vec::new();
    let mut add = |tone: Tone, text: &str| wrapped(&mut out, tone, text, width);
    add(Tone::Heading, &crate::admin::title(request));
    add(Tone::Dim, &format!("on {}", request.source_name));
    if let Some(w) = warning {
        add(Tone::Text, "");
        add(Tone::Warn, &format!("⚠ {w}"));
    }
    add(Tone::Text, "");
    add(Tone::Heading, "What happens");
    for l in plan.gist.lines() {
        add(Tone::Text, &format!("  {l}"));
    }
    add(Tone::Text, "");
    add(
        Tone::Heading,
        "What is written, in order: each only if all its compares hold",
    );
    for (i, block) in plan.writes_in_lines().iter().enumerate() {
        let number = if i < plan.steps.len() {
            format!("{}. ", i + 1)
        } else {
            String::new()
        };
        let pad = " ".repeat(display_width(&number));
        for (j, l) in block.iter().enumerate() {
            let head = if j == 0 { &number } else { &pad };
            add(Tone::Text, &format!("  {head}{l}"));
        }
    }
    if !plan.notes.is_empty() {
        add(Tone::Text, "");
        add(Tone::Heading, "Notes");
        for n in &plan.notes {
            add(Tone::Warn, &format!("  ⚠ {n}"));
        }
    }
    add(Tone::Text, "");
    add(
        Tone::Dim,
        "Nothing is written if the store changed since you looked.",
    );
    out
}

/// A key in the details: `Some(scroll)` where it moves them, `None` where the key is not
/// theirs.
pub(crate) fn scroll(app: &App, under: &Dialog, scroll: usize, action: Action) -> Option<usize> {
    let (w, h) = app.size;
    let page = page(w, h);
    let total = parts(under)
        .map(|(r, p, warn)| lines(r, p, warn, text_width(w)).len())
        .unwrap_or(0);
    let max = total.saturating_sub(page);
    let step = page as isize;
    let delta = match action {
        Action::Up => -1,
        Action::Down => 1,
        Action::PageUp => -step,
        Action::PageDown => step,
        Action::Top => -(isize::MAX / 2),
        Action::Bottom => isize::MAX / 2,
        _ => return None,
    };
    Some(scroll.min(max).saturating_add_signed(delta).min(max))
}
