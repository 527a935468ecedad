//! Following a ZooKeeper source: connect, set a persistent recursive watch on the prefix,
//! read the tree under it, then apply each event below it in order (a deletion as it is, a
//! created or written node as read just after). A lost
//! connection is shown at once; back on the same session the whole tree is read again (the
//! events of the gap are lost, ZOOKEEPER-4698); an expired session starts over.

use std::time::{Duration, Instant, SystemTime};

use tracing::{info, warn};
use zookeeper_client::{AddWatchMode, Client, EventType, SessionState, WatchedEvent};

use super::error::ZkError;
use super::read::Reader;
use super::record::{Past, Record};

use super::single::Layout;
use super::tracker::ZkTracker;
use super::{ZkBackend, inputs};
use crate::backend::BackendIo;
use crate::backend::change::Changes;
use crate::backend::engine::drive::{Source, Steps, drive};
use crate::backend::engine::lifecycle::{Input, Lifecycle};
use crate::backend::forced::{Marks as _, serve};
use crate::model::{ConnState, SourceEvent};

type Stop = crate::backend::Stop<ZkError>;

/// How often the store is asked for the prefix's stat, which proves what is shown is
/// current (watch events come only when something changes).
const CONTACT_EVERY: Duration = Duration::from_secs(1);
/// electop's own session: short, so a vanished electop leaves no session behind for long;
/// it holds no ephemeral node anyway.
const SESSION_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the member electop reads through may take to answer the contact read, when
/// there are others to read through: a frozen member left electop blind far longer.
const READ_LIMIT: Duration = Duration::from_secs(1);

pub(super) async fn run(b: ZkBackend, io: BackendIo) {
    let cancel = io.cancel.clone();
    // The members' health, probed beside the connection (which goes to any one of them).
    let probing = cancel.child_token();
    let _stop_probe = probing.clone().drop_guard();
    let reading = super::members::Reading::default();
    if b.info.clustered {
        // A bad TLS setting is said by the connection; the probe then asks in plain text.
        let tls = super::tls::client_config(&b.cfg).ok().flatten();
        tokio::spawn(super::members::probe(
            tls,
            b.cfg.endpoints.clone(),
            (b.info.id, b.info.name.clone()),
            reading.clone(),
            io.events.clone(),
            probing,
        ));
    }
    let mut f = Follow {
        tracker: ZkTracker::new(
            b.info.id,
            b.info.name.clone(),
            b.cfg.prefix.clone(),
            b.opts.history_limit,
        )
        .with_layout(Layout::of(b.cfg.preset)),
        connect: b.cfg.connect_string(),
        b,
        io,
        life: Lifecycle::new(1, Duration::from_millis(500), Duration::from_secs(10)),
        loaded: false,
        missing: None,
        first_connected: None,
        record: None,
        past: None,
        gaps: Vec::new(),
        record_told: false,
        reading,
        member: None,
    };
    drive(&mut f).await;
}

/// Whether a watch event was the session coming back (to the same member or another).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reconnected {
    Yes,
    No,
}

struct Follow {
    b: ZkBackend,
    io: BackendIo,
    connect: String,
    tracker: ZkTracker,
    life: Lifecycle,
    /// The first read is done: later reads report what changed.
    loaded: bool,
    /// The prefix was not there at the last look: the source's notice says so.
    missing: Option<String>,
    /// Where history starts: electop's own record of earlier runs, else its first connect.
    first_connected: Option<SystemTime>,
    /// electop's own record of this source's leader changes, across runs.
    record: Option<Record>,
    /// What the record held at the start, until the first read puts it back.
    past: Option<Past>,
    /// The stretches the record shows no electop watched.
    gaps: Vec<crate::model::HistoryGap>,
    /// The record's failure is in the notice.
    record_told: bool,
    /// The members the probe saw up, and the one read through, shared with it.
    reading: super::members::Reading,
    /// The member (index in the endpoints) the session is on, when there are several.
    member: Option<usize>,
}

/// One session: the client, its persistent watch on the prefix, the clock of its contact
/// reads, and the member probe's news.
struct Link {
    client: Client,
    watcher: zookeeper_client::PersistentWatcher,
    tick: tokio::time::Interval,
    probed: tokio::sync::watch::Receiver<Vec<bool>>,
}

