//! Following a Redis source: connect, learn whether keyspace events are on, subscribe to
//! them (before the first read, so a change between the two is seen twice, never missed),
//! read every lock key, then apply each keyspace event in the order Redis sent it, or
//! re-read everything every second when there are none. A lost connection is shown at
//! once; a reconnect re-reads everything and reports what changed meanwhile.
//! How an event is applied, and why its order holds across the two connections, is in
//! `events.rs`. Events that may predate the full read (received before its fence) are only
//! re-read and compared: the full read already holds what they did.

use std::time::{Duration, Instant, SystemTime};

use redis::aio::MultiplexedConnection;
use tracing::info;

use super::RedisBackend;
use super::error::RedisError;
use super::events::{Events, KeyEvent, removal};
use super::lifecycle::{Input, Lifecycle};
use super::read::{MAX_KEYS, Mode, Server};
use super::tracker::{Applied, Gone, Read, RedisTracker};
use crate::backend::{BackendIo, ForcedMark, Request, down_and_wait};
use crate::model::{ConnState, SourceEvent, SourceNotice};

type Stop = crate::backend::Stop<RedisError>;

/// How often the server is asked something (a `PING`, or the poll itself), which proves what
/// is shown is current.
const CONTACT_EVERY: Duration = Duration::from_secs(1);

