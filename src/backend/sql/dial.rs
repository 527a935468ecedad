//! Opening a pool: the password put into the URL only here, SQLite files checked first,
//! MySQL sessions set to the server's zone; and creating a missing election table.

use std::str::FromStr;
use std::time::Duration;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::{AnyConnection, AnyPool, AssertSqlSafe, Connection};

use super::SqlSettings;
use super::dialect::Dialect;
use super::errors::{SqlError, describe, scrub};
use super::wrong;
use crate::model::Scheme;

/// A pool, for callers that only show the error.
pub(crate) async fn connect(s: &SqlSettings, timeout: Duration) -> Result<AnyPool, String> {
    open(s, timeout).await.map_err(|e| e.to_string())
}

/// A pool, or what kept it from opening, typed so the caller knows whether to retry.
pub(crate) async fn open(s: &SqlSettings, timeout: Duration) -> Result<AnyPool, SqlError> {
    sqlx::any::install_default_drivers();
    let where_ = s.url.redacted();
    if s.dialect == Dialect::Sqlite {
        let path = sqlite_path(&s.url.0);
        if !path.is_empty() && path != ":memory:" && !std::path::Path::new(&path).exists() {
            return Err(SqlError::Settings(format!(
                "sqlite database {path} does not exist: check the path, or start a participant that creates it"
            )));
        }
    }
    super::tls::check_files(&s.url.0, s.dialect, &where_)?;
    let url = s.connect_url().map_err(SqlError::Settings)?;
    let opts = AnyConnectOptions::from_str(&url).map_err(|e| {
        SqlError::Settings(format!(
            "database URL {where_}: {}",
            scrub(&e.to_string(), &url)
        ))
    })?;
    // The pool retries a refused connection until its timeout, so a server that is not
    // there would read as one that does not answer: one connection of our own first says
    // which, and its session setup failing is reported as itself rather than retried. The
    // pool's first connection is made meanwhile: two logins at once, not one after the
    // other (a PostgreSQL login starts a server process), and dropped if the first fails.
    let deadline = tokio::time::Instant::now() + timeout;
    let timed_out = || SqlError::ConnectTimeout {
        place: where_.clone(),
        timeout,
    };
    let dialect = s.dialect;
    let pool = AnyPoolOptions::new()
        .max_connections(2)
        .acquire_timeout(timeout)
        .after_connect(move |conn, _| {
            Box::pin(async move {
                if let Some(sql) = dialect.session_setup() {
                    sqlx::Executor::execute(conn, sql).await?;
                }
                Ok(())
            })
        })
        .connect_with(opts.clone());
    let first = tokio::time::timeout_at(deadline, first_contact(&opts, s.dialect));
    let pool = tokio::time::timeout_at(deadline, pool);
    // Another kind of server at the port never answers the login: named, not waited out.
    let other = wrong::not_the_database(&url, s.dialect, &where_);
    tokio::pin!(first, pool, other);
    let mut opened = None;
    let first = loop {
        tokio::select! {
            r = &mut first => break r,
            r = &mut pool, if opened.is_none() => opened = Some(r),
            e = &mut other => return Err(e),
        }
    };
    match first {
        Ok(Ok(())) => {}
        Ok(Err(e)) if unreadable(&e) => {
            let other = wrong::other_server(&url, s.dialect, &where_).await;
            return Err(other.unwrap_or_else(|| SqlError::from_sqlx(&e, s, &url)));
        }
        Ok(Err(e)) => return Err(SqlError::from_sqlx(&e, s, &url)),
        Err(_) => return Err(timed_out()),
    }
    let opened = match opened {
        Some(r) => r,
        None => pool.await,
    };
    match opened {
        Ok(Ok(pool)) => Ok(pool),
        Ok(Err(e)) => Err(SqlError::from_sqlx(&e, s, &url)),
        Err(_) => Err(timed_out()),
    }
}

/// The login failed on what the server sent or on its hanging up: not a refusal, and not
/// an answer in the database's own protocol, so perhaps another kind of server.
fn unreadable(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Io(io) => io.kind() != std::io::ErrorKind::ConnectionRefused,
        sqlx::Error::Protocol(_) | sqlx::Error::Decode(_) => true,
        _ => false,
    }
}

/// One connection, set up as the pool's will be, then closed: the server's first answer.
async fn first_contact(opts: &AnyConnectOptions, dialect: Dialect) -> Result<(), sqlx::Error> {
    let mut conn = AnyConnection::connect_with(opts).await?;
    let setup = match dialect.session_setup() {
        Some(sql) => sqlx::Executor::execute(&mut conn, sql).await.map(|_| ()),
        None => Ok(()),
    };
    // Said goodbye to, so the server does not hold (or log) a dropped connection.
    let _ = conn.close().await;
    setup
}

pub(crate) fn sqlite_path(url: &str) -> String {
    let rest = url.split_once(':').map(|(_, r)| r).unwrap_or("");
    let rest = rest.strip_prefix("//").unwrap_or(rest);
    rest.split('?').next().unwrap_or("").to_string()
}

/// Creates the election table as its article defines it when it is missing (and the SQLite
/// file): for `electop node --create-table` and the demo.
pub(crate) async fn create_table_if_missing(
    s: &SqlSettings,
    timeout: Duration,
) -> Result<(), String> {
    if s.dialect == Dialect::Sqlite {
        let path = sqlite_path(&s.url.0);
        if !path.is_empty() && !std::path::Path::new(&path).exists() {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .map_err(|e| format!("cannot create {path}: {e}"))?;
        }
    }
    let pool = connect(s, timeout).await?;
    let c = s.scheme.columns();
    let d = s.dialect;
    let heartbeat = s.scheme.scheme() == Scheme::SqlHeartbeat;
    let sql = d.create_table(
        &d.quote(&s.table),
        &d.quote(&c.key),
        &d.quote(&c.holder),
        &d.quote(&c.stamp),
        heartbeat,
    );
    let r = sqlx::query(AssertSqlSafe(sql))
        .execute(&pool)
        .await
        .map_err(|e| describe(&e, s, &s.url.0));
    pool.close().await;
    r.map(|_| ())
}
