//! MySQL/MariaDB `GET_LOCK(name)`: where each server lists its user locks, and ending a
//! holder's connection only while it still holds the lock.
//!
//! Sources, best first (measured on MariaDB 10.11; see tests/campaigners/MEASUREMENTS.md):
//! - `performance_schema.metadata_locks` (`OBJECT_TYPE = 'USER LEVEL LOCK'`): holders
//!   (`GRANTED`) and waiters (`PENDING`) of every name. On by default in MySQL 5.7+/8; on
//!   MariaDB only with `performance_schema=ON` at server start and the instrument
//!   `wait/lock/metadata/sql/mdl` enabled. Needs `SELECT` on `performance_schema`.
//! - MariaDB's `information_schema.METADATA_LOCK_INFO` (the `metadata_lock_info` plugin,
//!   shipped but not loaded: `INSTALL SONAME 'metadata_lock_info'`): the holder of every
//!   name, readable without any privilege. Only granted locks are listed.
//! - `IS_USED_LOCK(name)` for names configured in `[source.locks] names`: works everywhere,
//!   but only for the names given.
//!
//! With the last two the line is read from `information_schema.PROCESSLIST`: sessions in
//! state `User lock`, the name taken from the `GET_LOCK('name', ...)` text of their
//! statement, longest waiting first (the order MariaDB grants them, measured). Sessions of
//! other accounts are listed only with the `PROCESS` privilege, and a waiter whose
//! statement names the lock through a placeholder (`GET_LOCK(?, 30)`, a server-side
//! prepared statement) cannot be placed in any line.
//!
//! No server keeps a connection's start time, so [`Session::start`] here is the name of the
//! lock the session holds or waits for: ending it compares that the connection still holds
//! it (`IS_USED_LOCK(name) = id`) or still waits in `GET_LOCK`, and runs `KILL` in the same
//! statement (connection ids are not reused before 2^32 connections). A connection
//! PROCESSLIST does not show this account (no `PROCESS`) has no start: it is never ended.

use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, SystemTime};

use sqlx::{AnyPool, AssertSqlSafe, Row as _};

use super::LockNaming;
use super::naming::Resolved;
use super::{Flavor, LockRead, Session, SessionRef};
use crate::backend::sql::{SqlError, SqlSettings};

/// Where this server's user locks can be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    PerfSchema,
    LockInfo,
    Named,
}

/// What the server offers this account, asked at every poll (a plugin may be installed
/// while electop runs).
struct Offers {
    perf_schema: bool,
    lock_info: bool,
}

const OFFERS: &str = "SELECT \
    (SELECT COUNT(*) FROM information_schema.PLUGINS \
       WHERE PLUGIN_NAME = 'METADATA_LOCK_INFO' AND PLUGIN_STATUS = 'ACTIVE'), \
    CAST(@@performance_schema AS SIGNED)";

/// Whether performance_schema records metadata locks (MariaDB leaves the instrument off).
const PERF_INSTRUMENT: &str = "SELECT COUNT(*) FROM performance_schema.setup_instruments \
    WHERE NAME = 'wait/lock/metadata/sql/mdl' AND ENABLED = 'YES'";

/// Holders and waiters of every user lock, waiters longest first.
const PERF_LOCKS: &str = "SELECT ml.OBJECT_NAME, ml.LOCK_STATUS = 'GRANTED', \
    CAST(t.PROCESSLIST_ID AS SIGNED), t.PROCESSLIST_USER, t.PROCESSLIST_HOST, \
    CAST(COALESCE(t.PROCESSLIST_TIME, 0) * 1000 AS SIGNED) \
    FROM performance_schema.metadata_locks ml \
    JOIN performance_schema.threads t ON t.THREAD_ID = ml.OWNER_THREAD_ID \
    WHERE ml.OBJECT_TYPE = 'USER LEVEL LOCK' \
    ORDER BY ml.OBJECT_NAME, t.PROCESSLIST_TIME DESC, t.PROCESSLIST_ID";

