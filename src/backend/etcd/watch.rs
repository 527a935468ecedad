//! Following the watch on one member: changes go into the tracker first and only then count
//! as seen (a reconnect resumes after the last change in the state, never after one that was
//! lost); lease reads run beside it; a quorum read twice a second proves the view current.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant, SystemTime};

use etcd_client::{EventType, GetOptions, WatchOptions, WatchResponse, WatchStream};
use tracing::{debug, warn};

use super::follow::{Link, Replay, State};
use super::layout::Kv;
use super::leases::{self, LEASE_TICK, fates, wanted_leases};
use super::resume::Resume;
use super::tracker::{Change, Observation, Tracker};
use super::{Closed, EtcdBackend, EtcdError, Stop, send, timed};
use crate::backend::engine::lifecycle::{Input, Lifecycle, Phase};
use crate::backend::{BackendIo, Request};
use crate::model::{SourceEvent, SourceId};

/// How often the member is asked for a quorum read (and the watch for its progress).
pub(super) const HEARTBEAT: Duration = Duration::from_millis(500);
/// A quorum read slower than this failed.
const HEARTBEAT_LIMIT: Duration = Duration::from_millis(1500);
/// Failed quorum reads in a row before the member is given up for another.
const HEARTBEAT_FAILURES: u32 = 2;
/// A watch that has said nothing for this long, while the member answers reads, is stuck.
const WATCH_SILENCE: Duration = Duration::from_secs(6);

pub(super) enum Restart {
    Compacted(i64),
}

pub(super) async fn open(
    backend: &EtcdBackend,
    link: &mut Link,
    prefixes: &[Vec<u8>],
    resume: &Resume,
) -> Result<WatchStream, EtcdError> {
    // Without the previous values: a change is applied to the state the snapshot and the
    // changes since built, which holds them; asked for, etcd reads each one back from its
    // backend before it sends the event (its CPU, and this stream's latency).
    let opts = |rev: i64| WatchOptions::new().with_prefix().with_start_revision(rev);
    let Some(first) = prefixes.first() else {
        return Err(EtcdError::lasting(&link.endpoint, "nothing to watch"));
    };
    let ep = link.endpoint.clone();
    // A replayed revision can carry many events: the same raised decode limit as ranges.
    let mut watcher = link
        .client
        .watch_client()
        .max_decoding_message_size(super::DECODE_LIMIT);
    let mut stream = timed(
        backend,
        &ep,
        watcher.watch(first.clone(), Some(opts(resume.get(0)))),
    )
    .await?;
    for (i, prefix) in prefixes.iter().enumerate().skip(1) {
        timed(
            backend,
            &ep,
            stream.watch(prefix.clone(), Some(opts(resume.get(i)))),
        )
        .await?;
    }
    Ok(stream)
}

type Beat = Pin<Box<dyn Future<Output = Result<(Instant, SystemTime, i64), EtcdError>> + Send>>;

/// A linearizable read: it needs the cluster's quorum, so it fails when the member is cut
/// off, frozen, or alone. Returns when it was sent and the revision it saw.
fn heartbeat(link: &Link, key: Vec<u8>) -> Beat {
    let mut client = link.client.clone();
    let endpoint = link.endpoint.clone();
    Box::pin(async move {
        let sent = (Instant::now(), SystemTime::now());
        let opts = GetOptions::new().with_keys_only().with_limit(1);
        match tokio::time::timeout(HEARTBEAT_LIMIT, client.get(key, Some(opts))).await {
            Ok(Ok(r)) => Ok((
                sent.0,
                sent.1,
                r.header().map(|h| h.revision()).unwrap_or(0),
            )),
            Ok(Err(e)) => Err(EtcdError::from_client(&endpoint, e)),
            Err(_) => Err(EtcdError::Timeout {
                endpoint,
                timeout: HEARTBEAT_LIMIT,
            }),
        }
    })
}

async fn maybe<T>(f: &mut Option<Pin<Box<dyn Future<Output = T> + Send>>>) -> T {
    match f {
        Some(f) => f.await,
        None => std::future::pending().await,
    }
}