impl Steps for Follow {
    type Error = ZkError;
    type Link = Link;

    fn lifecycle(&mut self) -> &mut Lifecycle {
        &mut self.life
    }

    fn source(&self) -> Source<'_> {
        let (io, info, one_shot) = (&self.io, &self.b.info, self.b.opts.one_shot);
        Source { io, info, one_shot }
    }

    /// A session, and where history starts; the watch before the read, so a change
    /// between the two is seen twice, never missed.
    async fn connect(&mut self, _from: usize) -> Result<(usize, Link), Stop> {
        let source = self.b.info.id;
        let client = self.dial().await?;
        let history_since = match self.first_connected {
            Some(t) => t,
            None => self.start_record(),
        };
        self.send(SourceEvent::Session {
            source,
            id: super::layout::session_hex(client.session_id().0),
            timeout: client.session_timeout(),
            history_since,
            gaps: self.gaps.clone(),
        })
        .await?;
        let prefix = Layout::of(self.b.cfg.preset).watch_path(&self.b.cfg.prefix);
        let watcher = self.watch(&client, &prefix).await?;
        let mut tick = tokio::time::interval(CONTACT_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let probed = self.reading.subscribe();
        let link = Link {
            client,
            watcher,
            tick,
            probed,
        };
        Ok((self.member.unwrap_or(0), link))
    }

    async fn snapshot(&mut self, l: &mut Link) -> Result<Input, Stop> {
        let read = self.read_all(&l.client).await;
        // The next contact read is a whole interval after this one.
        l.tick.reset();
        read?;
        Ok(Input::SnapshotRead { replay: false })
    }

    async fn follow(&mut self, l: &mut Link) -> Result<Input, Stop> {
        self.next(l).await?;
        Ok(Input::Followed)
    }
}

impl Follow {
    /// The next thing to do on the session: the probe's news, a watch event in the order
    /// the server sent it, a contact read, or the runtime's request.
    async fn next(&mut self, l: &mut Link) -> Result<(), Stop> {
        tokio::select! {
            Ok(()) = l.probed.changed(), if self.several() => match self.member_down() {
                Some(e) => Err(e.into()),
                None => Ok(()),
            },
            ev = l.watcher.changed() => {
                if self.on_event(&l.client, ev).await? == Reconnected::Yes {
                    // zookeeper-client 0.11.2 sends persistent watches again after a
                    // reconnect in a `SetWatches` without them (its `resend_watches` never
                    // raises the index past the one-shot kinds), so the server forgets ours:
                    // add it again, then read what changed meanwhile. Added before the old
                    // one is dropped, so the client keeps the path.
                    let prefix = Layout::of(self.b.cfg.preset).watch_path(&self.b.cfg.prefix);
                    l.watcher = self.watch(&l.client, &prefix).await?;
                    self.read_all(&l.client).await?;
                    // The same session came back: connected again, said by the store.
                    let (source, state) = (self.b.info.id, ConnState::Connected);
                    self.send(SourceEvent::Conn { source, state }).await?;
                }
                Ok(())
            }
            _ = l.tick.tick() => {
                self.contact(&l.client).await?;
                self.check_deposed().await
            }
            cmd = self.io.commands.recv() => serve(&self.io, &self.b.info, cmd, &mut self.tracker).await,
        }
    }

    /// Whether there are several members, so one that stops answering can be left.
    fn several(&self) -> bool {
        self.b.cfg.endpoints.len() > 1
    }

    /// The probe found the member read through down, and another up: time to leave it.
    fn member_down(&self) -> Option<ZkError> {
        let at = self.member?;
        let up = self.reading.up();
        let others = up.iter().enumerate().any(|(i, u)| i != at && *u);
        (up.get(at) == Some(&false) && others)
            .then(|| ZkError::MemberDown(self.b.cfg.endpoints[at].clone()))
    }

    async fn send(&self, event: SourceEvent) -> Result<(), Stop> {
        self.io.events.send(event).await.map_err(|_| Stop::Closed)
    }

