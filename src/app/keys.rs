//! The key tables: one maps keys to actions on the dashboard, one inside dialogs, and the
//! help overlay is generated from them, so the help never drifts from the real bindings.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::Action;

pub(crate) struct Binding {
    pub keys: &'static [(KeyCode, KeyModifiers)],
    /// How the keys are written in the help.
    pub label: &'static str,
    pub action: Action,
    pub help: &'static str,
}

const NONE: KeyModifiers = KeyModifiers::NONE;
const SHIFT: KeyModifiers = KeyModifiers::SHIFT;

pub(crate) const BINDINGS: &[Binding] = &[
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
        help: "next pane",
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
        help: "force a leader",
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
        keys: &[(KeyCode::Enter, NONE)],
        label: "Enter",
        action: Action::Describe,
        help: "detail of the election",
    },
    Binding {
        keys: &[(KeyCode::Char('y'), NONE)],
        label: "y",
        action: Action::CopyLeader,
        help: "copy the leader id (OSC 52)",
    },
    Binding {
        keys: &[(KeyCode::Char('Y'), SHIFT), (KeyCode::Char('Y'), NONE)],
        label: "Y",
        action: Action::CopyKey,
        help: "copy the leader's key (OSC 52)",
    },
    Binding {
        keys: &[(KeyCode::Char('e'), NONE)],
        label: "e",
        action: Action::ToggleMembers,
        help: "members of the store",
    },
    Binding {
        keys: &[(KeyCode::Char('/'), NONE), (KeyCode::Char('/'), SHIFT)],
        label: "/",
        action: Action::StartFilter,
        help: "filter: text or re:REGEX",
    },
    Binding {
        keys: &[(KeyCode::Char(':'), NONE), (KeyCode::Char(':'), SHIFT)],
        label: ":",
        action: Action::StartCommand,
        help: "command bar (:sort, :events…)",
    },
    Binding {
        keys: &[(KeyCode::Char('s'), NONE)],
        label: "s",
        action: Action::CycleSort,
        help: "sort by the next column",
    },
    Binding {
        keys: &[(KeyCode::Char('v'), NONE)],
        label: "v",
        action: Action::ToggleEvents,
        help: "events: every change",
    },
    Binding {
        keys: &[(KeyCode::Char('t'), NONE)],
        label: "t",
        action: Action::ToggleTimeline,
        help: "timeline: who led when",
    },
    Binding {
        keys: &[
            (KeyCode::Char('+'), NONE),
            (KeyCode::Char('+'), SHIFT),
            (KeyCode::Char('='), NONE),
        ],
        label: "+",
        action: Action::ZoomIn,
        help: "timeline: narrower window",
    },
    Binding {
        keys: &[(KeyCode::Char('-'), NONE)],
        label: "-",
        action: Action::ZoomOut,
        help: "timeline: wider (5m 1h 24h)",
    },
    Binding {
        keys: &[(KeyCode::Left, NONE)],
        label: "←",
        action: Action::PanLeft,
        help: "timeline: pan back",
    },
    Binding {
        keys: &[(KeyCode::Right, NONE)],
        label: "→",
        action: Action::PanRight,
        help: "timeline: pan forward",
    },
    Binding {
        keys: &[(KeyCode::Char('h'), NONE), (KeyCode::Char(','), NONE)],
        label: "h/,",
        action: Action::CursorLeft,
        help: "timeline: cursor earlier",
    },
    Binding {
        keys: &[(KeyCode::Char('l'), NONE), (KeyCode::Char('.'), NONE)],
        label: "l/.",
        action: Action::CursorRight,
        help: "timeline: cursor later",
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
        help: "close / clear filter",
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

/// Inside a dialog (pick a candidate, type an id, confirm, the details of a confirmation).
/// A binding with no help is named by the row before it (its label says so), so the help
/// keeps to one row per thing to do and fits 80x24.
pub(crate) const DIALOG_BINDINGS: &[Binding] = &[
    Binding {
        keys: &[(KeyCode::Up, NONE), (KeyCode::Char('k'), NONE)],
        label: "↑/k ↓/j",
        action: Action::Up,
        help: "move; scroll the details",
    },
    Binding {
        keys: &[(KeyCode::Down, NONE), (KeyCode::Char('j'), NONE)],
        label: "↓/j",
        action: Action::Down,
        help: "",
    },
    Binding {
        keys: &[(KeyCode::PageUp, NONE)],
        label: "PgUp/Dn",
        action: Action::PageUp,
        help: "page the details",
    },
    Binding {
        keys: &[(KeyCode::PageDown, NONE)],
        label: "PgDn",
        action: Action::PageDown,
        help: "",
    },
    Binding {
        keys: &[(KeyCode::Enter, NONE)],
        label: "Enter/y",
        action: Action::Choose,
        help: "choose; only y confirms",
    },
    Binding {
        keys: &[(KeyCode::Char('y'), NONE)],
        label: "y",
        action: Action::Accept,
        help: "",
    },
    Binding {
        keys: &[(KeyCode::Esc, NONE), (KeyCode::Char('n'), NONE)],
        label: "Esc/n",
        action: Action::Back,
        help: "cancel / back (C-c: quit)",
    },
    Binding {
        keys: &[(KeyCode::Char('c'), KeyModifiers::CONTROL)],
        label: "C-c",
        action: Action::Quit,
        help: "",
    },
    Binding {
        keys: &[(KeyCode::Char('d'), NONE)],
        label: "d",
        action: Action::Details,
        help: "details: the whole plan",
    },
    Binding {
        keys: &[(KeyCode::Char('r'), NONE), (KeyCode::Char('R'), SHIFT)],
        label: "r",
        action: Action::Reelect,
        help: "re-election instead of resign",
    },
];

/// A binding as the running program has it: the defaults above, with the user's overrides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bound {
    pub keys: Vec<(KeyCode, KeyModifiers)>,
    pub label: String,
    pub action: Action,
    pub help: &'static str,
}

