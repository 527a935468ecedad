//! The etcd backend: one snapshot, then one watch per key prefix from the snapshot's
//! revision (or from the past, to replay history). Leader changes come from diffing each
//! revision in [`tracker::Tracker`]; lease TTLs are read only for what is visible and counted
//! down locally in between.

pub mod admin;
pub mod connect;
pub mod election;
pub mod error;
pub mod layout;
pub mod lease_key;
mod leases;
pub mod tracker;

use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime};

use etcd_client::{Client, EventType, GetOptions, WatchOptions, WatchStream};
use tracing::{debug, info};

use self::layout::{Kv, Layout, Mirror};
use self::leases::{LEASE_TICK, fates, refresh_leases, wanted_leases};
use self::tracker::{Change, Observed, Tracker};
use super::{Backend, BackendFuture, BackendIo, BackendOptions, Backoff, Command};
use crate::config::EtcdSource;
use crate::model::{
    ConnState, Election, Event, EventKind, Scheme, SourceEvent, SourceId, SourceInfo,
};

#[derive(Debug, thiserror::Error)]
pub enum EtcdError {
    #[error("etcd {endpoints}: {message}")]
    Rpc { endpoints: String, message: String },
    #[error("etcd {endpoints}: no answer within {timeout:?}")]
    Timeout {
        endpoints: String,
        timeout: Duration,
    },
    #[error("etcd {endpoints}: watch cancelled by the server: {reason}")]
    WatchCancelled { endpoints: String, reason: String },
    #[error("etcd {endpoints}: watch stream ended")]
    WatchEnded { endpoints: String },
    /// From `connect`, typed: TLS and credential failures are lasting.
    #[error(transparent)]
    Connect(error::EtcdError),
}

/// The runtime went away: stop quietly.
pub(super) struct Closed;

pub(super) enum Stop {
    Closed,
    Error(EtcdError),
}

impl From<Closed> for Stop {
    fn from(_: Closed) -> Self {
        Stop::Closed
    }
}

impl From<EtcdError> for Stop {
    fn from(e: EtcdError) -> Self {
        Stop::Error(e)
    }
}

pub struct EtcdBackend {
    pub(super) info: SourceInfo,
    cfg: EtcdSource,
    pub(super) opts: BackendOptions,
}

impl EtcdBackend {
    pub fn new(id: SourceId, short: String, cfg: EtcdSource, opts: BackendOptions) -> Self {
        let endpoints = cfg.endpoints.join(",");
        let prefix = crate::model::escape_bytes(cfg.prefix.as_bytes());
        let info = SourceInfo {
            id,
            name: format!("etcd {endpoints} {prefix}"),
            short,
            label: match (prefix.is_empty(), connect::security_note(&cfg)) {
                (true, None) => "(all keys)".to_string(),
                (true, Some(note)) => format!("(all keys) · {note}"),
                (false, None) => prefix,
                (false, Some(note)) => format!("{prefix} · {note}"),
            },
            endpoints,
            scheme: cfg.scheme,
            read_only: cfg.read_only,
        };
        EtcdBackend { info, cfg, opts }
    }

    fn layout(&self, scheme: Scheme) -> Box<dyn Layout> {
        let prefix = self.cfg.prefix.as_bytes().to_vec();
        match scheme {
            Scheme::EtcdLeaseKey => Box::new(lease_key::EtcdLeaseKey {
                prefix,
                registry: self.cfg.registry.as_ref().map(|r| r.as_bytes().to_vec()),
            }),
            _ => Box::new(election::EtcdElection { prefix }),
        }
    }
}

impl Backend for EtcdBackend {
    fn info(&self) -> SourceInfo {
        self.info.clone()
    }

    fn run(self: Box<Self>, io: BackendIo) -> BackendFuture {
        Box::pin(run(*self, io))
    }
}

