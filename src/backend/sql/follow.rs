//! A SQL table source's steps for the engine's life cycle: connect (a pool), snapshot (the
//! table's schema checked, the poll made ready), follow (a poll each tick).

use std::sync::PoisonError;
use std::time::{Duration, Instant, SystemTime};

use sqlx::pool::PoolConnection;
use sqlx::{Any, AnyPool};
use tokio::time::{Interval, MissedTickBehavior};
use tracing::{debug, info};

use super::errors::SqlError;
use super::poll::{Polled, poll_once};
use super::tracker::{Poll, SqlTracker};
use super::{SqlBackend, dial::open, schema::read_schema};
use crate::backend::BackendIo;
use crate::backend::engine::contact;
use crate::backend::engine::drive::{Source, Steps, drive};
use crate::backend::engine::history;
use crate::backend::engine::lifecycle::{Input, Lifecycle};
use crate::backend::forced::{Marks as _, serve};
use crate::model::SourceEvent;

/// The tracker of `b`'s rows, with the history its journal read back.
fn book(b: &SqlBackend, io: &BackendIo) -> SqlTracker {
    let mut tracker = SqlTracker::new(
        b.info.id,
        b.info.name.clone(),
        b.settings.scheme.scheme(),
        b.settings.scheme.term_ms(),
        b.opts.history_limit.max(1),
    );
    if b.opts.one_shot {
        tracker.hand_over();
    }
    // A source whose table is not found yet has no history of its own.
    if b.unresolved.is_some() {
        return tracker;
    }
    tracker.audited_at_start(crate::backend::forced::audited_actions(&b.info.name));
    let only = b.opts.only_elections(&b.info.short);
    let (opts, info) = (&b.opts, &b.info);
    let recorded = history::open(io, info, &opts.history, opts.history_limit, &only);
    tracker.preload(recorded);
    tracker
}

/// Why a phase did not give its input.
type Stop = crate::backend::Stop<SqlError>;

pub(super) async fn run(b: SqlBackend, io: BackendIo) {
    drive(&mut Follow::new(b, io)).await;
}

struct Follow {
    /// `--sql URL` alone, its database down at start: its table is found in the catalog at
    /// the first snapshot, and this becomes the backend reading it.
    b: SqlBackend,
    io: BackendIo,
    tracker: SqlTracker,
    conn: Lifecycle,
    /// The keys of the rows read (`history ELECTION`: [`crate::backend::BackendOptions::store_keys`]);
    /// empty: every row.
    keys: Vec<String>,
}

/// The pool a connect opens, and the poll, known once the snapshot has read the deadline
/// column's type.
struct Link {
    pool: AnyPool,
    poll: Option<Polling>,
}

/// The poll's statement and clock, the connection it runs on, and the table's change mark
/// it last read there: SQLite's `data_version` means something only on one connection.
struct Polling {
    query: String,
    tick: Interval,
    /// Only ever reached through `&mut` (`get_mut`, no locking): the mutex makes the
    /// follower `Sync`, which a connection of sqlx's `Any` driver is not.
    conn: std::sync::Mutex<PoolConnection<Any>>,
    /// None when the poll does not check for change.
    mark: Option<Option<String>>,
}

impl Steps for Follow {
    type Error = SqlError;
    type Link = Link;

    fn lifecycle(&mut self) -> &mut Lifecycle {
        &mut self.conn
    }

