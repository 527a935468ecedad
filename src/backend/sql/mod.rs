//! The SQL backend: election tables polled with one query per table per poll, which also
//! reads the database's clock; rows are diffed into the same events the etcd backend sends.
//! Leader changes seen are kept on disk. PostgreSQL, MySQL/MariaDB and SQLite go through
//! sqlx's `Any` driver; their differences live in [`dialect`].

pub mod admin;
mod connect;
pub mod dialect;
mod errors;
pub mod heartbeat;
pub mod history;
pub mod lease;
mod schema;
mod tls;
pub mod tracker;

pub(crate) use connect::{connect, create_table_if_missing};
pub(crate) use errors::describe;
pub(crate) use schema::{Schema, check_schema};

use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use sqlx::{AnyPool, AssertSqlSafe, Row as _};
use tracing::{info, warn};

use self::dialect::{Dialect, Ident};
use self::tracker::{Poll, Row, SqlTracker};
use super::{Backend, BackendFuture, BackendIo, BackendOptions, Backoff, Command};
use crate::config::{DbUrl, SqlSource};
use crate::model::{ConnState, Scheme, SourceEvent, SourceId, SourceInfo};

/// The validated columns of an election table.
#[derive(Clone, Debug)]
pub struct Columns {
    /// The election's name (`key` / `anchor`).
    pub key: Ident,
    /// The leader id (`leader_id` / `service_id`).
    pub holder: Ident,
    /// The deadline (`valid_until` / `last_seen_active`).
    pub stamp: Ident,
}

/// What differs between the two SQL schemes; each lives in its own file.
pub trait SqlScheme: Send + Sync {
    fn scheme(&self) -> Scheme;
    fn columns(&self) -> &Columns;
    /// SQL for the milliseconds left of the holder's term, from the quoted deadline column
    /// and its declared type.
    fn remaining_ms(&self, d: Dialect, stamp: &str, stamp_type: &str) -> String;
    /// The full term when the scheme fixes it (the heartbeat timeout).
    fn term_ms(&self) -> Option<i64>;
}

#[derive(Debug, thiserror::Error)]
pub enum SqlConfigError {
    #[error("database URL `{0}` must start with postgres://, mysql:// or sqlite://")]
    Url(String),
    #[error("scheme `{0}` is not a SQL scheme; use sql-lease or sql-heartbeat")]
    Scheme(Scheme),
    #[error(transparent)]
    Ident(#[from] dialect::BadIdent),
    #[error(transparent)]
    Tls(#[from] tls::TlsConfigError),
    #[error("the heartbeat timeout must be more than 0")]
    Timeout,
    #[error(
        "an in-memory SQLite database is private to one connection, so no participant's elections can be seen in it; use a file: sqlite:///path/to/elections.db"
    )]
    Memory,
}

/// A SQL source's settings, checked.
pub struct SqlSettings {
    pub dialect: Dialect,
    pub url: DbUrl,
    pub table: Ident,
    pub scheme: Box<dyn SqlScheme>,
    pub poll: Duration,
    pub password_env: Option<String>,
    pub password_file: Option<PathBuf>,
}

impl SqlSettings {
    pub fn from_config(cfg: &SqlSource) -> Result<SqlSettings, SqlConfigError> {
        let dialect =
            Dialect::from_url(&cfg.url.0).ok_or_else(|| SqlConfigError::Url(cfg.url.redacted()))?;
        if dialect == Dialect::Sqlite
            && (cfg.url.0.contains(":memory:") || cfg.url.0.contains("mode=memory"))
        {
            return Err(SqlConfigError::Memory);
        }
        tls::check(&cfg.url.0, dialect)?;
        let (table, key, holder, stamp) = match cfg.scheme {
            Scheme::SqlLease => ("leaderlock", "key", "leader_id", "valid_until"),
            Scheme::SqlHeartbeat => (
                "service_election",
                "anchor",
                "service_id",
                "last_seen_active",
            ),
            other => return Err(SqlConfigError::Scheme(other)),
        };
        let c = &cfg.columns;
        let columns = Columns {
            key: Ident::column(c.key.as_deref().unwrap_or(key))?,
            holder: Ident::column(c.leader_id.as_deref().unwrap_or(holder))?,
            stamp: Ident::column(c.valid_until.as_deref().unwrap_or(stamp))?,
        };
        let scheme: Box<dyn SqlScheme> = match cfg.scheme {
            Scheme::SqlHeartbeat => {
                let timeout = cfg.timeout.unwrap_or(Duration::from_secs(20));
                if timeout.is_zero() {
                    return Err(SqlConfigError::Timeout);
                }
                Box::new(heartbeat::SqlHeartbeat {
                    columns,
                    timeout_ms: timeout.as_millis() as i64,
                })
            }
            _ => Box::new(lease::SqlLease { columns }),
        };
        Ok(SqlSettings {
            dialect,
            url: cfg.url.clone(),
            table: Ident::table(cfg.table.as_deref().unwrap_or(table))?,
            scheme,
            poll: cfg
                .poll
                .unwrap_or(Duration::from_millis(500))
                .max(Duration::from_millis(50)),
            password_env: cfg.password_env.clone(),
            password_file: cfg.password_file.clone(),
        })
    }

