//! Following a Redis source: connect, learn whether keyspace events are on, subscribe to
//! them (before the first read, so a change between the two is seen twice, never missed),
//! read every lock key, then apply each keyspace event in the order Redis sent it, or
//! re-read everything every second when there are none. A lost connection is shown at
//! once; a reconnect re-reads everything and reports what changed meanwhile.
//! How an event is applied, and why its order holds across the two connections, is in
//! `events.rs`. Events that may predate the full read (received before its fence) are only
//! re-read and compared: the full read already holds what they did.

use std::collections::HashSet;
use std::time::{Duration, Instant, SystemTime};

use redis::aio::MultiplexedConnection;
use tracing::info;

use super::RedisBackend;
use super::error::RedisError;
use super::events::{Events, KeyEvent, removal};
use super::read::{MAX_KEYS, Mode, Server};
use super::tracker::{Gone, Read, RedisTracker};
use crate::backend::BackendIo;
use crate::backend::change::Changes;
use crate::backend::engine::drive::{Source, Steps, drive};
use crate::backend::engine::history;
use crate::backend::engine::lifecycle::{Input, Lifecycle};
use crate::backend::forced::{Marks as _, serve};
use crate::model::{SourceEvent, SourceNotice};

type Stop = crate::backend::Stop<RedisError>;

/// How often the server is asked something (a `PING`, or the poll itself), which proves what
/// is shown is current.
const CONTACT_EVERY: Duration = Duration::from_secs(1);

pub(super) async fn run(b: RedisBackend, io: BackendIo) {
    let recorded = history::open(
        &io,
        &b.info,
        &b.opts.history,
        b.opts.history_limit,
        &b.opts.only_elections(&b.info.short),
    );
    let past = history::by_election(recorded);
    let mut tracker = RedisTracker::new(b.info.id, b.info.name.clone(), b.opts.history_limit, past);
    tracker.audited_at_start(crate::backend::forced::audited_actions(&b.info.name));
    let mut f = Follow {
        tracker,
        b,
        io,
        life: Lifecycle::new(1, Duration::from_millis(500), Duration::from_secs(10)),
        loaded: false,
        notice: String::new(),
    };
    drive(&mut f).await;
}

struct Follow {
    b: RedisBackend,
    io: BackendIo,
    tracker: RedisTracker,
    life: Lifecycle,
    /// The first read is done: later reads report what changed.
    loaded: bool,
    /// The warning last sent (keys left unread); empty: none.
    notice: String,
}

/// One connection: the server, its commands' connection, whether it is followed by keyspace
/// events (their subscription) or polled, and the clock of its contact.
struct Link {
    server: Server,
    conn: MultiplexedConnection,
    mode: Mode,
    events: Option<Events>,
    tick: tokio::time::Interval,
}

impl Steps for Follow {
    type Error = RedisError;
    type Link = Link;

    fn lifecycle(&mut self) -> &mut Lifecycle {
        &mut self.life
    }

    fn source(&self) -> Source<'_> {
        let (io, info, one_shot) = (&self.io, &self.b.info, self.b.opts.one_shot);
        Source { io, info, one_shot }
    }

    /// Dials, learns whether keyspace events are on, and subscribes to them before the
    /// first read, so a change between the two is seen twice, never missed.
    async fn connect(&mut self, _from: usize) -> Result<(usize, Link), Stop> {
        let server = Server::new(&self.b.cfg, self.b.opts.request_timeout)?;
        let mut conn = server.connect().await?;
        info!(source = %self.b.info.name, "redis connected");
        let mut mode = server.mode(&mut conn).await;
        let events = match mode {
            Mode::Events => match Events::subscribe(&server, &self.b.cfg.prefix).await {
                Ok(ev) => Some(ev),
                // The user may not subscribe: polled, and the notice says why.
                Err(RedisError::NoPerm(_, _, why)) => {
                    mode = Mode::Poll(format!("PSUBSCRIBE to keyspace events was refused ({why})"));
                    None
                }
                Err(e) => return Err(e.into()),
            },
            Mode::Poll(_) => None,
        };
        let mut tick = tokio::time::interval(CONTACT_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let link = Link {
            server,
            conn,
            mode,
            events,
            tick,
        };
        Ok((0, link))
    }

    /// Every lock key read; then the events received meanwhile, which may predate the
    /// read, re-read and compared with it.
    async fn snapshot(&mut self, l: &mut Link) -> Result<Input, Stop> {
        self.first_read(l).await?;
        Ok(Input::SnapshotRead { replay: false })
    }

    /// The next keyspace event, in the order Redis sent it; or, each [`CONTACT_EVERY`], a
    /// `PING` (events) or a poll; meanwhile the runtime's requests.
    async fn follow(&mut self, l: &mut Link) -> Result<Input, Stop> {
        self.next(l).await?;
        Ok(Input::Followed)
    }
}

