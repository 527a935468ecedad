//! One file per subcommand, each thin: resolve the config, start the sources, read the
//! read model, print or serve. `run` picks the file; `main` only parses and exits.
//!
//! | subcommand | file |
//! |---|---|
//! | (none): the dashboard | [`dashboard`] |
//! | `status` | [`status`] |
//! | `history` | [`history`] |
//! | `watch` | [`watch`] |
//! | `serve` | [`serve`] |
//! | `force-leader`, `reelect`, `resign` | [`admin`] |
//! | `node` | [`node`] |
//! | `demo` | [`demo`] |
//! | `contexts`, `presets`, `config example`, `completions` | [`contexts`] |

mod admin;
mod contexts;
mod dashboard;
mod demo;
mod history;
mod node;
mod serve;
mod status;
mod watch;

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;

use crate::app::Prefs;
use crate::backend::BackendOptions;
use crate::backend::engine::journal::{History, Keep};
use crate::cli::{Cli, Command, OutputFormat};
use crate::config::{Config, ConfigError, Selected};

pub use admin::{EXIT_CHANGED, EXIT_DONE, EXIT_STORE};

/// Flags or a config file that cannot be used, found before any store is touched: exit 2,
/// as clap does for the mistakes it finds itself.
pub const EXIT_USAGE: u8 = 2;

pub(crate) use crate::config::Usage;

/// The exit code an error ends the process with: 2 for a usage or config mistake, else 1.
pub fn exit_code(e: &anyhow::Error) -> ExitCode {
    if e.is::<Usage>() || e.is::<ConfigError>() {
        ExitCode::from(EXIT_USAGE)
    } else {
        ExitCode::FAILURE
    }
}

