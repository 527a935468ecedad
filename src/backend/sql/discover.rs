//! `--sql URL` alone: which of the election tables electop knows (the schemes' own and the
//! presets', `presets::known_tables`) the database holds, looked up once in its catalog at
//! connect, each with its columns checked. What is found becomes one source per table; a
//! database holding none is an error naming what was looked for and the flags that choose.

use std::time::Duration;

use sqlx::{AnyPool, AssertSqlSafe, Row as _};

use super::dialect::Dialect;
use super::{SqlError, SqlSettings, dial};
use crate::config::{DbUrl, Flags, FoundTable, Ident, SqlColumns, SqlSource, SqlSpec, Unreached};
use crate::model::Scheme;
use crate::presets::KnownTable;

/// How long connecting to a database to look at its catalog may take.
const CONNECT: Duration = Duration::from_secs(10);

/// The known tables in every `--sql` database of `flags`, in the order given, and the
/// databases that could not be reached to look (each with why): those become sources of
/// their own that look once they answer, so one database down hides none of the others.
pub async fn find_tables(flags: &Flags) -> Result<(Vec<FoundTable>, Vec<Unreached>), String> {
    let mut out = Vec::new();
    let mut unreached = Vec::new();
    for url in &flags.sql {
        match find_in(flags, url).await? {
            Ok(found) => out.extend(found),
            Err(error) => unreached.push(Unreached {
                url: url.to_string(),
                error,
            }),
        }
    }
    Ok((out, unreached))
}

/// The known tables in `url`'s database; inside, why it could not be connected to.
async fn find_in(flags: &Flags, url: &str) -> Result<Result<Vec<FoundTable>, String>, String> {
    // Only the URL and the password are used to connect: any SQL scheme will do.
    let probe = SqlSource::new(SqlSpec {
        name: None,
        url: DbUrl(url.to_string()),
        password_env: flags.password_env.clone(),
        password_file: flags.password_file.clone(),
        scheme: Scheme::SqlLease,
        preset: None,
        table: None,
        columns: SqlColumns::default(),
        timeout: None,
        poll: None,
        read_only: true,
    })
    .map_err(|e| format!("--sql: {e}"))?;
    let s = SqlSettings::new(&probe);
    let where_ = s.url.redacted();
    let pool = match dial::open(&s, CONNECT).await {
        Ok(pool) => pool,
        // A file that is not there is a mistake in the command line, not a server down.
        Err(e @ SqlError::Settings(_)) => return Err(e.to_string()),
        Err(e) => return Ok(Err(e.to_string())),
    };
    let found = tables_in(&s, &pool, flags.table.as_deref()).await;
    pool.close().await;
    let found = found?;
    let of: Vec<String> = found.iter().map(|k| k.table.clone()).collect();
    for k in &found {
        tracing::info!(
            "--sql {where_}: found {} ({}) of the tables electop knows",
            k.layout(),
            k.what()
        );
    }
    Ok(Ok(found
        .into_iter()
        .map(|known| FoundTable {
            url: url.to_string(),
            known,
            of: of.clone(),
        })
        .collect()))
}

/// The known tables (`table`, when given, of either scheme) the database of `pool` holds:
/// at least one, or an error naming what was looked for and the flags that choose.
pub(super) async fn tables_in(
    s: &SqlSettings,
    pool: &AnyPool,
    table: Option<&str>,
) -> Result<Vec<KnownTable>, String> {
    let looked = crate::presets::known_tables(table);
    let mut found = Vec::new();
    let mut near = Vec::new();
    for k in &looked {
        match columns_of(s, pool, &k.table).await? {
            None => {}
            Some(cols) => match missing(k, &cols) {
                None => found.push(k.clone()),
                Some(col) => near.push(format!(
                    "{} is there but has no column {col} (it has: {})",
                    k.table,
                    cols.join(", ")
                )),
            },
        }
    }
    if found.is_empty() {
        let locks = session_locks(s, pool).await;
        return Err(none_found(&s.url.redacted(), &looked, &near, locks));
    }
    Ok(found)
}

/// A database's session locks, for the error that finds no election table: it may elect
/// with them instead (`pg_advisory_lock`, `GET_LOCK`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct SessionLocks {
    /// The scheme that reads them.
    scheme: &'static str,
    /// What they are, in the application's words.
    what: &'static str,
    /// How many are held now; `None` when the server does not say (MariaDB without the
    /// metadata_lock_info plugin or performance_schema's instrument).
    held: Option<i64>,
}

/// Held advisory locks of this database (PostgreSQL).
const PG_HELD: &str = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted \
    AND database = (SELECT oid FROM pg_database WHERE datname = current_database())";
/// Held user locks (MariaDB's plugin; an error when it is not loaded).
const MY_INFO_HELD: &str = "SELECT CAST(COUNT(*) AS SIGNED) \
    FROM information_schema.METADATA_LOCK_INFO WHERE LOCK_TYPE = 'User lock'";
/// Held user locks (performance_schema; NULL when its instrument is off, as MariaDB has it).
const MY_PERF_HELD: &str = "SELECT IF((SELECT COUNT(*) FROM performance_schema.setup_instruments \
    WHERE NAME = 'wait/lock/metadata/sql/mdl' AND ENABLED = 'YES') > 0, \
    (SELECT CAST(COUNT(*) AS SIGNED) FROM performance_schema.metadata_locks \
     WHERE OBJECT_TYPE = 'USER LEVEL LOCK' AND LOCK_STATUS = 'GRANTED'), NULL)";