impl Follow {
    async fn send(&self, event: SourceEvent) -> Result<(), Stop> {
        self.io.events.send(event).await.map_err(|_| Stop::Closed)
    }

    async fn first_read(&mut self, l: &mut Link) -> Result<(), Stop> {
        self.read_all(&l.server, &mut l.conn, &l.mode, true).await?;
        self.early_events(l).await?;
        // The next contact is a whole interval after this read.
        l.tick.reset();
        Ok(())
    }

    /// The events that came while keys were read, which may predate the read: each re-read
    /// and compared with it.
    async fn early_events(&mut self, l: &mut Link) -> Result<(), Stop> {
        if let Some(ev) = l.events.as_mut() {
            ev.fence(&l.server).await?;
            for (key, event) in ev.take_pending() {
                self.on_early_event(&l.server, &mut l.conn, key, &event)
                    .await?;
            }
        }
        Ok(())
    }

    async fn next(&mut self, l: &mut Link) -> Result<(), Stop> {
        let source = self.b.info.id;
        tokio::select! {
            msg = next_event(&mut l.events) => match msg {
                None => Err(RedisError::Lost(l.server.addr.clone()).into()),
                Some(e) => self.on_event(&l.server, &mut l.conn, &mut l.events, e).await,
            },
            _ = l.tick.tick() => {
                let settled = self.tracker.settle(Instant::now());
                if !settled.is_empty() {
                    let elections = settled;
                    self.send(SourceEvent::Elections { source, elections }).await?;
                }
                let sent = (Instant::now(), SystemTime::now());
                let now = self.recheck(l).await?;
                match l.mode {
                    Mode::Events if now => self.send(contact(source, sent)).await,
                    Mode::Events => {
                        l.server.ping(&mut l.conn).await?;
                        self.send(contact(source, sent)).await
                    }
                    Mode::Poll(_) => self.read_all(&l.server, &mut l.conn, &l.mode, false).await,
                }
            }
            cmd = self.io.commands.recv() => serve(&self.io, &self.b.info, cmd, &mut self.tracker).await,
        }
    }