/// Contact bookkeeping: a quorum read at revision R proves the view current as of when it
/// was sent, once the watch has delivered everything up to R.
struct Liveness {
    pending: Option<(Instant, SystemTime, i64)>,
    watch_rev: i64,
    failures: u32,
    last_word: Instant,
}

impl Default for Liveness {
    fn default() -> Self {
        Liveness {
            pending: None,
            watch_rev: 0,
            failures: 0,
            last_word: Instant::now(),
        }
    }
}

impl Liveness {
    /// The watch said something (events or progress).
    fn heard(&mut self, resp: &WatchResponse) {
        self.last_word = Instant::now();
        if let Some(h) = resp.header() {
            self.watch_rev = self.watch_rev.max(h.revision());
        }
    }

    /// A quorum read came back. Ok(true): it answered, ask the watch for its progress; an
    /// error once the member has failed too often, or the watch went silent meanwhile.
    fn beat(
        &mut self,
        r: Result<(Instant, SystemTime, i64), EtcdError>,
        endpoint: &str,
    ) -> Result<bool, EtcdError> {
        match r {
            Ok(p) => {
                self.failures = 0;
                self.pending = Some(p);
                if self.last_word.elapsed() > WATCH_SILENCE {
                    let why = "the watch stopped answering progress requests";
                    return Err(EtcdError::transient(endpoint, why));
                }
                Ok(true)
            }
            Err(e) => {
                self.failures += 1;
                debug!(%e, failures = self.failures, "quorum read failed");
                if self.failures >= HEARTBEAT_FAILURES {
                    return Err(e);
                }
                Ok(false)
            }
        }
    }

    fn confirmed(&mut self) -> Option<(Instant, SystemTime)> {
        match self.pending {
            Some((at, wall, rev)) if self.watch_rev >= rev => {
                self.pending = None;
                Some((at, wall))
            }
            _ => None,
        }
    }
}

/// Follows the watch until it breaks. Watch ids are handed out in request order, which maps
/// them back to their prefixes.
pub(super) async fn pump(
    backend: &EtcdBackend,
    state: &mut State,
    io: &mut BackendIo,
    conn: &mut Lifecycle,
    link: &mut Link,
    stream: &mut WatchStream,
) -> Result<Restart, Stop> {
    let source = backend.info.id;
    let mut ids: HashMap<i64, usize> = HashMap::new();
    let mut lease_tick = tokio::time::interval(LEASE_TICK);
    lease_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut beat_tick = tokio::time::interval(HEARTBEAT);
    beat_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut beat: Option<Beat> = None;
    let mut live = Liveness::default();
    let mut reader = leases::Reader::spawn(link.client.clone());
    let mut quiet = leases::Quiet::default();
    // A one-key read: cheap whatever the prefix holds (an empty key is not a valid read).
    let beat_key = match backend.cfg.prefix.as_bytes() {
        [] => b"\0".to_vec(),
        p => p.to_vec(),
    };
    loop {
        tokio::select! {
            msg = stream.message() => {
                let resp = msg
                    .map_err(|e| EtcdError::from_client(&link.endpoint, e))?
                    .ok_or_else(|| EtcdError::WatchEnded { endpoint: link.endpoint.clone() })?;
                live.heard(&resp);
                if let Some(r) = on_message(backend, state, io, link, &mut ids, resp).await? {
                    return Ok(r);
                }
            }
            cmd = io.commands.recv() => on_command(backend, state, io, cmd).await?,
            _ = lease_tick.tick() => {
                if let Some(f) = state.followed.as_ref() {
                    let (eager, now) = (!backend.opts.all_leases, Instant::now());
                    if eager || !quiet.holds(&f.tracker, now) {
                        let wanted = wanted_leases(backend, &f.tracker, &state.visible);
                        let due = leases::due(&f.tracker, wanted, now, eager);
                        quiet.scanned(&f.tracker, !due.is_empty());
                        reader.offer(due);
                    }
                }
            }
            Some(batch) = reader.answers.recv() => {
                reader.answered();
                if let Some(f) = state.followed.as_mut() {
                    ttls_read(&mut f.tracker, io, source, batch).await?;
                }
            }
            done = replay_done(&mut state.replay) => {
                history_merged(backend, state, io, conn, link, done).await?;
            }
            _ = beat_tick.tick(), if beat.is_none() => beat = Some(heartbeat(link, beat_key.clone())),
            r = maybe(&mut beat) => {
                beat = None;
                if live.beat(r, &link.endpoint)? {
                    // The progress answer carries the revision the watch has reached.
                    let asked = stream.request_progress().await;
                    asked.map_err(|e| EtcdError::from_client(&link.endpoint, e))?;
                }
            }
        }
        if matches!(conn.phase, Phase::Live { .. } | Phase::Replaying { .. })
            && let Some((at, wall)) = live.confirmed()
        {
            state.confirmed = Some(at);
            let next_within = HEARTBEAT;
            let contact = SourceEvent::Contact {
                source,
                at,
                wall,
                next_within,
            };
            send(io, contact).await?;
        }
    }
}

