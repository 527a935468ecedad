//! The commands that only list: `contexts` (the config's), `presets` (the SQL presets),
//! `config example` (the example config, every key explained) and `completions` (a shell's
//! completion script).

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::Cli;
use crate::config::Config;
use crate::output::pipe;

pub(super) fn listing(config: &Config) -> Result<ExitCode> {
    pipe::print(crate::config::context::listing(config).as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

pub(super) fn presets() -> Result<ExitCode> {
    pipe::print(crate::presets::listing().as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// The example config the repository ships, built in: `cargo install` installs no file.
pub(super) fn config_example() -> Result<ExitCode> {
    pipe::print(include_str!("../../config.example.toml").as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// Made whole first: clap_complete panics on a write that fails, a closed pipe's included.
pub(super) fn completions(shell: clap_complete::Shell) -> Result<ExitCode> {
    let mut cmd = <Cli as clap::CommandFactory>::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "electop", &mut script);
    pipe::print(&script)?;
    Ok(ExitCode::SUCCESS)
}
