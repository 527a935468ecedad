//! A SQL URL whose port another kind of server holds (Redis, etcd, MySQL at a
//! `postgres://` URL): the client waits for an answer in its own protocol that never comes,
//! or fails on bytes it cannot read. The shared probe (`backend::probe`) names what is there.

use std::time::Duration;

use super::SqlError;
use super::dialect::Dialect;
use crate::backend::probe::{self, Answerer};

/// How long the client waits before the port is probed: a database answers its login in
/// far less, and one that does not is asked what it is.
const BEFORE_PROBE: Duration = Duration::from_secs(1);
/// How long the probe waits for an answer.
const PROBE: Duration = Duration::from_secs(1);

/// Resolves only when the server at `url` answered as another kind of server, a second into
/// a login that has not finished: the error naming it.
pub(super) async fn not_the_database(url: &str, dialect: Dialect, where_: &str) -> SqlError {
    tokio::time::sleep(BEFORE_PROBE).await;
    match other_server(url, dialect, where_).await {
        Some(e) => e,
        None => std::future::pending().await,
    }
}

/// The error naming the server at `url` when it is not `dialect`'s: `None` when it is, it
/// said nothing, or the URL names no TCP port (SQLite, a Unix socket).
pub(super) async fn other_server(url: &str, dialect: Dialect, where_: &str) -> Option<SqlError> {
    let (host, port) = tcp_address(url, dialect)?;
    let answer = probe::what_answers(&host, port, PROBE).await?;
    let (name, default) = match (dialect, &answer) {
        (Dialect::Postgres, Answerer::Postgres) | (Dialect::MySql, Answerer::MySql(_)) => {
            return None;
        }
        (Dialect::Postgres, _) => ("PostgreSQL", 5432),
        (Dialect::MySql, _) => ("MySQL or MariaDB", 3306),
        (Dialect::Sqlite, _) => return None,
    };
    Some(SqlError::WrongServer(format!(
        "cannot connect to {where_}: the server there is not {name}: {}; is this {name}'s \
         port ({default})?",
        answer.said()
    )))
}

/// The host and port a URL dials over TCP (the dialect's default port when it names none).
fn tcp_address(url: &str, dialect: Dialect) -> Option<(String, u16)> {
    let default = match dialect {
        Dialect::Postgres => 5432,
        Dialect::MySql => 3306,
        Dialect::Sqlite => return None,
    };
    let u = url::Url::parse(url).ok()?;
    // `?host=/run/postgresql` (a socket directory) or `?socket=`: no TCP port to ask.
    if u.query_pairs()
        .any(|(k, v)| k == "socket" || (k == "host" && v.starts_with('/')))
    {
        return None;
    }
    let host = match u.host()? {
        url::Host::Ipv6(a) => a.to_string(),
        h => h.to_string(),
    };
    if host.is_empty() {
        return None;
    }
    Some((host, u.port().unwrap_or(default)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_port_is_the_urls_or_the_dialects() {
        let at = |u, d| tcp_address(u, d);
        assert_eq!(
            at("postgres://u:pw@h:6379/db", Dialect::Postgres),
            Some(("h".into(), 6379))
        );
        assert_eq!(
            at("mysql://u@[::1]/db", Dialect::MySql),
            Some(("::1".into(), 3306))
        );
        assert_eq!(
            at("postgres://u@x/db?host=/run/pg", Dialect::Postgres),
            None
        );
        assert_eq!(at("sqlite:a.db", Dialect::Sqlite), None);
    }
}
