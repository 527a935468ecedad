//! The key table: one place maps keys to actions, and the help overlay is generated from it,
//! so the help never drifts from the real bindings.

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
            (KeyCode::Char('G'), KeyModifiers::SHIFT),
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
        keys: &[(KeyCode::BackTab, KeyModifiers::SHIFT)],
        label: "S-Tab",
        action: Action::FocusPrev,
        help: "previous pane",
    },
    Binding {
        keys: &[
            (KeyCode::Char('?'), NONE),
            (KeyCode::Char('?'), KeyModifiers::SHIFT),
        ],
        label: "?",
        action: Action::ToggleHelp,
        help: "this help",
    },
    Binding {
        keys: &[(KeyCode::Esc, NONE)],
        label: "Esc",
        action: Action::Back,
        help: "close help / quit",
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

/// The action bound to a key press, if any. Releases and repeats of other kinds are ignored.
pub fn action_for(key: KeyEvent) -> Option<Action> {
    if key.kind == KeyEventKind::Release {
        return None;
    }
    BINDINGS
        .iter()
        .find(|b| {
            b.keys
                .iter()
                .any(|(code, mods)| *code == key.code && *mods == key.modifiers)
        })
        .map(|b| b.action)
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
    }

    #[test]
    fn every_action_is_bound_once() {
        let mut seen = std::collections::HashSet::new();
        for b in BINDINGS {
            assert!(seen.insert(b.action), "{:?} bound twice", b.action);
        }
    }
}
