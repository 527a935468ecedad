//! `electop demo`: N `electop node` children electing a leader, shown in split panes beside
//! the dashboard, with keys to kill, pause and restart them. With no options it runs on an
//! embedded SQLite file in a temporary directory and needs no server.

mod ext;
#[cfg(test)]
mod screen_tests;
mod state;
mod supervisor;
#[cfg(test)]
mod timeline_tests;
mod view;
mod zookeeper;

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind};
use tokio::sync::mpsc;

pub(crate) use state::{Demo, DemoAction};
use supervisor::Supervisor;
pub(crate) use view::view;

use crate::backend::BackendOptions;
pub(crate) use crate::backend::demo::Tls;
use crate::backend::demo::{Given, Offer, Setup, Spawned as SpawnedServer};
use crate::config::{DbUrl, EtcdSource, SourceConfig, SqlColumns, SqlSource, SqlSpec};
use crate::model::Scheme;
use crate::runtime::Sources;

/// The election the nodes take part in; "Leader election using MySQL" (orchestrator) keys
/// its row by a number, the anchor.
fn election_for(source: &SourceConfig) -> &'static str {
    match source {
        SourceConfig::Sql(q) if q.scheme == Scheme::SqlHeartbeat => "1",
        // A PostgreSQL advisory lock is keyed by a number, which the dashboard shows.
        SourceConfig::Sql(q) if q.scheme == Scheme::PgAdvisory => "42",
        SourceConfig::Sql(q) if q.scheme == Scheme::MysqlLock => "electop-demo",
        _ => "demo",
    }
}
/// The longest the nodes wait for the dashboard's first read of the store.
const NODES_START_WITHIN: Duration = Duration::from_secs(3);
const ETCD_PREFIX: &str = "/electop-demo/";
const ETCD_REGISTRY: &str = "/electop-demo-registry/";

/// The demo's keys, for the help (the dashboard's come from its key table).
pub(crate) const KEYS: &[(&str, &str)] = &[
    ("1-9", "pick a node (or click it)"),
    ("x", "kill it (SIGKILL)"),
    ("p", "pause / resume (SIGSTOP)"),
    ("r", "restart it"),
];

/// Where the demo's election lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Store {
    /// An embedded SQLite file in a temporary directory: needs no server.
    Sqlite,
    Postgres,
    Mysql,
    Etcd,
    Zookeeper,
    /// A store's own demo, from its folder (`backend::demo`).
    Own(Offer),
}

/// What the demo runs: the store, the nodes, and how fast they renew.
#[derive(Clone, Debug)]
pub(crate) struct Options {
    pub store: Store,
    /// Start a throwaway local etcd (with [`Store::Etcd`]).
    pub spawn_etcd: bool,
    /// Start a throwaway local ZooKeeper (with [`Store::Zookeeper`]).
    pub spawn_zookeeper: bool,
    /// Start a throwaway server of a store's own demo (with [`Store::Own`]).
    pub spawn_own: bool,
    /// What the flags give a store's own demo (with [`Store::Own`]).
    pub own: Given,
    pub nodes: usize,
    /// The nodes' lease / term / timeout, renew and retry intervals (default: the scheme's).
    pub ttl: Option<Duration>,
    pub renew: Option<Duration>,
    pub retry: Option<Duration>,
    pub scheme: Option<Scheme>,
    /// The etcd endpoint or SQL URL of a store the demo does not start.
    pub etcd: Option<String>,
    pub sql: Option<String>,
    /// The ZooKeeper connect string of one the demo does not start.
    pub zk: Option<String>,
    pub table: Option<String>,
    pub password_env: Option<String>,
    pub password_file: Option<std::path::PathBuf>,
    pub tls: Tls,
    /// `--zk-auth` and the `--zk-` TLS files, for a ZooKeeper the demo does not start.
    pub zk_auth: Option<String>,
    pub zk_tls: Tls,
    pub read_only: bool,
}

/// The demo's own keys, before the dashboard's (only when no dialog is open).
pub(crate) fn demo_action(key: KeyEvent) -> Option<DemoAction> {
    if key.kind == KeyEventKind::Release {
        return None;
    }
    match key.code {
        KeyCode::Char(c @ '1'..='9') => Some(DemoAction::Pick(c as usize - '1' as usize)),
        KeyCode::Char('x') => Some(DemoAction::Kill),
        KeyCode::Char('p') => Some(DemoAction::PauseResume),
        KeyCode::Char('r') => Some(DemoAction::Restart),
        _ => None,
    }
}

