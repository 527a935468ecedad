//! The commands that only list: `contexts` (the config's), `presets` (the SQL presets) and
//! `completions` (a shell's completion script).

use std::process::ExitCode;

use crate::cli::Cli;
use crate::config::Config;

pub(super) fn listing(config: &Config) -> ExitCode {
    print!("{}", crate::config::context::listing(config));
    ExitCode::SUCCESS
}

pub(super) fn presets() -> ExitCode {
    print!("{}", crate::presets::listing());
    ExitCode::SUCCESS
}

pub(super) fn completions(shell: clap_complete::Shell) -> ExitCode {
    let mut cmd = <Cli as clap::CommandFactory>::command();
    clap_complete::generate(shell, &mut cmd, "electop", &mut std::io::stdout());
    ExitCode::SUCCESS
}