/// What survives a reconnect.
struct State {
    tracker: Option<Tracker>,
    /// Per watched prefix: the revision to resume from.
    resume: Vec<i64>,
    /// Until the replay has caught up: the snapshot it must reach and its revision.
    target: Option<(Mirror, i64)>,
    /// Changes up to this revision are history being replayed, not live.
    replay_until: i64,
    visible: Command,
}

async fn run(backend: EtcdBackend, mut io: BackendIo) {
    let mut state = State {
        tracker: None,
        resume: Vec::new(),
        target: None,
        replay_until: 0,
        visible: Command::Visible {
            names: Vec::new(),
            selected: None,
        },
    };
    let mut backoff = Backoff::new(Duration::from_millis(250), Duration::from_secs(5));
    let cancel = io.cancel.clone();
    loop {
        let outcome = tokio::select! {
            r = follow(&backend, &mut state, &mut io, &mut backoff) => r,
            _ = cancel.cancelled() => return,
        };
        let err = match outcome {
            Stop::Closed => return,
            Stop::Error(e) => e,
        };
        let revision = state.tracker.as_ref().map(|t| t.revision);
        let error = err.to_string();
        // Wrong credentials stay wrong; anything else may pass.
        let lasting = matches!(&err, EtcdError::Connect(e) if e.is_lasting())
            || error.contains("authentication failed")
            || error.contains("needs a password");
        if !super::down_and_wait(&io, &backend.info, error, lasting, revision, &mut backoff).await {
            return;
        }
    }
}

pub(super) async fn send(io: &BackendIo, ev: SourceEvent) -> Result<(), Closed> {
    io.events.send(ev).await.map_err(|_| Closed)
}

fn rpc_err(endpoints: &str, e: etcd_client::Error) -> EtcdError {
    // tonic's Display for transport errors is terse; the source chain has the reason.
    let mut message = e.to_string();
    let mut src = std::error::Error::source(&e);
    while let Some(s) = src {
        let more = s.to_string();
        if !message.contains(&more) {
            message.push_str(": ");
            message.push_str(&more);
        }
        src = s.source();
    }
    EtcdError::Rpc {
        endpoints: endpoints.to_string(),
        message,
    }
}

/// Runs an etcd request under the configured deadline.
pub(super) async fn timed<T>(
    backend: &EtcdBackend,
    fut: impl std::future::Future<Output = Result<T, etcd_client::Error>>,
) -> Result<T, EtcdError> {
    match tokio::time::timeout(backend.opts.request_timeout, fut).await {
        Ok(r) => r.map_err(|e| rpc_err(&backend.info.endpoints, e)),
        Err(_) => Err(EtcdError::Timeout {
            endpoints: backend.info.endpoints.clone(),
            timeout: backend.opts.request_timeout,
        }),
    }
}

/// Reads every key under `prefixes` at one revision (`None`: now). Returns them and the revision.
async fn read_all(
    backend: &EtcdBackend,
    client: &mut Client,
    prefixes: &[Vec<u8>],
    at: Option<i64>,
) -> Result<(Mirror, i64), EtcdError> {
    let mut mirror = Mirror::new();
    let mut revision = at.unwrap_or(0);
    for prefix in prefixes {
        let mut opts = GetOptions::new().with_prefix();
        if revision > 0 {
            opts = opts.with_revision(revision);
        }
        let resp = timed(backend, client.get(prefix.clone(), Some(opts))).await?;
        if revision == 0 {
            revision = resp.header().map(|h| h.revision()).unwrap_or(0);
        }
        for kv in resp.kvs() {
            let kv = Kv::from_etcd(kv);
            mirror.insert(kv.key.clone(), kv);
        }
    }
    Ok((mirror, revision))
}

/// Picks the scheme from the keys: candidate keys named after their own lease mean etcd's
/// election API; anything else is a lease key.
fn detect(mirror: &Mirror) -> (Scheme, bool) {
    if mirror.is_empty() {
        return (Scheme::EtcdElection, true);
    }
    if mirror
        .values()
        .any(|kv| election::looks_like_candidate(&kv.key, kv.lease))
    {
        (Scheme::EtcdElection, false)
    } else {
        (Scheme::EtcdLeaseKey, false)
    }
}

