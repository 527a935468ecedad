//! `electop node --scheme pg-advisory | mysql-lock`: a participant as services write one.
//! It waits in line for the lock on a session of its own, leads while it holds it, and
//! checks its session every `--renew`: a session ended (by `reelect`, or the server going)
//! is the `deposed:` line, then it connects again and waits in line again. Stopped, it
//! unlocks and leaves. What differs per server is the SQL ([`Sql`]):
//! - PostgreSQL: one `pg_advisory_lock` waits as long as it takes; the session's
//!   `application_name` is the node's id, so electop shows it as `id:pid`.
//! - MySQL/MariaDB: `GET_LOCK(name, timeout)` waits at most its timeout (the `--ttl`, in
//!   whole seconds) and is asked again, as applications do; electop shows the connection as
//!   `conn:N`, which the node says when it connects.

use std::time::{Duration, Instant};

use sqlx::any::AnyRow;
use sqlx::pool::PoolConnection;
use sqlx::{Any, AnyPool, AssertSqlSafe, Row};
use tokio_util::sync::CancellationToken;

use super::Flavor;
use crate::backend::sql::{SqlSettings, open};
use crate::config::SqlSource;
use crate::node::{Belief, Options, Reporter, Timing};

/// The statements one flavor's participant sends, the lock named in each.
struct Sql {
    flavor: Flavor,
    /// Names this session (PostgreSQL: its `application_name`); `None`: the server has
    /// no such name.
    introduce: Option<&'static str>,
    /// Answers the session's id (`pid`, connection id) as a signed integer.
    whoami: &'static str,
    /// Waits for the lock; answers 1 once held, 0 when its own timeout passed.
    take: String,
    /// Answers 1 while this session holds the lock.
    holds: String,
    release: String,
}

impl Sql {
    fn new(flavor: Flavor, election: &str, timing: Timing) -> Sql {
        match flavor {
            Flavor::Postgres => {
                let lock = pg_lock_args(election);
                Sql {
                    flavor,
                    introduce: Some("SELECT set_config('application_name', $1, false)"),
                    whoami: "SELECT pg_backend_pid()::bigint",
                    take: format!("SELECT 1::bigint FROM (SELECT pg_advisory_lock({lock})) l"),
                    // The session's own answer: it holds its locks while it lasts.
                    holds: "SELECT 1::bigint".into(),
                    release: format!("SELECT pg_advisory_unlock({lock})"),
                }
            }
            Flavor::Mysql => {
                let name = mysql_name(election);
                // GET_LOCK's timeout is in seconds; a follower asks again when it passes.
                let wait = timing.ttl.as_secs_f64().ceil().max(1.0) as u64;
                Sql {
                    flavor,
                    introduce: None,
                    whoami: "SELECT CAST(CONNECTION_ID() AS SIGNED)",
                    take: format!("SELECT CAST(COALESCE(GET_LOCK({name}, {wait}), -1) AS SIGNED)"),
                    holds: format!(
                        "SELECT CAST(COALESCE(IS_USED_LOCK({name}) = CONNECTION_ID(), 0) AS SIGNED)"
                    ),
                    release: format!("SELECT RELEASE_LOCK({name})"),
                }
            }
        }
    }

    /// What a session is called in this server's words.
    fn session_word(&self) -> &'static str {
        match self.flavor {
            Flavor::Postgres => "session",
            Flavor::Mysql => "connection",
        }
    }
}

/// How the election names its lock: `42`, `1:2`, or a name taken as `hashtext(name)`.
fn pg_lock_args(election: &str) -> String {
    let ints: Option<Vec<i64>> = election.split(':').map(|p| p.parse().ok()).collect();
    match ints {
        Some(v) if v.len() <= 2 => v.iter().map(i64::to_string).collect::<Vec<_>>().join(", "),
        // Quoted as a string literal: doubled quotes are all it needs.
        _ => format!("hashtext('{}')", election.replace('\'', "''")),
    }
}

/// A `GET_LOCK` name as a string literal, so electop (this one or another) can read from
/// PROCESSLIST which lock a waiting connection is in line for. A backslash means something
/// else under `NO_BACKSLASH_ESCAPES`: such a name goes in as hex, which every mode reads
/// alike (its waiters are then in no line, said on the dashboard).
fn mysql_name(election: &str) -> String {
    if election.contains('\\') {
        let hex: String = election.bytes().map(|b| format!("{b:02X}")).collect();
        format!("CONVERT(X'{hex}' USING utf8mb4)")
    } else {
        format!("'{}'", election.replace('\'', "''"))
    }
}

