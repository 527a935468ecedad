//! `electop node --scheme pg-advisory`: a participant as services write one. It waits in
//! line with `pg_advisory_lock` on a session of its own (`application_name` = its id, so
//! electop shows it as `id:pid`), leads while it holds the lock, and checks its session
//! every `--renew`: a session ended (by `reelect`, or the server going) is the `deposed:`
//! line, then it connects again and waits in line again. Stopped, it unlocks and leaves.

use std::time::{Duration, Instant};

use sqlx::{AnyPool, Row};
use tokio_util::sync::CancellationToken;

use crate::backend::sql::{SqlSettings, open};
use crate::config::SqlSource;
use crate::node::{Belief, Options, Reporter, Timing};

/// How the election names its lock: `42`, `1:2`, or a name taken as `hashtext(name)`.
fn lock_args(election: &str) -> String {
    let ints: Option<Vec<i64>> = election.split(':').map(|p| p.parse().ok()).collect();
    match ints {
        Some(v) if v.len() <= 2 => v.iter().map(i64::to_string).collect::<Vec<_>>().join(", "),
        // Quoted as a string literal: doubled quotes are all it needs.
        _ => format!("hashtext('{}')", election.replace('\'', "''")),
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
    let lock = lock_args(&args.election);
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
        let ended = session(&pool, &lock, args, timing, report, &stop).await;
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

/// One session: in line, then leading until stopped (`Ok`) or the session ends (`Err`).
async fn session(
    pool: &AnyPool,
    lock: &str,
    args: &Options,
    timing: Timing,
    report: &Reporter,
    stop: &CancellationToken,
) -> Result<(), String> {
    // One connection for the whole tenure: the lock is the session's.
    let mut conn = pool.acquire().await.map_err(|e| e.to_string())?;
    sqlx::query("SELECT set_config('application_name', $1, false)")
        .bind(args.id.as_str())
        .execute(&mut *conn)
        .await
        .map_err(|e| e.to_string())?;
    report.believe(Belief::Follower { leader: None });
    let take = format!("SELECT pg_advisory_lock({lock})::text");
    tokio::select! {
        r = sqlx::query(sqlx::AssertSqlSafe(take)).execute(&mut *conn) => {
            r.map_err(|e| format!("my session was ended while in line: {e}"))?;
        }
        _ = stop.cancelled() => return Ok(()),
    }
    // No term: the lock is held while the session lasts, checked every renew.
    report.lead(Some(
        Instant::now() + Duration::from_secs(100 * 365 * 86_400),
    ));
    loop {
        tokio::select! {
            _ = tokio::time::sleep(timing.renew) => {}
            _ = stop.cancelled() => {
                let unlock = format!("SELECT pg_advisory_unlock({lock})");
                let _ = sqlx::query(sqlx::AssertSqlSafe(unlock)).execute(&mut *conn).await;
                return Ok(());
            }
        }
        let alive = tokio::time::timeout(
            timing.call_limit(),
            sqlx::query("SELECT 1 AS one").fetch_one(&mut *conn),
        )
        .await;
        match alive {
            Ok(Ok(row)) if row.try_get::<i32, _>("one").is_ok() => {}
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return Err(format!("my session was ended: {e}")),
            Err(_) => return Err("my session did not answer in time".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_names_become_lock_arguments() {
        assert_eq!(lock_args("42"), "42");
        assert_eq!(lock_args("1:2"), "1, 2");
        assert_eq!(lock_args("nightly"), "hashtext('nightly')");
        assert_eq!(lock_args("o'neil"), "hashtext('o''neil')");
    }
}
