//! SQL participants: `sql-lease` (gabihodoroaga/leaderelection: acquire with the upsert every retry interval;
//! once leader, renew every renew interval until a renewal fails) and `sql-heartbeat`
//! ("Leader election using MySQL": the insert-on-duplicate once a second). A leader renews only a term still
//! running under its name, so it is deposed at its next renewal when an operator deleted,
//! reassigned or ended its row. After each statement the row is read back: that, not the
//! affected-row count, says who holds it (MySQL counts matched rows).

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use sqlx::{AnyPool, AssertSqlSafe, Row as _};
use tokio_util::sync::CancellationToken;

use crate::backend::sql::{
    Schema, SqlSettings, check_schema, connect, create_table_if_missing, describe,
};
use crate::config::SqlSource;
use crate::model::Scheme;
use crate::node::{Belief, Options, Reporter, Timing, term};

pub(super) async fn run(
    cfg: &SqlSource,
    args: &Options,
    t: Timing,
    report: &Reporter,
    stop: CancellationToken,
) -> Result<()> {
    // The node's own --ttl is its heartbeat timeout.
    let cfg = match cfg.scheme {
        Scheme::SqlHeartbeat => cfg.with_timeout(t.ttl)?,
        _ => cfg.clone(),
    };
    let s = SqlSettings::new(&cfg);
    // Each round of store calls must finish while our term could still be running; a node
    // cut off from the database then stops believing it leads when its term runs out.
    let limit = t.call_limit();
    let mut conn: Option<(AnyPool, Schema)> = None;
    let mut leader = false;
    loop {
        // Rounds start every interval, however long each takes: a leader renews, and so
        // notices it was deposed, at most one renew interval after the change.
        let started = Instant::now();
        let round = async {
            if conn.is_none() {
                conn = Some(open(&s, args).await?);
            }
            match &conn {
                Some((pool, schema)) => attempt(&s, pool, schema, args, t, leader).await,
                None => Err("no connection".to_string()),
            }
        };
        let outcome = tokio::select! {
            r = tokio::time::timeout(limit, round) => r.unwrap_or_else(|_| Err(format!("the database did not answer within {limit:?}"))),
            _ = stop.cancelled() => return stopped(&s, conn.as_ref(), args, report, leader).await,
        };
        leader = match outcome {
            Ok(Seen::Leader { until }) => {
                report.lead(until);
                true
            }
            Ok(Seen::Other { belief, why }) => {
                report.depose(&why);
                report.believe(belief);
                false
            }
            Err(e) => {
                report.believe(Belief::NoContact { error: e });
                if let Some((pool, _)) = conn.take() {
                    // Not awaited: closing waits for connections that may never answer.
                    tokio::spawn(async move { pool.close().await });
                }
                false
            }
        };
        let wait = if leader { t.renew } else { t.retry };
        tokio::select! {
            _ = tokio::time::sleep_until((started + wait).into()) => {}
            _ = stop.cancelled() => return stopped(&s, conn.as_ref(), args, report, leader).await,
        }
    }
}

/// Asked to stop: no longer a leader from now on, and a leader ends its term in the store
/// so the next attempt by anyone wins, within a bound.
async fn stopped(
    s: &SqlSettings,
    conn: Option<&(AnyPool, Schema)>,
    args: &Options,
    report: &Reporter,
    leader: bool,
) -> Result<()> {
    report.believe(Belief::Stopped);
    if let Some((pool, schema)) = conn
        && leader
    {
        let done =
            tokio::time::timeout(crate::node::RESIGN_LIMIT, resign(s, pool, schema, args)).await;
        report.say(if done.is_ok() {
            "resigned"
        } else {
            "could not resign in time: the term will run out"
        });
    }
    Ok(())
}