/// The session locks of the database of `pool`: `None` for SQLite, which has none.
async fn session_locks(s: &SqlSettings, pool: &AnyPool) -> Option<SessionLocks> {
    let (scheme, what, asked): (_, _, &[&str]) = match s.dialect {
        Dialect::Postgres => (
            "pg-advisory",
            "advisory locks (pg_advisory_lock)",
            &[PG_HELD],
        ),
        Dialect::MySql => (
            "mysql-lock",
            "GET_LOCK locks",
            &[MY_INFO_HELD, MY_PERF_HELD],
        ),
        Dialect::Sqlite => return None,
    };
    let mut held = None;
    for q in asked {
        let row = sqlx::query(AssertSqlSafe(*q)).fetch_one(pool).await;
        if let Ok(n) = row.and_then(|r| r.try_get::<i64, _>(0)) {
            held = Some(n);
            break;
        }
    }
    Some(SessionLocks { scheme, what, held })
}

/// The column names of `table`, or `None` when there is no such table (or it shows no
/// columns to this user).
async fn columns_of(
    s: &SqlSettings,
    pool: &AnyPool,
    table: &str,
) -> Result<Option<Vec<String>>, String> {
    let Ok(ident) = Ident::table(table) else {
        return Ok(None);
    };
    let rows = sqlx::query(AssertSqlSafe(s.dialect.columns_query(&ident)))
        .fetch_all(pool)
        .await
        .map_err(|e| super::describe(&e, s, &s.url.0))?;
    let cols: Vec<String> = rows
        .iter()
        .filter_map(|r| r.try_get::<String, _>(0).ok())
        .collect();
    Ok((!cols.is_empty()).then_some(cols))
}

/// The first of `k`'s columns `cols` lacks.
fn missing<'a>(k: &'a KnownTable, cols: &[String]) -> Option<&'a str> {
    k.columns
        .iter()
        .find(|want| !cols.iter().any(|c| c.eq_ignore_ascii_case(want)))
        .map(String::as_str)
}

/// No known table in `where_`: what was looked for, what came close, and the flags that
/// name a table, or the scheme that reads the database's session locks (first when some
/// are held).
fn none_found(
    where_: &str,
    looked: &[KnownTable],
    near: &[String],
    locks: Option<SessionLocks>,
) -> String {
    let list: Vec<String> = looked
        .iter()
        .map(|k| format!("{} for {}", k.layout(), k.what()))
        .collect();
    let mut text = format!(
        "--sql {where_}: no election table electop knows is there; looked for {}",
        list.join(", ")
    );
    if !near.is_empty() {
        text.push_str(&format!("; {}", near.join("; ")));
    }
    if let Some(SessionLocks {
        scheme,
        what,
        held: Some(n @ 1..),
    }) = locks
    {
        text.push_str(&format!(
            "; {what} are held in it ({n} now): to read them as elections, --scheme {scheme}"
        ));
    }
    text.push_str(&format!(
        ". Say which table to read: --scheme sql-lease or --scheme sql-heartbeat (with --table NAME for another table name), or --preset ({})",
        crate::presets::names()
    ));
    if let Some(l) = locks {
        text.push_str(&format!(
            "; or, for an election by {}, --scheme {}",
            l.what, l.scheme
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn none_found_names_every_table_its_columns_and_the_flags() {
        let looked = crate::presets::known_tables(None);
        let text = none_found(
            "sqlite:x.db",
            &looked,
            &["leaderlock is there but has no column valid_until (it has: key)".into()],
            None,
        );
        for part in [
            "leaderlock(key, leader_id, valid_until) for sql-lease",
            "service_election(anchor, service_id, last_seen_active) for sql-heartbeat",
            "shedlock(name, locked_by, lock_until) for preset shedlock",
            "oban_peers(name, node, expires_at) for preset oban",
            "active_node(anchor, hostname, last_seen_active) for preset orchestrator",
            "no column valid_until",
            "--scheme sql-lease",
            "--table NAME",
            "--preset (shedlock, oban, orchestrator)",
        ] {
            assert!(text.contains(part), "{part} missing from: {text}");
        }
    }

    #[test]
    fn held_session_locks_come_first_and_their_scheme_always() {
        let looked = crate::presets::known_tables(None);
        let locks = |held| {
            Some(SessionLocks {
                scheme: "pg-advisory",
                what: "advisory locks (pg_advisory_lock)",
                held,
            })
        };
        let held = none_found("pg", &looked, &[], locks(Some(2)));
        assert!(
            held.contains(
                "; advisory locks (pg_advisory_lock) are held in it (2 now): to read them as \
                 elections, --scheme pg-advisory. Say which table"
            ),
            "{held}"
        );
        for unknown in [locks(None), locks(Some(0))] {
            let text = none_found("pg", &looked, &[], unknown);
            assert!(!text.contains("are held"), "{text}");
            assert!(
                text.ends_with(
                    "; or, for an election by advisory locks (pg_advisory_lock), --scheme \
                     pg-advisory"
                ),
                "{text}"
            );
        }
    }
}