/// Holders from the plugin, with the account and address where PROCESSLIST shows them.
const INFO_HOLDERS: &str = "SELECT m.TABLE_SCHEMA, CAST(m.THREAD_ID AS SIGNED), \
    p.USER, p.HOST, CAST(m.LOCK_TIME_MS AS SIGNED) \
    FROM information_schema.METADATA_LOCK_INFO m \
    LEFT JOIN information_schema.PROCESSLIST p ON p.ID = m.THREAD_ID \
    WHERE m.LOCK_TYPE = 'User lock'";

/// The holder of one configured name.
const NAMED_HOLDER: &str = "SELECT CAST(l.id AS SIGNED), p.USER, p.HOST \
    FROM (SELECT IS_USED_LOCK(?) AS id) l \
    LEFT JOIN information_schema.PROCESSLIST p ON p.ID = l.id";

/// The sessions waiting in `GET_LOCK`, longest first: MariaDB grants a user lock to its
/// waiters in the order they asked (measured with four waiters).
const WAITERS: &str = "SELECT CAST(ID AS SIGNED), USER, HOST, \
    CAST(TIME_MS AS SIGNED), INFO \
    FROM information_schema.PROCESSLIST WHERE STATE = 'User lock' \
    ORDER BY TIME_MS DESC, ID";

pub(super) fn privilege_hint(user: &str) -> String {
    format!(
        "the sessions of other accounts are listed only with the PROCESS privilege: \
         GRANT PROCESS ON *.* TO {user}; ending one takes CONNECTION ADMIN (or SUPER)"
    )
}

fn err(s: &SqlSettings, e: &sqlx::Error) -> SqlError {
    SqlError::from_sqlx(e, s, &s.url.0)
}

/// The server must list user locks one way or another; which is chosen at each poll.
pub(super) async fn check(pool: &AnyPool, s: &SqlSettings) -> Result<(), SqlError> {
    offers(pool, s).await.map(|_| ())
}

async fn offers(pool: &AnyPool, s: &SqlSettings) -> Result<Offers, SqlError> {
    let row = sqlx::query(OFFERS)
        .fetch_one(pool)
        .await
        .map_err(|e| err(s, &e))?;
    let mut o = Offers {
        lock_info: row.try_get::<i64, _>(0).unwrap_or(0) > 0,
        perf_schema: false,
    };
    if row.try_get::<i64, _>(1).unwrap_or(0) == 1 {
        // Refused (no SELECT on performance_schema) reads as not offered.
        o.perf_schema = match sqlx::query(PERF_INSTRUMENT).fetch_one(pool).await {
            Ok(r) => r.try_get::<i64, _>(0).unwrap_or(0) > 0,
            Err(_) => false,
        };
    }
    Ok(o)
}

fn source(o: &Offers, names: &[String]) -> Option<Source> {
    if o.perf_schema {
        Some(Source::PerfSchema)
    } else if o.lock_info {
        Some(Source::LockInfo)
    } else if !names.is_empty() {
        Some(Source::Named)
    } else {
        None
    }
}

/// What to do when the server lists no user locks.
pub(super) fn no_source(where_: &str) -> String {
    format!(
        "{where_} does not list GET_LOCK locks: on MariaDB load the plugin that does \
         (INSTALL SONAME 'metadata_lock_info', as an administrator), or name the locks to \
         watch in the source's [source.locks] names, which electop asks IS_USED_LOCK about"
    )
}

