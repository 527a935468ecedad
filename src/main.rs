use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use clap::Parser;

use electop::admin::ActionKind;
use electop::admin_cli;
use electop::app::Prefs;
use electop::backend::BackendOptions;
use electop::cli::{Cli, Command, NodeArgs, OutputFormat, SchemeArg};
use electop::config::{Config, ConfigError, Selected, SourceConfig};
use electop::context_switch::ContextSwitch;
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
    // These need no config file, so a broken one does not stand in their way.
    match &cli.command {
        Some(Command::Completions { shell }) => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(*shell, &mut cmd, "electop", &mut std::io::stdout());
            return Ok(ExitCode::SUCCESS);
        }
        Some(Command::Presets) => {
            print!("{}", electop::presets::listing());
            return Ok(ExitCode::SUCCESS);
        }
        _ => {}
    }
    let config = Config::load(cli.config.as_deref())?;
    let _log = electop::logging::init(cli.log_file.as_deref())?;
    let tick = Duration::from_millis(config.ui.tick_ms.max(16));
    let prefs = prefs(&config)?;
    electop::ui::theme::set_color(electop::ui::theme::color_from_env());
    match &cli.command {
        Some(Command::Demo(args)) => {
            // The demo makes its own source; --sql/--etcd/--scheme only choose the store.
            if let Some(ctx) = &cli.sources.context {
                return Err(Usage(format!(
                    "electop demo makes its own store and reads no config context (--context {ctx}): choose the store with --store, --etcd or --sql"
                ))
                .into());
            }
            let rt = tokio::runtime::Runtime::new()?;
            let timing = (tick, config.ui.min_frame());
            let options = demo_options(args, &cli.sources);
            let demo = electop::demo::run(&options, timing, cli.debug_panic, prefs);
            rt.block_on(demo)?;
            return Ok(ExitCode::SUCCESS);
        }
        Some(Command::Contexts) => {
            print!("{}", electop::config::context::listing(&config));
            return Ok(ExitCode::SUCCESS);
        }
        _ => {}
    }
    let selected = cli.sources.select(&config).map_err(Usage)?;
    let opts = BackendOptions {
        history_limit: cli.history_limit.unwrap_or(config.history.limit),
        retention: config.history.retention,
        ..BackendOptions::default()
    };
    let rt = tokio::runtime::Runtime::new()?;
    let done = rt.block_on(on_sources(cli, &config, selected, opts, (tick, prefs)));
    // Every source was stopped; a snapshot still being derived on a blocking thread (a
    // quit during the first load of 100,000 elections) is not waited for.
    rt.shutdown_background();
    done
}

/// The demo's options from its flags.
fn demo_options(
    args: &electop::cli::DemoArgs,
    src: &electop::cli::SourceArgs,
) -> electop::demo::Options {
    use electop::cli::DemoStore;
    use electop::demo::{Options, Store, Tls};
    Options {
        store: match args.store {
            DemoStore::Sqlite => Store::Sqlite,
            DemoStore::Etcd => Store::Etcd,
            DemoStore::Postgres => Store::Postgres,
            DemoStore::Mysql => Store::Mysql,
        },
        spawn_etcd: args.spawn_etcd,
        nodes: args.nodes,
        ttl: args.ttl,
        renew: args.renew,
        retry: args.retry,
        scheme: src.scheme.map(electop::model::Scheme::from),
        etcd: src.etcd.first().cloned(),
        sql: src.sql.first().cloned(),
        table: src.table.clone(),
        password_env: src.password_env.clone(),
        password_file: src.password_file.clone(),
        tls: Tls {
            cacert: src.cacert.clone(),
            cert: src.cert.clone(),
            key: src.key.clone(),
            insecure_skip_tls_verify: src.insecure_skip_tls_verify,
        },
        read_only: src.read_only,
    }
}