    /// The URL with the password from the environment or file put in, for connecting only.
    fn connect_url(&self) -> Result<String, String> {
        let password = crate::config::read_password(
            self.password_env.as_deref(),
            self.password_file.as_deref(),
        )?;
        let Some(password) = password else {
            return Ok(self.url.0.clone());
        };
        let mut url = url::Url::parse(&self.url.0)
            .map_err(|e| format!("database URL {}: {e}", self.url.redacted()))?;
        url.set_password(Some(&password)).map_err(|()| {
            format!(
                "database URL {} cannot carry a password",
                self.url.redacted()
            )
        })?;
        Ok(url.to_string())
    }

    /// The poll: one row with the database's clock, then one per election.
    pub fn poll_query(&self, stamp_type: &str) -> String {
        let d = self.dialect;
        let c = self.scheme.columns();
        let stamp = d.quote(&c.stamp);
        format!(
            "SELECT {now}, NULL, NULL, NULL, NULL UNION ALL SELECT {now}, {key}, {holder}, {remaining}, {stamp_text} FROM {table}",
            now = d.now_ms(),
            key = d.as_text(&d.quote(&c.key)),
            holder = d.as_text(&d.quote(&c.holder)),
            remaining = self.scheme.remaining_ms(d, &stamp, stamp_type),
            stamp_text = d.as_text(&stamp),
            table = d.quote(&self.table),
        )
    }

    pub fn source_name(&self) -> String {
        format!("{} {}", self.url.redacted(), self.table)
    }
}

pub struct SqlBackend {
    info: SourceInfo,
    settings: SqlSettings,
    opts: BackendOptions,
    history_path: Option<PathBuf>,
}

impl SqlBackend {
    pub fn new(
        id: SourceId,
        short: String,
        cfg: &SqlSource,
        opts: BackendOptions,
    ) -> Result<Self, SqlConfigError> {
        let settings = SqlSettings::from_config(cfg)?;
        let name = settings.source_name();
        let info = SourceInfo {
            id,
            label: format!("{} {}", settings.dialect.name(), settings.table),
            endpoints: settings.url.redacted(),
            short,
            name: name.clone(),
            scheme: Some(settings.scheme.scheme()),
            read_only: cfg.read_only,
            clustered: false,
            idle_is_normal: cfg.preset.is_some_and(|p| p.spec().idle_is_normal),
            notice: None,
        };
        Ok(SqlBackend {
            info,
            settings,
            opts,
            history_path: history::default_path(&name),
        })
    }
}

impl Backend for SqlBackend {
    fn info(&self) -> SourceInfo {
        self.info.clone()
    }

    fn run(self: Box<Self>, io: BackendIo) -> BackendFuture {
        Box::pin(run(*self, io))
    }
}

/// Why polling stopped.
enum Stop {
    Closed,
    Down(String),
    /// The table or the credentials are wrong: retrying will not help until someone acts.
    Wrong(String),
}

impl Stop {
    /// A wrong table, column, password or database stays wrong; an unreachable server may
    /// come back.
    fn classify(error: String) -> Stop {
        // A refused certificate or a server without TLS stays so until someone acts, even
        // though it is found while connecting.
        if error.contains(tls::MARKER) {
            return Stop::Wrong(error);
        }
        let passing = [
            "cannot connect",
            "no answer",
            "timed out",
            "reading the poll",
        ];
        if passing.iter().any(|p| error.contains(p)) {
            Stop::Down(error)
        } else {
            Stop::Wrong(error)
        }
    }
}

