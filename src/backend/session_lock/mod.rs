//! Locks a SQL server's sessions hold, with no table of their own: PostgreSQL advisory
//! locks (`pg-advisory`) and MySQL/MariaDB `GET_LOCK` (`mysql-lock`). Every lock is an
//! election, the session holding it leads, the sessions waiting for it are the line in the
//! order the server grants them. What is read ([`LockRead`], [`Session`]) and how reads
//! become elections ([`tracker`]) is shared; each server's queries live in a file of their
//! own ([`postgres`], [`mysql`]), reached through [`read`], [`alive`] and [`end_session`].
//!
//! The connection (URL, password, TLS) is the SQL backend's (`sql::open`).

mod admin;
mod follow;
mod mysql;
mod naming;
mod participant;
mod plan;
mod postgres;
mod store;
pub(crate) mod tracker;

pub use crate::config::{LockHash, LockNaming};
pub use store::{SessionLockTarget, SessionLocks};

use std::collections::HashSet;
use std::time::SystemTime;

use sqlx::AnyPool;

use super::sql::{SqlError, SqlSettings};
use super::{Backend, BackendFuture, BackendIo, BackendOptions};
use crate::config::{Dialect, SqlSource};
use crate::model::{Scheme, SourceId, SourceInfo};

/// One server session as the server lists it. Fields the server hides from this user
/// (PostgreSQL's `pg_stat_activity` to non-superusers without `pg_read_all_stats`) are `None`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Session {
    /// PostgreSQL's backend pid, MySQL's connection id.
    pub id: i64,
    /// When the session began, as the server's compare takes it (PostgreSQL: `backend_start`
    /// in microseconds since the Unix epoch, as decimal text): with `id`, who exactly this
    /// is, so a reused id is never taken for it. `None`: hidden from this user.
    pub start: Option<String>,
    /// `start` as a time, for the screen.
    pub started: Option<SystemTime>,
    pub user: Option<String>,
    pub application: Option<String>,
    /// The client's address (`host:port`), or `local` for a Unix socket.
    pub client: Option<String>,
    /// A waiting session: when it began to wait, where the server says (PostgreSQL 14+
    /// `pg_locks.waitstart`).
    pub waiting_since: Option<SystemTime>,
    /// Whose session: says what the id is (a pid, a connection id).
    pub flavor: Flavor,
}

impl Session {
    /// Who exactly: the id and the start (a reused id is someone else).
    pub fn identity(&self) -> SessionRef {
        SessionRef {
            id: self.id,
            start: self.start.clone(),
        }
    }

    /// What the line and the leader column show: `app:pid`, or `pid:N` without a name
    /// (`conn:N` for a MySQL connection).
    pub fn shown(&self) -> String {
        match self.application.as_deref().filter(|a| !a.is_empty()) {
            Some(app) => format!("{app}:{}", self.id),
            None => format!("{}:{}", self.flavor.id_word(), self.id),
        }
    }
}

/// A session's id and start: what an admin action compares before ending it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SessionRef {
    pub id: i64,
    pub start: Option<String>,
}

/// One lock as read in one poll.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockRead {
    /// The lock as the server names it: `42` (PostgreSQL one-key bigint), `1:2` (two-key
    /// int4 form), or the `GET_LOCK` name.
    pub key: String,
    /// The election's name: the configured name for the key, else the key.
    pub name: String,
    /// `None`: nobody holds it, sessions wait (a moment between a release and the grant).
    pub holder: Option<Session>,
    /// The sessions waiting, in the order the server will grant them.
    pub waiting: Vec<Session>,
}

/// Which server's queries a source uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    Postgres,
    Mysql,
}

impl Flavor {
    pub fn of(scheme: Scheme) -> Flavor {
        match scheme {
            Scheme::MysqlLock => Flavor::Mysql,
            _ => Flavor::Postgres,
        }
    }

    pub fn scheme(self) -> Scheme {
        match self {
            Flavor::Postgres => Scheme::PgAdvisory,
            Flavor::Mysql => Scheme::MysqlLock,
        }
    }

    /// What a session's id is called: `pid` (PostgreSQL backend), `conn` (MySQL connection).
    pub fn id_word(self) -> &'static str {
        match self {
            Flavor::Postgres => "pid",
            Flavor::Mysql => "conn",
        }
    }

    /// What a user who cannot see other users' sessions should do, in words.
    pub fn privilege_hint(self, user: &str) -> String {
        match self {
            Flavor::Postgres => postgres::privilege_hint(user),
            Flavor::Mysql => mysql::privilege_hint(user),
        }
    }
}

