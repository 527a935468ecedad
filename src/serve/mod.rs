//! `electop serve`: the observer that pages you. Headless, on the same sources as the
//! dashboard, it keeps the one read model and serves it: Prometheus metrics, readiness, the
//! `status --json` document and the `watch --json` stream, and runs hooks on each change.
//! The loop below is the only writer of the observed state; HTTP handlers only read it.

pub(crate) mod auth;
mod exposition;
mod http;
mod metrics;
mod observer;
mod series;
mod sink;

use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, Result};
use tokio::sync::broadcast;

use crate::backend::BackendOptions;
use crate::config::SourceConfig;
use crate::model::{Event, EventKind};
use crate::runtime::Sources;
use crate::state::ReadModel;
use observer::Observed;

/// How `serve` listens and whom it answers.
pub(crate) struct Options {
    pub listen: SocketAddr,
    /// The context the sources came from: a label on every series.
    pub context: Option<String>,
    pub auth: auth::Auth,
    pub tls: Option<tokio_rustls::TlsAcceptor>,
    pub hooks: crate::serve_hooks::HookConfig,
}

/// Leader changes kept per election (by `serve` and `watch`) unless `--history-limit` says
/// otherwise: enough for flapping (more than 4 in the last minute) and the last changes in
/// `/api/v1/elections`, and what `/api/v1/history` answers from. The dashboard's 200 would
/// make history most of the memory of a serve of many busy elections (docs/PERFORMANCE.md
/// has the figures).
pub(crate) const HISTORY: usize = 8;

/// How often the clock moves the model on (countdowns, staleness, time without a leader).
const TICK: Duration = Duration::from_secs(1);
/// `/api/v1/events` lines a slow reader may fall behind by before it is told it missed some.
const EVENTS_BUFFERED: usize = 8_192;

/// Where the sources come from again on SIGHUP: the config file re-read and the sources
/// chosen anew, or why not (then the running ones are kept).
pub(crate) type Reload = Box<dyn Fn() -> Result<Vec<SourceConfig>, String> + Send>;

/// Serves until SIGTERM or Ctrl-C, then stops cleanly: the listener closes, queued hooks are
/// given a moment to finish, every source is stopped. SIGHUP re-reads the config: the
/// sources restart with what it says now, the listener and hooks carry on.
pub(crate) async fn run(
    sources: Vec<SourceConfig>,
    mut opts: BackendOptions,
    o: Options,
    reload: Reload,
) -> Result<()> {
    // Every election's time left is a series: every lease is read, not only those on screen.
    opts.all_leases = true;
    let stats = Arc::new(crate::serve_hooks::HookStats::default());
    // A hook that cannot start is a mistake in its flags or `[serve]`: exit 2.
    let hooks = crate::serve_hooks::Hooks::start(o.hooks, Arc::clone(&stats))
        .map_err(|e| crate::config::Usage(e.to_string()))?;
    let tcp = tokio::net::TcpListener::bind(o.listen)
        .await
        .with_context(|| format!("cannot listen on {}", o.listen))?;
    let mut configs = sources;
    let mut running = Sources::spawn(&configs, &opts)?;
    let observed = Arc::new(RwLock::new(observed_of(&running)));
    let (events, _) = broadcast::channel(EVENTS_BUFFERED);
    let counts: metrics::HookCounts = Box::new(move || stats.snapshot());
    let served = http::Served {
        observed: Arc::clone(&observed),
        metrics: Arc::new(metrics::Metrics::new(
            Arc::clone(&observed),
            counts,
            o.context,
        )),
        events: events.clone(),
        auth: Arc::new(o.auth),
    };
    let app = http::router(served);
    let stop = tokio_util::sync::CancellationToken::new();
    let shutdown = stop.clone().cancelled_owned();
    let scheme = if o.tls.is_some() { "https" } else { "http" };
    let addr = tcp.local_addr()?;
    tracing::info!(%addr, "serving {scheme}://{addr}/metrics");
    let server = match o.tls {
        Some(acceptor) => {
            let tls = auth::TlsListener { tcp, acceptor };
            tokio::spawn(
                axum::serve(tls, app)
                    .with_graceful_shutdown(shutdown)
                    .into_future(),
            )
        }
        None => tokio::spawn(
            axum::serve(tcp, app)
                .with_graceful_shutdown(shutdown)
                .into_future(),
        ),
    };
    while let Ended::Reload = observe(&mut running, &observed, &events, &hooks).await? {
        match reload() {
            Ok(fresh) => {
                tracing::info!(
                    sources = fresh.len(),
                    "SIGHUP: config read again; sources restart"
                );
                running.shutdown().await;
                configs = fresh;
                running = Sources::spawn(&configs, &opts)?;
                *observed.write().unwrap_or_else(|p| p.into_inner()) = observed_of(&running);
            }
            Err(e) => tracing::error!("SIGHUP: {e}; the sources carry on as they were"),
        }
    }
    tracing::info!("stopping");
    stop.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(5), server).await;
    hooks.drain(Duration::from_secs(5)).await;
    running.shutdown().await;
    Ok(())
}

