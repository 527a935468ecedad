//! PostgreSQL advisory locks: `pg_locks` (locktype `advisory`, in this database) joined
//! with `pg_stat_activity`, one query per poll. The one-key form `pg_advisory_lock(bigint)`
//! is kept as classid (high half) and objid (low half) with objsubid 1; the two-key form
//! `pg_advisory_lock(int4, int4)` as classid and objid with objsubid 2, each an int4 stored
//! in an oid. Waiting sessions (granted = false) are ordered by `waitstart` (PostgreSQL 14+;
//! read through `to_jsonb` so older servers answer too, with the pid as the only order).

use std::collections::HashSet;
use std::time::{Duration, SystemTime};

use sqlx::{AnyPool, Row};

use super::naming::Resolved;
use super::{LockRead, Session, SessionRef};
use crate::backend::sql::{SqlError, SqlSettings};

/// An int4 kept in an oid, back to its sign.
const INT4: &str =
    "(CASE WHEN {c}::bigint >= 2147483648 THEN {c}::bigint - 4294967296 ELSE {c}::bigint END)";

fn int4(col: &str) -> String {
    INT4.replace("{c}", col)
}

/// Microseconds since the epoch, as text: exact, whatever the session's time zone.
fn micros(col: &str) -> String {
    format!("((extract(epoch from {col}) * 1000000)::bigint)::text")
}

pub(super) fn poll_query() -> String {
    // `waitstart` read once per row (`to_jsonb` of a whole row is most of the query's cost),
    // and rows sorted on the lock's integers, not on its text: measured, far quicker.
    format!(
        "SELECT CASE WHEN l.objsubid = 1 \
                 THEN ((l.classid::bigint << 32) | l.objid::bigint)::text \
                 ELSE {k1}::text || ':' || {k2}::text END AS k, \
            l.granted, l.pid::bigint AS pid, {start} AS start_us, \
            a.usename::text AS usr, a.application_name::text AS app, \
            CASE WHEN a.client_addr IS NOT NULL \
                 THEN host(a.client_addr) || ':' || a.client_port::text \
                 WHEN a.client_port = -1 THEN 'local' END AS client, \
            {wait} AS wait_us \
         FROM (SELECT classid, objid, objsubid, granted, pid, \
                      (to_jsonb(x) ->> 'waitstart')::timestamptz AS waitstart \
               FROM pg_locks x \
               WHERE x.locktype = 'advisory' \
                 AND x.database = (SELECT oid FROM pg_database \
                                   WHERE datname = current_database())) l \
         LEFT JOIN pg_stat_activity a ON a.pid = l.pid \
         ORDER BY l.objsubid, l.classid, l.objid, l.granted DESC, l.waitstart NULLS LAST, l.pid",
        k1 = int4("l.classid"),
        k2 = int4("l.objid"),
        start = micros("a.backend_start"),
        wait = micros("l.waitstart"),
    )
}

fn fail(e: &sqlx::Error, s: &SqlSettings) -> SqlError {
    SqlError::from_sqlx(e, s, &s.url.0)
}

fn time_of(micros: Option<&str>) -> Option<SystemTime> {
    let us: u64 = micros?.parse().ok()?;
    Some(SystemTime::UNIX_EPOCH + Duration::from_micros(us))
}

pub(super) async fn check(pool: &AnyPool, s: &SqlSettings) -> Result<(), SqlError> {
    sqlx::query("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'")
        .fetch_one(pool)
        .await
        .map_err(|e| fail(&e, s))?;
    Ok(())
}