/// Checks once after connecting that the server can be read this way (its version, the
/// views and privileges needed): `Err` names what is missing and the fix.
pub(crate) async fn check(flavor: Flavor, pool: &AnyPool, s: &SqlSettings) -> Result<(), SqlError> {
    match flavor {
        Flavor::Postgres => postgres::check(pool, s).await,
        Flavor::Mysql => mysql::check(pool, s).await,
    }
}

/// Every lock of the source, holder and line, in one poll.
pub(crate) async fn read(
    flavor: Flavor,
    pool: &AnyPool,
    s: &SqlSettings,
    naming: &naming::Resolved,
) -> Result<Vec<LockRead>, SqlError> {
    match flavor {
        Flavor::Postgres => postgres::read(pool, s, naming).await,
        Flavor::Mysql => mysql::read(pool, s, naming).await,
    }
}

/// Which of `sessions` still exist (same id, same start): tells a holder that released its
/// lock from one whose session ended.
pub(crate) async fn alive(
    flavor: Flavor,
    pool: &AnyPool,
    s: &SqlSettings,
    sessions: &[SessionRef],
) -> Result<HashSet<SessionRef>, SqlError> {
    if sessions.is_empty() {
        return Ok(HashSet::new());
    }
    match flavor {
        Flavor::Postgres => postgres::alive(pool, s, sessions).await,
        Flavor::Mysql => mysql::alive(pool, s, sessions).await,
    }
}

/// Ends `session` if it is still the one that started at `start`, in one statement. `true`:
/// it was ended; `false`: no such session any more (gone, or its id reused).
pub(crate) async fn end_session(
    flavor: Flavor,
    pool: &AnyPool,
    s: &SqlSettings,
    id: i64,
    start: &str,
) -> Result<bool, SqlError> {
    match flavor {
        Flavor::Postgres => postgres::end_session(pool, s, id, start).await,
        Flavor::Mysql => mysql::end_session(pool, s, id, start).await,
    }
}

/// The follow task of one session-lock source.
pub struct SessionLockBackend {
    info: SourceInfo,
    flavor: Flavor,
    settings: SqlSettings,
    naming: LockNaming,
    opts: BackendOptions,
}

impl SessionLockBackend {
    pub fn new(id: SourceId, short: String, cfg: &SqlSource, opts: BackendOptions) -> Self {
        let settings = SqlSettings::new(cfg);
        let flavor = Flavor::of(cfg.scheme);
        let where_ = settings.url.redacted();
        let what = match flavor {
            Flavor::Postgres => "advisory locks",
            Flavor::Mysql => "GET_LOCK locks",
        };
        let info = SourceInfo {
            store: crate::model::StoreKind::Sql,
            id,
            label: format!("{} {what}", settings.dialect.name()),
            endpoints: where_.clone(),
            short,
            name: format!("{where_} {what}"),
            scheme: Some(flavor.scheme()),
            read_only: cfg.read_only,
            clustered: false,
            idle_is_normal: false,
            notice: None,
        };
        SessionLockBackend {
            info,
            flavor,
            settings,
            naming: cfg.locks().clone(),
            opts,
        }
    }
}

impl Backend for SessionLockBackend {
    fn info(&self) -> SourceInfo {
        self.info.clone()
    }

    fn run(self: Box<Self>, io: BackendIo) -> BackendFuture {
        Box::pin(follow::run(*self, io))
    }
}

/// The dialect a flavor's server speaks, for the settings check.
pub(crate) fn dialect(flavor: Flavor) -> Dialect {
    match flavor {
        Flavor::Postgres => Dialect::Postgres,
        Flavor::Mysql => Dialect::MySql,
    }
}

/// The names by key: the configured keys and CRC-32 names computed here, `hashtext` names
/// asked of the server (PostgreSQL); MySQL's locks are named already.
pub(crate) async fn resolve(
    flavor: Flavor,
    pool: &AnyPool,
    s: &SqlSettings,
    naming: &LockNaming,
) -> Result<naming::Resolved, SqlError> {
    if flavor == Flavor::Mysql {
        // A GET_LOCK name is its own key: no hashing.
        return Ok(mysql::resolve(naming));
    }
    let (mut by_key, ask) = naming.local();
    if flavor == Flavor::Postgres && !ask.is_empty() {
        by_key.extend(postgres::hashtext(pool, s, &ask).await?);
    }
    Ok(naming::Resolved::new(by_key))
}

/// The query a pg-advisory poll sends, for the benchmark to time beside `psql`.
pub fn postgres_poll_query() -> String {
    postgres::poll_query()
}
