//! A session-lock source's steps for the engine's life cycle: connect (the SQL backend's
//! pool), snapshot (the server's lock views checked and the names resolved), then a read of
//! every lock each `poll`.

use crate::backend::engine::history;
use std::time::{Duration, Instant, SystemTime};

use sqlx::AnyPool;
use tokio::time::{Interval, MissedTickBehavior};

use super::naming::Resolved;
use super::tracker::SessionLockTracker;
use super::{SessionLockBackend, alive, check, read, resolve};
use crate::backend::BackendIo;
use crate::backend::engine::contact;
use crate::backend::engine::drive::{Source, Steps, drive};
use crate::backend::engine::lifecycle::{Input, Lifecycle};
use crate::backend::forced::{Marks as _, serve};
use crate::backend::sql::{SqlError, open};
use crate::model::SourceEvent;

type Stop = crate::backend::Stop<SqlError>;

pub(super) async fn run(b: SessionLockBackend, io: BackendIo) {
    let user = url::Url::parse(&b.settings.url.0)
        .map(|u| u.username().to_string())
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "this user".into());
    let recorded = history::open(
        &io,
        &b.info,
        &b.opts.history,
        b.opts.history_limit,
        &b.opts.only_elections(&b.info.short),
    );
    let past = history::by_election(recorded);
    let mut tracker = SessionLockTracker::new(
        b.info.id,
        b.info.name.clone(),
        b.flavor.scheme(),
        b.opts.history_limit,
        b.flavor.privilege_hint(&user),
        past,
    );
    tracker.audited_at_start(crate::backend::forced::audited_actions(&b.info.name));
    let mut f = Follow {
        b: &b,
        io,
        tracker,
        loaded: false,
        conn: Lifecycle::new(1, Duration::from_millis(500), Duration::from_secs(10)),
        naming: Resolved::default(),
        tick: tokio::time::interval(b.settings.poll),
    };
    f.tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    drive(&mut f).await;
}

struct Follow<'a> {
    b: &'a SessionLockBackend,
    io: BackendIo,
    tracker: SessionLockTracker,
    /// The first read is loaded (no events); every later one is applied.
    loaded: bool,
    conn: Lifecycle,
    naming: Resolved,
    /// When the locks are next read.
    tick: Interval,
}

impl Steps for Follow<'_> {
    type Error = SqlError;
    type Link = AnyPool;

    fn lifecycle(&mut self) -> &mut Lifecycle {
        &mut self.conn
    }

    fn source(&self) -> Source<'_> {
        let (io, info, one_shot) = (&self.io, &self.b.info, self.b.opts.one_shot);
        Source { io, info, one_shot }
    }

    async fn connect(&mut self, _from: usize) -> Result<(usize, AnyPool), Stop> {
        Ok((
            0,
            open(&self.b.settings, self.b.opts.request_timeout).await?,
        ))
    }

    /// The server's lock views checked and the lock names resolved; the locks themselves
    /// are the first poll's.
    async fn snapshot(&mut self, pool: &mut AnyPool) -> Result<Input, Stop> {
        let s = &self.b.settings;
        let timeout = self.b.opts.request_timeout;
        let done = async {
            check(self.b.flavor, pool, s).await?;
            resolve(self.b.flavor, pool, s, &self.b.naming).await
        };
        self.naming = tokio::time::timeout(timeout, done)
            .await
            .map_err(|_| self.timed_out())??;
        self.read_now(pool).await?;
        // The next read is a whole interval after this one.
        self.tick.reset();
        Ok(Input::SnapshotRead { replay: false })
    }

    async fn follow(&mut self, pool: &mut AnyPool) -> Result<Input, Stop> {
        loop {
            tokio::select! {
                _ = self.tick.tick() => break,
                cmd = self.io.commands.recv() => serve(&self.io, &self.b.info, cmd, &mut self.tracker).await?,
            }
        }
        self.read_now(pool).await?;
        Ok(Input::Followed)
    }

    async fn release(&mut self, pool: AnyPool) {
        pool.close().await;
    }
}

impl Follow<'_> {
    /// Reads every lock once: the first read is loaded (no events), each later one applied.
    async fn read_now(&mut self, pool: &AnyPool) -> Result<(), Stop> {
        let sent = (Instant::now(), SystemTime::now());
        let (s, flavor) = (&self.b.settings, self.b.flavor);
        let timeout = self.b.opts.request_timeout;
        let reads = tokio::time::timeout(timeout, read(flavor, pool, s, &self.naming))
            .await
            .map_err(|_| self.timed_out())??;
        let source = self.b.info.id;
        if !self.loaded {
            self.loaded = true;
            let restored = self.tracker.load(&reads, sent.1);
            let elections = self.tracker.elections();
            self.send(SourceEvent::Elections { source, elections })
                .await?;
            crate::backend::engine::show(&self.io, &self.b.info, restored).await?;
        } else {
            let gone = self.tracker.gone(&reads);
            let living = tokio::time::timeout(timeout, alive(flavor, pool, s, &gone))
                .await
                .map_err(|_| self.timed_out())??;
            let changes = self.tracker.apply(&reads, &living, sent.1);
            crate::backend::engine::show(&self.io, &self.b.info, changes).await?;
        }
        // True as of when the poll was sent.
        self.send(contact(source, sent, s.poll)).await
    }

    async fn send(&self, event: SourceEvent) -> Result<(), Stop> {
        self.io.events.send(event).await.map_err(|_| Stop::Closed)
    }

    fn timed_out(&self) -> Stop {
        Stop::Failed(SqlError::PollTimeout {
            place: self.b.settings.url.redacted(),
            timeout: self.b.opts.request_timeout,
        })
    }
}
