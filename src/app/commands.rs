//! What the `/` and `:` bars, `Esc`, scrolling and the mouse do to the state.

use super::prompt::{self, BarCommand, Prompt, PromptKind};
use super::rows::{self, Filter, Sort, SortKey};
use super::{Action, App, Flash, Focus, Hit, Screen, dialog};

pub(super) fn open(app: &mut App, kind: PromptKind) {
    // The filter bar starts from the filter in force, so it can be edited.
    let text = match (kind, app.screen) {
        (PromptKind::Filter, Screen::Main | Screen::Timeline) => {
            app.filter.as_ref().map(|f| f.text.clone())
        }
        (PromptKind::Filter, Screen::Events) => app.events_filter.as_ref().map(|f| f.text.clone()),
        (PromptKind::Command, _) => None,
    };
    app.prompt = Some(Prompt {
        kind,
        text: text.unwrap_or_default(),
        error: None,
    });
}

/// A key action while the bar is open.
pub(super) fn on_prompt(app: &mut App, action: Action) {
    let Some(mut p) = app.prompt.take() else {
        return;
    };
    match action {
        // Asks first where quitting stops something (the demo's nodes), as everywhere.
        Action::Quit => quit(app),
        // Esc in the filter bar drops the filter; in the command bar, the command.
        Action::Back if p.kind == PromptKind::Filter => set_filter(app, None),
        Action::Back => {}
        Action::Accept if p.kind == PromptKind::Command => run(app, &p.text),
        // A filter that does not parse stays open to be fixed.
        Action::Accept if p.error.is_some() => app.prompt = Some(p),
        Action::Accept => {}
        Action::Type(c) => {
            p.text.push(c);
            live(app, &mut p);
            app.prompt = Some(p);
        }
        // Erasing past the start closes the bar, as in vim and k9s.
        Action::Erase if p.text.is_empty() => {}
        Action::Erase => {
            p.text.pop();
            live(app, &mut p);
            app.prompt = Some(p);
        }
        Action::Complete if p.kind == PromptKind::Command => {
            p.text = prompt::complete(&p.text, &app.completion_args(&p.text));
            app.prompt = Some(p);
        }
        _ => app.prompt = Some(p),
    }
}

/// The filter follows what is typed.
fn live(app: &mut App, p: &mut Prompt) {
    if p.kind != PromptKind::Filter {
        return;
    }
    let parsed = if p.text.is_empty() {
        Ok(None)
    } else {
        Filter::parse(&p.text).map(Some)
    };
    match parsed {
        Ok(f) => {
            p.error = None;
            set_filter(app, f);
        }
        Err(e) => p.error = Some(e),
    }
}

fn set_filter(app: &mut App, f: Option<Filter>) {
    match app.screen {
        Screen::Events => {
            app.events_filter = f;
            app.events_scroll = 0;
        }
        Screen::Main | Screen::Timeline => {
            app.filter = f;
            rows::refresh(app);
        }
    }
}

pub(super) fn run(app: &mut App, text: &str) {
    let command = match prompt::parse(text) {
        Ok(c) => c,
        Err(e) => {
            app.say(Flash::error(&e));
            return;
        }
    };
    match command {
        BarCommand::Sort(key) => sort_by(app, key),
        BarCommand::Events => app.screen = Screen::Events,
        BarCommand::Timeline => app.screen = Screen::Timeline,
        BarCommand::Main => app.screen = Screen::Main,
        BarCommand::Members => app.show_members = true,
        BarCommand::Help => app.show_help = true,
        BarCommand::Quit => quit(app),
        BarCommand::Reelect => dialog::start(app, Action::Reelect),
        BarCommand::Resign => dialog::start(app, Action::Resign),
        BarCommand::ForceLeader(None) => dialog::start(app, Action::ForceLeader),
        BarCommand::ForceLeader(Some(id)) => dialog::force(app, id),
        BarCommand::Context(Some(name)) => super::contexts::request(app, &name),
        BarCommand::Context(None) => super::contexts::list(app),
    }
}