pub(super) async fn run(b: RedisBackend, io: BackendIo) {
    let cancel = io.cancel.clone();
    let mut f = Follow {
        tracker: RedisTracker::new(b.info.id, b.info.name.clone(), b.opts.history_limit),
        b,
        io,
        life: Lifecycle::new(Duration::from_millis(500), Duration::from_secs(10)),
        loaded: false,
        notice: String::new(),
    };
    tokio::select! {
        _ = f.drive() => {}
        _ = cancel.cancelled() => {}
    }
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

impl Follow {
    async fn drive(&mut self) {
        loop {
            let error = match self.session().await {
                Err(Stop::Failed(e)) => e,
                Ok(()) | Err(Stop::Closed) => return,
            };
            let lasting = error.lasting();
            self.life.on(Input::Failed);
            let (io, info) = (&self.io, &self.b.info);
            // Every failed retry says so (its new retry time); readers hear one
            // `disconnected` per outage, which the read model decides.
            let (error, backoff) = (error.to_string(), self.life.backoff());
            let go_on = down_and_wait(io, info, error, lasting, backoff).await;
            if !go_on {
                return;
            }
        }
    }

    async fn send(&self, event: SourceEvent) -> Result<(), Stop> {
        self.io.events.send(event).await.map_err(|_| Stop::Closed)
    }

    /// One connection, from dialling until it fails.
    async fn session(&mut self) -> Result<(), Stop> {
        let source = self.b.info.id;
        if self.life.on(Input::Dialling).connecting {
            let state = ConnState::Connecting;
            self.send(SourceEvent::Conn { source, state }).await?;
        }
        let server = Server::new(&self.b.cfg, self.b.opts.request_timeout)?;
        let mut conn = server.connect().await?;
        info!(source = %self.b.info.name, "redis connected");
        let mut mode = server.mode(&mut conn).await;
        let mut events = match mode {
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
        self.read_all(&server, &mut conn, &mode, true).await?;
        // Events received so far may predate the read: re-read, compared with it.
        if let Some(ev) = events.as_mut() {
            ev.fence(&server).await?;
            for (key, event) in ev.take_pending() {
                self.on_early_event(&server, &mut conn, key, &event).await?;
            }
        }
        let mut tick = tokio::time::interval(CONTACT_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            tokio::select! {
                msg = next_event(&mut events) => match msg {
                    None => return Err(RedisError::Lost(server.addr.clone()).into()),
                    Some(e) => self.on_event(&server, &mut conn, &mut events, e).await?,
                },
                _ = tick.tick() => {
                    let settled = self.tracker.settle(Instant::now());
                    if !settled.is_empty() {
                        let elections = settled;
                        self.send(SourceEvent::Elections { source, elections }).await?;
                    }
                    match mode {
                    Mode::Events => {
                        let sent = (Instant::now(), SystemTime::now());
                        server.ping(&mut conn).await?;
                        self.send(contact(source, sent)).await?;
                    }
                    Mode::Poll(_) => self.read_all(&server, &mut conn, &mode, false).await?,
                    }
                }
                cmd = self.io.commands.recv() => match cmd {
                    None => return Err(Stop::Closed),
                    Some(Request::Forced { election, mark }) => self.forced(&election, mark).await?,
                    Some(Request::Visible { .. }) => {}
                },
            }
        }
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
        let (keys, more) = server.scan(conn, &self.b.cfg.prefix).await?;
        let reads = server.read(conn, &keys).await?;
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
        if self.loaded {
            // After a reconnect, what changed meanwhile was not watched.
            let gap = connection_first;
            let (now, wall) = (Instant::now(), SystemTime::now());
            let applied = self.tracker.resync(&reads, now, wall, gap);
            self.tell(applied).await?;
        } else {
            self.tracker.load(&reads);
            if let Some(path) = crate::admin::audit::default_path() {
                let actions = crate::admin::audit_tail::recent(&path, &self.b.info.name);
                self.tracker
                    .audited(&actions, Instant::now(), SystemTime::now());
            }
            let elections = self.tracker.elections();
            self.send(SourceEvent::Elections { source, elections })
                .await?;
        }
        self.loaded = true;
        // Connected once per connection; a poll is only contact.
        let tell = if connection_first {
            self.life.on(Input::Read)
        } else {
            Default::default()
        };
        if tell.connected {
            let state = ConnState::Connected;
            self.send(SourceEvent::Conn { source, state }).await?;
        }
        self.send(contact(source, sent)).await?;
        if tell.synced {
            self.send(SourceEvent::Synced { source }).await?;
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

    async fn apply(&mut self, read: &Read, gone: Gone) -> Result<(), Stop> {
        let applied = self.tracker.apply(read, gone, SystemTime::now());
        self.tell(applied).await
    }

    /// An admin action on `election` (ours, or another electop's from the audit log).
    async fn forced(&mut self, election: &str, mark: Option<ForcedMark>) -> Result<(), Stop> {
        let (now, wall) = (Instant::now(), SystemTime::now());
        let Some(e) = self.tracker.forced(election, mark, now, wall) else {
            return Ok(());
        };
        let told = crate::backend::forced::attributed(&self.b.info.name, &e);
        let source = self.b.info.id;
        self.send(SourceEvent::Elections {
            source,
            elections: vec![e],
        })
        .await?;
        match told {
            Some(ev) => self.send(SourceEvent::Happened(ev)).await,
            None => Ok(()),
        }
    }

    async fn tell(&self, applied: Applied) -> Result<(), Stop> {
        let source = self.b.info.id;
        if !applied.changed.is_empty() {
            let elections = applied.changed;
            self.send(SourceEvent::Elections { source, elections })
                .await?;
        }
        for e in applied.events {
            self.send(SourceEvent::Happened(e)).await?;
        }
        Ok(())
    }
}

/// The server answered as of `sent`; the next answer is due within [`CONTACT_EVERY`].
fn contact(source: crate::model::SourceId, sent: (Instant, SystemTime)) -> SourceEvent {
    SourceEvent::Contact {
        source,
        at: sent.0,
        wall: sent.1,
        next_within: CONTACT_EVERY,
    }
}

/// The next keyspace event; `None` when the subscription's connection ended. Without a
/// subscription (polling), never.
async fn next_event(events: &mut Option<Events>) -> Option<KeyEvent> {
    match events {
        Some(ev) => ev.next().await,
        None => std::future::pending().await,
    }
}