/// The key tables in force. Plain data: the runtime maps keys with it, the help draws it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyMap {
    normal: Vec<Bound>,
    dialog: Vec<Bound>,
}

fn owned(table: &[Binding]) -> Vec<Bound> {
    table
        .iter()
        .map(|b| Bound {
            keys: b.keys.to_vec(),
            label: b.label.to_string(),
            action: b.action,
            help: b.help,
        })
        .collect()
}

impl Default for KeyMap {
    fn default() -> Self {
        KeyMap {
            normal: owned(BINDINGS),
            dialog: owned(DIALOG_BINDINGS),
        }
    }
}

/// The actions behind the names of the config's `[keys]` section
/// ([`crate::config::keys::ACTIONS`]).
pub(crate) const ACTION_NAMES: &[(&str, Action)] = &[
    ("up", Action::Up),
    ("down", Action::Down),
    ("page_up", Action::PageUp),
    ("page_down", Action::PageDown),
    ("top", Action::Top),
    ("bottom", Action::Bottom),
    ("next_pane", Action::FocusNext),
    ("previous_pane", Action::FocusPrev),
    ("force_leader", Action::ForceLeader),
    ("reelect", Action::Reelect),
    ("resign", Action::Resign),
    ("help", Action::ToggleHelp),
    ("members", Action::ToggleMembers),
    ("describe", Action::Describe),
    ("copy_leader", Action::CopyLeader),
    ("copy_key", Action::CopyKey),
    ("filter", Action::StartFilter),
    ("command", Action::StartCommand),
    ("sort", Action::CycleSort),
    ("events", Action::ToggleEvents),
    ("timeline", Action::ToggleTimeline),
    ("zoom_in", Action::ZoomIn),
    ("zoom_out", Action::ZoomOut),
    ("pan_left", Action::PanLeft),
    ("pan_right", Action::PanRight),
    ("cursor_left", Action::CursorLeft),
    ("cursor_right", Action::CursorRight),
    ("back", Action::Back),
    ("quit", Action::Quit),
];

