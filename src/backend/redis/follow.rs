//! Following a Redis source: connect, learn whether keyspace events are on, subscribe to
//! them (before the first read, so a change between the two is seen twice, never missed),
//! read every lock key, then re-read a key at each of its events, or everything every
//! second when there are none. A lost connection is shown at once; a reconnect re-reads
//! everything and reports what changed meanwhile.

use std::time::{Duration, Instant, SystemTime};

use futures::StreamExt;
use redis::aio::{MultiplexedConnection, PubSubSink, PubSubStream};
use tracing::info;

use super::RedisBackend;
use super::error::RedisError;
use super::read::{MAX_KEYS, Mode, Server};
use super::tracker::{Applied, Gone, RedisTracker};
use crate::backend::{BackendIo, Backoff, ForcedMark, Request, down_and_wait};
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
        backoff: Backoff::new(Duration::from_millis(500), Duration::from_secs(10)),
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
    backoff: Backoff,
    /// The first read is done: later reads report what changed.
    loaded: bool,
    /// The warning last sent (keys left unread); empty: none.
    notice: String,
}

/// The keyspace-event subscription; the sink is kept, or the subscription would end.
struct Events {
    _sink: PubSubSink,
    stream: PubSubStream,
    /// `__keyspace@<db>__:`, before each key in a channel name.
    channel_prefix: Vec<u8>,
}

impl Follow {
    async fn drive(&mut self) {
        loop {
            let error = match self.session().await {
                Err(Stop::Failed(e)) => e,
                Ok(()) | Err(Stop::Closed) => return,
            };
            let lasting = error.lasting();
            let (io, info) = (&self.io, &self.b.info);
            let go_on =
                down_and_wait(io, info, error.to_string(), lasting, &mut self.backoff).await;
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
        let state = ConnState::Connecting;
        self.send(SourceEvent::Conn { source, state }).await?;
        let server = Server::new(&self.b.cfg, self.b.opts.request_timeout)?;
        let mut conn = server.connect().await?;
        info!(source = %self.b.info.name, "redis connected");
        let mut mode = server.mode(&mut conn).await;
        let mut events = match mode {
            Mode::Events => match self.subscribe(&server).await {
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
        self.read_all(&server, &mut conn, &mode).await?;
        self.backoff.reset();
        let mut tick = tokio::time::interval(CONTACT_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            tokio::select! {
                msg = next_event(&mut events) => match msg {
                    None => return Err(RedisError::Lost(server.addr.clone()).into()),
                    Some((key, event)) => self.on_event(&server, &mut conn, key, &event).await?,
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
                    Mode::Poll(_) => self.read_all(&server, &mut conn, &mode).await?,
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

    async fn subscribe(&self, server: &Server) -> Result<Events, RedisError> {
        let mut pubsub = server.pubsub().await?;
        let channel_prefix = format!("__keyspace@{}__:", server.db).into_bytes();
        let mut pattern = channel_prefix.clone();
        pattern.extend_from_slice(self.b.cfg.prefix.as_bytes());
        server.within(pubsub.psubscribe(pattern)).await?;
        let (sink, stream) = pubsub.split();
        Ok(Events {
            _sink: sink,
            stream,
            channel_prefix,
        })
    }

    /// Every lock key: the first snapshot, a poll, or after a reconnect what changed.
    async fn read_all(
        &mut self,
        server: &Server,
        conn: &mut MultiplexedConnection,
        mode: &Mode,
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
            let applied = self
                .tracker
                .resync(&reads, Instant::now(), SystemTime::now());
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
        let state = ConnState::Connected;
        self.send(SourceEvent::Conn { source, state }).await?;
        self.send(contact(source, sent)).await?;
        if !self.loaded {
            self.loaded = true;
            self.send(SourceEvent::Synced { source }).await?;
        }
        Ok(())
    }

    /// A keyspace event on `key`: read it again; the event says why it went, if it did.
    async fn on_event(
        &mut self,
        server: &Server,
        conn: &mut MultiplexedConnection,
        key: Vec<u8>,
        event: &str,
    ) -> Result<(), Stop> {
        let gone = match event {
            "expired" => Gone::Expired,
            "del" | "unlink" => Gone::Deleted,
            "evicted" => Gone::Evicted,
            _ => Gone::Unseen,
        };
        let reads = server.read(conn, std::slice::from_ref(&key)).await?;
        let Some(read) = reads.first() else {
            return Ok(());
        };
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

/// The next keyspace event (its key and the event's name); `None` when the subscription's
/// connection ended. Without a subscription (polling), never.
async fn next_event(events: &mut Option<Events>) -> Option<(Vec<u8>, String)> {
    let Some(ev) = events else {
        return std::future::pending().await;
    };
    loop {
        let msg = ev.stream.next().await?;
        let channel: Vec<u8> = msg.get_channel().unwrap_or_default();
        let Some(key) = channel.strip_prefix(ev.channel_prefix.as_slice()) else {
            continue;
        };
        let event = String::from_utf8_lossy(msg.get_payload_bytes()).into_owned();
        return Some((key.to_vec(), event));
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