/// A local etcd the demo started, stopped with it.
struct SpawnedEtcd {
    child: tokio::process::Child,
    endpoint: String,
}

async fn spawn_etcd(dir: &std::path::Path) -> Result<SpawnedEtcd> {
    let free = || {
        std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
    };
    let (client, peer) = (free()?, free()?);
    let child = tokio::process::Command::new("etcd")
        .args([
            "--name",
            "demo",
            "--data-dir",
            &dir.join("etcd").display().to_string(),
            "--listen-client-urls",
            &format!("http://127.0.0.1:{client}"),
            "--advertise-client-urls",
            &format!("http://127.0.0.1:{client}"),
            "--listen-peer-urls",
            &format!("http://127.0.0.1:{peer}"),
            "--initial-advertise-peer-urls",
            &format!("http://127.0.0.1:{peer}"),
            "--initial-cluster",
            &format!("demo=http://127.0.0.1:{peer}"),
            "--heartbeat-interval=10",
            "--election-timeout=100",
        ])
        .stdout(std::fs::File::create(dir.join("etcd.log"))?)
        .stderr(std::fs::File::create(dir.join("etcd.err"))?)
        .kill_on_drop(true)
        .spawn()
        .context("cannot start etcd (is etcd-server installed? apt-get install etcd-server)")?;
    let endpoint = format!("127.0.0.1:{client}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while tokio::net::TcpStream::connect(&endpoint).await.is_err() {
        if Instant::now() > deadline {
            bail!(
                "etcd did not start within 10 s; see {}",
                dir.join("etcd.err").display()
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(SpawnedEtcd { child, endpoint })
}

/// The servers the demo started: etcd, ZooKeeper, a store's own.
#[derive(Default)]
struct Spawned<'a> {
    etcd: Option<&'a str>,
    zk: Option<&'a str>,
    own: Option<&'a str>,
}

/// The stores `--spawn-etcd`, `--spawn-zookeeper` and a store's own `--spawn-` flag
/// started, stopped when the demo ends.
struct Throwaway {
    etcd: Option<SpawnedEtcd>,
    zk: Option<zookeeper::SpawnedZk>,
    own: Option<SpawnedServer>,
}

impl Throwaway {
    /// Checks the `--spawn-*` flags go with `--store` before starting anything.
    async fn start(args: &Options, dir: &std::path::Path) -> Result<Throwaway> {
        if args.spawn_zookeeper && args.store != Store::Zookeeper {
            bail!(
                "--spawn-zookeeper starts a ZooKeeper for --store zookeeper; add --store zookeeper"
            );
        }
        Ok(Throwaway {
            etcd: match args.spawn_etcd {
                true => Some(spawn_etcd(dir).await?),
                false => None,
            },
            zk: match args.spawn_zookeeper {
                true => Some(zookeeper::spawn(dir).await?),
                false => None,
            },
            own: match (args.store, args.spawn_own) {
                (Store::Own(o), true) => Some(o.0.spawn(dir).await?),
                _ => None,
            },
        })
    }

    fn spawned(&self) -> Spawned<'_> {
        Spawned {
            etcd: self.etcd.as_ref().map(|e| e.endpoint.as_str()),
            zk: self.zk.as_ref().map(|z| z.endpoint.as_str()),
            own: self.own.as_ref().map(|s| s.address.as_str()),
        }
    }

    async fn stop(self) {
        let children = [
            self.etcd.map(|e| e.child),
            self.zk.map(|z| z.child),
            self.own.map(|s| s.child),
        ];
        for mut child in children.into_iter().flatten() {
            let _ = child.kill().await;
        }
    }
}

fn setup(args: &Options, dir: &std::path::Path, spawned: Spawned) -> Result<Setup> {
    let Spawned { etcd, zk, own } = spawned;
    let scheme = args.scheme;
    match args.store {
        Store::Zookeeper => zookeeper::setup(args, zk),
        Store::Own(o) => o.0.setup(&args.own, own),
        Store::Sqlite => {
            let url = format!("sqlite://{}", dir.join("elections.db").display());
            sql_setup(args, url, sql_scheme(args.store, scheme)?)
        }
        Store::Postgres | Store::Mysql => {
            let url = args
                .sql
                .clone()
                .context("--store postgres|mysql needs --sql URL")?;
            sql_setup(args, url, sql_scheme(args.store, scheme)?)
        }
        Store::Etcd => {
            let scheme = match scheme {
                Some(s) if s.is_sql() => {
                    bail!("--scheme {s} does not run on etcd; use etcd-election or etcd-lease-key")
                }
                Some(s) => s,
                None => Scheme::EtcdElection,
            };
            etcd_setup(args, scheme, etcd)
        }
    }
}

/// The SQL scheme asked for, sql-lease by default; a session lock only on its server.
fn sql_scheme(store: Store, asked: Option<Scheme>) -> Result<Scheme> {
    match (store, asked) {
        (Store::Postgres, Some(s @ Scheme::PgAdvisory))
        | (Store::Mysql, Some(s @ Scheme::MysqlLock)) => Ok(s),
        (_, Some(s)) if s.is_session_lock() => {
            bail!(
                "--scheme {s} runs on --store {}",
                if s == Scheme::PgAdvisory {
                    "postgres"
                } else {
                    "mysql"
                }
            )
        }
        (_, asked) => plain_sql_scheme(asked),
    }
}

fn plain_sql_scheme(asked: Option<Scheme>) -> Result<Scheme> {
    match asked {
        Some(s) if s.is_sql() => Ok(s),
        None => Ok(Scheme::SqlLease),
        Some(s) => {
            bail!(
                "--scheme {s} does not run on a SQL store; use sql-lease or sql-heartbeat \
                 (pg-advisory with --store postgres, mysql-lock with --store mysql)"
            )
        }
    }
}

/// The demo on the SQL store at `url`, with the table and password flags given.
fn sql_setup(args: &Options, url: String, scheme: Scheme) -> Result<Setup> {
    let src = args;
    if scheme.is_session_lock() && src.table.is_some() {
        bail!("--scheme {scheme} takes no table: the lock is the server's; leave --table out");
    }
    let mut node_source_args = vec![
        "--sql".into(),
        url.clone(),
        "--scheme".into(),
        scheme.as_str().into(),
    ];
    if let Some(t) = &src.table {
        node_source_args.extend(["--table".into(), t.clone()]);
    }
    if let Some(v) = &src.password_env {
        node_source_args.extend(["--password-env".into(), v.clone()]);
    }
    if let Some(f) = &src.password_file {
        node_source_args.extend(["--password-file".into(), f.display().to_string()]);
    }
    let mut cfg = SqlSource::new(SqlSpec {
        name: None,
        url: DbUrl(url.clone()),
        password_env: src.password_env.clone(),
        password_file: src.password_file.clone(),
        scheme,
        preset: None,
        table: src.table.clone(),
        columns: SqlColumns::default(),
        timeout: args.ttl.filter(|_| scheme == Scheme::SqlHeartbeat),
        poll: Some(Duration::from_millis(200)),
        read_only: src.read_only,
    })?;
    if scheme == Scheme::MysqlLock {
        // Named, so IS_USED_LOCK finds the holder on a server that lists no user locks.
        cfg.set_locks(crate::config::LockNaming {
            names: vec!["electop-demo".into()],
            ..Default::default()
        });
    }
    Ok(Setup {
        source: SourceConfig::Sql(cfg),
        node_source_args,
        label: format!("{scheme} on {}", DbUrl(url).redacted()),
    })
}

/// The demo on etcd: the one `--spawn-etcd` started (`spawned`), else the one `--etcd` names.
fn etcd_setup(src: &Options, scheme: Scheme, spawned: Option<&str>) -> Result<Setup> {
    let endpoint = spawned
        .map(str::to_string)
        .or_else(|| src.etcd.clone())
        .context("--store etcd needs --etcd HOST:PORT, or --spawn-etcd to start a local one")?;
    let registry = (scheme == Scheme::EtcdLeaseKey).then(|| ETCD_REGISTRY.to_string());
    let mut node_source_args = vec![
        "--etcd".into(),
        endpoint.clone(),
        "--prefix".into(),
        ETCD_PREFIX.into(),
        "--scheme".into(),
        scheme.as_str().into(),
    ];
    if let Some(r) = &registry {
        node_source_args.extend(["--registry".into(), r.clone()]);
    }
    // A spawned etcd is plain text; one given with --etcd may need the TLS flags.
    let tls = if spawned.is_some() {
        None
    } else {
        Some(&src.tls)
    };
    node_source_args.extend(tls.map(|t| t.args("--")).unwrap_or_default());
    Ok(Setup {
        source: SourceConfig::Etcd(EtcdSource {
            name: None,
            endpoints: vec![endpoint.clone()],
            prefix: ETCD_PREFIX.into(),
            scheme: Some(scheme),
            registry,
            preset: None,
            read_only: src.read_only,
            user: None,
            password_env: None,
            password_file: None,
            cacert: tls.and_then(|s| s.cacert.clone()),
            cert: tls.and_then(|s| s.cert.clone()),
            key: tls.and_then(|s| s.key.clone()),
            insecure_skip_tls_verify: tls.is_some_and(|s| s.insecure_skip_tls_verify),
        }),
        node_source_args,
        label: format!("{scheme} on etcd {endpoint}"),
    })
}

/// Each node's flags: where its store is (with the log file in `dir`), then which election
/// and how fast it renews.
fn node_flags(
    args: &Options,
    setup: &Setup,
    election: &str,
    dir: &std::path::Path,
) -> (Vec<String>, Vec<String>) {
    let mut source_args = vec![
        "--log-file".to_string(),
        dir.join("nodes.log").display().to_string(),
    ];
    source_args.extend(setup.node_source_args.clone());
    let mut node_args = vec!["--election".to_string(), election.to_string()];
    if matches!(&setup.source, SourceConfig::Sql(q) if !q.scheme.is_session_lock()) {
        node_args.push("--create-table".into());
    }
    for (flag, v) in [
        ("--ttl", args.ttl),
        ("--renew", args.renew),
        ("--retry", args.retry),
    ] {
        if let Some(v) = v {
            node_args.extend([flag.to_string(), format!("{}ms", v.as_millis())]);
        }
    }
    (source_args, node_args)
}

/// Runs the demo until quit. `timing`: `(tick, min_frame)` as for the dashboard.
pub(crate) async fn run(
    args: &Options,
    timing: (Duration, Duration),
    debug_panic: bool,
    prefs: crate::app::Prefs,
) -> Result<()> {
    if args.nodes == 0 || args.nodes > 9 {
        bail!("--nodes must be 1 to 9 (one key each)");
    }
    let dir = tempfile::Builder::new().prefix("electop-demo-").tempdir()?;
    let stores = Throwaway::start(args, dir.path()).await?;
    let setup = setup(args, dir.path(), stores.spawned())?;
    if let SourceConfig::Sql(cfg) = &setup.source
        && !cfg.scheme.is_session_lock()
    {
        let settings = crate::backend::sql::SqlSettings::new(cfg);
        crate::backend::sql::create_table_if_missing(&settings, Duration::from_secs(5))
            .await
            .map_err(anyhow::Error::msg)?;
    }
    let election = match args.store {
        Store::Own(o) => o.0.election(),
        _ => election_for(&setup.source),
    };
    let (source_args, node_args) = node_flags(args, &setup, election, dir.path());
    let (out_tx, out_rx) = mpsc::channel(256);
    let sup = Supervisor::new(source_args, node_args, args.nodes, out_tx)?;
    crate::supervise::dashboard_ahead();
    let mut sources = Sources::spawn(
        std::slice::from_ref(&setup.source),
        &BackendOptions::default(),
    )?;
    let demo = Demo::new(&sup.ids, election, &setup.label);
    let mut ext = ext::DemoExt::new(demo, sup, out_rx);
    // The nodes start once the dashboard has read the store: it sees the first leader
    // elected, so the timeline knows since when.
    ext.start_by = Some(Instant::now() + NODES_START_WITHIN);
    // Our panic hook, not ratatui's: a task's panic must not restore the terminal under the
    // running demo (see `crate::supervise`).
    let mut terminal = crate::supervise::init_terminal().context("cannot set up the terminal")?;
    let result = crate::runtime::tui_loop(
        &mut terminal,
        &mut sources,
        timing,
        debug_panic,
        prefs,
        &mut ext,
    )
    .await;
    crate::supervise::restore_terminal();
    sources.shutdown().await;
    // Quitting stopped the nodes already; after an error this is what stops them.
    ext.sup.stop_all(Duration::from_secs(3)).await;
    stores.stop().await;
    drop(dir);
    result
}