/// A request from the runtime: what is on screen, or an admin action's mark.
async fn on_command(
    backend: &EtcdBackend,
    state: &mut State,
    io: &BackendIo,
    cmd: Option<Request>,
) -> Result<(), Stop> {
    match cmd {
        Some(Request::Forced { election, mark }) => {
            let Some(f) = state.followed.as_mut() else {
                return Ok(());
            };
            let now = (Instant::now(), SystemTime::now());
            if let Some(e) = f.tracker.forced(&election, mark, now.0, now.1) {
                let told = crate::backend::forced::attributed(&backend.info.name, &e);
                let source = backend.info.id;
                send(
                    io,
                    SourceEvent::Elections {
                        source,
                        elections: vec![e],
                    },
                )
                .await?;
                if let Some(ev) = told {
                    send(io, SourceEvent::Happened(ev)).await?;
                }
            }
            Ok(())
        }
        Some(c) => {
            state.visible = c;
            Ok(())
        }
        None => Err(Stop::Closed),
    }
}

async fn ttls_read(
    tracker: &mut Tracker,
    io: &BackendIo,
    source: SourceId,
    batch: Vec<leases::Reading>,
) -> Result<(), Closed> {
    let elections = tracker.set_ttls(batch);
    if elections.is_empty() {
        return Ok(());
    }
    send(io, SourceEvent::Elections { source, elections }).await
}

pub(super) fn changes_of(resp: &WatchResponse) -> Vec<Change> {
    resp.events()
        .iter()
        .filter_map(|ev| {
            let kv = ev.kv()?;
            Some(match ev.event_type() {
                EventType::Put => Change::Put(Kv::from_etcd(kv)),
                EventType::Delete => Change::Delete {
                    key: kv.key().to_vec(),
                    revision: kv.mod_revision(),
                },
            })
        })
        .collect()
}

/// One watch message into the state. The resume revision moves only once the changes are
/// applied, so a failure on the way resumes before them, not after.
async fn on_message(
    backend: &EtcdBackend,
    state: &mut State,
    io: &BackendIo,
    link: &mut Link,
    ids: &mut HashMap<i64, usize>,
    resp: WatchResponse,
) -> Result<Option<Restart>, Stop> {
    let source = backend.info.id;
    if resp.created() {
        let n = ids.len();
        ids.insert(resp.watch_id(), n);
        let created_at = resp.header().map_or(0, |h| h.revision());
        state.caught_up_to = state.caught_up_to.max(created_at);
    }
    if resp.canceled() {
        if resp.compact_revision() > 0 {
            return Ok(Some(Restart::Compacted(resp.compact_revision())));
        }
        return Err(EtcdError::WatchCancelled {
            endpoint: link.endpoint.clone(),
            reason: resp.cancel_reason().to_string(),
        }
        .into());
    }
    if let Some(h) = resp.header() {
        send(
            io,
            SourceEvent::Revision {
                source,
                revision: h.revision(),
            },
        )
        .await?;
    }
    let changes = changes_of(&resp);
    let Some(f) = state.followed.as_mut() else {
        return Err(Stop::Closed);
    };
    if let Some(last) = changes.last().map(Change::revision) {
        debug!(n = changes.len(), "watch events");
        // Changes from before this member's watch began (a move, a reconnect) happened at
        // some time since the view was last current, not as they are delivered.
        let caught_up = changes.first().map(Change::revision) <= Some(state.caught_up_to);
        let since = state.confirmed.filter(|_| caught_up);
        apply(backend, link, &mut f.tracker, io, (changes, since)).await?;
        if let Some(i) = ids.get(&resp.watch_id()) {
            f.resume.applied(*i, last);
        }
        let guessed = backend.cfg.scheme.is_none();
        let prefix = backend.cfg.prefix.as_bytes();
        if let Some(shown) = state.shown.as_mut()
            && let Some(info) = super::detect::recheck(shown, prefix, guessed, f.tracker.mirror())
        {
            send(io, SourceEvent::Info(info)).await?;
        }
    }
    Ok(None)
}

