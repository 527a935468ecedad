//! Admin actions on SQL election rows: each one statement whose WHERE holds what the operator
//! saw, so that one affected row means it was done and none means the row changed. (MySQL
//! counts matched rows, which is the same here: the WHERE is the whole condition.)
//!
//! What the operator saw is the row's key and leader id, never its deadline: the leader
//! renews its deadline every few seconds, and an action confirmed after a renewal must still
//! apply to the leader that was shown (the contract, `election-models.md`).

use std::time::Duration;

use sqlx::{AnyPool, AssertSqlSafe, Row as _};

use super::{SqlSettings, check_schema, connect, describe};
use crate::admin::{ActionKind, AdminRequest, Outcome, changed_since};
use crate::config::SqlSource;
use crate::model::Scheme;

/// A term for a forced sql-lease leader when none was observed.
const DEFAULT_TERM_MS: i64 = 15_000;

pub async fn execute(cfg: &SqlSource, req: &AdminRequest, timeout: Duration) -> Outcome {
    let s = match SqlSettings::from_config(cfg) {
        Ok(s) => s,
        Err(e) => {
            return Outcome::Refused {
                reason: e.to_string(),
            };
        }
    };
    let Some(holder) = req.seen.candidates.first() else {
        return Outcome::Refused {
            reason: format!("election {} has no row holder to act on", req.seen.name),
        };
    };
    let pool = match connect(&s, timeout).await {
        Ok(p) => p,
        Err(e) => return Outcome::Failed { error: e },
    };
    let outcome = match check_schema(&s, &pool).await {
        Ok(schema) => run(&s, &pool, req, holder, &schema.stamp_type).await,
        Err(e) => Outcome::Failed { error: e },
    };
    pool.close().await;
    outcome
}

async fn run(
    s: &SqlSettings,
    pool: &AnyPool,
    req: &AdminRequest,
    holder: &crate::model::Candidate,
    stamp_type: &str,
) -> Outcome {
    let d = s.dialect;
    let c = s.scheme.columns();
    let table = d.quote(&s.table);
    let key = d.as_text(&d.quote(&c.key));
    let who = d.quote(&c.holder);
    let who_text = d.as_text(&who);
    let stamp = d.quote(&c.stamp);
    let seen_stamp = holder.stamp.clone().unwrap_or_default();
    let numeric = seen_stamp.trim().parse::<f64>().is_ok();
    let heartbeat_ms = s.scheme.term_ms();
    let p = |i| d.param(i);
    let (sql, binds): (String, Vec<String>) = match (&req.kind, s.scheme.scheme()) {
        (ActionKind::Reelect, _) => (
            format!(
                "DELETE FROM {table} WHERE {key} = {} AND {who_text} = {}",
                p(1),
                p(2)
            ),
            vec![req.seen.name.clone(), id(holder)],
        ),
        (ActionKind::Resign, _) => {
            // sql-heartbeat: old enough to count as dead; sql-lease: over now.
            let back = heartbeat_ms.map(|t| -(t + 1_000)).unwrap_or(0);
            (
                format!(
                    "UPDATE {table} SET {stamp} = {} WHERE {key} = {} AND {who_text} = {}",
                    d.now_plus_ms(stamp_type, numeric, back),
                    p(1),
                    p(2)
                ),
                vec![req.seen.name.clone(), id(holder)],
            )
        }
        (ActionKind::ForceLeader { target }, scheme) => {
            let term = if scheme == Scheme::SqlHeartbeat {
                0
            } else {
                holder
                    .ttl
                    .map(|t| t.granted_ms)
                    .filter(|g| *g > 0)
                    .unwrap_or(DEFAULT_TERM_MS)
            };
            (
                format!(
                    "UPDATE {table} SET {who} = {}, {stamp} = {} WHERE {key} = {} AND {who_text} = {}",
                    p(1),
                    d.now_plus_ms(stamp_type, numeric, term),
                    p(2),
                    p(3)
                ),
                vec![target.clone(), req.seen.name.clone(), id(holder)],
            )
        }
    };
    let mut q = sqlx::query(AssertSqlSafe(sql));
    for b in binds {
        q = q.bind(b);
    }
    match q.execute(pool).await {
        Ok(r) if r.rows_affected() >= 1 => Outcome::Done {
            detail: describe_row(s, pool, &req.seen.name).await,
        },
        Ok(_) => Outcome::Changed {
            detail: changed_since(&format!(
                "{} (was {} until {seen_stamp})",
                describe_row(s, pool, &req.seen.name).await,
                holder.id
            )),
        },
        Err(e) => Outcome::Failed {
            error: describe(&e, s, &s.url.0),
        },
    }
}

fn id(c: &crate::model::Candidate) -> String {
    String::from_utf8_lossy(&c.raw_id).into_owned()
}

/// What the row holds now, in words.
async fn describe_row(s: &SqlSettings, pool: &AnyPool, name: &str) -> String {
    let d = s.dialect;
    let c = s.scheme.columns();
    let sql = format!(
        "SELECT {}, {} FROM {} WHERE {} = {}",
        d.as_text(&d.quote(&c.holder)),
        d.as_text(&d.quote(&c.stamp)),
        d.quote(&s.table),
        d.as_text(&d.quote(&c.key)),
        d.param(1)
    );
    match sqlx::query(AssertSqlSafe(sql))
        .bind(name.to_string())
        .fetch_optional(pool)
        .await
    {
        Ok(Some(row)) => format!(
            "row {name} now has {} = {} and {} = {}",
            c.holder,
            row.try_get::<Option<String>, _>(0)
                .ok()
                .flatten()
                .unwrap_or_default(),
            c.stamp,
            row.try_get::<Option<String>, _>(1)
                .ok()
                .flatten()
                .unwrap_or_default()
        ),
        Ok(None) => format!("row {name} is gone"),
        Err(e) => format!(
            "row {name} could not be read back: {}",
            describe(&e, s, &s.url.0)
        ),
    }
}