async fn follow(
    backend: &EtcdBackend,
    state: &mut State,
    io: &mut BackendIo,
    backoff: &mut Backoff,
) -> Stop {
    match follow_inner(backend, state, io, backoff).await {
        Ok(never) => match never {},
        Err(stop) => stop,
    }
}

enum Never {}

async fn follow_inner(
    backend: &EtcdBackend,
    state: &mut State,
    io: &mut BackendIo,
    backoff: &mut Backoff,
) -> Result<Never, Stop> {
    let source = backend.info.id;
    let endpoints = &backend.info.endpoints;
    send(
        io,
        SourceEvent::Conn {
            source,
            state: ConnState::Connecting,
        },
    )
    .await?;
    let (mut client, _) = connect::connect_any(&backend.cfg, 0, backend.opts.request_timeout)
        .await
        .map_err(EtcdError::Connect)?;

    let first = state.tracker.is_none();
    let prefixes: Vec<Vec<u8>> = match &state.tracker {
        Some(t) => t.layout().prefixes(),
        None => {
            // Read once to detect the scheme; the layout decides the real prefixes.
            let probe = vec![backend.cfg.prefix.as_bytes().to_vec()];
            let (snap, _) = read_all(backend, &mut client, &probe, None).await?;
            let (scheme, guessed) = match backend.cfg.scheme {
                Some(s) => (s, false),
                None => detect(&snap),
            };
            if guessed {
                info!("prefix empty; guessing scheme {scheme}");
            }
            let layout = backend.layout(scheme);
            let prefixes = layout.prefixes();
            state.tracker = Some(Tracker::new(
                source,
                backend.info.name.clone(),
                layout,
                backend.opts.history_limit,
            ));
            let mut info = backend.info.clone();
            info.scheme = Some(scheme);
            send(io, SourceEvent::Info(info)).await?;
            prefixes
        }
    };
    let (snapshot, revision) = read_all(backend, &mut client, &prefixes, None).await?;
    send(
        io,
        SourceEvent::Conn {
            source,
            state: ConnState::Connected,
        },
    )
    .await?;
    send(io, SourceEvent::Revision { source, revision }).await?;
    backoff.reset();
    info!(%endpoints, revision, "etcd connected");

    let Some(tracker) = state.tracker.as_mut() else {
        unreachable!("tracker set above");
    };
    if first {
        if backend.opts.history_limit == 0 {
            let all = tracker.load(snapshot, revision);
            send(
                io,
                SourceEvent::Elections {
                    source,
                    elections: all,
                },
            )
            .await?;
            state.resume = vec![revision + 1; prefixes.len()];
            synced(backend, &mut client, tracker, io).await?;
        } else {
            // Replay from the oldest revision etcd keeps; the snapshot says when we caught up.
            state.resume = vec![1; prefixes.len()];
            state.target = Some((snapshot, revision));
            state.replay_until = revision;
        }
    } else {
        send(
            io,
            SourceEvent::Revision {
                source,
                revision: tracker.revision.max(revision),
            },
        )
        .await?;
    }

    loop {
        let mut stream = open_watch(backend, &mut client, &prefixes, &state.resume).await?;
        match pump(backend, state, io, &mut client, &mut stream).await? {
            Restart::Compacted(compact) => {
                let tracker = state.tracker.as_mut().ok_or(Stop::Closed)?;
                let detail = format!(
                    "history before revision {compact} was compacted; changes before it are not shown"
                );
                let event = Event::about_source(
                    backend.info.name.clone(),
                    EventKind::HistoryCompacted,
                    Some(compact),
                    Some(detail),
                );
                send(io, SourceEvent::Happened(event)).await?;
                if state.target.is_some() {
                    // Still replaying: start the replay at the compaction point.
                    let (at_compact, _) =
                        read_all(backend, &mut client, &prefixes, Some(compact)).await?;
                    tracker.load(at_compact, compact);
                    state.resume = vec![compact + 1; prefixes.len()];
                } else {
                    // Missed changes while away: jump to now and report the difference.
                    let (now_state, now_rev) =
                        read_all(backend, &mut client, &prefixes, None).await?;
                    let changes = tracker.diff_to(&now_state, now_rev);
                    apply(backend, &mut client, tracker, io, changes, None).await?;
                    state.resume = vec![now_rev + 1; prefixes.len()];
                }
            }
        }
    }
}

