//! A session-lock source's follow task: connect (the SQL backend's pool), check, then poll
//! every lock each `poll`; down with a growing wait when a step fails. The life cycle is the
//! SQL backend's ([`Lifecycle`]); the check step stands where its schema check does.

use std::time::{Duration, Instant, SystemTime};

use sqlx::AnyPool;
use tokio::time::{Interval, MissedTickBehavior};

use super::naming::Resolved;
use super::tracker::SessionLockTracker;
use super::{SessionLockBackend, alive, check, read, resolve};
use crate::backend::sql::lifecycle::{Input, Lifecycle, Steps, Tell, announce, drive, wait_down};
use crate::backend::sql::{SqlError, open};
use crate::backend::{BackendIo, Request};
use crate::model::{ConnState, SourceEvent};

type Stop = crate::backend::Stop<SqlError>;

pub(super) async fn run(b: SessionLockBackend, io: BackendIo) {
    let cancel = io.cancel.clone();
    let user = url::Url::parse(&b.settings.url.0)
        .map(|u| u.username().to_string())
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "this user".into());
    let tracker = SessionLockTracker::new(
        b.info.id,
        b.info.name.clone(),
        b.flavor.scheme(),
        b.opts.history_limit,
        b.flavor.privilege_hint(&user),
    );
    let mut f = Follow {
        b: &b,
        io,
        tracker,
        loaded: false,
        conn: Lifecycle::new(Duration::from_millis(500), Duration::from_secs(10)),
        pool: None,
        naming: Resolved::default(),
        error: None,
        tick: tokio::time::interval(b.settings.poll),
    };
    f.tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    tokio::select! {
        _ = drive(&mut f) => {}
        _ = cancel.cancelled() => {}
    }
}

struct Follow<'a> {
    b: &'a SessionLockBackend,
    io: BackendIo,
    tracker: SessionLockTracker,
    /// The first read is loaded (no events); every later one is applied.
    loaded: bool,
    conn: Lifecycle,
    pool: Option<AnyPool>,
    naming: Resolved,
    error: Option<SqlError>,
    /// When the locks are next read.
    tick: Interval,
}

impl Steps for Follow<'_> {
    fn lifecycle(&mut self) -> &mut Lifecycle {
        &mut self.conn
    }

    async fn connect(&mut self) -> Result<Input, Stop> {
        let source = self.b.info.id;
        let state = ConnState::Connecting;
        self.send(SourceEvent::Conn { source, state }).await?;
        self.pool = Some(open(&self.b.settings, self.b.opts.request_timeout).await?);
        Ok(Input::Connected)
    }

    async fn check(&mut self) -> Result<Input, Stop> {
        let pool = self.pool.as_ref().ok_or_else(|| self.lost())?;
        let s = &self.b.settings;
        let timeout = self.b.opts.request_timeout;
        let done = async {
            check(self.b.flavor, pool, s).await?;
            resolve(self.b.flavor, pool, s, &self.b.naming).await
        };
        self.naming = tokio::time::timeout(timeout, done)
            .await
            .map_err(|_| self.timed_out())??;
        Ok(Input::SchemaChecked)
    }

    async fn poll(&mut self) -> Result<Input, Stop> {
        loop {
            tokio::select! {
                _ = self.tick.tick() => break,
                cmd = self.io.commands.recv() => match cmd {
                    None => return Err(Stop::Closed),
                    Some(Request::Forced { election, mark }) => {
                        let now = (Instant::now(), SystemTime::now());
                        if let Some(e) = self.tracker.forced(&election, mark, now.0, now.1) {
                            let told = crate::backend::forced::attributed(&self.b.info.name, &e);
                            let source = self.b.info.id;
                            self.send(SourceEvent::Elections { source, elections: vec![e] }).await?;
                            if let Some(ev) = told {
                                self.send(SourceEvent::Happened(ev)).await?;
                            }
                        }
                    }
                    Some(Request::Visible { .. }) => {}
                },
            }
        }
        let sent = (Instant::now(), SystemTime::now());
        let pool = self.pool.as_ref().ok_or_else(|| self.lost())?;
        let (s, flavor) = (&self.b.settings, self.b.flavor);
        let timeout = self.b.opts.request_timeout;
        let reads = tokio::time::timeout(timeout, read(flavor, pool, s, &self.naming))
            .await
            .map_err(|_| self.timed_out())??;
        let source = self.b.info.id;
        if !self.loaded {
            self.loaded = true;
            self.tracker.load(&reads, sent.1);
            let elections = self.tracker.elections();
            self.send(SourceEvent::Elections { source, elections })
                .await?;
        } else {
            let gone = self.tracker.gone(&reads);
            let living = tokio::time::timeout(timeout, alive(flavor, pool, s, &gone))
                .await
                .map_err(|_| self.timed_out())??;
            let applied = self.tracker.apply(&reads, &living, sent.1);
            if !applied.changed.is_empty() {
                let elections = applied.changed;
                self.send(SourceEvent::Elections { source, elections })
                    .await?;
            }
            for e in applied.events {
                self.send(SourceEvent::Happened(e)).await?;
            }
        }
        // True as of when the poll was sent.
        self.send(SourceEvent::Contact {
            source,
            at: sent.0,
            wall: sent.1,
            next_within: s.poll,
        })
        .await?;
        Ok(Input::Polled)
    }

    async fn wait(&mut self, lasting: bool) -> Result<Input, Stop> {
        let error = self.error.take();
        let modes = (lasting, self.b.opts.one_shot);
        wait_down(&self.io, &self.b.info, &mut self.conn, error, modes).await
    }

    async fn failed(&mut self, e: SqlError) -> Input {
        if let Some(pool) = self.pool.take() {
            pool.close().await;
        }
        let kind = e.kind();
        self.error = Some(e);
        Input::Failed(kind)
    }

    async fn tell(&self, tell: Tell) -> Result<(), Stop> {
        announce(&self.io, self.b.info.id, tell).await?;
        Ok(())
    }
}

impl Follow<'_> {
    async fn send(&self, event: SourceEvent) -> Result<(), Stop> {
        self.io.events.send(event).await.map_err(|_| Stop::Closed)
    }

    fn timed_out(&self) -> Stop {
        Stop::Failed(SqlError::PollTimeout {
            place: self.b.settings.url.redacted(),
            timeout: self.b.opts.request_timeout,
        })
    }

    fn lost(&self) -> Stop {
        Stop::Failed(SqlError::Unavailable(format!(
            "{}: the connection was lost between steps",
            self.b.settings.url.redacted()
        )))
    }
}
