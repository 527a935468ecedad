//! The connection loop: pick a member, read the snapshot, watch; on a member's failure move
//! to the next one without showing the source as down; down only when none can serve.

use std::sync::Arc;
use std::time::Duration;

use etcd_client::Client;
use tracing::{info, warn};

use super::layout::Mirror;
use super::leases;
use super::members::{self, Serving};
use super::resume::Resume;
use super::times::TimesFile;
use super::tracker::Tracker;
use super::watch::{self, Restart};
use super::{Closed, EtcdBackend, EtcdError, Stop, read_all, send};
use crate::backend::engine::lifecycle::{Input, Lifecycle, Phase};
use crate::backend::{BackendIo, Request};
use crate::model::{ConnState, Election, SourceEvent};

mod first_read;

/// What survives a move to another member.
pub(super) struct State {
    pub followed: Option<Followed>,
    /// History still to replay (up to the first snapshot), or being replayed.
    pub replay: Replay,
    pub visible: Request,
    /// The screen shows the source as connected.
    shown_connected: bool,
    /// Elections shown while a first snapshot was read (see `preview`). Were that read to
    /// fail and the next one to miss some of them, those are sent again with no holders,
    /// rather than left on screen with a leader read at another revision.
    previewed: std::collections::BTreeSet<Vec<u8>>,
    /// The source as last shown, with its notice, and when that notice was last checked
    /// against the keys: a warning leaves when its cause does.
    pub shown: Option<(crate::model::SourceInfo, std::time::Instant)>,
    /// When the view was last proven current (a quorum read answered, the watch caught up
    /// to it): the earliest a change the watch delivers after a move may have happened.
    pub confirmed: Option<std::time::Instant>,
    /// The store's revision when this member's watch was created: changes up to it
    /// happened before this member's watch, while the view was out of touch.
    pub caught_up_to: i64,
}

/// The tracker and where each prefix's watch resumes: made together, once a snapshot was
/// read, so a watch is never opened without both.
pub(super) struct Followed {
    pub tracker: Tracker,
    pub resume: Resume,
    pub prefixes: Vec<Vec<u8>>,
}

/// The background history replay of the first snapshot's past.
pub(super) enum Replay {
    /// None wanted, or merged already.
    Done,
    /// To start (again) on the member in use, up to `revision`. The snapshot is shared
    /// with the running replay rather than copied for it.
    Pending {
        snapshot: Arc<Mirror>,
        revision: i64,
    },
    Running {
        task: tokio::task::JoinHandle<Result<super::history::Replayed, EtcdError>>,
        snapshot: Arc<Mirror>,
        revision: i64,
    },
}

impl Replay {
    pub(super) fn active(&self) -> bool {
        !matches!(self, Replay::Done)
    }
}

/// A client bound to one member.
pub(super) struct Link {
    pub client: Client,
    pub endpoint: String,
    /// Where the times of changes seen live are kept for this cluster.
    pub times: Option<Arc<TimesFile>>,
}

/// Aborts the member probe when the backend stops.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// How long one member may take to take the connection. A one-shot read (`status`) shares
/// its timeout among the members, so a frozen first one (it takes the connection and never
/// answers) leaves time to read through the others; it never waits less than a
/// quarter-second on one.
fn dial_limit(opts: &crate::backend::BackendOptions, members: usize) -> Duration {
    let limit = opts.request_timeout.min(Duration::from_secs(2));
    match opts.one_shot && members > 1 {
        true => limit
            .min(opts.request_timeout / (members as u32 + 1))
            .max(Duration::from_millis(250)),
        false => limit,
    }
}

/// One etcd source's follow task: its settings, its channels, what survives a move to
/// another member, and the connection's life cycle (`conn`, a state machine of pure
/// transitions). The steps of following are its methods; a member in use is a [`Link`].
pub(super) struct Session<'a> {
    backend: &'a EtcdBackend,
    io: BackendIo,
    state: State,
    conn: Lifecycle,
    /// Which member serves now, for the member probe's display.
    serving: Serving,
    /// The cluster's times journal, kept open between members: the timeline's marks of an
    /// outage go there while no member serves, and it says this run's start and stop once.
    times: Option<Arc<TimesFile>>,
}