/// A key as the config writes it.
fn key_name((code, mods): (KeyCode, KeyModifiers)) -> String {
    let base = match code {
        KeyCode::Char(' ') => "space".to_string(),
        KeyCode::Char(c) => c.to_string(),
        KeyCode::F(n) => format!("f{n}"),
        other => format!("{other:?}").to_ascii_lowercase(),
    };
    if mods.contains(KeyModifiers::CONTROL) {
        format!("ctrl-{base}")
    } else {
        base
    }
}

impl KeyMap {
    /// The defaults with `overrides` (action name -> comma-separated keys) applied. A key
    /// given to two actions is an error that names both.
    pub fn with_overrides(overrides: &crate::config::KeyOverrides) -> Result<KeyMap, String> {
        let mut map = KeyMap::default();
        for o in &overrides.0 {
            // The config checked the names against the same list.
            let Some(action) = ACTION_NAMES
                .iter()
                .find(|(n, _)| *n == o.action)
                .map(|(_, a)| *a)
            else {
                return Err(format!("[keys]: unknown action `{}`", o.action));
            };
            if let Some(b) = map.normal.iter_mut().find(|b| b.action == action) {
                b.keys = o.keys.clone();
                b.label = o.label.clone();
            }
        }
        for (i, a) in map.normal.iter().enumerate() {
            for b in &map.normal[i + 1..] {
                if let Some(k) = a.keys.iter().find(|k| b.keys.contains(k)) {
                    return Err(format!(
                        "[keys]: `{}` is bound to both `{}` and `{}`; give one of them another key",
                        key_name(*k),
                        a.help,
                        b.help
                    ));
                }
            }
        }
        Ok(map)
    }

    pub fn normal(&self) -> &[Bound] {
        &self.normal
    }

    pub fn dialog(&self) -> &[Bound] {
        &self.dialog
    }

    /// The action bound to a key press on the dashboard, if any.
    pub fn action_for(&self, key: KeyEvent) -> Option<Action> {
        if key.kind == KeyEventKind::Release {
            return None;
        }
        find(&self.normal, key)
    }

    /// The action of a key press in the `/` or `:` bar: printable keys are text.
    pub fn prompt_action_for(&self, key: KeyEvent) -> Option<Action> {
        if key.kind == KeyEventKind::Release {
            return None;
        }
        match key.code {
            KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                Some(Action::Quit)
            }
            KeyCode::Enter => Some(Action::Accept),
            KeyCode::Esc => Some(Action::Back),
            KeyCode::Backspace => Some(Action::Erase),
            KeyCode::Tab => Some(Action::Complete),
            KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                Some(Action::Type(c))
            }
            _ => None,
        }
    }

    /// The action of a key press in a dialog; `typing` dialogs take printable keys as text.
    pub fn dialog_action_for(&self, key: KeyEvent, typing: bool) -> Option<Action> {
        if key.kind == KeyEventKind::Release {
            return None;
        }
        if typing {
            match key.code {
                KeyCode::Enter => return Some(Action::Choose),
                KeyCode::Esc => return Some(Action::Back),
                KeyCode::Backspace => return Some(Action::Erase),
                KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                    return Some(Action::Type(c));
                }
                _ => {}
            }
        }
        find(&self.dialog, key)
    }
}

/// The keys the events view answers; the rest belong to the elections.
pub(crate) fn on_events_screen(action: Action) -> bool {
    matches!(
        action,
        Action::Up
            | Action::Down
            | Action::PageUp
            | Action::PageDown
            | Action::Top
            | Action::Bottom
            | Action::StartFilter
            | Action::StartCommand
            | Action::ToggleEvents
            | Action::ToggleHelp
            | Action::Back
            | Action::Quit
    )
}