    /// Whether keyspace events were turned on or off since the last contact: on, the
    /// subscription is made before the next read (what changed in between is read, never
    /// missed); off, the source is polled from this tick, its notice saying why. `true`:
    /// the server answered, which is contact.
    async fn recheck(&mut self, l: &mut Link) -> Result<bool, Stop> {
        let Some(now) = l.server.events_now(&mut l.conn).await? else {
            return Ok(false);
        };
        match (&l.mode, now) {
            (Mode::Poll(_), Mode::Events) => {
                match Events::subscribe(&l.server, &self.b.cfg.prefix).await {
                    Ok(ev) => {
                        info!(source = %self.b.info.name, "keyspace events turned on: live");
                        l.events = Some(ev);
                        l.mode = Mode::Events;
                        // Subscribed, then read: polled until now, so nothing went unwatched.
                        self.read_all(&l.server, &mut l.conn, &l.mode, false)
                            .await?;
                        self.early_events(l).await?;
                    }
                    // Not allowed to subscribe: polled still, as at the start.
                    Err(RedisError::NoPerm(..)) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            (Mode::Events, Mode::Poll(why)) => {
                info!(source = %self.b.info.name, %why, "keyspace events turned off: polled");
                l.events = None;
                l.mode = Mode::Poll(why);
                self.read_all(&l.server, &mut l.conn, &l.mode, false)
                    .await?;
            }
            (Mode::Poll(_), Mode::Poll(why)) => l.mode = Mode::Poll(why),
            (Mode::Events, Mode::Events) => {}
        }
        Ok(true)
    }

    /// Every lock key: the first snapshot, a poll, or after a reconnect what changed.
    /// `connection_first`: the first read of this connection (else a poll).
    async fn read_all(
        &mut self,
        server: &Server,
        conn: &mut MultiplexedConnection,
        mode: &Mode,
        connection_first: bool,
    ) -> Result<(), Stop> {
        let source = self.b.info.id;
        let sent = (Instant::now(), SystemTime::now());
        if self.loaded {
            let (keys, more) = self.scan(server, conn).await?;
            let reads = server.read(conn, &keys).await?;
            self.notices(mode, more).await?;
            // After a reconnect, what changed meanwhile was not watched.
            let gap = connection_first;
            let (now, wall) = (Instant::now(), SystemTime::now());
            let applied = self.tracker.resync(&reads, now, wall, gap);
            self.tell(applied).await?;
        } else {
            self.first_load(server, conn, mode).await?;
        }
        self.loaded = true;
        self.send(contact(source, sent)).await
    }

    /// The first read, shown a `SCAN` batch at a time as it is read, as ZooKeeper's is: the
    /// dashboard's first frame follows the first thousand keys, not all of them (at a large
    /// prefix the whole read and its load were most of the first frame's wait). Then the
    /// history's elections with no key left, and the holders the audit log says an action
    /// removed. Past [`MAX_KEYS`], the keys read are the first the scan gave (`status`: the
    /// first in key order, as a poll's).
    async fn first_load(
        &mut self,
        server: &Server,
        conn: &mut MultiplexedConnection,
        mode: &Mode,
    ) -> Result<(), Stop> {
        self.notices(mode, false).await?;
        let at = SystemTime::now();
        // SCAN may give a key more than once.
        let mut seen: HashSet<Vec<u8>> = HashSet::new();
        let (mut cursor, mut more) = (0, false);
        loop {
            let prefix = &self.b.cfg.prefix;
            let (next, keys) = if self.b.opts.one_shot {
                // `status` prints the whole read at once: read, loaded and sent as one part
                // (in parts, it cost more CPU for nothing shown sooner).
                let (keys, over) = self.scan(server, conn).await?;
                more = over;
                (0, keys)
            } else {
                let (next, batch) = server.scan_step(conn, prefix, cursor).await?;
                let mut keys: Vec<Vec<u8>> = batch
                    .into_iter()
                    .filter(|k| seen.insert(k.clone()))
                    .collect();
                if seen.len() > MAX_KEYS {
                    keys.truncate(keys.len() - (seen.len() - MAX_KEYS));
                    more = true;
                }
                (next, keys)
            };
            let reads = server.read(conn, &keys).await?;
            let (changes, elections) = self.tracker.load_part(&reads, at);
            self.show(elections).await?;
            self.tell(changes).await?;
            if more || next == 0 {
                break;
            }
            cursor = next;
        }
        let (changes, elections) = self.tracker.load_end(at, self.b.opts.retention);
        self.show(elections).await?;
        self.tell(changes).await?;
        if let Some(path) = crate::admin::audit::default_path() {
            let actions = crate::admin::audit_tail::recent(&path, &self.b.info.name);
            let marked = self
                .tracker
                .audited(&actions, Instant::now(), SystemTime::now());
            self.show(marked).await?;
        }
        self.notices(mode, more).await
    }

    /// Elections as read, if any.
    async fn show(&self, elections: Vec<crate::model::Election>) -> Result<(), Stop> {
        if elections.is_empty() {
            return Ok(());
        }
        let source = self.b.info.id;
        self.send(SourceEvent::Elections { source, elections })
            .await
    }

    /// How the source is followed, and whether keys were left unread, each sent when it
    /// changed.
    async fn notices(&mut self, mode: &Mode, more: bool) -> Result<(), Stop> {
        let source = self.b.info.id;
        // How the source is followed: information, shown dim like what electop found.
        let found = Some(SourceNotice::Found(mode.notice()));
        if self.b.info.notice != found {
            self.b.info.notice = found;
            self.send(SourceEvent::Info(self.b.info.clone())).await?;
        }
        // Keys left unread: a warning, until the pattern matches fewer.
        let notice = if more {
            format!(
                "only the first {MAX_KEYS} keys matching {} are read: narrow --prefix",
                self.b.cfg.prefix
            )
        } else {
            String::new()
        };
        if notice != self.notice {
            self.notice = notice.clone();
            self.send(SourceEvent::Notice {
                source,
                text: notice,
            })
            .await?;
        }
        Ok(())
    }

    /// A keyspace event, in the order Redis sent it: a removal is a loss as told; a write
    /// is read, then fenced, and applied only when no later event of the key came before
    /// the fence (else the read may show a later step, whose own event follows).
    async fn on_event(
        &mut self,
        server: &Server,
        conn: &mut MultiplexedConnection,
        events: &mut Option<Events>,
        (key, event): KeyEvent,
    ) -> Result<(), Stop> {
        if let Some(gone) = removal(&event) {
            let at = Instant::now();
            let read = Read {
                key,
                held: None,
                at,
            };
            return self.apply(&read, gone).await;
        }
        if let Some(ev) = events.as_mut() {
            ev.absorb_writes_of(&key, server)?;
        }
        let reads = server.read(conn, std::slice::from_ref(&key)).await?;
        if let Some(ev) = events.as_mut() {
            ev.fence(server).await?;
            if ev.pending_for(&key) {
                return Ok(());
            }
        }
        match reads.first() {
            Some(r) if r.held.is_some() => self.apply(r, Gone::Unseen).await,
            // Gone with no event of its removal (`FLUSHDB` tells none): why is not known.
            Some(r) => self.apply(r, Gone::Gap).await,
            None => Ok(()),
        }
    }

    /// An event that may predate the full read: the key read again and compared, the
    /// event saying why it went, if it did.
    async fn on_early_event(
        &mut self,
        server: &Server,
        conn: &mut MultiplexedConnection,
        key: Vec<u8>,
        event: &str,
    ) -> Result<(), Stop> {
        let gone = removal(event).unwrap_or(Gone::Unseen);
        let reads = server.read(conn, std::slice::from_ref(&key)).await?;
        match reads.first() {
            Some(r) => self.apply(r, gone).await,
            None => Ok(()),
        }
    }

    /// Every lock key the pattern matches (and whether some were left unread), or only the
    /// keys a command asked for.
    async fn scan(
        &self,
        server: &Server,
        conn: &mut MultiplexedConnection,
    ) -> Result<(Vec<Vec<u8>>, bool), Stop> {
        Ok(match self.keys() {
            None => server.scan(conn, &self.b.cfg.prefix).await?,
            Some(asked) => (asked, false),
        })
    }

    /// The one election's keys a command asked for (`history ELECTION`) that the pattern
    /// matches, read each as it is rather than a `SCAN` of every lock key; none: scan.
    fn keys(&self) -> Option<Vec<Vec<u8>>> {
        let asked = self.b.opts.store_keys(&self.b.info.short);
        if asked.is_empty() {
            return None;
        }
        let pattern = self.b.cfg.prefix.as_bytes();
        let mut keys: Vec<Vec<u8>> = (asked.into_iter().map(String::into_bytes))
            .filter(|k| super::participant::glob(pattern, k))
            .collect();
        keys.dedup();
        Some(keys)
    }

    async fn apply(&mut self, read: &Read, gone: Gone) -> Result<(), Stop> {
        let applied = self.tracker.apply(read, gone, SystemTime::now());
        self.tell(applied).await
    }

    async fn tell(&mut self, changes: Changes) -> Result<(), Stop> {
        crate::backend::engine::show(&self.io, &self.b.info, changes).await
    }
}

/// The server answered as of `sent`; the next answer is due within [`CONTACT_EVERY`].
fn contact(source: crate::model::SourceId, sent: (Instant, SystemTime)) -> SourceEvent {
    crate::backend::engine::contact(source, sent, CONTACT_EVERY)
}

/// The next keyspace event; `None` when the subscription's connection ended. Without a
/// subscription (polling), never.
async fn next_event(events: &mut Option<Events>) -> Option<KeyEvent> {
    match events {
        Some(ev) => ev.next().await,
        None => std::future::pending().await,
    }
}
