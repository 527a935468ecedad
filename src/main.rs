use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use clap::Parser;

use electop::admin::ActionKind;
use electop::backend::BackendOptions;
use electop::cli::{Cli, Command};
use electop::config::{Config, ConfigError};
use electop::runtime::{self, Sources};
use electop::supervise;

/// A mistake in the flags or the config file, found before any store is touched: exit 2,
/// as clap does for the mistakes it finds itself.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Usage(String);

const EXIT_USAGE: u8 = 2;

fn main() -> ExitCode {
    supervise::install_panic_hook();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            if e.use_stderr()
                && let Some(action) = admin_command(std::env::args())
            {
                electop::admin_cli::audit_usage(&action, None, &usage_summary(&e));
            }
            e.exit()
        }
    };
    let code = match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("electop: {e:#}");
            if e.is::<Usage>() || e.is::<ConfigError>() {
                ExitCode::from(EXIT_USAGE)
            } else {
                ExitCode::FAILURE
            }
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

/// The admin subcommand on a command line clap could not parse, if any.
fn admin_command(args: impl Iterator<Item = String>) -> Option<String> {
    args.skip(1)
        .find(|a| matches!(a.as_str(), "force-leader" | "reelect" | "resign"))
}

/// What clap found wrong, without the values typed (a URL may hold a password).
fn usage_summary(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue};
    let what = e.kind().as_str().unwrap_or("invalid command line");
    match e.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(arg)) => format!("{what}: {arg}"),
        Some(ContextValue::Strings(args)) => format!("{what}: {}", args.join(", ")),
        _ => what.to_string(),
    }
}

fn run(cli: Cli) -> Result<ExitCode> {
    if let Some(Command::Completions { shell }) = cli.command {
        let mut cmd = <Cli as clap::CommandFactory>::command();
        clap_complete::generate(shell, &mut cmd, "electop", &mut std::io::stdout());
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(Command::Presets) = cli.command {
        print!("{}", electop::presets::listing());
        return Ok(ExitCode::SUCCESS);
    }
    let config = Config::load(cli.config.as_deref())?;
    let _log = electop::logging::init(cli.log_file.as_deref())?;
    let tick = Duration::from_millis(config.ui.tick_ms.max(16));
    // Validated when the config was loaded.
    let keys =
        electop::app::keys::KeyMap::with_overrides(&config.keys).map_err(anyhow::Error::msg)?;
    let prefs = electop::app::Prefs {
        keys,
        flap_per_min: Some(config.ui.flap_per_min),
    };
    electop::ui::theme::set_color(electop::ui::theme::color_from_env());
    if let Some(Command::Demo(args)) = &cli.command {
        // The demo makes its own source; --sql/--etcd/--scheme only choose the store.
        let rt = tokio::runtime::Runtime::new()?;
        rt.block_on(electop::demo::run(args, &cli.sources, tick, prefs))?;
        return Ok(ExitCode::SUCCESS);
    }
    let sources = cli.sources.resolve(&config).map_err(Usage)?;
    let mut opts = BackendOptions {
        history_limit: cli.history_limit.unwrap_or(config.history.limit),
        retention: config.history.retention,
        ..BackendOptions::default()
    };
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(async move {
        match cli.command {
            None => {
                let s = Sources::spawn(&sources, &opts)?;
                let min_frame = config.ui.min_frame();
                runtime::run_tui(s, tick, min_frame, cli.debug_panic, prefs).await?;
                Ok(ExitCode::SUCCESS)
            }
            Some(Command::Status {
                json,
                output,
                history,
                timeout,
            }) => {
                opts.all_leases = true;
                opts.replay_history = history || cli.history_limit.is_some();
                opts.request_timeout = timeout;
                opts.one_shot = true;
                let s = Sources::spawn(&sources, &opts)?;
                match runtime::collect_status(s, timeout).await {
                    Ok(app) => {
                        // An empty or unsure prefix still answers (exit 0), but says why.
                        runtime::print_notices(&app);
                        let format = if json {
                            electop::cli::OutputFormat::Json
                        } else {
                            output
                        };
                        runtime::print_status(&app, format)?;
                        // The process ends now: freeing 100,000 elections would only delay it.
                        std::mem::forget(app);
                        Ok(ExitCode::SUCCESS)
                    }
                    Err(why) => {
                        eprintln!("electop: {why}");
                        Ok(ExitCode::FAILURE)
                    }
                }
            }
            Some(Command::ForceLeader {
                election,
                id,
                admin,
            }) => {
                let kind = ActionKind::ForceLeader { target: id };
                Ok(
                    electop::admin_cli::run(&sources, &election, kind, &admin, opts.history_limit)
                        .await,
                )
            }
            Some(Command::Reelect { election, admin }) => Ok(electop::admin_cli::run(
                &sources,
                &election,
                ActionKind::Reelect,
                &admin,
                opts.history_limit,
            )
            .await),
            Some(Command::Resign { election, admin }) => Ok(electop::admin_cli::run(
                &sources,
                &election,
                ActionKind::Resign,
                &admin,
                opts.history_limit,
            )
            .await),
            Some(Command::Demo(_) | Command::Completions { .. } | Command::Presets) => {
                unreachable!("handled above")
            }
            Some(Command::Node(args)) => {
                let scheme = cli
                    .sources
                    .scheme
                    .map(electop::model::Scheme::from)
                    .ok_or_else(|| Usage("electop node needs --scheme (etcd-election, etcd-lease-key, sql-lease or sql-heartbeat)".into()))?;
                let [source] = <[_; 1]>::try_from(sources)
                    .map_err(|s: Vec<_>| Usage(format!("electop node takes part in one election in one store; {} sources were given", s.len())))?;
                electop::node::run(&args, scheme, source).await?;
                Ok(ExitCode::SUCCESS)
            }
            Some(Command::Watch { json }) => {
                opts.all_leases = true;
                let s = Sources::spawn(&sources, &opts)?;
                runtime::run_watch(s, json).await?;
                Ok(ExitCode::SUCCESS)
            }
        }
    })
}