pub(super) async fn read(
    pool: &AnyPool,
    s: &SqlSettings,
    naming: &Resolved,
) -> Result<Vec<LockRead>, SqlError> {
    let names = naming.keys();
    let o = offers(pool, s).await?;
    let Some(src) = source(&o, &names) else {
        return Err(SqlError::Settings(no_source(&s.url.redacted())));
    };
    let mut locks: BTreeMap<String, LockRead> = BTreeMap::new();
    let now = SystemTime::now();
    if src == Source::PerfSchema {
        let rows = fetch(pool, s, PERF_LOCKS).await?;
        for r in rows {
            let key: String = r.try_get(0).unwrap_or_default();
            let granted = r.try_get::<i64, _>(1).unwrap_or(0) == 1;
            let ses = session(r.try_get(2).unwrap_or(0), &r, 3, 4, &key);
            let lock = entry(&mut locks, &key, naming);
            if granted {
                lock.holder = Some(ses);
            } else {
                let ms: i64 = r.try_get(5).unwrap_or(0);
                lock.waiting.push(Session {
                    waiting_since: now.checked_sub(millis(ms)),
                    ..ses
                });
            }
        }
        return Ok(locks.into_values().collect());
    }
    if src == Source::LockInfo {
        for r in fetch(pool, s, INFO_HOLDERS).await? {
            let key: String = r.try_get(0).unwrap_or_default();
            let ses = session(r.try_get(1).unwrap_or(0), &r, 2, 3, &key);
            entry(&mut locks, &key, naming).holder = Some(ses);
        }
    } else {
        for key in &names {
            let r = sqlx::query(NAMED_HOLDER)
                .bind(key.clone())
                .fetch_one(pool)
                .await
                .map_err(|e| err(s, &e))?;
            if let Ok(id) = r.try_get::<i64, _>(0) {
                let ses = session(id, &r, 1, 2, key);
                entry(&mut locks, key, naming).holder = Some(ses);
            }
        }
    }
    for r in fetch(pool, s, WAITERS).await? {
        let info: Option<String> = r.try_get(4).ok();
        let Some(key) = info.as_deref().and_then(waited_name) else {
            continue;
        };
        if src == Source::Named && !names.contains(&key) {
            continue;
        }
        let ms: i64 = r.try_get(3).unwrap_or(0);
        let ses = Session {
            waiting_since: now.checked_sub(millis(ms)),
            ..session(r.try_get(0).unwrap_or(0), &r, 1, 2, &key)
        };
        entry(&mut locks, &key, naming).waiting.push(ses);
    }
    Ok(locks.into_values().collect())
}

async fn fetch(
    pool: &AnyPool,
    s: &SqlSettings,
    sql: &'static str,
) -> Result<Vec<sqlx::any::AnyRow>, SqlError> {
    sqlx::query(sql)
        .fetch_all(pool)
        .await
        .map_err(|e| err(s, &e))
}

fn millis(ms: i64) -> Duration {
    Duration::from_millis(ms.max(0) as u64)
}

fn entry<'a>(
    locks: &'a mut BTreeMap<String, LockRead>,
    key: &str,
    naming: &Resolved,
) -> &'a mut LockRead {
    locks.entry(key.to_string()).or_insert_with(|| LockRead {
        key: key.to_string(),
        name: naming.name(key),
        holder: None,
        waiting: Vec::new(),
    })
}

/// A connection holding or waiting for `key`, as PROCESSLIST (or performance_schema.threads)
/// shows it. Its identity for [`end_session`] is the lock (`start`); a connection this
/// account may not see (no user: not listed to it) has none, so it is never ended.
fn session(id: i64, r: &sqlx::any::AnyRow, user: usize, host: usize, key: &str) -> Session {
    let user = r.try_get::<Option<String>, _>(user).ok().flatten();
    Session {
        id,
        start: user.as_ref().map(|_| key.to_string()),
        started: None,
        user,
        application: None,
        client: r.try_get::<Option<String>, _>(host).ok().flatten(),
        waiting_since: None,
        flavor: Flavor::Mysql,
    }
}

/// The names to show: `[source.locks] keys` (name -> shown name) and `names` (each its own),
/// which are also the names `IS_USED_LOCK` is asked about when nothing lists every lock.
pub(super) fn resolve(naming: &LockNaming) -> Resolved {
    let mut by_key = naming.keys.clone();
    for n in &naming.names {
        by_key.entry(n.clone()).or_insert_with(|| n.clone());
    }
    Resolved::new(by_key)
}