    fn reader<'a>(&'a self, client: &'a Client) -> Reader<'a> {
        Reader {
            client,
            connect: &self.connect,
            timeout: self.b.opts.request_timeout,
        }
    }

    /// The persistent recursive watch on the prefix (one `AddWatch` to the server).
    async fn watch(
        &self,
        client: &Client,
        prefix: &str,
    ) -> Result<zookeeper_client::PersistentWatcher, Stop> {
        let add = client.watch(prefix, AddWatchMode::PersistentRecursive);
        match tokio::time::timeout(self.b.opts.request_timeout, add).await {
            Err(_) => Err(self.timeout().into()),
            Ok(w) => Ok(w.map_err(|e| self.client_err(e, prefix))?),
        }
    }

    /// A session: on any member the client picks when there is one, else on one member at a
    /// time, the next after the one before (those the probe saw up first).
    async fn dial(&mut self) -> Result<Client, ZkError> {
        let wait = self.b.opts.request_timeout;
        let cfg = &self.b.cfg;
        self.reading.reads_through(None);
        let connect = async {
            if !self.several() {
                let dialer = super::dial::dialer(cfg)?.timeouts(SESSION_TIMEOUT, wait);
                return Ok((None, dialer.connect(cfg, wait).await?));
            }
            let n = cfg.endpoints.len();
            // The first by the process id, so electops spread over the members as the
            // client's own random pick did; then the next after the one before.
            let start = self
                .member
                .map_or(std::process::id() as usize % n, |i| (i + 1) % n);
            let order = super::members::dial_order(n, start, &self.reading.up());
            let (i, c) = super::dial::connect_one_of(cfg, &order, SESSION_TIMEOUT, wait).await?;
            Ok::<_, ZkError>((Some(i), c))
        };
        // No handshake soon: a server of another kind says what it is when asked its way.
        let (member, client) = tokio::select! {
            r = connect => r?,
            not_zk = inputs::not_zookeeper(&cfg.endpoints) => return Err(not_zk),
        };
        self.member = member;
        self.reading.reads_through(member);
        info!(source = %self.b.info.name, session = %format!("0x{:x}", client.session_id().0), "zookeeper connected");
        Ok(client)
    }

    fn timeout(&self) -> ZkError {
        ZkError::Timeout(self.connect.clone(), self.b.opts.request_timeout)
    }

    fn client_err(&self, e: zookeeper_client::Error, path: &str) -> ZkError {
        ZkError::from_client(e, &self.connect, path, self.b.opts.request_timeout)
    }

    /// The whole tree: the first snapshot, or after a reconnect what changed meanwhile.
    async fn read_all(&mut self, client: &Client) -> Result<(), Stop> {
        let source = self.b.info.id;
        let sent = (Instant::now(), SystemTime::now());
        let reader = self.reader(client);
        let missing = inputs::missing_prefix(&reader, &self.b.cfg).await?;
        let nodes = if self.loaded || missing.is_some() {
            inputs::read(&reader, &self.b.cfg, &mut ()).await?
        } else {
            self.first_read(&reader).await?
        };
        let was_missing = std::mem::replace(&mut self.missing, missing).is_some();
        if self.missing.is_some() || was_missing {
            self.send_notice().await?;
        }
        if self.loaded {
            let applied = self.tracker.resync(&nodes, sent.1);
            self.tell(applied).await?;
        } else {
            self.tracker.load(&nodes);
            let actions = crate::backend::forced::audited_actions(&self.b.info.name);
            self.tracker.audited_at_start(actions.clone());
            let mut restored = match self.past.take() {
                Some(p) => self.tracker.restore(&p.changes, sent.1),
                None => Changes::default(),
            };
            self.audited(&mut restored, actions).await;
            let elections = self.tracker.elections();
            self.send(SourceEvent::Elections { source, elections })
                .await?;
            self.tell(restored).await?;
        }
        self.loaded = true;
        self.send(contact(source, sent)).await
    }

