//! Admin actions on SQL election rows: the plan's one statement, whose WHERE holds what the
//! operator saw, so that one affected row means it was done and none means the row changed.
//! (MySQL counts matched rows, which is the same here: the WHERE is the whole condition.)

use std::time::Duration;

use sqlx::{AnyPool, AssertSqlSafe, Row as _};

use super::{SqlSettings, Statement, check_schema, connect, describe};
use crate::admin::{AdminRequest, Outcome, changed_since};
use crate::backend::plan;
use crate::config::SqlSource;

pub async fn execute(cfg: &SqlSource, req: &AdminRequest, timeout: Duration) -> Outcome {
    execute_traced(cfg, req, timeout).await.0
}

/// [`execute`], also returning the SQL it sent, so tests can hold it to the plan.
pub async fn execute_traced(
    cfg: &SqlSource,
    req: &AdminRequest,
    timeout: Duration,
) -> (Outcome, Vec<String>) {
    let s = SqlSettings::new(cfg);
    let plan = match plan(req) {
        Ok(p) => p,
        Err(reason) => return (Outcome::Refused { reason }, Vec::new()),
    };
    let statements = match plan.steps_of::<Statement>() {
        Ok(statements) => statements,
        Err(why) => {
            let reason = format!("{} is not a SQL scheme: {why}", req.seen.scheme);
            return (Outcome::Refused { reason }, Vec::new());
        }
    };
    let pool = match connect(&s, timeout).await {
        Ok(p) => p,
        Err(e) => return (Outcome::Failed { error: e }, Vec::new()),
    };
    let mut sent = Vec::new();
    let mut outcome = Outcome::Refused {
        reason: "the plan has no statement".into(),
    };
    match check_schema(&s, &pool).await {
        Ok(schema) => {
            for st in statements {
                let sql = st
                    .sql_with(|ms, numeric| s.dialect.now_plus_ms(&schema.stamp_type, numeric, ms));
                sent.push(sql.clone());
                outcome = run(&s, &pool, req, st, sql).await;
                if !matches!(outcome, Outcome::Done { .. }) {
                    break;
                }
            }
        }
        Err(e) => outcome = Outcome::Failed { error: e },
    }
    pool.close().await;
    (outcome, sent)
}

async fn run(
    s: &SqlSettings,
    pool: &AnyPool,
    req: &AdminRequest,
    st: &Statement,
    sql: String,
) -> Outcome {
    let mut q = sqlx::query(AssertSqlSafe(sql));
    for b in &st.binds {
        q = q.bind(b.clone());
    }
    let seen = req.seen.candidates.first();
    match q.execute(pool).await {
        Ok(r) if r.rows_affected() >= st.expect_rows => Outcome::Done {
            detail: describe_row(s, pool, &req.seen.name).await,
        },
        Ok(_) => Outcome::Changed {
            detail: changed_since(&format!(
                "{} (was {} until {})",
                describe_row(s, pool, &req.seen.name).await,
                seen.map_or("-", |c| c.id.as_str()),
                seen.and_then(|c| c.stamp.as_deref()).unwrap_or_default()
            )),
        },
        Err(e) => Outcome::Failed {
            error: describe(&e, s, &s.url.0),
        },
    }
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