pub(crate) async fn run(
    cfg: &SqlSource,
    args: &Options,
    timing: Timing,
    report: &Reporter,
    stop: CancellationToken,
) -> anyhow::Result<()> {
    let s = SqlSettings::new(cfg);
    let sql = Sql::new(Flavor::of(cfg.scheme), &args.election, timing);
    loop {
        let pool = tokio::select! {
            p = open(&s, timing.call_limit()) => p,
            _ = stop.cancelled() => break,
        };
        let pool = match pool {
            Ok(p) => p,
            Err(e) => {
                report.believe(Belief::NoContact {
                    error: e.to_string(),
                });
                tokio::select! {
                    _ = tokio::time::sleep(timing.retry) => continue,
                    _ = stop.cancelled() => break,
                }
            }
        };
        let ended = session(&pool, &sql, args, timing, report, &stop).await;
        pool.close().await;
        match ended {
            Ok(()) => break,
            Err(why) => {
                report.depose(&why);
                report.believe(Belief::NoContact { error: why });
                tokio::select! {
                    _ = tokio::time::sleep(timing.retry) => {}
                    _ = stop.cancelled() => break,
                }
            }
        }
    }
    report.believe(Belief::Stopped);
    Ok(())
}

async fn one(conn: &mut PoolConnection<Any>, sql: &str) -> Result<AnyRow, sqlx::Error> {
    // Text protocol, so PROCESSLIST shows the statement with its lock name.
    sqlx::raw_sql(AssertSqlSafe(sql.to_string()))
        .fetch_one(&mut **conn)
        .await
}

/// One session: in line, then leading until stopped (`Ok`) or the session ends (`Err`).
async fn session(
    pool: &AnyPool,
    sql: &Sql,
    args: &Options,
    timing: Timing,
    report: &Reporter,
    stop: &CancellationToken,
) -> Result<(), String> {
    let word = sql.session_word();
    // One connection for the whole tenure: the lock is the session's.
    let mut conn = pool.acquire().await.map_err(|e| e.to_string())?;
    if let Some(introduce) = sql.introduce {
        sqlx::query(introduce)
            .bind(args.id.as_str())
            .execute(&mut *conn)
            .await
            .map_err(|e| e.to_string())?;
    }
    let me: i64 = one(&mut conn, sql.whoami)
        .await
        .and_then(|r| r.try_get(0))
        .map_err(|e| e.to_string())?;
    let shown = match sql.introduce {
        Some(_) => format!("{}:{me}", args.id),
        None => format!("{}:{me}", sql.flavor.id_word()),
    };
    report.say(&format!("my {word} is {shown}"));
    report.believe(Belief::Follower { leader: None });
    loop {
        let took = tokio::select! {
            r = one(&mut conn, &sql.take) => r,
            _ = stop.cancelled() => return Ok(()),
        };
        let got: i64 = took
            .and_then(|r| r.try_get(0))
            .map_err(|e| format!("my {word} was ended while in line: {e}"))?;
        match got {
            1 => break,
            // Its wait ran out: in line again, as services do.
            0 => continue,
            _ => return Err(format!("the server refused the lock to my {word}")),
        }
    }
    // No term: the lock is held while the session lasts, checked every renew.
    report.lead(Some(
        Instant::now() + Duration::from_secs(100 * 365 * 86_400),
    ));
    loop {
        tokio::select! {
            _ = tokio::time::sleep(timing.renew) => {}
            _ = stop.cancelled() => {
                let released =
                    tokio::time::timeout(crate::node::RESIGN_LIMIT, one(&mut conn, &sql.release))
                        .await;
                // Said as every other scheme's participant says it.
                report.say(match released {
                    Ok(Ok(_)) => "resigned",
                    _ => "could not resign in time: the lock goes with the session",
                });
                return Ok(());
            }
        }
        let alive = tokio::time::timeout(timing.call_limit(), one(&mut conn, &sql.holds)).await;
        match alive.map(|r| r.and_then(|r| r.try_get::<i64, _>(0))) {
            Ok(Ok(1)) => {}
            Ok(Ok(_)) => return Err(format!("my {word} no longer holds the lock")),
            Ok(Err(e)) => return Err(format!("my {word} was ended: {e}")),
            Err(_) => return Err(format!("my {word} did not answer in time")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_names_become_lock_arguments() {
        assert_eq!(pg_lock_args("42"), "42");
        assert_eq!(pg_lock_args("1:2"), "1, 2");
        assert_eq!(pg_lock_args("nightly"), "hashtext('nightly')");
        assert_eq!(pg_lock_args("o'neil"), "hashtext('o''neil')");
    }

    #[test]
    fn mysql_names_are_literals_the_line_can_read() {
        assert_eq!(mysql_name("leader.jobs"), "'leader.jobs'");
        assert_eq!(mysql_name("o'neil"), "'o''neil'");
        assert_eq!(mysql_name("a\\b"), "CONVERT(X'615C62' USING utf8mb4)");
        let take = Sql::new(
            Flavor::Mysql,
            "o'neil",
            Timing::defaults(crate::model::Scheme::MysqlLock),
        )
        .take;
        assert_eq!(
            super::super::mysql::waited_name(&take).as_deref(),
            Some("o'neil")
        );
    }
}