pub(super) async fn read(
    pool: &AnyPool,
    s: &SqlSettings,
    naming: &Resolved,
) -> Result<Vec<LockRead>, SqlError> {
    let q = poll_query();
    let rows = sqlx::query(sqlx::AssertSqlSafe(q))
        .fetch_all(pool)
        .await
        .map_err(|e| fail(&e, s))?;
    let mut out: Vec<LockRead> = Vec::new();
    for row in &rows {
        let get = |e: sqlx::Error| SqlError::PollFailed {
            place: s.url.redacted(),
            why: e.to_string(),
        };
        let key: String = row.try_get("k").map_err(get)?;
        let granted: bool = row.try_get("granted").map_err(get)?;
        let start: Option<String> = row.try_get("start_us").map_err(get)?;
        let wait: Option<String> = row.try_get("wait_us").map_err(get)?;
        let session = Session {
            id: row.try_get("pid").map_err(get)?,
            started: time_of(start.as_deref()),
            start,
            user: row.try_get("usr").map_err(get)?,
            application: row.try_get("app").map_err(get)?,
            client: row.try_get("client").map_err(get)?,
            waiting_since: time_of(wait.as_deref()),
            flavor: super::Flavor::Postgres,
        };
        if out.last().is_none_or(|l| l.key != key) {
            out.push(LockRead {
                name: naming.name(&key),
                key,
                holder: None,
                waiting: Vec::new(),
            });
        }
        let Some(lock) = out.last_mut() else { continue };
        // A shared lock can have several holders: the first leads, the others are listed
        // after it as they hold it too.
        if granted && lock.holder.is_none() {
            lock.holder = Some(session);
        } else {
            lock.waiting.push(session);
        }
    }
    Ok(out)
}

pub(super) async fn alive(
    pool: &AnyPool,
    s: &SqlSettings,
    sessions: &[SessionRef],
) -> Result<HashSet<SessionRef>, SqlError> {
    // Integers only, so the list is written into the statement.
    let ids: Vec<String> = sessions.iter().map(|r| r.id.to_string()).collect();
    let q = format!(
        "SELECT pid::bigint AS pid, {} AS start_us FROM pg_stat_activity WHERE pid IN ({})",
        micros("backend_start"),
        ids.join(",")
    );
    let rows = sqlx::query(sqlx::AssertSqlSafe(q))
        .fetch_all(pool)
        .await
        .map_err(|e| fail(&e, s))?;
    let mut out = HashSet::new();
    for row in &rows {
        let id: i64 = row.try_get("pid").map_err(|e| fail(&e, s))?;
        let start: Option<String> = row.try_get("start_us").map_err(|e| fail(&e, s))?;
        out.insert(SessionRef { id, start });
    }
    Ok(out)
}

/// The statement that ends a session compared on its pid and start: what the plan shows.
pub(crate) const TERMINATE: &str = "SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity \
     WHERE pid = $1 AND (extract(epoch from backend_start) * 1000000)::bigint = $2";

pub(super) async fn end_session(
    pool: &AnyPool,
    s: &SqlSettings,
    id: i64,
    start: &str,
) -> Result<bool, SqlError> {
    let start: i64 = start.parse().map_err(|_| {
        SqlError::Settings(format!("session {id}: its start `{start}` is not a number"))
    })?;
    let rows = sqlx::query(TERMINATE)
        .bind(id)
        .bind(start)
        .fetch_all(pool)
        .await
        .map_err(|e| terminate_error(&e, s, id))?;
    Ok(rows
        .iter()
        .any(|r| r.try_get::<bool, _>("ended").unwrap_or(false)))
}

/// Ending another user's session needs `pg_signal_backend` (or superuser): said with the fix.
fn terminate_error(e: &sqlx::Error, s: &SqlSettings, id: i64) -> SqlError {
    if let sqlx::Error::Database(db) = e
        && db.code().as_deref() == Some("42501")
    {
        return SqlError::Permission(format!(
            "{}: not allowed to end session {id} ({}); GRANT pg_signal_backend TO the user \
             electop connects as (a superuser's session only a superuser can end)",
            s.url.redacted(),
            db.message()
        ));
    }
    fail(e, s)
}

/// Keys for names hashed with the server's `hashtext`, as `pg_advisory_lock(hashtext(n))`
/// takes them (an int4 widened to the one-key bigint form).
pub(super) async fn hashtext(
    pool: &AnyPool,
    s: &SqlSettings,
    names: &[String],
) -> Result<Vec<(String, String)>, SqlError> {
    let mut out = Vec::new();
    for n in names {
        let row = sqlx::query("SELECT hashtext($1)::bigint::text AS k")
            .bind(n.as_str())
            .fetch_one(pool)
            .await
            .map_err(|e| fail(&e, s))?;
        let k: String = row.try_get("k").map_err(|e| fail(&e, s))?;
        out.push((k, n.clone()));
    }
    Ok(out)
}

pub(super) fn privilege_hint(user: &str) -> String {
    format!(
        "pg_stat_activity hides other users' sessions from {user}: their start, client and \
         line are not shown and they cannot be ended; GRANT pg_read_all_stats TO {user} \
         (and pg_signal_backend, to end them)"
    )
}
