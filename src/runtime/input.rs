//! Terminal input on the dashboard: a key becomes its bound action, a click or the wheel
//! what is under it; what the dashboard then asks for (an admin action, the clipboard) is
//! carried out here, outside it.

use std::io::Write;
use std::time::Instant;

use tokio::sync::mpsc;

use super::Sources;
use crate::app::{self, App, Msg};
use crate::ui;

/// A key press on the dashboard (or in its dialog): the action it is bound to, and what
/// that asked for carried out. Returns whether the screen changed and whether to quit.
pub(crate) fn on_key(
    app: &mut App,
    sources: &mut Sources,
    admin_tx: &mpsc::Sender<crate::admin::Outcome>,
    key: crossterm::event::KeyEvent,
) -> (bool, bool) {
    let action = match (&app.dialog, &app.prompt) {
        (Some(d), _) => app.keys.dialog_action_for(key, d.typing()),
        (None, Some(_)) => app.keys.prompt_action_for(key),
        (None, None) => app.keys.action_for(key),
    };
    let Some(action) = action else {
        return (unbound(app, key), false);
    };
    let done = app::update(app, Msg::Action(action));
    (done.redraw, carry_out(done.effects, sources, admin_tx))
}

/// A key bound to nothing on the table says so, rather than doing nothing silently.
/// Returns whether the screen changed.
fn unbound(app: &mut App, key: crossterm::event::KeyEvent) -> bool {
    use crossterm::event::{KeyCode, KeyEventKind, KeyModifiers};
    let named = match key.code {
        _ if key.kind == KeyEventKind::Release || app.dialog.is_some() || app.prompt.is_some() => {
            return false;
        }
        KeyCode::Char(c) if key.modifiers.contains(KeyModifiers::CONTROL) => format!("Ctrl-{c}"),
        KeyCode::Char(c) => c.to_string(),
        KeyCode::F(n) => format!("F{n}"),
        _ => return false,
    };
    let text = format!("{named} does nothing here: ? lists the keys");
    app.say(app::Flash::info(&text));
    true
}

/// Does what the dashboard asked: admin actions start in the background, text goes to the
/// clipboard. Returns whether it asked to quit.
fn carry_out(
    effects: Vec<app::Effect>,
    sources: &mut Sources,
    admin_tx: &mpsc::Sender<crate::admin::Outcome>,
) -> bool {
    let mut quit = false;
    for effect in effects {
        match effect {
            app::Effect::Admin(req) => sources.execute(*req, admin_tx.clone()),
            app::Effect::Copy(text) => copy_to_clipboard(&text),
            app::Effect::Quit => quit = true,
        }
    }
    quit
}

/// Hands `text` to the terminal's clipboard (OSC 52), between frames. A terminal that
/// ignores the sequence ignores it silently; the status line said what was asked.
fn copy_to_clipboard(text: &str) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out
        .write_all(ui::osc52::sequence(text).as_bytes())
        .and_then(|()| out.flush())
    {
        tracing::warn!("writing the OSC 52 clipboard sequence: {e}");
    }
}

/// A click or the wheel, on whatever the view drew there. Returns whether the screen changed.
pub(crate) fn on_mouse(app: &mut App, m: crossterm::event::MouseEvent) -> bool {
    let target = ui::target_at(app, m.column, m.row);
    dashboard_mouse(app, target, m.kind)
}

/// A mouse event on the dashboard, `target` being what is under it: the demo finds that in
/// its own layout, so a click, a double click and the wheel do the same there.
pub(crate) fn dashboard_mouse(
    app: &mut App,
    target: Option<app::Hit>,
    kind: crossterm::event::MouseEventKind,
) -> bool {
    use crossterm::event::{MouseButton, MouseEventKind};
    // The detail view covers the panes: the wheel scrolls it, three lines a notch.
    if app.describe.is_some() && app.dialog.is_none() && !app.show_help {
        let step = match kind {
            MouseEventKind::ScrollDown => app::Action::Down,
            MouseEventKind::ScrollUp => app::Action::Up,
            _ => return false,
        };
        return (0..3).fold(false, |dirty, _| {
            app::update(app, Msg::Action(step)).redraw | dirty
        });
    }
    let Some(target) = target else {
        return false;
    };
    match kind {
        MouseEventKind::Down(MouseButton::Left) => {
            app::update(app, Msg::Click(target, Instant::now())).redraw
        }
        MouseEventKind::ScrollDown => app::update(app, Msg::Wheel(target, 3)).redraw,
        MouseEventKind::ScrollUp => app::update(app, Msg::Wheel(target, -3)).redraw,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::SystemTime;

    /// A double click on a row opens its detail; there the wheel scrolls it; a single
    /// click only selects.
    #[test]
    fn a_double_click_opens_the_detail_and_the_wheel_scrolls_it() {
        use crate::model::{Candidate, Election, Scheme, SourceEvent, SourceInfo};
        use crossterm::event::{KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
        let mut app = App::new(
            vec![SourceInfo::test_etcd()],
            Instant::now(),
            SystemTime::now(),
        );
        let mut e = Election::new(0, "jobs".into(), Scheme::EtcdElection);
        e.candidates = (0..60)
            .map(|i| Candidate {
                id: format!("n{i}"),
                raw_id: Vec::new(),
                key: format!("/e/jobs/{i}"),
                raw_key: Vec::new(),
                lease: Some(i + 1),
                create_revision: i,
                mod_revision: i,
                stamp: None,
                ttl: None,
            })
            .collect();
        let elections = vec![e, Election::new(0, "zzz".into(), Scheme::EtcdElection)];
        app::update(
            &mut app,
            Msg::Source(SourceEvent::Elections {
                source: 0,
                elections,
            }),
        );
        app::update(
            &mut app,
            Msg::Resize {
                width: 100,
                height: 30,
            },
        );
        let mouse = |kind, row| MouseEvent {
            kind,
            column: 10,
            row,
            modifiers: KeyModifiers::NONE,
        };
        let click = mouse(MouseEventKind::Down(MouseButton::Left), 3);
        assert!(on_mouse(&mut app, click));
        assert!(app.describe.is_none(), "one click selects");
        on_mouse(&mut app, click);
        assert!(app.describe.is_some(), "two open the detail");
        on_mouse(&mut app, mouse(MouseEventKind::ScrollDown, 10));
        assert_eq!(app.describe.as_ref().map(|d| d.scroll), Some(3));
    }

    /// `d`, `l`, `Ctrl-R`: bound to nothing, each says so in the status line; inside the
    /// `/` bar a key is text, not a mistake.
    #[test]
    fn a_key_bound_to_nothing_says_so() {
        use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
        let mut app = App::new(
            vec![crate::model::SourceInfo::test_etcd()],
            Instant::now(),
            SystemTime::now(),
        );
        for (code, mods, said) in [
            (
                KeyCode::Char('d'),
                KeyModifiers::NONE,
                "d does nothing here",
            ),
            (
                KeyCode::Char('r'),
                KeyModifiers::CONTROL,
                "Ctrl-r does nothing here",
            ),
        ] {
            assert!(unbound(&mut app, KeyEvent::new(code, mods)));
            let flash = app
                .flash
                .as_ref()
                .map(|f| f.text.clone())
                .unwrap_or_default();
            assert!(
                flash.contains(said) && flash.contains("? lists the keys"),
                "{flash}"
            );
        }
        app::update(&mut app, Msg::Action(app::Action::StartFilter));
        app.flash = None;
        let d = KeyEvent::new(KeyCode::Char('d'), KeyModifiers::NONE);
        assert!(!unbound(&mut app, d));
        assert!(app.flash.is_none());
    }
}