/// Quits, or asks first when quitting stops something.
pub(super) fn quit(app: &mut App) {
    match app.around.quit_asks {
        Some(what) => app.dialog = Some(super::Dialog::ConfirmQuit { what, under: None }),
        None => app.effects.push(super::Effect::Quit),
    }
}

/// Sorts by `key`; by the same key again, the other way round.
pub(super) fn sort_by(app: &mut App, key: SortKey) {
    app.sort = Sort {
        key,
        reversed: app.sort.key == key && !app.sort.reversed,
    };
    rows::refresh(app);
}

/// `Esc`: closes the innermost thing open, else clears a filter, else does nothing (it never
/// quits: `q` does). Returns whether anything changed.
pub(super) fn back(app: &mut App) -> bool {
    if app.show_help {
        app.show_help = false;
    } else if app.show_members {
        app.show_members = false;
    } else if app.screen == Screen::Events && app.events_filter.is_some() {
        set_filter(app, None);
    } else if app.screen != Screen::Main {
        app.screen = Screen::Main;
    } else if app.filter.is_some() {
        set_filter(app, None);
    } else {
        return false;
    }
    true
}

fn step(pos: usize, len: usize, delta: isize) -> usize {
    if len == 0 {
        return 0;
    }
    pos.saturating_add_signed(delta).min(len - 1)
}

/// Moves the selection or scrolls the pane `focus` (the focused one when `None`).
pub(super) fn scroll(app: &mut App, focus: Option<Focus>, delta: isize) -> bool {
    let before = (
        app.selected,
        app.line_scroll,
        app.history_scroll,
        app.events_scroll,
    );
    if app.screen == Screen::Events {
        let n = app.visible_events().count();
        app.events_scroll = step(app.events_scroll, n, delta);
    } else {
        let (cands, hist) = app
            .selected_election()
            .map(|e| (e.candidates.len(), e.history.len()))
            .unwrap_or((0, 0));
        // The timeline's rows are the elections': the movement keys select among them.
        let focus = match app.screen {
            Screen::Timeline => Focus::Elections,
            _ => focus.unwrap_or(app.focus),
        };
        match focus {
            Focus::Elections => {
                app.selected = step(app.selected, app.rows.len(), delta);
                app.chosen = true;
                if app.selected != before.0 {
                    app.line_scroll = 0;
                    app.history_scroll = 0;
                }
            }
            Focus::Candidates => app.line_scroll = step(app.line_scroll, cands, delta),
            Focus::History => app.history_scroll = step(app.history_scroll, hist, delta),
        }
    }
    before
        != (
            app.selected,
            app.line_scroll,
            app.history_scroll,
            app.events_scroll,
        )
}

/// Two clicks on the same row within this long are a double click.
const DOUBLE_CLICK: std::time::Duration = std::time::Duration::from_millis(400);

/// A left click at `at`: a second on the same row soon after opens its detail, as Enter does.
pub(super) fn click_at(app: &mut App, target: Hit, at: std::time::Instant) -> bool {
    let double = matches!(target, Hit::Row(_))
        && app.last_click.is_some_and(|(t, then)| {
            t == target && at.saturating_duration_since(then) < DOUBLE_CLICK
        });
    app.last_click = (!double).then_some((target, at));
    let dirty = click(app, target);
    dirty | (double && super::on_action(app, super::Action::Describe))
}

fn click(app: &mut App, target: Hit) -> bool {
    if app.dialog.is_some() || app.prompt.is_some() {
        return false;
    }
    match target {
        Hit::Row(i) if i < app.rows.len() => {
            if app.selected != i {
                app.line_scroll = 0;
                app.history_scroll = 0;
            }
            app.selected = i;
            app.chosen = true;
            app.focus = Focus::Elections;
        }
        Hit::Row(_) => app.focus = Focus::Elections,
        Hit::Pane(f) => app.focus = f,
        Hit::Events => return false,
    }
    true
}

pub(super) fn wheel(app: &mut App, target: Hit, delta: isize) -> bool {
    if app.dialog.is_some() {
        return false;
    }
    match target {
        Hit::Row(_) => scroll(app, Some(Focus::Elections), delta),
        Hit::Pane(f) => scroll(app, Some(f), delta),
        Hit::Events => scroll(app, None, delta),
    }
}