pub(super) async fn run(backend: EtcdBackend, io: BackendIo) {
    let serving = members::serving();
    let _probe = AbortOnDrop(tokio::spawn(members::probe(
        backend.cfg.clone(),
        backend.info.id,
        backend.info.name.clone(),
        serving.clone(),
        io.events.clone(),
        io.cancel.child_token(),
    )));
    let cancel = io.cancel.clone();
    let mut session = Session {
        backend: &backend,
        io,
        state: State {
            followed: None,
            replay: Replay::Done,
            visible: Request::Visible {
                names: Vec::new(),
                selected: None,
            },
            shown_connected: false,
            previewed: Default::default(),
            shown: None,
            confirmed: None,
            caught_up_to: 0,
        },
        conn: Lifecycle::new(
            backend.cfg.endpoints.len(),
            Duration::from_millis(250),
            Duration::from_secs(5),
        ),
        serving,
        times: None,
    };
    loop {
        let step = tokio::select! {
            r = session.step() => r,
            _ = cancel.cancelled() => false,
        };
        if !step {
            return;
        }
    }
}

impl Session<'_> {
    /// The times journal of this prefix in the cluster this member belongs to (from a
    /// response header): the one open already when it is the same cluster's. None for
    /// `status` without history: it neither replays revisions the journal would date nor
    /// watches changes to record, and reading the journal back (its marks) was much of its
    /// CPU once a day's changes were in it (docs/PERFORMANCE.md). It still names the journal
    /// to the engine, with no marks to read, for the elections it holds that etcd does not.
    async fn cluster_times(&mut self, link: &mut Link) -> Option<Arc<TimesFile>> {
        let opts = &self.backend.opts;
        let resp = tokio::time::timeout(Duration::from_secs(2), link.client.status())
            .await
            .ok()?
            .ok()?;
        let key = super::times::key(resp.header()?.cluster_id(), &self.backend.cfg.prefix);
        if opts.one_shot && !opts.replay_history {
            let (j, none) = (opts.history.journal(&key), Some(Default::default()));
            crate::backend::engine::history::announce(&self.io, &self.backend.info, &j, None, none);
            return None;
        }
        if let Some(t) = self.times.as_ref().filter(|t| t.journal().key() == key) {
            return Some(Arc::clone(t));
        }
        let (b, io) = (self.backend, &self.io);
        let t = Arc::new(TimesFile::new(&b.opts.history, &key, io, &b.info));
        self.times = Some(Arc::clone(&t));
        Some(t)
    }

    /// One turn of the life cycle. Returns false when the backend should stop.
    async fn step(&mut self) -> bool {
        let backend = self.backend;
        let from = self.conn.first_to_try();
        let limit = dial_limit(&backend.opts, backend.cfg.endpoints.len());
        let (client, member) =
            match super::dial::connect_any(&backend.cfg, from, limit, super::dial::Pings::Often)
                .await
            {
                Ok(found) => found,
                Err(e) => {
                    self.conn.on(Input::NoMember(e.kind().failure()));
                    return self.go_down(e).await;
                }
            };
        self.conn.on(Input::Connected { member });
        self.serving
            .store(member, std::sync::atomic::Ordering::Relaxed);
        let mut link = Link {
            client,
            endpoint: backend
                .cfg
                .endpoints
                .get(member)
                .cloned()
                .unwrap_or_default(),
            times: None,
        };
        link.times = self.cluster_times(&mut link).await;
        let err = match self.follow(link).await {
            Stop::Closed => return false,
            Stop::Failed(e) => e,
        };
        self.serving
            .store(usize::MAX, std::sync::atomic::Ordering::Relaxed);
        self.conn.on(Input::Failed(err.kind().failure()));
        match self.conn.phase {
            Phase::Down { .. } => self.go_down(err).await,
            _ => {
                // Another member may serve: say so in the log, not as a disconnection.
                warn!(source = %backend.info.name, %err, "member failed; trying the next one");
                true
            }
        }
    }

    /// The source is down: shown so, then the backoff waited out.
    async fn go_down(&mut self, err: EtcdError) -> bool {
        self.state.shown_connected = false;
        // A one-shot read reports a refusal at once: nothing listens there now.
        let lasting = match self.backend.opts.one_shot {
            true => err.ends_one_shot(),
            false => err.is_lasting(),
        };
        let go_on = crate::backend::down_and_wait(
            &self.io,
            &self.backend.info,
            err.to_string(),
            lasting,
            self.conn.backoff(),
        )
        .await;
        self.conn.on(Input::Retry);
        go_on
    }

    /// Follows the member of `link` until it fails or the runtime goes away.
    async fn follow(&mut self, mut link: Link) -> Stop {
        match self.follow_inner(&mut link).await {
            Ok(never) => match never {},
            Err(stop) => stop,
        }
    }

    async fn follow_inner(&mut self, link: &mut Link) -> Result<Never, Stop> {
        let backend = self.backend;
        let source = backend.info.id;
        let sent = (std::time::Instant::now(), std::time::SystemTime::now());
        let (prefixes, fresh, first) = self.prefixes(link).await?;
        let (snapshot, revision) = match first {
            Some(read) => read,
            None => {
                read_all(
                    backend,
                    &link.endpoint,
                    &mut link.client,
                    &prefixes,
                    None,
                    None,
                )
                .await?
            }
        };
        if !self.state.shown_connected {
            let connected = SourceEvent::Conn {
                source,
                state: ConnState::Connected,
            };
            send(&self.io, connected).await?;
            self.state.shown_connected = true;
        }
        info!(endpoint = %link.endpoint, revision, "etcd connected");
        let contact = contact_at(source, sent);
        if backend.opts.one_shot {
            // `status` ends at the state's Synced, which `start` sends: its `as_of` is the read.
            send(&self.io, contact.clone()).await?;
        }
        if let Some(tracker) = fresh {
            let first = First {
                tracker,
                prefixes,
                snapshot,
                revision,
            };
            self.start(link, first).await?;
        } else if let Some(f) = &self.state.followed {
            let revision = f.tracker.revision.max(revision);
            send(&self.io, SourceEvent::Revision { source, revision }).await?;
        }
        self.start_replay(link);
        self.conn.on(Input::SnapshotRead {
            replay: self.state.replay.active(),
        });
        if matches!(self.conn.phase, Phase::Live { .. }) {
            self.conn.backoff().reset();
            // The snapshot was a quorum read: the state is current as of when it was asked.
            send(&self.io, contact).await?;
        }
        if backend.opts.one_shot && !self.state.replay.active() {
            // `status` has what it prints: no watch to open, only the end to wait for.
            self.io.cancel.cancelled().await;
            return Err(Stop::Closed);
        }
        self.watch(link).await
    }

    /// Watches the member from where the state is, until the member fails; a compacted
    /// start is caught up by a fresh read.
    async fn watch(&mut self, link: &mut Link) -> Result<Never, Stop> {
        let backend = self.backend;
        loop {
            let Some(f) = self.state.followed.as_ref() else {
                return Err(Stop::Closed);
            };
            let mut stream = watch::open(backend, link, &f.prefixes, &f.resume).await?;
            match watch::pump(
                backend,
                &mut self.state,
                &mut self.io,
                &mut self.conn,
                link,
                &mut stream,
            )
            .await?
            {
                Restart::Compacted(compact) => {
                    self.compacted(link, compact).await?;
                }
            }
            if matches!(self.conn.phase, Phase::Live { .. }) {
                self.conn.backoff().reset();
            }
        }
    }

    /// The first snapshot: shown at once; history before it (if wanted) replays in the
    /// background and is merged in when done.
    async fn start(&mut self, link: &mut Link, first: First) -> Result<(), Stop> {
        let backend = self.backend;
        let First {
            tracker,
            prefixes,
            snapshot,
            revision,
        } = first;
        let source = backend.info.id;
        send(&self.io, SourceEvent::Revision { source, revision }).await?;
        let want_history = backend.opts.history_limit > 0 && backend.opts.replay_history;
        let past = want_history.then(|| Arc::new(snapshot.clone()));
        // `status` and `watch` with nothing to replay read every lease before the state goes
        // out, so it is sent once, with its countdowns, rather than twice. The leases are known
        // from the keys: they are read while the tracker loads, on the other core.
        let leases_first = past.is_none() && backend.opts.all_leases;
        // `status` prints this state and stops: it hands the elections over rather than
        // copying them, and follows no watch after (see `follow_inner`).
        let once = backend.opts.one_shot && past.is_none();
        let how = Load {
            once,
            leases: leases_first,
        };
        let (mut tracker, derived, batch) = self
            .load_reading_leases(link, tracker, (snapshot, revision), how)
            .await?;
        let mut elections = match derived {
            Some(mut elections) => {
                tracker.attach_readings(&mut elections, batch.into_iter().flatten());
                elections
            }
            None => {
                let vanished = tracker.missing(std::mem::take(&mut self.state.previewed));
                if !vanished.is_empty() {
                    let elections = vanished;
                    send(&self.io, SourceEvent::Elections { source, elections }).await?;
                }
                if let Some(batch) = batch {
                    tracker.set_ttls_quietly(batch);
                }
                tracker.cloned_elections()
            }
        };
        let actions = super::audited::actions(backend);
        for d in super::audited::deposed(backend, link, &actions, &elections).await {
            tracker.depose(&d.election, &d.holder);
            // A replay to come tells the change with its revision.
            let told = d.told.filter(|_| past.is_none());
            if let Some(h) = &told {
                tracker.told(&d.election, h);
            }
            if let Some(e) = elections.iter_mut().find(|e| e.name == d.election) {
                e.deposed = Some(Box::new(d.holder));
                if let Some(h) = told {
                    e.record(h, tracker.history_limit());
                }
            }
        }
        send(&self.io, SourceEvent::Elections { source, elections }).await?;
        self.state.followed = Some(Followed {
            tracker,
            resume: Resume::new(prefixes.len(), revision + 1),
            prefixes,
        });
        if let Some(snapshot) = past {
            self.state.replay = Replay::Pending { snapshot, revision };
        } else if let Some(f) = self.state.followed.as_mut() {
            watch::synced(backend, link, &mut f.tracker, &self.io, !leases_first).await?;
        }
        Ok(())
    }

    /// What the tracker and the first lease readings are once the snapshot is loaded. `once`:
    /// derived into a list and no more (`status`); `leases`: every lease read meanwhile, on the
    /// async runtime while the derivation runs on a blocking thread, the leaders' first once
    /// the elections are known.
    async fn load_reading_leases(
        &self,
        link: &Link,
        mut tracker: Tracker,
        (snapshot, revision): (Mirror, i64),
        Load { once, leases }: Load,
    ) -> Result<Loaded, Closed> {
        let (backend, io) = (self.backend, &self.io);
        let queue = leases.then(|| leases::Queue::new(distinct_leases(&snapshot)));
        let loading = tokio::task::spawn_blocking(move || {
            let derived = match once {
                true => Some(tracker.derive_once(&snapshot, revision)),
                false => {
                    tracker.load(snapshot, revision);
                    None
                }
            };
            (tracker, derived)
        });
        let read = async {
            match &queue {
                Some(q) => watch::read_every_lease(backend, link, q.clone(), io)
                    .await
                    .map(Some),
                None => Ok(None),
            }
        };
        let loaded = async {
            let (tracker, derived) = match loading.await {
                Ok(loaded) => loaded,
                Err(e) => std::panic::resume_unwind(e.into_panic()),
            };
            if let Some(q) = &queue {
                let leaders = match &derived {
                    Some(elections) => leases::leaders(elections.iter()),
                    None => leases::leaders(tracker.elections()),
                };
                q.put_first(&leaders);
            }
            (tracker, derived)
        };
        let (batch, (tracker, derived)) = tokio::join!(read, loaded);
        Ok((tracker, derived, batch?))
    }

    /// Starts the pending history replay on the member in use.
    fn start_replay(&mut self, link: &Link) {
        let backend = self.backend;
        let (Replay::Pending { snapshot, revision }, Some(f)) =
            (&self.state.replay, &self.state.followed)
        else {
            return;
        };
        let (snapshot, revision) = (Arc::clone(snapshot), *revision);
        let layout = f.tracker.layout();
        let scheme = (!layout.per_key()).then(|| layout.scheme());
        let past = Tracker::new(
            backend.info.id,
            backend.info.name.clone(),
            backend.layout(scheme),
            backend.opts.history_limit,
        );
        let (progress, _) = tokio::sync::watch::channel(0);
        let task = tokio::spawn(super::history::replay(
            link.client.clone(),
            link.endpoint.clone(),
            past,
            Arc::clone(&snapshot),
            revision,
            progress,
            link.times.as_ref().map(|t| t.journal().clone()),
        ));
        self.state.replay = Replay::Running {
            task,
            snapshot,
            revision,
        };
    }

    /// The watch's start revision was compacted away.
    async fn compacted(&mut self, link: &mut Link, compact: i64) -> Result<(), Stop> {
        let backend = self.backend;
        watch::compacted_notice(backend, &self.io, compact).await?;
        let Some(f) = self.state.followed.as_mut() else {
            return Err(Stop::Closed);
        };
        // Missed changes while away: jump to now and report the difference.
        let (now_state, now_rev) = read_all(
            backend,
            &link.endpoint,
            &mut link.client,
            &f.prefixes,
            None,
            None,
        )
        .await?;
        let changes = f.tracker.diff_to(&now_state, now_rev);
        // They happened while the watch was away.
        let since = self.state.confirmed;
        watch::apply(backend, link, &mut f.tracker, &self.io, (changes, since)).await?;
        f.resume.reset(now_rev + 1);
        Ok(())
    }
}