    /// The first read, shown as it goes: the server counts the znodes first (a prefix over
    /// the bound is said before reading it), then each election read is sent at once.
    async fn first_read(&self, reader: &Reader<'_>) -> Result<Vec<super::layout::Znode>, Stop> {
        let cfg = &self.b.cfg;
        let layout = Layout::of(cfg.preset);
        if !layout.deep() {
            return Ok(inputs::read(reader, cfg, &mut ()).await?);
        }
        let total = reader.descendants(&cfg.prefix).await?;
        if total.is_some_and(|n| n > super::read::MAX_NODES) {
            let bound = super::read::MAX_NODES;
            return Err(ZkError::TooMany(bound, cfg.prefix.clone()).into());
        }
        let at = (self.b.info.id, cfg.prefix.as_str(), layout);
        let mut preview = super::preview::Preview::start(&self.io.events, at, total).await;
        Ok(inputs::read(reader, cfg, &mut preview).await?)
    }

    async fn tell(&mut self, applied: Changes) -> Result<(), Stop> {
        self.keep().await?;
        crate::backend::engine::show(&self.io, &self.b.info, applied).await
    }

    /// Opens electop's own record at the first connect: history starts where it does.
    fn start_record(&mut self) -> SystemTime {
        let now = SystemTime::now();
        let key = format!(
            "{} {} {}",
            self.connect,
            self.b.cfg.prefix,
            self.b.cfg.preset.map(|p| p.to_string()).unwrap_or_default()
        );
        // The record is shared by every run on this source: a serve or watch, which keep few
        // changes in memory, must not cut what the next dashboard reads back.
        let kept = self.b.opts.history_limit.max(super::record::KEPT_AT_LEAST);
        let mut record = Record::new(&self.b.opts.history, &key, kept);
        let past = Some(record.start(&self.io, &self.b.info, now));
        self.record = Some(record);
        let since = past.as_ref().and_then(|p| p.since).unwrap_or(now);
        if let Some(p) = past {
            self.gaps = p.gaps.clone();
            self.past = Some(p);
        }
        self.first_connected = Some(since);
        since
    }

    /// A record that cannot be written is said in the source's notice, once (the engine
    /// records the changes).
    async fn keep(&mut self) -> Result<(), Stop> {
        let failed = self.record.as_ref().is_some_and(|r| r.failed().is_some());
        if failed && !self.record_told {
            self.send_notice().await?;
        }
        Ok(())
    }

    /// The source's notice: a missing prefix, a record that cannot be kept; empty takes the
    /// last one away.
    async fn send_notice(&mut self) -> Result<(), Stop> {
        let failed = self.record.as_ref().and_then(Record::failed);
        self.record_told = failed.is_some();
        let failed = failed.map(|f| format!("history is not kept across runs: {f}"));
        let text = [self.missing.clone(), failed]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join("; ");
        let source = self.b.info.id;
        self.send(SourceEvent::Notice { source, text }).await
    }

    async fn on_event(&mut self, client: &Client, ev: WatchedEvent) -> Result<Reconnected, Stop> {
        if ev.event_type == EventType::Session {
            return self.on_session(ev.session_state).await;
        }
        if self.missing.is_some() {
            // Something came where nothing was: the prefix exists now, read it afresh.
            self.read_all(client).await?;
            return Ok(Reconnected::No);
        }
        // A candidate's node came, went or changed: one step of its parent's election, in
        // the order the events came (a re-read of the parent would see later steps too).
        let Some(parent) = parent_of(&ev.path).filter(|p| within(&self.b.cfg.prefix, p)) else {
            return Ok(Reconnected::No);
        };
        let layout = Layout::of(self.b.cfg.preset);
        if !layout.may_hold(&ev.path) {
            return Ok(Reconnected::No);
        }
        let applied = match ev.event_type {
            EventType::NodeDeleted => {
                // The leader's node went: whether its session lives is asked now, so a
                // session close that took all its nodes at once is already applied.
                let held = match self.tracker.deleted_leader_session(parent, &ev.path) {
                    Some(leaving) => self.still_held(client, leaving).await?,
                    None => Default::default(),
                };
                self.tracker.deleted(&ev.path, SystemTime::now(), &held)
            }
            EventType::NodeCreated | EventType::NodeDataChanged => {
                let paths = layout.read_on_event(&ev.path);
                let (read, _) = self.reader(client).data(paths).await?;
                self.tracker.written(parent, read, SystemTime::now())
            }
            _ => return Ok(Reconnected::No),
        };
        self.tell(applied).await?;
        Ok(Reconnected::No)
    }