/// A command line clap refused: an admin verb's is audited (its exit is clap's own).
pub fn refused_command_line(e: &clap::Error, args: impl Iterator<Item = String>) {
    if e.use_stderr()
        && let Some(action) = admin_command(args)
    {
        admin::audit_usage(&action, None, &usage_summary(e));
    }
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

/// Runs the command `cli` asks for.
pub fn run(cli: Cli) -> Result<ExitCode> {
    // These need no config file, so a broken one does not stand in their way.
    match &cli.command {
        Some(Command::Completions { shell }) => return contexts::completions(*shell),
        Some(Command::Presets) => return contexts::presets(),
        Some(Command::Config { .. }) => return contexts::config_example(),
        _ => {}
    }
    let config = Config::load(cli.config.as_deref())?;
    // `serve` runs as a service: its log is stderr's (the journal's, a container's).
    let _log = match &cli.command {
        Some(Command::Serve(args)) => {
            crate::logging::init_stderr(args.log_format == crate::cli::LogFormat::Json)
        }
        _ => crate::logging::init(cli.log_file.as_deref())?,
    };
    let tick = Duration::from_millis(config.ui.tick_ms.max(16));
    let prefs = prefs(&config)?;
    crate::ui::theme::set_color(crate::ui::theme::color_from_env());
    match &cli.command {
        Some(Command::Demo(args)) => return demo::run(&cli, args, &config, tick, prefs),
        Some(Command::Contexts) => return contexts::listing(&config),
        _ => {}
    }
    let rt = runtime(&cli.command)?;
    let mut cli = cli;
    let flags = cli.sources.flags();
    // Before any catalog is read: a mistake in the flags is not a database that is down.
    flags.check(&config).map_err(Usage)?;
    if flags.sql_to_find() {
        // `--sql URL` alone: the tables electop knows, from each database's catalog.
        let (found, unreached) = rt
            .block_on(crate::backend::sql::find_tables(&flags))
            .map_err(anyhow::Error::msg)?;
        (cli.sources.found, cli.sources.unreached) = (found, unreached);
    }
    let selected = cli.sources.select(&config).map_err(Usage)?;
    for s in &selected.sources {
        s.check_secrets().map_err(Usage)?;
    }
    // Every source's history keeps the config's retention and size bound.
    let history = History::default_at(Keep {
        retention: config.history.journal_retention,
        max_bytes: config.history.journal_max_size,
    });
    let opts = BackendOptions {
        history_limit: cli.history_limit.unwrap_or(config.history.limit),
        retention: config.history.retention,
        history: history.clone(),
        ..BackendOptions::default()
    };
    let done = rt.block_on(on_sources(cli, &config, selected, opts, (tick, prefs)));
    // Every source was stopped; a snapshot still being derived on a blocking thread (a
    // quit during the first load of 100,000 elections) is not waited for.
    rt.shutdown_background();
    // What the stopped sources queued last (their stop).
    history.flush();
    done
}

/// The dashboard's settings from the config. The config checked names and keys; a key bound
/// twice only the map can tell.
fn prefs(config: &Config) -> Result<Prefs> {
    let keys = crate::app::keys::KeyMap::with_overrides(&config.keys).map_err(|e| {
        let path = config.path.as_deref().unwrap_or(std::path::Path::new("?"));
        Usage(format!("config file {}: {e}", path.display()))
    })?;
    Ok(Prefs {
        keys,
        flap_per_min: Some(config.ui.flap_per_min),
    })
}

/// `opts` for a command that reads every source once and ends (`status`, `history`).
fn one_shot(mut opts: BackendOptions, timeout: Duration, replay: bool) -> BackendOptions {
    opts.all_leases = true;
    opts.replay_history = replay;
    opts.request_timeout = timeout;
    opts.one_shot = true;
    opts
}

/// Whether any source flag (or a config file) was given: none reads the local etcd.
fn sources_given(cli: &Cli) -> bool {
    cli.sources.names_a_source() || cli.config.is_some()
}

/// The commands that read the selected sources: the dashboard, status, watch, the admin
/// actions and a node.
async fn on_sources(
    cli: Cli,
    config: &Config,
    selected: Selected,
    mut opts: BackendOptions,
    (tick, prefs): (Duration, Prefs),
) -> Result<ExitCode> {
    let limit = opts.history_limit;
    let given = sources_given(&cli);
    match cli.command {
        None => dashboard::run(&cli, config, selected, opts, (tick, prefs)).await,
        Some(Command::Status {
            json,
            output,
            history,
            timeout,
        }) => {
            let opts = one_shot(opts, timeout, history || cli.history_limit.is_some());
            let format = if json { OutputFormat::Json } else { output };
            status::status(&selected.sources, &opts, timeout, format).await
        }
        Some(Command::History {
            election,
            since,
            until,
            json,
            timeout,
        }) => {
            let mut opts = one_shot(opts, timeout, true);
            // As much history as the journals keep, whatever the dashboard's own bound.
            opts.history_limit = opts
                .history_limit
                .max(crate::backend::engine::journal::KEPT_AT_LEAST);
            // One election asked for: its journal lines alone are read back.
            opts.only = election.clone();
            let ask = history::Ask {
                election,
                since,
                until,
                json,
                timeout,
            };
            history::run(&selected.sources, &opts, ask).await
        }
        Some(
            c @ (Command::ForceLeader { .. } | Command::Reelect { .. } | Command::Resign { .. }),
        ) => Ok(admin::command(c, &selected.sources, limit).await),
        Some(Command::Node(args)) => {
            node::node(cli.sources.scheme, &args, selected.sources, given).await
        }
        Some(Command::Serve(args)) => {
            // SIGHUP: the config file read again, the sources chosen as at the start.
            let (path, flags) = (cli.config.clone(), cli.sources);
            let mut opts = opts;
            if cli.history_limit.is_none() {
                opts.history_limit = opts.history_limit.min(crate::serve::HISTORY);
            }
            let reload: crate::serve::Reload = Box::new(move || {
                let config = Config::load(path.as_deref()).map_err(|e| e.to_string())?;
                Ok(flags.select(&config)?.sources)
            });
            serve::run(args, &config.serve, selected, opts, reload).await
        }
        Some(Command::Watch { json, changes_only }) => {
            // watch prints changes as they come and never shows a history: keep only what
            // the read model's alarms use, as serve does, so a long watch does not grow, and
            // replay none of etcd's revisions (a minute of etcd's CPU at 338,000: history.md).
            if cli.history_limit.is_none() {
                opts.history_limit = opts.history_limit.min(crate::serve::HISTORY);
                opts.replay_history = false;
            }
            let how = watch::How { json, changes_only };
            watch::run(&selected.sources, opts, how).await
        }
        Some(
            Command::Demo(_)
            | Command::Completions { .. }
            | Command::Presets
            | Command::Contexts
            | Command::Config { .. },
        ) => unreachable!("handled before the sources are chosen"),
    }
}

/// The runtime a command runs on. Watching (the dashboard, `watch`, `status`, `history`) is
/// one chain of work per change: the store's answer, the read model, then a frame or a line.
/// On a runtime of one thread per core each link woke another thread (a wake-up write and a
/// context switch per change), which cost more than the work itself; on one thread the next
/// link runs at once. What would hold that thread long runs on blocking threads: a
/// journal's rewrite, the first snapshot of a huge etcd store (a journal read back at the
/// start only delays the first frame). `serve` answers many clients at once, and
/// participants and admin actions keep a thread per core so that nothing delays a lease.
fn runtime(command: &Option<Command>) -> std::io::Result<tokio::runtime::Runtime> {
    match command {
        None | Some(Command::Watch { .. } | Command::Status { .. } | Command::History { .. }) => {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
        }
        _ => tokio::runtime::Runtime::new(),
    }
}