/// A first snapshot read, for the tracker made with it to load: the prefixes it covers.
struct First {
    tracker: Tracker,
    prefixes: Vec<Vec<u8>>,
    snapshot: Mirror,
    revision: i64,
}

/// How a first snapshot is loaded: `once`, derived into a list and no more (`status`);
/// `leases`, every lease read meanwhile.
struct Load {
    once: bool,
    leases: bool,
}

/// What a first read found: the prefixes to watch, a new tracker, and the read itself when it
/// already covers those prefixes (so a large prefix is not read twice).
pub(super) enum Never {}

/// The source answered a quorum read asked at `sent`: what it showed was current then.
fn contact_at(
    source: crate::model::SourceId,
    sent: (std::time::Instant, std::time::SystemTime),
) -> SourceEvent {
    SourceEvent::Contact {
        source,
        at: sent.0,
        wall: sent.1,
        next_within: super::watch::HEARTBEAT,
    }
}

/// A loaded tracker, the elections it derived if derived once, the first lease readings.
type Loaded = (Tracker, Option<Vec<Election>>, Option<Vec<leases::Reading>>);

/// Every lease the keys hold, once each: the leases the tracker will index, known before
/// it has loaded.
fn distinct_leases(mirror: &Mirror) -> Vec<i64> {
    let set: std::collections::HashSet<i64> = mirror
        .values()
        .map(|kv| kv.lease)
        .filter(|l| *l != 0)
        .collect();
    set.into_iter().collect()
}