    async fn on_session(&mut self, state: SessionState) -> Result<Reconnected, Stop> {
        let source = self.b.info.id;
        match state {
            // Its one member gone, the client would wait for it: another is read through.
            SessionState::Disconnected if self.member.is_some() => {
                Err(ZkError::ConnectionLoss.into())
            }
            SessionState::Disconnected => {
                // Stale at once; the client itself moves to another member, or back.
                let error = ZkError::ConnectionLoss.to_string();
                warn!(source = %self.b.info.name, %error, "zookeeper disconnected");
                let retry_at = Instant::now() + SESSION_TIMEOUT / 3;
                let state = ConnState::Down {
                    error,
                    retry_at,
                    lasting: false,
                };
                // The model makes the `disconnected` marker from this transition.
                self.send(SourceEvent::Conn { source, state }).await?;
                Ok(Reconnected::No)
            }
            // The caller watches again and reads what changed meanwhile.
            SessionState::SyncConnected | SessionState::ConnectedReadOnly => Ok(Reconnected::Yes),
            SessionState::Expired => Err(ZkError::SessionExpired.into()),
            SessionState::AuthFailed => Err(ZkError::NoAuth(self.b.cfg.prefix.clone()).into()),
            SessionState::Closed => Err(ZkError::Other("the client was closed".into()).into()),
        }
    }

    async fn contact(&self, client: &Client) -> Result<(), Stop> {
        let sent = (Instant::now(), SystemTime::now());
        let prefix = &self.b.cfg.prefix;
        // With others to read through, a member this slow is left for one of them.
        let member = self.member.map(|i| &self.b.cfg.endpoints[i]);
        let limit = match member {
            Some(_) => self.b.opts.request_timeout.min(READ_LIMIT),
            None => self.b.opts.request_timeout,
        };
        match tokio::time::timeout(limit, client.check_stat(prefix)).await {
            Err(_) => Err(match member {
                Some(m) => ZkError::Stuck(m.clone(), limit).into(),
                None => self.timeout().into(),
            }),
            Ok(Ok(_)) => self.send(contact(self.b.info.id, sent)).await,
            // The session event says so, and the client reconnects by itself.
            Ok(Err(zookeeper_client::Error::ConnectionLoss)) => Ok(()),
            Ok(Err(e)) => Err(self.client_err(e, prefix).into()),
        }
    }
}

/// The store answered as of `sent`; the next answer is due within [`CONTACT_EVERY`].
fn contact(source: crate::model::SourceId, sent: (Instant, SystemTime)) -> SourceEvent {
    crate::backend::engine::contact(source, sent, CONTACT_EVERY)
}

/// The parent of a node path; `None` for the root.
fn parent_of(path: &str) -> Option<&str> {
    match path.rfind('/') {
        None => None,
        Some(0) if path.len() > 1 => Some("/"),
        Some(0) => None,
        Some(i) => Some(&path[..i]),
    }
}

/// Whether `path` is `prefix` or below it: an event on the prefix itself must not make
/// its parent, outside the source, be read as an election.
fn within(prefix: &str, path: &str) -> bool {
    prefix == "/"
        || path
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

mod actions;

#[cfg(test)]
mod tests {
    #[test]
    fn parents_of_event_paths() {
        assert_eq!(super::parent_of("/a/b"), Some("/a"));
        assert_eq!(super::parent_of("/a"), Some("/"));
        assert_eq!(super::parent_of("/"), None);
        assert_eq!(super::parent_of(""), None);
    }

    #[test]
    fn only_parents_at_or_below_the_prefix_are_read() {
        assert!(super::within("/election", "/election"));
        assert!(super::within("/election", "/election/jobs"));
        assert!(!super::within("/election", "/"), "the prefix's own parent");
        assert!(!super::within("/election", "/elections"));
        assert!(super::within("/", "/anything"));
    }
}