async fn open(s: &SqlSettings, args: &Options) -> Result<(AnyPool, Schema), String> {
    if args.create_table {
        create_table_if_missing(s, Duration::from_secs(5)).await?;
    }
    let pool = connect(s, Duration::from_secs(5)).await?;
    let schema = check_schema(s, &pool).await?;
    if schema.key_type.to_ascii_lowercase().contains("int") && args.election.parse::<i64>().is_err()
    {
        return Err(format!(
            "column {} of {} is `{}`, so the election must be a number (\"Leader election using MySQL\" uses anchor 1), not `{}`",
            s.scheme.columns().key,
            s.table,
            schema.key_type,
            args.election
        ));
    }
    Ok((pool, schema))
}

fn bind_key<'q>(
    q: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments>,
    schema: &Schema,
    key: &str,
) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments> {
    match key.parse::<i64>() {
        Ok(n) if schema.key_type.to_ascii_lowercase().contains("int") => q.bind(n),
        _ => q.bind(key.to_string()),
    }
}

/// What one attempt found: that we lead (until when, counted from the read that said so),
/// or any other belief, with why a node that led no longer does.
enum Seen {
    Leader { until: Option<Instant> },
    Other { belief: Belief, why: String },
}

/// A leader renews, anyone else tries to acquire; then the row is read back.
async fn attempt(
    s: &SqlSettings,
    pool: &AnyPool,
    schema: &Schema,
    args: &Options,
    t: Timing,
    leader: bool,
) -> Result<Seen, String> {
    let sql = if leader {
        renewal(s, schema, t)
    } else {
        acquire(s, schema, t)
    };
    let q = bind_key(sqlx::query(AssertSqlSafe(sql)), schema, &args.election).bind(args.id.clone());
    q.execute(pool)
        .await
        .map_err(|e| describe(&e, s, &s.url.0))?;
    read_back(s, pool, schema, args).await
}

/// gabihodoroaga/leaderelection's upsert / the MySQL election article's insert-on-duplicate: binds key, then id.
fn acquire(s: &SqlSettings, schema: &Schema, t: Timing) -> String {
    let d = s.dialect;
    let c = s.scheme.columns();
    let (tq, k, l, v) = (
        d.quote(&s.table),
        d.quote(&c.key),
        d.quote(&c.holder),
        d.quote(&c.stamp),
    );
    let ms = t.ttl.as_millis() as i64;
    match s.scheme.scheme() {
        Scheme::SqlHeartbeat => d.heartbeat_upsert(&tq, &k, &l, &v, &schema.stamp_type, ms),
        _ => d.lease_upsert(&tq, &k, &l, &v, &schema.stamp_type, ms),
    }
}

/// A leader's renewal: binds key, then id. Unlike the articles' statements, which take the
/// row back whenever it names us, it extends only a term still running under our name: a
/// row deleted (forced re-election), given to another (force-leader) or ended (resign) is
/// then seen at this renewal, instead of being quietly taken back.
fn renewal(s: &SqlSettings, schema: &Schema, t: Timing) -> String {
    let d = s.dialect;
    let c = s.scheme.columns();
    let ms = t.ttl.as_millis() as i64;
    let at = |ms| d.now_plus_ms(&schema.stamp_type, false, ms);
    // sql-lease: the end of the term is stored; sql-heartbeat: its start.
    let (new, alive_after) = match s.scheme.scheme() {
        Scheme::SqlHeartbeat => (at(0), at(-ms)),
        _ => (at(ms), at(0)),
    };
    let v = d.quote(&c.stamp);
    format!(
        "UPDATE {} SET {v} = {new} WHERE {} = {} AND {} = {} AND {v} > {alive_after}",
        d.quote(&s.table),
        d.quote(&c.key),
        d.param(1),
        d.quote(&c.holder),
        d.param(2)
    )
}