type ReplayResult = Result<Result<super::history::Replayed, EtcdError>, tokio::task::JoinError>;

/// The running replay's result, when it has one; never while none runs.
async fn replay_done(replay: &mut Replay) -> ReplayResult {
    match replay {
        Replay::Running { task, .. } => task.await,
        _ => std::future::pending().await,
    }
}

/// The history replay finished: merge it in front of what was seen live and say the source
/// is complete; a replay that failed starts again with the next connection.
async fn history_merged(
    backend: &EtcdBackend,
    state: &mut State,
    io: &BackendIo,
    conn: &mut Lifecycle,
    link: &mut Link,
    done: ReplayResult,
) -> Result<(), Stop> {
    let retry = match std::mem::replace(&mut state.replay, Replay::Done) {
        Replay::Running {
            snapshot, revision, ..
        } => Replay::Pending { snapshot, revision },
        other => other,
    };
    let Some(f) = state.followed.as_mut() else {
        return Err(Stop::Closed);
    };
    match done {
        Ok(Ok(mut past)) => {
            if let Some(compact) = past.compacted {
                compacted_notice(backend, io, compact).await?;
            }
            past.tracker.attribute(&super::audited::actions(backend));
            let elections = f.tracker.merge_history(&past.tracker);
            if !elections.is_empty() {
                send(
                    io,
                    SourceEvent::Elections {
                        source: backend.info.id,
                        elections,
                    },
                )
                .await?;
            }
        }
        Ok(Err(e)) => {
            state.replay = retry;
            return Err(e.into());
        }
        Err(panic) => {
            // A bug, not the store: say so and carry on without the history.
            let event = crate::model::Event::about_source(
                backend.info.name.clone(),
                crate::model::EventKind::HistoryCompacted,
                None,
                Some(format!(
                    "history replay failed ({panic}); only live changes are shown"
                )),
            );
            send(io, SourceEvent::Happened(event)).await?;
        }
    }
    synced(backend, link, &mut f.tracker, io, true).await?;
    conn.on(Input::CaughtUp);
    // What the replay held is given back once the dashboard has it (runtime::memory).
    Ok(())
}

pub(super) async fn compacted_notice(
    backend: &EtcdBackend,
    io: &BackendIo,
    compact: i64,
) -> Result<(), Closed> {
    let detail =
        format!("history before revision {compact} was compacted; changes before it are not shown");
    let event = crate::model::Event::about_source(
        backend.info.name.clone(),
        crate::model::EventKind::HistoryCompacted,
        Some(compact),
        Some(detail),
    );
    send(io, SourceEvent::Happened(event)).await
}

/// Every lease of `tracker`, read for half the request timeout (for `status`, half of it
/// after the backend started): `status` prints within its --timeout however many leases
/// there are (the other half is for the snapshot's own reading, merging and printing); a
/// lease not read by then shows no TTL, and the source's notice says how many.
pub(super) async fn read_every_lease(
    backend: &EtcdBackend,
    link: &Link,
    all: leases::Queue,
    io: &BackendIo,
) -> Result<Vec<leases::Reading>, Closed> {
    let half = backend.opts.request_timeout / 2;
    let deadline = match backend.opts.one_shot {
        true => backend.started + half,
        false => tokio::time::Instant::now() + half,
    };
    let wanted = all.len();
    let batch = leases::read_queue_until(&link.client, all, deadline).await;
    if batch.len() < wanted {
        let text = unread_note(wanted - batch.len(), wanted, backend.opts.request_timeout);
        warn!("{text}");
        let source = backend.info.id;
        send(io, SourceEvent::Notice { source, text }).await?;
    }
    Ok(batch)
}