fn observed_of(sources: &Sources) -> Observed {
    Observed::new(ReadModel::new(
        sources.infos.clone(),
        Instant::now(),
        SystemTime::now(),
    ))
}

/// Why the observing stopped.
enum Ended {
    Stop,
    Reload,
}

/// Applies every store event to the observed state and tells the readers of the event
/// stream and the hooks, until a signal to stop or to reload.
async fn observe(
    sources: &mut Sources,
    observed: &RwLock<Observed>,
    events: &broadcast::Sender<Arc<str>>,
    hooks: &crate::serve_hooks::Hooks,
) -> Result<Ended> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let mut hup = signal(SignalKind::hangup())?;
    let mut tick = tokio::time::interval(TICK);
    loop {
        let mut told: Vec<(Event, String)> = Vec::new();
        tokio::select! {
            ev = sources.events.recv() => {
                let Some(ev) = ev else { return Ok(Ended::Stop) };
                let mut o = observed.write().unwrap_or_else(|p| p.into_inner());
                o.model.now = Instant::now();
                o.model.wall = SystemTime::now();
                told.extend(o.apply(ev).map(|e| with_source(&o.model, e)));
            }
            _ = tick.tick() => {
                let mut o = observed.write().unwrap_or_else(|p| p.into_inner());
                o.tick(Instant::now(), SystemTime::now());
                let markers = o.model.staleness_markers();
                told.extend(markers.into_iter().map(|e| with_source(&o.model, e)));
            }
            _ = term.recv() => return Ok(Ended::Stop),
            _ = int.recv() => return Ok(Ended::Stop),
            _ = hup.recv() => return Ok(Ended::Reload),
        }
        for (e, short) in told {
            let Ok(line) = crate::output::watch::json(&e, &short) else {
                continue;
            };
            if for_hooks(e.kind) {
                hooks.send_event(&e, &short);
            }
            // No reader is no error: the line is for whoever listens.
            let _ = events.send(line.into());
        }
    }
}

/// The source handle an event is told under, as `watch --json` and `status` name it.
fn with_source(model: &ReadModel, e: Event) -> (Event, String) {
    let short = model
        .sources
        .iter()
        .find(|s| s.info.name == e.source)
        .map_or_else(|| e.source.clone(), |s| s.info.short.clone());
    (e, short)
}

/// What the change hooks hear: leader changes and a source lost, stale or back; not the
/// line's comings and goings.
fn for_hooks(kind: EventKind) -> bool {
    matches!(
        kind,
        EventKind::LeaderElected
            | EventKind::LeaderChanged
            | EventKind::LeaderLost
            | EventKind::Attributed
            | EventKind::Disconnected
            | EventKind::Stale
            | EventKind::Fresh
    )
}