/// The lock name a waiting statement asks for, when it is written out as a string literal:
/// `SELECT GET_LOCK('leader.jobs', 30)` -> `leader.jobs`. `None` for a placeholder or an
/// expression.
pub(super) fn waited_name(info: &str) -> Option<String> {
    let lower = info.to_ascii_lowercase();
    let at = lower.find("get_lock")? + "get_lock".len();
    let rest = info[at..].trim_start().strip_prefix('(')?.trim_start();
    let quote = rest.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let mut name = String::new();
    let mut chars = rest[1..].chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => name.push(unescape(chars.next()?)),
            c if c == quote => {
                if chars.peek() == Some(&quote) {
                    chars.next();
                    name.push(quote);
                } else {
                    return Some(name);
                }
            }
            c => name.push(c),
        }
    }
    None
}

fn unescape(c: char) -> char {
    match c {
        'n' => '\n',
        't' => '\t',
        'r' => '\r',
        '0' => '\0',
        c => c,
    }
}

/// Which of `sessions` are still connected. A session with a start was listed to this
/// account (its own, or any with `PROCESS`), so PROCESSLIST (or performance_schema.threads)
/// not listing it any more means it is gone. One without a start was never listed: it is
/// taken as alive, so its end is never claimed without being seen.
pub(super) async fn alive(
    pool: &AnyPool,
    s: &SqlSettings,
    sessions: &[SessionRef],
) -> Result<HashSet<SessionRef>, SqlError> {
    let ids: Vec<String> = sessions.iter().map(|r| r.id.to_string()).collect();
    let ids = ids.join(",");
    let mut sql = format!(
        "SELECT CAST(ID AS SIGNED) FROM information_schema.PROCESSLIST WHERE ID IN ({ids})"
    );
    if offers(pool, s).await?.perf_schema {
        sql = format!(
            "{sql} UNION SELECT CAST(PROCESSLIST_ID AS SIGNED) FROM performance_schema.threads \
             WHERE PROCESSLIST_ID IN ({ids})"
        );
    }
    let rows = sqlx::query(AssertSqlSafe(sql))
        .fetch_all(pool)
        .await
        .map_err(|e| err(s, &e))?;
    let live: HashSet<i64> = rows.iter().filter_map(|r| r.try_get(0).ok()).collect();
    Ok(sessions
        .iter()
        .filter(|r| r.start.is_none() || live.contains(&r.id))
        .cloned()
        .collect())
}

/// The statement that ends connection `id` only if it holds `name` now, or still waits in
/// `GET_LOCK` (one in line): the check and the `KILL` run in one compound statement on the
/// server, so no other connection can be hit (ids are not reused) and what was compared
/// cannot change before the `KILL` except by the holder releasing in that instant. The name
/// goes in as hex, so no quoting or SQL mode matters.
pub(super) fn end_sql(id: i64, name: &str) -> String {
    let hex: String = name.bytes().map(|b| format!("{b:02X}")).collect();
    format!(
        "BEGIN NOT ATOMIC \
           IF IS_USED_LOCK(CONVERT(X'{hex}' USING utf8mb4)) = {id} \
              OR EXISTS (SELECT 1 FROM information_schema.PROCESSLIST \
                         WHERE ID = {id} AND STATE = 'User lock') THEN \
             SET @electop_ended = 1; KILL CONNECTION {id}; \
           ELSE SET @electop_ended = 0; END IF; \
         END"
    )
}