async fn run(b: SqlBackend, mut io: BackendIo) {
    let source = b.info.id;
    let mut tracker = SqlTracker::new(
        source,
        b.info.name.clone(),
        b.settings.scheme.scheme(),
        b.settings.scheme.term_ms(),
        b.opts.history_limit.max(1),
    );
    let mut writer = None;
    if let Some(path) = &b.history_path {
        tracker.preload(history::load(path));
        match history::Writer::open(path) {
            Ok(Some(w)) => writer = Some(w),
            Ok(None) => {
                info!(path = %path.display(), "another electop records this source's history")
            }
            Err(e) => warn!(path = %path.display(), %e, "cannot record history"),
        }
    }
    let mut backoff = Backoff::new(Duration::from_millis(500), Duration::from_secs(10));
    let cancel = io.cancel.clone();
    let mut synced = false;
    loop {
        let outcome = tokio::select! {
            o = follow(&b, &mut io, &mut tracker, &mut writer, &mut synced, &mut backoff) => o,
            _ = cancel.cancelled() => return,
        };
        let (error, lasting) = match outcome {
            Stop::Closed => return,
            Stop::Down(e) => (e, false),
            Stop::Wrong(e) => (e, true),
        };
        if !super::down_and_wait(&io, &b.info, error, lasting, None, &mut backoff).await {
            return;
        }
    }
}

async fn follow(
    b: &SqlBackend,
    io: &mut BackendIo,
    tracker: &mut SqlTracker,
    writer: &mut Option<history::Writer>,
    synced: &mut bool,
    backoff: &mut Backoff,
) -> Stop {
    let source = b.info.id;
    let send = |ev| io.events.send(ev);
    if send(SourceEvent::Conn {
        source,
        state: ConnState::Connecting,
    })
    .await
    .is_err()
    {
        return Stop::Closed;
    }
    let pool = match connect(&b.settings, b.opts.request_timeout).await {
        Ok(p) => p,
        Err(e) => return Stop::classify(e),
    };
    let stamp_type = match check_schema(&b.settings, &pool).await {
        Ok(t) => t.stamp_type,
        Err(e) => {
            pool.close().await;
            return Stop::classify(e);
        }
    };
    if io
        .events
        .send(SourceEvent::Conn {
            source,
            state: ConnState::Connected,
        })
        .await
        .is_err()
    {
        return Stop::Closed;
    }
    info!(source = %b.info.name, "sql connected");
    let query = b.settings.poll_query(&stamp_type);
    let mut tick = tokio::time::interval(b.settings.poll);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            cmd = io.commands.recv() => {
                // Every row is read each poll anyway; visibility changes nothing here.
                match cmd {
                    None => return Stop::Closed,
                    Some(Command::Forced { election, mark }) => {
                        if let Some(e) = tracker.forced(&election, mark, Instant::now(), std::time::SystemTime::now()) {
                            let told = crate::backend::forced::attributed(&b.info.name, &e);
                            let sent = io.events.send(SourceEvent::Elections { source, elections: vec![e] }).await.is_ok()
                                && match told {
                                    Some(ev) => io.events.send(SourceEvent::Happened(ev)).await.is_ok(),
                                    None => true,
                                };
                            if !sent {
                                return Stop::Closed;
                            }
                        }
                    }
                    Some(Command::Visible { .. }) => {}
                }
                continue;
            }
        }
        let sent = (Instant::now(), std::time::SystemTime::now());
        let poll = match poll_once(&b.settings, &pool, &query, b.opts.request_timeout).await {
            Ok(p) => p,
            Err(e) => {
                pool.close().await;
                return Stop::classify(e);
            }
        };
        backoff.reset();
        let (elections, events, recorded) = tracker.apply(poll);
        if let Some(w) = writer.as_mut()
            && !recorded.is_empty()
            && let Err(e) = w.append(&recorded)
        {
            warn!(%e, "cannot append to the history file");
        }
        if !elections.is_empty()
            && io
                .events
                .send(SourceEvent::Elections { source, elections })
                .await
                .is_err()
        {
            return Stop::Closed;
        }
        for e in events {
            if io.events.send(SourceEvent::Happened(e)).await.is_err() {
                return Stop::Closed;
            }
        }
        // The rows are true as of when the poll was sent, not when it returned.
        let contact = SourceEvent::Contact {
            source,
            at: sent.0,
            wall: sent.1,
            next_within: b.settings.poll,
        };
        if io.events.send(contact).await.is_err() {
            return Stop::Closed;
        }
        if !*synced {
            *synced = true;
            if io
                .events
                .send(SourceEvent::Synced { source })
                .await
                .is_err()
            {
                return Stop::Closed;
            }
        }
    }
}