enum Restart {
    Compacted(i64),
}

async fn open_watch(
    backend: &EtcdBackend,
    client: &mut Client,
    prefixes: &[Vec<u8>],
    resume: &[i64],
) -> Result<WatchStream, EtcdError> {
    let opts = |rev: i64| {
        WatchOptions::new()
            .with_prefix()
            .with_start_revision(rev)
            .with_prev_key()
    };
    let mut stream = timed(
        backend,
        client.watch(prefixes[0].clone(), Some(opts(resume[0]))),
    )
    .await?;
    for (prefix, rev) in prefixes.iter().zip(resume).skip(1) {
        timed(backend, stream.watch(prefix.clone(), Some(opts(*rev)))).await?;
    }
    Ok(stream)
}

/// Follows the watch until it breaks. Watch ids are handed out in request order, which maps
/// them back to their prefixes.
async fn pump(
    backend: &EtcdBackend,
    state: &mut State,
    io: &mut BackendIo,
    client: &mut Client,
    stream: &mut WatchStream,
) -> Result<Restart, Stop> {
    let source = backend.info.id;
    let endpoints = backend.info.endpoints.clone();
    let mut ids: HashMap<i64, usize> = HashMap::new();
    let mut lease_tick = tokio::time::interval(LEASE_TICK);
    lease_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            msg = stream.message() => {
                let resp = msg
                    .map_err(|e| rpc_err(&endpoints, e))?
                    .ok_or_else(|| EtcdError::WatchEnded { endpoints: endpoints.clone() })?;
                if resp.created() {
                    let n = ids.len();
                    ids.insert(resp.watch_id(), n);
                }
                if resp.canceled() {
                    if resp.compact_revision() > 0 {
                        return Ok(Restart::Compacted(resp.compact_revision()));
                    }
                    return Err(EtcdError::WatchCancelled {
                        endpoints,
                        reason: resp.cancel_reason().to_string(),
                    }.into());
                }
                let changes: Vec<Change> = resp.events().iter().filter_map(|ev| {
                    let kv = ev.kv()?;
                    Some(match ev.event_type() {
                        EventType::Put => Change::Put(Kv::from_etcd(kv)),
                        EventType::Delete => Change::Delete { key: kv.key().to_vec(), revision: kv.mod_revision() },
                    })
                }).collect();
                if let (Some(last), Some(i)) = (changes.last(), ids.get(&resp.watch_id())) {
                    state.resume[*i] = last.revision() + 1;
                }
                let Some(tracker) = state.tracker.as_mut() else { return Err(Stop::Closed) };
                if let Some(h) = resp.header() {
                    send(io, SourceEvent::Revision { source, revision: h.revision() }).await?;
                }
                if changes.is_empty() {
                    continue;
                }
                debug!(n = changes.len(), "watch events");
                let until = state.replay_until;
                let (old, new): (Vec<_>, Vec<_>) = changes.into_iter().partition(|c| c.revision() <= until);
                let replayed = replay(backend, client, tracker, old).await?;
                if state.target.is_none() && !replayed.is_empty() {
                    send(io, SourceEvent::Elections { source, elections: replayed }).await?;
                }
                if state.target.is_some() && !new.is_empty() {
                    // Past the snapshot: the replay has certainly caught up.
                    caught_up(&mut state.target, &mut state.resume, until);
                    announce_all(tracker, io, source).await?;
                    synced(backend, client, tracker, io).await?;
                }
                apply(backend, client, tracker, io, new, None).await?;
            }
            cmd = io.commands.recv() => {
                match cmd {
                    Some(Command::Forced { election, expect }) => {
                        if let Some(t) = state.tracker.as_mut() {
                            t.forced.set(election, expect, Instant::now());
                        }
                    }
                    Some(c) => state.visible = c,
                    None => return Err(Stop::Closed),
                }
            }
            _ = lease_tick.tick() => {
                let Some(tracker) = state.tracker.as_mut() else { return Err(Stop::Closed) };
                if state.target.is_none() {
                    let wanted = wanted_leases(backend, tracker, &state.visible);
                    refresh_leases(backend, client, tracker, io, wanted, false).await?;
                }
            }
        }
        // The replay has caught up once the mirror is the snapshot it started from.
        if let Some((snapshot, _)) = &state.target
            && let Some(tracker) = state.tracker.as_mut()
            && !ids.is_empty()
            && tracker.mirror_equals(snapshot)
        {
            let until = state.replay_until;
            caught_up(&mut state.target, &mut state.resume, until);
            announce_all(tracker, io, source).await?;
            synced(backend, client, tracker, io).await?;
        }
    }
}

