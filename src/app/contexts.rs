//! Config contexts on the dashboard: which one is shown, `:ctx` to list them or ask for
//! another. The switch itself (sources stopped, the new ones started) is the runtime's: the
//! state only records the request, then [`switched`] starts the state over for the new
//! sources, keeping what the operator set up (keys, sort, filter, screen).

use super::{App, Flash};

/// The config's contexts as the dashboard knows them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Contexts {
    /// The context shown; `None` without contexts (or with sources from flags).
    pub current: Option<String>,
    pub names: Vec<String>,
    /// Asked for with `:ctx NAME`, for the runtime to carry out.
    pub switch_to: Option<String>,
}

/// `:ctx NAME`: a known context other than the current one is asked for; anything else
/// is said on the status line.
pub fn request(app: &mut App, name: &str) {
    let c = &app.contexts;
    if c.names.is_empty() {
        app.say(Flash::error(&format!(
            "no contexts configured: cannot switch to `{name}` (define [[context]] in the config file)"
        )));
    } else if !c.names.iter().any(|n| n == name) {
        let text = format!(
            "unknown context `{name}`; the contexts are {}",
            c.names.join(", ")
        );
        app.say(Flash::error(&text));
    } else if c.current.as_deref() == Some(name) {
        app.say(Flash::info(&format!("already on context {name}")));
    } else {
        app.contexts.switch_to = Some(name.to_string());
        app.say(Flash::info(&format!("switching to context {name}…")));
    }
}

/// `:ctx` alone: the contexts, the current one marked.
pub fn list(app: &mut App) {
    let c = &app.contexts;
    if c.names.is_empty() {
        app.say(Flash::error(
            "no contexts configured: define [[context]] in the config file",
        ));
        return;
    }
    let names: Vec<String> = c
        .names
        .iter()
        .map(|n| match c.current.as_deref() == Some(n) {
            true => format!("*{n}"),
            false => n.clone(),
        })
        .collect();
    let text = format!("contexts: {} (:ctx NAME switches)", names.join(" "));
    app.say(Flash::info(&text));
}

impl App {
    /// What may follow the command typed so far: context names after `ctx`, else the
    /// selected election's candidates (for `force-leader`).
    pub fn completion_args(&self, text: &str) -> Vec<String> {
        match text.split_whitespace().next() {
            Some("ctx" | "context") => self.contexts.names.clone(),
            _ => self.candidate_ids(),
        }
    }
}

/// Into the fresh state for a new context's sources, what the operator set up in the old
/// one: per-source state starts over, and the switch is no longer pending.
pub fn carry_over(old: App, app: &mut App) {
    app.keys = old.keys;
    app.model.flap_per_min = old.model.flap_per_min;
    app.sort = old.sort;
    app.filter = old.filter;
    app.screen = old.screen;
    app.size = old.size;
    app.model.retention = old.model.retention;
    app.around.quit_asks = old.around.quit_asks;
    app.around.extra_keys = old.around.extra_keys;
    app.contexts = Contexts {
        current: old.contexts.switch_to.or(old.contexts.current),
        names: old.contexts.names,
        switch_to: None,
    };
    let text = format!("context {}", app.contexts.current.as_deref().unwrap_or("?"));
    app.say(Flash::info(&text));
}

#[cfg(test)]
mod tests {
    use std::time::{Instant, SystemTime};

    use super::*;
    use crate::app::prompt::{self, BarCommand};
    use crate::app::{Msg, update};

    fn app() -> App {
        let mut app = App::new(Vec::new(), Instant::now(), SystemTime::now());
        app.contexts = Contexts {
            current: Some("prod".into()),
            names: vec!["prod".into(), "staging".into()],
            switch_to: None,
        };
        app
    }

    fn command(app: &mut App, text: &str) {
        update(app, Msg::Action(crate::app::Action::StartCommand));
        for c in text.chars() {
            update(app, Msg::Action(crate::app::Action::Type(c)));
        }
        update(app, Msg::Action(crate::app::Action::Accept));
    }

    #[test]
    fn ctx_asks_for_a_known_context_only() {
        let mut a = app();
        command(&mut a, "ctx nope");
        assert_eq!(a.contexts.switch_to, None);
        let flash = a.flash.clone().expect("said");
        assert!(
            flash.error && flash.text.contains("prod, staging"),
            "{flash:?}"
        );
        command(&mut a, "ctx prod");
        assert_eq!(a.contexts.switch_to, None, "already there");
        command(&mut a, "ctx staging");
        assert_eq!(a.contexts.switch_to.as_deref(), Some("staging"));
    }

    #[test]
    fn ctx_alone_lists_them_with_the_current_marked() {
        let mut a = app();
        command(&mut a, "ctx");
        let flash = a.flash.clone().expect("said");
        assert!(
            !flash.error && flash.text.contains("*prod staging"),
            "{flash:?}"
        );
        let mut none = App::new(Vec::new(), Instant::now(), SystemTime::now());
        command(&mut none, "ctx");
        assert!(
            none.flash
                .expect("said")
                .text
                .contains("no contexts configured")
        );
        assert_eq!(prompt::parse("ctx"), Ok(BarCommand::Context(None)));
    }

    #[test]
    fn context_names_complete_after_ctx() {
        let a = app();
        let args = a.completion_args("ctx s");
        assert_eq!(prompt::complete("ctx s", &args), "ctx staging");
    }

    #[test]
    fn a_switch_keeps_the_setup_and_starts_the_sources_over() {
        let mut a = app();
        command(&mut a, "sort name");
        command(&mut a, "ctx staging");
        let sort = a.sort;
        let mut b = App::new(Vec::new(), Instant::now(), SystemTime::now());
        carry_over(a, &mut b);
        assert_eq!(b.contexts.current.as_deref(), Some("staging"));
        assert_eq!(b.contexts.switch_to, None);
        assert_eq!(b.sort, sort);
        assert!(b.model.elections.is_empty());
    }
}