async fn poll_once(
    s: &SqlSettings,
    pool: &AnyPool,
    query: &str,
    timeout: Duration,
) -> Result<Poll, String> {
    let fetch = sqlx::query(AssertSqlSafe(query.to_string())).fetch_all(pool);
    let rows = match tokio::time::timeout(timeout, fetch).await {
        Ok(r) => r.map_err(|e| describe(&e, s, &s.url.0))?,
        Err(_) => {
            return Err(format!(
                "{}: the poll got no answer within {timeout:?}",
                s.url.redacted()
            ));
        }
    };
    let at = SystemTime::now();
    let now = Instant::now();
    let mut db_now_ms = None;
    let mut out = Vec::new();
    for r in &rows {
        let get_i = |i| {
            r.try_get::<Option<i64>, _>(i)
                .map_err(|e| format!("{}: reading the poll: {e}", s.url.redacted()))
        };
        let get_s = |i| {
            r.try_get::<Option<String>, _>(i)
                .map_err(|e| format!("{}: reading the poll: {e}", s.url.redacted()))
        };
        db_now_ms = db_now_ms.or(get_i(0)?);
        let Some(key) = get_s(1)? else { continue };
        let holder = get_s(2)?;
        out.push(Row {
            key: crate::model::escape_bytes(key.as_bytes()),
            holder: holder
                .as_ref()
                .map(|h| crate::model::escape_bytes(h.as_bytes())),
            raw_holder: holder.map(String::into_bytes),
            remaining_ms: get_i(3)?,
            // Shown as is: a SQLite column holds any text, not only a timestamp.
            stamp: get_s(4)?.map(|t| crate::model::escape_bytes(t.as_bytes())),
        });
    }
    Ok(Poll {
        db_now_ms: db_now_ms.unwrap_or(0),
        rows: out,
        at,
        now,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SqlColumns;

    fn cfg(url: &str, scheme: Scheme) -> SqlSource {
        SqlSource {
            url: DbUrl(url.into()),
            password_env: None,
            password_file: None,
            scheme,
            preset: None,
            table: None,
            columns: SqlColumns::default(),
            timeout: None,
            poll: None,
            read_only: false,
        }
    }

    #[test]
    fn defaults_are_the_articles_names() {
        let s = SqlSettings::from_config(&cfg("postgres://u:pw@h:5432/db", Scheme::SqlHeartbeat))
            .expect("valid");
        let q = s.poll_query("timestamp with time zone");
        assert!(
            q.contains("\"service_election\"")
                && q.contains("\"last_seen_active\"")
                && q.contains("+ 20000"),
            "{q}"
        );
        assert_eq!(s.source_name(), "postgres://u@h:5432/db service_election");
    }

    #[test]
    fn tls_failures_are_lasting_and_unreachable_servers_are_not() {
        // Worded to contain what a passing error says, too: the marker decides.
        let tls = format!(
            "postgres://h/db{}the server does not offer TLS; cannot connect in plain text",
            tls::MARKER
        );
        assert!(matches!(Stop::classify(tls), Stop::Wrong(_)));
        let down = "cannot connect to postgres://h/db: refused".to_string();
        assert!(matches!(Stop::classify(down), Stop::Down(_)));
        let bad_mode = cfg("postgres://h/db?sslmode=on", Scheme::SqlLease);
        let e = SqlSettings::from_config(&bad_mode).err().expect("refused");
        assert!(e.to_string().contains("sslmode=on"), "{e}");
    }

    #[test]
    fn bad_names_and_urls_are_refused_with_the_reason() {
        let mut c = cfg("mysql://u@h/db", Scheme::SqlLease);
        c.table = Some("leader lock".into());
        let e = SqlSettings::from_config(&c)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("`leader lock` is not a usable SQL name"), "{e}");
        let e = SqlSettings::from_config(&cfg("redis://h", Scheme::SqlLease))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("must start with postgres://"), "{e}");
        let e = SqlSettings::from_config(&cfg("sqlite::memory:", Scheme::SqlLease))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("private to one connection"), "{e}");
    }

    #[test]
    fn passwords_come_from_env_and_never_show() {
        let mut c = cfg("postgres://tester@127.0.0.1:5432/db", Scheme::SqlLease);
        c.password_env = Some("ELECTOP_TEST_PW_UNIT".into());
        let s = SqlSettings::from_config(&c).expect("valid");
        assert!(
            s.connect_url()
                .unwrap_err()
                .contains("ELECTOP_TEST_PW_UNIT")
        );
        // SAFETY: this test alone uses this variable.
        unsafe { std::env::set_var("ELECTOP_TEST_PW_UNIT", "p@ss/word") };
        let url = s.connect_url().expect("url");
        assert!(url.contains("tester:p%40ss%2Fword@"), "{url}");
        assert_eq!(
            errors::scrub(&format!("failed: {url} p@ss/word"), &url),
            "failed: <database URL> ***"
        );
        assert!(!format!("{:?}", c.url).contains("p@ss"));
    }
}
