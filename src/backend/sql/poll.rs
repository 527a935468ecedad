//! One poll: the database's clock and every election row, in one query.

use std::time::{Duration, Instant, SystemTime};

use sqlx::{AnyPool, AssertSqlSafe, Row as _};

use super::SqlSettings;
use super::errors::SqlError;
use super::tracker::{Poll, Row};

pub(super) async fn poll_once(
    s: &SqlSettings,
    pool: &AnyPool,
    query: &str,
    timeout: Duration,
) -> Result<Poll, SqlError> {
    let fetch = sqlx::query(AssertSqlSafe(query.to_string())).fetch_all(pool);
    let rows = match tokio::time::timeout(timeout, fetch).await {
        Ok(r) => r.map_err(|e| SqlError::from_sqlx(&e, s, &s.url.0))?,
        Err(_) => {
            return Err(SqlError::PollTimeout {
                place: s.url.redacted(),
                timeout,
            });
        }
    };
    let at = SystemTime::now();
    let now = Instant::now();
    let unreadable = |e: sqlx::Error| SqlError::PollFailed {
        place: s.url.redacted(),
        why: e.to_string(),
    };
    let mut db_now_ms = None;
    let mut out = Vec::new();
    for r in &rows {
        let get_i = |i| r.try_get::<Option<i64>, _>(i).map_err(unreadable);
        let get_s = |i| r.try_get::<Option<String>, _>(i).map_err(unreadable);
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