/// The dashboard's settings from the config. The config checked names and keys; a key bound
/// twice only the map can tell.
fn prefs(config: &Config) -> Result<Prefs> {
    let keys = electop::app::keys::KeyMap::with_overrides(&config.keys).map_err(|e| {
        let path = config.path.as_deref().unwrap_or(std::path::Path::new("?"));
        Usage(format!("config file {}: {e}", path.display()))
    })?;
    Ok(Prefs {
        keys,
        flap_per_min: Some(config.ui.flap_per_min),
    })
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
    let sources = selected.sources;
    let limit = opts.history_limit;
    match cli.command {
        None => {
            supervise::dashboard_ahead();
            let s = Sources::spawn(&sources, &opts)?;
            let min_frame = config.ui.min_frame();
            let sources_of = |name: &str| cli.sources.context_sources(config, name);
            // Switching makes sense only for the config's sources, not the flags'.
            let contexts = selected.context.map(|current| ContextSwitch {
                current: Some(current),
                names: config.contexts.iter().map(|c| c.name.clone()).collect(),
                sources_of: &sources_of,
                opts: opts.clone(),
            });
            runtime::run_tui(s, tick, min_frame, cli.debug_panic, prefs, contexts).await?;
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
            let format = if json { OutputFormat::Json } else { output };
            status(&sources, &opts, timeout, format).await
        }
        Some(Command::ForceLeader {
            election,
            id,
            admin,
        }) => {
            let kind = ActionKind::ForceLeader { target: id };
            Ok(admin_cli::run(&sources, &election, kind, &admin, limit).await)
        }
        Some(Command::Reelect { election, admin }) => {
            Ok(admin_cli::run(&sources, &election, ActionKind::Reelect, &admin, limit).await)
        }
        Some(Command::Resign { election, admin }) => {
            Ok(admin_cli::run(&sources, &election, ActionKind::Resign, &admin, limit).await)
        }
        Some(Command::Node(args)) => node(cli.sources.scheme, &args, sources).await,
        Some(Command::Watch { json }) => {
            opts.all_leases = true;
            let s = Sources::spawn(&sources, &opts)?;
            runtime::run_watch(s, json).await?;
            Ok(ExitCode::SUCCESS)
        }
        Some(
            Command::Demo(_) | Command::Completions { .. } | Command::Presets | Command::Contexts,
        ) => unreachable!("handled before the sources are chosen"),
    }
}

/// `electop status`: one snapshot of every source, printed; exit 1 if a store did not answer.
async fn status(
    sources: &[SourceConfig],
    opts: &BackendOptions,
    timeout: Duration,
    format: OutputFormat,
) -> Result<ExitCode> {
    let s = Sources::spawn(sources, opts)?;
    match runtime::collect_status(s, timeout).await {
        Ok(app) => {
            // An empty or unsure prefix still answers (exit 0), but says why.
            runtime::print_notices(&app);
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

/// `electop node`: one participant, in one election in one store.
async fn node(
    scheme: Option<SchemeArg>,
    args: &NodeArgs,
    sources: Vec<SourceConfig>,
) -> Result<ExitCode> {
    let [source] = <[_; 1]>::try_from(sources).map_err(|s: Vec<_>| {
        Usage(format!(
            "electop node takes part in one election in one store; {} sources were given",
            s.len()
        ))
    })?;
    // A preset (or the config's source) already says which scheme its store uses.
    let scheme = scheme.map(electop::model::Scheme::from).or(source.scheme()).ok_or_else(|| {
        Usage("electop node needs --scheme (etcd-election, etcd-lease-key, sql-lease or sql-heartbeat) or a SQL --preset".into())
    })?;
    if scheme == electop::model::Scheme::Patroni {
        return Err(Usage(
            "Patroni's members are Patroni itself: electop node does not join them (electop --preset patroni watches them)".into(),
        )
        .into());
    }
    electop::node::run(args, scheme, source).await?;
    Ok(ExitCode::SUCCESS)
}
