//! `:ctx NAME` on the dashboard: the current sources are shut down (their admin actions
//! already finished: the loop waits for them before it hands over), the context's sources
//! are started, and the state starts over for them, keeping the operator's setup.

use std::time::{Instant, SystemTime};

use super::Sources;
use crate::app::{App, Flash, contexts};
use crate::backend::BackendOptions;
use crate::config::SourceConfig;

/// The contexts the dashboard may switch between, and how to get one's sources (the config
/// file's, with the command line's `--read-only` and TLS flags applied as at start).
pub struct ContextSwitch<'a> {
    pub current: Option<String>,
    pub names: Vec<String>,
    pub sources_of: &'a dyn Fn(&str) -> Result<Vec<SourceConfig>, String>,
    pub opts: BackendOptions,
}

impl ContextSwitch<'_> {
    /// What the state knows of the contexts.
    pub fn state(&self) -> contexts::Contexts {
        contexts::Contexts {
            current: self.current.clone(),
            names: self.names.clone(),
            switch_to: None,
        }
    }
}

/// Switches `sources` to the context `app` asked for and starts the state over for them;
/// when the context's sources cannot be had, the old ones stay and the state says why.
pub(crate) async fn switch(app: &mut App, sources: &mut Sources, ctx: Option<&ContextSwitch<'_>>) {
    let Some(name) = app.contexts.switch_to.clone() else {
        return;
    };
    let configs = match ctx {
        Some(c) => (c.sources_of)(&name),
        None => Err("no contexts configured".to_string()),
    };
    let spawned = configs.and_then(|configs| {
        let opts = ctx.map(|c| c.opts.clone()).unwrap_or_default();
        Sources::spawn(&configs, &opts).map_err(|e| format!("{e:#}"))
    });
    let new = match spawned {
        Ok(new) => new,
        Err(e) => {
            app.contexts.switch_to = None;
            app.say(Flash::error(&format!(
                "cannot switch to context {name}: {e}"
            )));
            return;
        }
    };
    tracing::info!(context = %name, "switching context");
    std::mem::replace(sources, new).shutdown().await;
    let fresh = App::new(sources.infos.clone(), Instant::now(), SystemTime::now());
    let old = std::mem::replace(app, fresh);
    contexts::carry_over(old, app);
}