/// Reads the row back: that, not the affected-row count, says who holds it.
async fn read_back(
    s: &SqlSettings,
    pool: &AnyPool,
    schema: &Schema,
    args: &Options,
) -> Result<Seen, String> {
    let d = s.dialect;
    let c = s.scheme.columns();
    let back = format!(
        "SELECT {}, {} FROM {} WHERE {} = {}",
        d.as_text(&d.quote(&c.holder)),
        s.scheme
            .remaining_ms(d, &d.quote(&c.stamp), &schema.stamp_type),
        d.quote(&s.table),
        d.as_text(&d.quote(&c.key)),
        d.param(1)
    );
    // The remaining term is the database's `valid_until - now`, with its now taken after
    // this instant: counted from here, it ends no later than the database's term.
    let sent = Instant::now();
    let row = sqlx::query(AssertSqlSafe(back))
        .bind(args.election.clone())
        .fetch_optional(pool)
        .await
        .map_err(|e| describe(&e, s, &s.url.0))?;
    let row = row.map(|r| {
        (
            r.try_get::<Option<String>, _>(0).ok().flatten(),
            r.try_get::<Option<i64>, _>(1).ok().flatten(),
        )
    });
    Ok(seen(row, &args.id, sent))
}

/// What the row read back (holder, ms left of its term) means to node `me`.
fn seen(row: Option<(Option<String>, Option<i64>)>, me: &str, sent: Instant) -> Seen {
    let other = |leader: Option<String>, why: String| Seen::Other {
        belief: Belief::Follower { leader },
        why,
    };
    let Some((holder, left)) = row else {
        return other(None, "my row was deleted (forced re-election)".into());
    };
    let running = left.filter(|ms| *ms > 0);
    match (holder, running) {
        (Some(h), Some(ms)) if h == me => Seen::Leader {
            until: term::granted_ms(ms).and_then(|g| term::lead_until(sent, g)),
        },
        (Some(h), Some(_)) => other(Some(h.clone()), format!("the row names {h} now")),
        (Some(h), None) if h == me => other(
            None,
            "my term in the row is over (a resign, or a renewal too late)".into(),
        ),
        (Some(h), None) => other(None, format!("the row names {h} now, with its term over")),
        (None, _) => other(None, "the row names no leader".into()),
    }
}

/// Ends our term at once so the next attempt by anyone wins (the contract's resign).
async fn resign(s: &SqlSettings, pool: &AnyPool, schema: &Schema, args: &Options) {
    let d = s.dialect;
    let c = s.scheme.columns();
    let back = s.scheme.term_ms().map(|t| -(t + 1_000)).unwrap_or(0);
    let sql = format!(
        "UPDATE {} SET {} = {} WHERE {} = {} AND {} = {}",
        d.quote(&s.table),
        d.quote(&c.stamp),
        d.now_plus_ms(&schema.stamp_type, false, back),
        d.as_text(&d.quote(&c.key)),
        d.param(1),
        d.as_text(&d.quote(&c.holder)),
        d.param(2)
    );
    let r = sqlx::query(AssertSqlSafe(sql))
        .bind(args.election.clone())
        .bind(args.id.clone())
        .execute(pool)
        .await;
    if let Err(e) = r.context("resigning") {
        tracing::warn!(%e, "resign failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn why(row: Option<(Option<String>, Option<i64>)>) -> Option<String> {
        match seen(row, "node-a", Instant::now()) {
            Seen::Leader { .. } => None,
            Seen::Other { why, .. } => Some(why),
        }
    }

    #[test]
    fn each_way_of_losing_the_row_has_its_reason() {
        let a = Some("node-a".to_string());
        let b = Some("node-b".to_string());
        assert_eq!(why(Some((a.clone(), Some(1_000)))), None, "ours, running");
        assert!(why(None).is_some_and(|w| w.contains("deleted")));
        assert!(why(Some((b.clone(), Some(1_000)))).is_some_and(|w| w.contains("node-b")));
        assert!(why(Some((a, Some(0)))).is_some_and(|w| w.contains("over")));
        assert!(why(Some((b, Some(-5)))).is_some_and(|w| w.contains("node-b")));
    }
}
