//! `electop` with no subcommand: the dashboard on the selected sources, with `:ctx` to the
//! config's other contexts.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;

use crate::app::Prefs;
use crate::backend::BackendOptions;
use crate::cli::Cli;
use crate::config::{Config, Selected};
use crate::runtime::{ContextSwitch, Sources};

pub(super) async fn run(
    cli: &Cli,
    config: &Config,
    selected: Selected,
    opts: BackendOptions,
    (tick, prefs): (Duration, Prefs),
) -> Result<ExitCode> {
    crate::supervise::dashboard_ahead();
    let s = Sources::spawn(&selected.sources, &opts)?;
    let min_frame = config.ui.min_frame();
    let sources_of = |name: &str| cli.sources.context_sources(config, name);
    // Switching makes sense only for the config's sources, not the flags'.
    let contexts = selected.context.map(|current| ContextSwitch {
        current: Some(current),
        names: config.contexts.iter().map(|c| c.name.clone()).collect(),
        sources_of: &sources_of,
        opts: opts.clone(),
    });
    crate::runtime::run_tui(s, tick, min_frame, cli.debug_panic, prefs, contexts).await?;
    Ok(ExitCode::SUCCESS)
}
