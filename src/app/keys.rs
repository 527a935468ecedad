//! The key tables: one maps keys to actions on the dashboard, one inside dialogs, and the
//! help overlay is generated from them, so the help never drifts from the real bindings.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::Action;

pub struct Binding {
    pub keys: &'static [(KeyCode, KeyModifiers)],
    /// How the keys are written in the help.
    pub label: &'static str,
    pub action: Action,
    pub help: &'static str,
}

const NONE: KeyModifiers = KeyModifiers::NONE;
const SHIFT: KeyModifiers = KeyModifiers::SHIFT;

pub const BINDINGS: &[Binding] = &[
    Binding {
        keys: &[(KeyCode::Up, NONE), (KeyCode::Char('k'), NONE)],
        label: "↑/k",
        action: Action::Up,
        help: "previous row",
    },
    Binding {
        keys: &[(KeyCode::Down, NONE), (KeyCode::Char('j'), NONE)],
        label: "↓/j",
        action: Action::Down,
        help: "next row",
    },
    Binding {
        keys: &[(KeyCode::PageUp, NONE)],
        label: "PgUp",
        action: Action::PageUp,
        help: "page up",
    },
    Binding {
        keys: &[(KeyCode::PageDown, NONE)],
        label: "PgDn",
        action: Action::PageDown,
        help: "page down",
    },
    Binding {
        keys: &[(KeyCode::Home, NONE), (KeyCode::Char('g'), NONE)],
        label: "Home/g",
        action: Action::Top,
        help: "first row",
    },
    Binding {
        keys: &[
            (KeyCode::End, NONE),
            (KeyCode::Char('G'), SHIFT),
            (KeyCode::Char('G'), NONE),
        ],
        label: "End/G",
        action: Action::Bottom,
        help: "last row",
    },
    Binding {
        keys: &[(KeyCode::Tab, NONE)],
        label: "Tab",
        action: Action::FocusNext,
        help: "next pane (elections, candidates, history)",
    },
    Binding {
        keys: &[(KeyCode::BackTab, SHIFT), (KeyCode::BackTab, NONE)],
        label: "S-Tab",
        action: Action::FocusPrev,
        help: "previous pane",
    },
    Binding {
        keys: &[(KeyCode::Char('F'), SHIFT), (KeyCode::Char('F'), NONE)],
        label: "F",
        action: Action::ForceLeader,
        help: "force a leader (pick from the line or type an id)",
    },
    Binding {
        keys: &[(KeyCode::Char('R'), SHIFT), (KeyCode::Char('R'), NONE)],
        label: "R",
        action: Action::Reelect,
        help: "force a re-election",
    },
    Binding {
        keys: &[(KeyCode::Char('S'), SHIFT), (KeyCode::Char('S'), NONE)],
        label: "S",
        action: Action::Resign,
        help: "make the leader resign",
    },
    Binding {
        keys: &[(KeyCode::Char('?'), NONE), (KeyCode::Char('?'), SHIFT)],
        label: "?",
        action: Action::ToggleHelp,
        help: "this help",
    },
    Binding {
        keys: &[(KeyCode::Esc, NONE)],
        label: "Esc",
        action: Action::Back,
        help: "close help or dialog / quit",
    },
    Binding {
        keys: &[
            (KeyCode::Char('q'), NONE),
            (KeyCode::Char('c'), KeyModifiers::CONTROL),
        ],
        label: "q/C-c",
        action: Action::Quit,
        help: "quit",
    },
];

/// Inside a dialog (pick a candidate, type an id, confirm).
pub const DIALOG_BINDINGS: &[Binding] = &[
    Binding {
        keys: &[(KeyCode::Up, NONE), (KeyCode::Char('k'), NONE)],
        label: "↑/k",
        action: Action::Up,
        help: "previous choice",
    },
    Binding {
        keys: &[(KeyCode::Down, NONE), (KeyCode::Char('j'), NONE)],
        label: "↓/j",
        action: Action::Down,
        help: "next choice",
    },
    Binding {
        keys: &[(KeyCode::Enter, NONE), (KeyCode::Char('y'), NONE)],
        label: "Enter/y",
        action: Action::Accept,
        help: "choose / confirm",
    },
    Binding {
        keys: &[(KeyCode::Esc, NONE), (KeyCode::Char('n'), NONE)],
        label: "Esc/n",
        action: Action::Back,
        help: "cancel",
    },
    Binding {
        keys: &[(KeyCode::Char('c'), KeyModifiers::CONTROL)],
        label: "C-c",
        action: Action::Quit,
        help: "quit",
    },
];

fn find(table: &[Binding], key: KeyEvent) -> Option<Action> {
    table
        .iter()
        .find(|b| {
            b.keys
                .iter()
                .any(|(code, mods)| *code == key.code && *mods == key.modifiers)
        })
        .map(|b| b.action)
}

/// The action bound to a key press on the dashboard, if any.
pub fn action_for(key: KeyEvent) -> Option<Action> {
    if key.kind == KeyEventKind::Release {
        return None;
    }
    find(BINDINGS, key)
}

/// The action of a key press in a dialog; `typing` dialogs take printable keys as text.
pub fn dialog_action_for(key: KeyEvent, typing: bool) -> Option<Action> {
    if key.kind == KeyEventKind::Release {
        return None;
    }
    if typing {
        match key.code {
            KeyCode::Enter => return Some(Action::Accept),
            KeyCode::Esc => return Some(Action::Back),
            KeyCode::Backspace => return Some(Action::Erase),
            KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                return Some(Action::Type(c));
            }
            _ => {}
        }
    }
    find(DIALOG_BINDINGS, key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_map_to_actions() {
        let k = |c, m| action_for(KeyEvent::new(c, m));
        assert_eq!(k(KeyCode::Char('j'), NONE), Some(Action::Down));
        assert_eq!(
            k(KeyCode::Char('c'), KeyModifiers::CONTROL),
            Some(Action::Quit)
        );
        assert_eq!(k(KeyCode::Char('c'), NONE), None);
        assert_eq!(k(KeyCode::Esc, NONE), Some(Action::Back));
        assert_eq!(k(KeyCode::Char('R'), SHIFT), Some(Action::Reelect));
    }

    #[test]
    fn typing_dialogs_take_letters_as_text() {
        let k = KeyEvent::new(KeyCode::Char('n'), NONE);
        assert_eq!(dialog_action_for(k, true), Some(Action::Type('n')));
        assert_eq!(dialog_action_for(k, false), Some(Action::Back));
    }

    #[test]
    fn every_action_is_bound_once_per_table() {
        for table in [BINDINGS, DIALOG_BINDINGS] {
            let mut seen = std::collections::HashSet::new();
            for b in table {
                assert!(seen.insert(b.action), "{:?} bound twice", b.action);
            }
        }
    }
}
