//! The binary: the panic hook, the command line, and the exit code. `electop::commands`
//! does the rest.

use std::process::ExitCode;

use clap::Parser;

use electop::cli::Cli;
use electop::{commands, supervise};

/// mimalloc rather than glibc's allocator: long-running commands give back what a source's
/// first read freed, with no tuning of ours (docs/PERFORMANCE.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    supervise::install_panic_hook();
    electop::crypto::install_default_provider();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            commands::refused_command_line(&e, std::env::args());
            let args: Vec<String> = std::env::args().collect();
            electop::cli::habits::hint(e, &args).exit()
        }
    };
    let code = match commands::run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("electop: {e:#}");
            commands::exit_code(&e)
        }
    };
    // A panic anywhere (a task's too, which tokio caught) is a bug: say so, and exit
    // non-zero whatever else went right.
    if supervise::panicked() {
        for text in supervise::take_deferred() {
            eprintln!("electop: {text}: a bug, please report it");
        }
        return ExitCode::from(supervise::PANIC_EXIT);
    }
    code
}