/// Keys of the `/` and `:` bars (fixed: they are text otherwise), for the help.
pub(crate) const PROMPT_KEYS: &[(&str, &str)] = &[
    ("Enter", "keep filter / run command"),
    ("Esc", "drop filter / command"),
    ("Tab", "complete the command"),
    ("Bksp", "erase (past the start: close)"),
];

/// What the mouse does, for the help.
pub(crate) const MOUSE_KEYS: &[(&str, &str)] = &[
    ("click", "select a row or a pane"),
    ("wheel", "scroll what is under it"),
    ("2×click", "detail of the row"),
];

fn find(table: &[Bound], key: KeyEvent) -> Option<Action> {
    table
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
        let map = KeyMap::default();
        let k = |c, m| map.action_for(KeyEvent::new(c, m));
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
        let map = KeyMap::default();
        let k = KeyEvent::new(KeyCode::Char('n'), NONE);
        assert_eq!(map.dialog_action_for(k, true), Some(Action::Type('n')));
        assert_eq!(map.dialog_action_for(k, false), Some(Action::Back));
    }

    #[test]
    fn overrides_rebind_and_conflicts_are_named() {
        let over = |pairs: &[(&str, &str)]| {
            let m: std::collections::BTreeMap<String, String> = pairs
                .iter()
                .map(|(a, k)| (a.to_string(), k.to_string()))
                .collect();
            KeyMap::with_overrides(&crate::config::KeyOverrides::parse(&m)?)
        };
        let map = over(&[("reelect", "ctrl-e, f5")]).expect("valid");
        assert_eq!(
            map.action_for(KeyEvent::new(KeyCode::Char('e'), KeyModifiers::CONTROL)),
            Some(Action::Reelect)
        );
        assert_eq!(
            map.action_for(KeyEvent::new(KeyCode::F(5), NONE)),
            Some(Action::Reelect)
        );
        assert_eq!(
            map.action_for(KeyEvent::new(KeyCode::Char('R'), SHIFT)),
            None,
            "the old key is free"
        );
        assert!(
            map.normal().iter().any(|b| b.label == "ctrl-e/f5"),
            "the help shows the new keys"
        );
        let e = over(&[("resign", "j")]).expect_err("conflict");
        assert!(e.contains("bound to both"), "{e}");
        let e = over(&[("explode", "x")]).expect_err("unknown");
        assert!(
            e.contains("unknown action `explode`") && e.contains("reelect"),
            "{e}"
        );
        let e = over(&[("quit", "ctrl-")]).expect_err("bad key");
        assert!(e.contains("is not a key"), "{e}");
    }

    #[test]
    fn d_in_a_dialog_opens_the_details_and_the_help_says_so() {
        let map = KeyMap::default();
        let d = KeyEvent::new(KeyCode::Char('d'), NONE);
        assert_eq!(map.dialog_action_for(d, false), Some(Action::Details));
        assert_eq!(map.dialog_action_for(d, true), Some(Action::Type('d')));
        let page = KeyEvent::new(KeyCode::PageDown, NONE);
        assert_eq!(map.dialog_action_for(page, false), Some(Action::PageDown));
        assert!(
            map.dialog()
                .iter()
                .any(|b| b.label == "d" && b.help.contains("the whole plan"))
        );
        // A binding left out of the help is named by the label of the row before it.
        for pair in DIALOG_BINDINGS.windows(2) {
            if pair[1].help.is_empty() {
                // `PgUp/Dn` names `PgDn`.
                let folded = pair[1].label.trim_start_matches("Pg");
                assert!(
                    pair[0].label.contains(folded) || pair[0].help.contains(pair[1].label),
                    "{} is not named by the row before it",
                    pair[1].label
                );
            }
        }
    }

    #[test]
    fn every_config_action_name_has_its_action() {
        let names: Vec<&str> = ACTION_NAMES.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, crate::config::keys::ACTIONS);
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