/// The replay caught up with the snapshot at `revision`: every watch has delivered what came
/// before it, so a reconnect resumes after it.
fn caught_up(target: &mut Option<(Mirror, i64)>, resume: &mut [i64], revision: i64) {
    *target = None;
    for r in resume.iter_mut() {
        *r = (*r).max(revision + 1);
    }
}

async fn announce_all(tracker: &Tracker, io: &BackendIo, source: SourceId) -> Result<(), Closed> {
    let elections: Vec<Election> = tracker.elections().cloned().collect();
    send(io, SourceEvent::Elections { source, elections }).await
}

/// The replay is done: read every lease once if asked to, then say so.
async fn synced(
    backend: &EtcdBackend,
    client: &mut Client,
    tracker: &mut Tracker,
    io: &BackendIo,
) -> Result<(), Stop> {
    if backend.opts.all_leases {
        let all = tracker.all_leases();
        refresh_leases(backend, client, tracker, io, all, true).await?;
    }
    send(
        io,
        SourceEvent::Synced {
            source: backend.info.id,
        },
    )
    .await?;
    Ok(())
}

async fn replay(
    backend: &EtcdBackend,
    client: &mut Client,
    tracker: &mut Tracker,
    changes: Vec<Change>,
) -> Result<Vec<Election>, Stop> {
    if changes.is_empty() {
        return Ok(Vec::new());
    }
    let f = fates(backend, client, tracker.leases_to_check(&changes)).await?;
    let seen = Observed {
        at: None,
        now: Instant::now(),
        replayed: true,
    };
    Ok(tracker.apply(changes, &f, seen).0)
}

async fn apply(
    backend: &EtcdBackend,
    client: &mut Client,
    tracker: &mut Tracker,
    io: &BackendIo,
    changes: Vec<Change>,
    at: Option<SystemTime>,
) -> Result<(), Stop> {
    if changes.is_empty() {
        return Ok(());
    }
    let f = fates(backend, client, tracker.leases_to_check(&changes)).await?;
    let seen = Observed {
        at: Some(at.unwrap_or_else(SystemTime::now)),
        now: Instant::now(),
        replayed: false,
    };
    let (elections, events) = tracker.apply(changes, &f, seen);
    let source = backend.info.id;
    if !elections.is_empty() {
        send(io, SourceEvent::Elections { source, elections }).await?;
    }
    for e in events {
        send(io, SourceEvent::Happened(e)).await?;
    }
    Ok(())
}
