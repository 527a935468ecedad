//! The `[keys]` section: action name = "key[,key...]". Checked here, names and key syntax,
//! into plain data; the dashboard's key map applies it (and refuses a key bound twice, which
//! only the map of defaults can tell).

use std::collections::BTreeMap;

use crossterm::event::{KeyCode, KeyModifiers};

/// The names the `[keys]` section uses for dashboard actions.
pub(crate) const ACTIONS: &[&str] = &[
    "up",
    "down",
    "page_up",
    "page_down",
    "top",
    "bottom",
    "next_pane",
    "previous_pane",
    "force_leader",
    "reelect",
    "resign",
    "help",
    "members",
    "describe",
    "copy_leader",
    "copy_key",
    "filter",
    "command",
    "sort",
    "events",
    "timeline",
    "zoom_in",
    "zoom_out",
    "pan_left",
    "pan_right",
    "cursor_left",
    "cursor_right",
    "back",
    "quit",
];

/// One action's keys, as the config gave them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyOverride {
    /// One of [`ACTIONS`].
    pub action: String,
    pub keys: Vec<(KeyCode, KeyModifiers)>,
    /// How the keys are written in the help: as the config wrote them.
    pub label: String,
}

/// Every override of the `[keys]` section, in action-name order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeyOverrides(pub Vec<KeyOverride>);

impl KeyOverrides {
    /// Checks action names and key syntax; the errors name the action and the fix.
    pub fn parse(raw: &BTreeMap<String, String>) -> Result<KeyOverrides, String> {
        let mut out = Vec::new();
        for (name, keys) in raw {
            if !ACTIONS.contains(&name.as_str()) {
                return Err(format!(
                    "[keys]: unknown action `{name}`; the actions are {}",
                    ACTIONS.join(", ")
                ));
            }
            let mut parsed = Vec::new();
            for k in keys.split(',') {
                let (code, mods) = parse_key(k).map_err(|e| format!("[keys] {name}: {e}"))?;
                parsed.push((code, mods));
                // Terminals report a capital letter with Shift or without: take both.
                if mods == KeyModifiers::SHIFT {
                    parsed.push((code, KeyModifiers::NONE));
                }
            }
            out.push(KeyOverride {
                action: name.clone(),
                keys: parsed,
                label: keys.split(',').map(str::trim).collect::<Vec<_>>().join("/"),
            });
        }
        Ok(KeyOverrides(out))
    }
}

/// `x`, `X`, `ctrl-r`, `f5`, `esc`, `enter`, `tab`, `up`, `pgdn`, `space`...
pub fn parse_key(text: &str) -> Result<(KeyCode, KeyModifiers), String> {
    let t = text.trim();
    let (mods, name) = match t.strip_prefix("ctrl-").or_else(|| t.strip_prefix("C-")) {
        Some(rest) => (KeyModifiers::CONTROL, rest),
        None => (KeyModifiers::NONE, t),
    };
    let code = match name.to_ascii_lowercase().as_str() {
        "esc" | "escape" => KeyCode::Esc,
        "enter" | "return" => KeyCode::Enter,
        "tab" => KeyCode::Tab,
        "backtab" => KeyCode::BackTab,
        "space" => KeyCode::Char(' '),
        "up" => KeyCode::Up,
        "down" => KeyCode::Down,
        "left" => KeyCode::Left,
        "right" => KeyCode::Right,
        "pgup" | "pageup" => KeyCode::PageUp,
        "pgdn" | "pagedown" => KeyCode::PageDown,
        "home" => KeyCode::Home,
        "end" => KeyCode::End,
        f if f.len() > 1
            && f.starts_with('f')
            && f[1..].parse::<u8>().is_ok_and(|n| (1..=12).contains(&n)) =>
        {
            KeyCode::F(f[1..].parse().unwrap_or(1))
        }
        _ => {
            let mut chars = name.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) if !c.is_control() => KeyCode::Char(c),
                _ => {
                    return Err(format!(
                        "`{text}` is not a key; write e.g. x, X, ctrl-r, f5, esc, enter, tab, up, pgdn"
                    ));
                }
            }
        }
    };
    // Terminals report a capital letter with Shift (or without): take both.
    let mods = match code {
        KeyCode::Char(c) if c.is_ascii_uppercase() && mods == KeyModifiers::NONE => {
            KeyModifiers::SHIFT
        }
        _ => mods,
    };
    Ok((code, mods))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn over(pairs: &[(&str, &str)]) -> Result<KeyOverrides, String> {
        let m: BTreeMap<String, String> = pairs
            .iter()
            .map(|(a, k)| (a.to_string(), k.to_string()))
            .collect();
        KeyOverrides::parse(&m)
    }

    #[test]
    fn names_and_keys_are_checked() {
        let o = over(&[("reelect", "ctrl-e, F")]).expect("valid");
        assert_eq!(o.0[0].label, "ctrl-e/F");
        assert_eq!(
            o.0[0].keys,
            [
                (KeyCode::Char('e'), KeyModifiers::CONTROL),
                (KeyCode::Char('F'), KeyModifiers::SHIFT),
                (KeyCode::Char('F'), KeyModifiers::NONE),
            ]
        );
        let e = over(&[("explode", "x")]).expect_err("unknown");
        assert!(
            e.contains("unknown action `explode`") && e.contains("reelect"),
            "{e}"
        );
        let e = over(&[("quit", "ctrl-")]).expect_err("bad key");
        assert!(
            e.contains("[keys] quit") && e.contains("is not a key"),
            "{e}"
        );
    }
}