/// What a read of every lease that ran out of time says.
fn unread_note(unread: usize, wanted: usize, timeout: Duration) -> String {
    format!(
        "{unread} of {wanted} leases not read within half the {timeout:?} timeout: their TTL shows as unknown (one round trip per lease, the leaders' first; a longer --timeout reads more)"
    )
}

/// The state is complete: read every lease once if asked to (`read_leases`: not read
/// already), then say so.
pub(super) async fn synced(
    backend: &EtcdBackend,
    link: &mut Link,
    tracker: &mut Tracker,
    io: &BackendIo,
    read_leases: bool,
) -> Result<(), Stop> {
    if backend.opts.all_leases && read_leases {
        let all = leases::Queue::new(tracker.all_leases());
        all.put_first(&leases::leaders(tracker.elections()));
        let batch = read_every_lease(backend, link, all, io).await?;
        ttls_read(tracker, io, backend.info.id, batch).await?;
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

/// Applies live changes at once; the fates of deleted keys' leases are read first, and a
/// fate that cannot be read leaves the cause to the countdown rather than losing the change.
/// `since`: the earliest the changes may have happened, for changes delivered late (after
/// a move to another member); `None`: as they happened.
pub(super) async fn apply(
    backend: &EtcdBackend,
    link: &Link,
    tracker: &mut Tracker,
    io: &BackendIo,
    (changes, since): (Vec<Change>, Option<Instant>),
) -> Result<(), Closed> {
    if changes.is_empty() {
        return Ok(());
    }
    let f = fates(&link.client, tracker.leases_to_check(&changes)).await;
    let now = Instant::now();
    let seen = Observation {
        at: Some(SystemTime::now()),
        now,
        since: since.unwrap_or(now),
        replayed: false,
    };
    let (elections, events) = tracker.apply(changes, &f, seen);
    if let Some(file) = link.times.as_ref() {
        file.record(&events);
    }
    let source = backend.info.id;
    if !elections.is_empty() {
        send(io, SourceEvent::Elections { source, elections }).await?;
    }
    for e in events {
        send(io, SourceEvent::Happened(e)).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unread_note_counts_and_says_what_helps() {
        let text = unread_note(9_000, 20_000, Duration::from_secs(5));
        assert!(
            text.starts_with("9000 of 20000 leases not read within half the 5s"),
            "{text}"
        );
        assert!(
            text.contains("TTL shows as unknown") && text.contains("--timeout"),
            "{text}"
        );
    }

    #[test]
    fn contact_is_confirmed_only_once_the_watch_reached_the_quorum_read() {
        let mut l = Liveness::default();
        let t = (Instant::now(), SystemTime::now());
        assert_eq!(l.beat(Ok((t.0, t.1, 10)), "e").ok(), Some(true));
        l.watch_rev = 9;
        assert_eq!(l.confirmed(), None, "the watch is behind the read");
        l.watch_rev = 10;
        assert_eq!(l.confirmed(), Some(t));
        assert_eq!(l.confirmed(), None, "used up");
    }

    #[test]
    fn the_member_is_given_up_after_failed_reads_in_a_row() {
        let mut l = Liveness::default();
        let fail = || Err(EtcdError::transient("e", "timed out"));
        assert_eq!(
            l.beat(fail(), "e").ok(),
            Some(false),
            "one failure is tolerated"
        );
        assert!(l.beat(fail(), "e").is_err(), "two in a row: move on");
        let mut l = Liveness {
            last_word: Instant::now() - WATCH_SILENCE - Duration::from_secs(1),
            ..Liveness::default()
        };
        let ok = Ok((Instant::now(), SystemTime::now(), 1));
        assert!(l.beat(ok, "e").is_err(), "a silent watch is given up");
    }
}