/// Ends connection `id` if it still holds (or waits for) the lock `start` names (see
/// [`end_sql`]). Asked again a few times when it does neither: a waiter granted the lock in
/// the instant the holder before it was ended (the same action's previous step) has left
/// `GET_LOCK` but does not hold the lock yet.
pub(super) async fn end_session(
    pool: &AnyPool,
    s: &SqlSettings,
    id: i64,
    start: &str,
) -> Result<bool, SqlError> {
    let mut conn = pool.acquire().await.map_err(|e| err(s, &e))?;
    for _ in 0..ASKS {
        // Text protocol: a compound statement cannot be prepared.
        sqlx::raw_sql(AssertSqlSafe(end_sql(id, start)))
            .execute(&mut *conn)
            .await
            .map_err(|e| match mysql_number(&e) {
                Some(KILL_DENIED) => SqlError::Permission(kill_denied(s, id)),
                _ => err(s, &e),
            })?;
        let row = sqlx::query("SELECT CAST(@electop_ended AS SIGNED)")
            .fetch_one(&mut *conn)
            .await
            .map_err(|e| err(s, &e))?;
        if row.try_get::<i64, _>(0).unwrap_or(0) == 1 {
            return Ok(true);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(false)
}

/// How often a connection that neither holds nor waits is asked about before it is called
/// gone.
const ASKS: usize = 5;

/// MariaDB/MySQL `ER_KILL_DENIED_ERROR`: "You are not owner of thread N".
const KILL_DENIED: u16 = 1095;

fn mysql_number(e: &sqlx::Error) -> Option<u16> {
    let db = e.as_database_error()?;
    Some(
        db.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>()?
            .number(),
    )
}

fn kill_denied(s: &SqlSettings, id: i64) -> String {
    let user = url::Url::parse(&s.url.0)
        .map(|u| u.username().to_string())
        .unwrap_or_default();
    format!(
        "{}: the server refused to end connection {id}, which another account opened: \
         ending it takes CONNECTION ADMIN (MariaDB 10.5.2+, MySQL 8) or SUPER: GRANT \
         CONNECTION ADMIN ON *.* TO {user}",
        s.url.redacted()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_waited_name_comes_from_the_literal() {
        assert_eq!(
            waited_name("select get_lock('leader.jobs',30)").as_deref(),
            Some("leader.jobs")
        );
        assert_eq!(
            waited_name("SELECT GET_LOCK ( \"a'b\" , 5)").as_deref(),
            Some("a'b")
        );
        assert_eq!(
            waited_name("SELECT GET_LOCK('it''s \\\\ x', 5)").as_deref(),
            Some("it's \\ x")
        );
        assert_eq!(waited_name("select get_lock(?,30)"), None);
        assert_eq!(waited_name("select get_lock(@n,30)"), None);
        assert_eq!(waited_name("select sleep(3)"), None);
        assert_eq!(waited_name("select get_lock('open"), None);
    }

    #[test]
    fn the_end_statement_compares_the_holder_and_quotes_nothing() {
        let sql = end_sql(42, "a'); KILL 1; --");
        assert!(sql.contains(
            "IS_USED_LOCK(CONVERT(X'6127293B204B494C4C20313B202D2D' USING utf8mb4)) = 42"
        ));
        assert!(sql.contains("KILL CONNECTION 42;"));
        assert!(!sql.contains("KILL 1"));
    }

    #[test]
    fn names_are_their_own_keys_and_may_be_shown_otherwise() {
        let n = LockNaming {
            keys: [("leader.jobs".to_string(), "jobs".to_string())].into(),
            names: vec!["leader.jobs".into(), "leader.mail".into()],
            hash: Default::default(),
        };
        let r = resolve(&n);
        assert_eq!(r.keys(), ["leader.jobs", "leader.mail"]);
        assert_eq!(r.name("leader.jobs"), "jobs");
        assert_eq!(r.name("leader.mail"), "leader.mail");
        assert_eq!(r.name("other"), "other");
    }

    #[test]
    fn sources_in_order_and_none_says_the_fix() {
        let o = |perf_schema, lock_info| Offers {
            perf_schema,
            lock_info,
        };
        assert_eq!(source(&o(true, true), &[]), Some(Source::PerfSchema));
        assert_eq!(source(&o(false, true), &[]), Some(Source::LockInfo));
        assert_eq!(source(&o(false, false), &["x".into()]), Some(Source::Named));
        assert_eq!(source(&o(false, false), &[]), None);
        let m = no_source("mysql://127.0.0.1:3306/app");
        assert!(m.contains("INSTALL SONAME 'metadata_lock_info'"), "{m}");
        assert!(m.contains("names"), "{m}");
    }
}