    fn source(&self) -> Source<'_> {
        let (io, info, one_shot) = (&self.io, &self.b.info, self.b.opts.one_shot);
        Source { io, info, one_shot }
    }

    async fn connect(&mut self, _from: usize) -> Result<(usize, Link), Stop> {
        let pool = open(&self.b.settings, self.b.opts.request_timeout).await?;
        Ok((0, Link { pool, poll: None }))
    }

    /// The table checked, the poll made for its deadline column's type, and the rows read
    /// once: the first state, or what changed while the source was away.
    async fn snapshot(&mut self, link: &mut Link) -> Result<Input, Stop> {
        // A poll's connection from before goes back to the pool: the new one starts afresh.
        link.poll = None;
        let pool = &link.pool;
        if self.b.unresolved.is_some() {
            self.resolve(pool).await?;
        }
        let schema = read_schema(&self.b.settings, pool).await?;
        // `status` and `history` poll once: no change to check for (nor does a keyed poll).
        let keys = self.keys.len();
        let checking = !self.b.opts.one_shot && keys == 0;
        let s = &self.b.settings;
        let query = s.keyed_poll_query(&schema.stamp_type, &schema.key_type, keys, checking);
        let acquire = tokio::time::timeout(self.b.opts.request_timeout, pool.acquire()).await;
        let conn = match acquire {
            Ok(c) => c.map_err(|e| SqlError::from_sqlx(&e, s, &s.url.0))?,
            Err(_) => {
                let (place, timeout) = (s.url.redacted(), self.b.opts.request_timeout);
                return Err(SqlError::PollTimeout { place, timeout }.into());
            }
        };
        let mut tick = tokio::time::interval(self.b.settings.poll);
        tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
        // The next poll is a whole interval after this one.
        tick.reset();
        let poll = link.poll.insert(Polling {
            query,
            tick,
            conn: std::sync::Mutex::new(conn),
            mark: checking.then_some(None),
        });
        self.poll_now(poll).await?;
        info!(source = %self.b.info.name, "sql connected");
        Ok(Input::SnapshotRead { replay: false })
    }

    /// Waits for the next tick, meanwhile serving commands, then polls once.
    async fn follow(&mut self, link: &mut Link) -> Result<Input, Stop> {
        // Made by every snapshot, which comes first.
        let Some(poll) = link.poll.as_mut() else {
            return Ok(Input::Failed(
                crate::backend::engine::lifecycle::Failure::Transient,
            ));
        };
        loop {
            tokio::select! {
                _ = poll.tick.tick() => break,
                cmd = self.io.commands.recv() => serve(&self.io, &self.b.info, cmd, &mut self.tracker).await?,
            }
        }
        self.poll_now(poll).await?;
        Ok(Input::Followed)
    }

    async fn release(&mut self, link: Link) {
        // First: closing the pool waits for the poll's connection to come back.
        drop(link.poll);
        link.pool.close().await;
    }
}

impl Follow {
    /// Reads every row once, unless the table is unchanged, and shows what changed.
    async fn poll_now(&mut self, p: &mut Polling) -> Result<(), Stop> {
        let sent = (Instant::now(), SystemTime::now());
        let s = &self.b.settings;
        let timeout = self.b.opts.request_timeout;
        let conn = p.conn.get_mut().unwrap_or_else(PoisonError::into_inner);
        let (conn, t) = (&mut **conn, &mut self.tracker);
        let query = (p.query.as_str(), &self.keys[..]);
        let polled = poll_once(s, conn, query, timeout, t, p.mark.as_mut()).await?;
        let source = &self.b.info.name;
        match polled {
            Polled::Read(poll) => {
                debug!(%source, "sql poll: table read");
                self.deliver(Some(poll), sent).await
            }
            Polled::Unchanged => {
                debug!(%source, "sql poll: table unchanged, not read");
                self.deliver(None, sent).await
            }
        }
    }

    fn new(b: SqlBackend, io: BackendIo) -> Follow {
        let tracker = book(&b, &io);
        let keys = b.opts.store_keys(&b.info.short);
        Follow {
            keys,
            b,
            io,
            tracker,
            conn: Lifecycle::new(1, Duration::from_millis(500), Duration::from_secs(10)),
        }
    }

    /// The database answered for the first time: the first known table in its catalog is the
    /// one read from now on (said in the source's notice); none is a lasting failure, since
    /// waiting will not make one.
    async fn resolve(&mut self, pool: &AnyPool) -> Result<(), Stop> {
        let Some(cfg) = &self.b.unresolved else {
            return Ok(());
        };
        let found = super::discover::tables_in(&self.b.settings, pool, cfg.table.as_deref()).await;
        let next = found
            .and_then(|tables| super::unfound::resolved(&self.b, cfg, &tables))
            .map_err(SqlError::Schema)?;
        self.send(SourceEvent::Info(next.info.clone())).await?;
        self.tracker = book(&next, &self.io);
        self.b = next;
        Ok(())
    }

    async fn send(&self, event: SourceEvent) -> Result<(), Stop> {
        self.io.events.send(event).await.map_err(|_| Stop::Closed)
    }

    /// Sends what a poll changed (nothing for an unchanged table), then the contact that
    /// marks the source fresh: an unchanged table was read all the same.
    async fn deliver(
        &mut self,
        poll: Option<Poll>,
        sent: (Instant, SystemTime),
    ) -> Result<(), Stop> {
        let source = self.b.info.id;
        if let Some(poll) = poll {
            let changes = self.tracker.apply(poll);
            crate::backend::engine::show(&self.io, &self.b.info, changes).await?;
        }
        // The rows are true as of when the poll was sent, not when it returned.
        self.send(contact(source, sent, self.b.settings.poll)).await
    }
}
