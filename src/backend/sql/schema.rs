//! Checking an election table before polling it: it exists, has the columns, and the
//! deadline is a timestamp.

use sqlx::{AnyPool, AssertSqlSafe, Row as _};

use super::SqlSettings;
use super::errors::SqlError;

/// Declared types of the columns that matter.
pub(crate) struct Schema {
    pub stamp_type: String,
    pub key_type: String,
}

/// Checks the table, for callers that only show the error.
pub(crate) async fn check_schema(s: &SqlSettings, pool: &AnyPool) -> Result<Schema, String> {
    read_schema(s, pool).await.map_err(|e| e.to_string())
}

/// Checks that the table and its columns are there and usable, with an error that says what
/// to fix when they are not.
pub(crate) async fn read_schema(s: &SqlSettings, pool: &AnyPool) -> Result<Schema, SqlError> {
    let where_ = s.url.redacted();
    let url = s.url.0.as_str();
    let rows = sqlx::query(AssertSqlSafe(s.dialect.columns_query(&s.table)))
        .fetch_all(pool)
        .await
        .map_err(|e| SqlError::from_sqlx(&e, s, url))?;
    let cols: Vec<(String, String)> = rows
        .iter()
        .filter_map(|r| {
            Some((
                r.try_get::<String, _>(0).ok()?,
                r.try_get::<String, _>(1).ok()?,
            ))
        })
        .collect();
    if cols.is_empty() {
        // MySQL hides tables the user may not read: ask the table itself to tell which.
        let probe = format!("SELECT 1 FROM {} WHERE 1 = 0", s.dialect.quote(&s.table));
        return Err(
            match sqlx::query(AssertSqlSafe(probe)).fetch_all(pool).await {
                Err(e) => SqlError::from_sqlx(&e, s, url),
                Ok(_) => SqlError::Schema(format!(
                    "table {} has no columns visible in {where_}",
                    s.table
                )),
            },
        );
    }
    let c = s.scheme.columns();
    let fields = [
        ("key", &c.key),
        ("leader_id", &c.holder),
        ("valid_until", &c.stamp),
    ];
    for (field, want) in fields {
        if !cols
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(want.name()))
        {
            let have: Vec<&str> = cols.iter().map(|(n, _)| n.as_str()).collect();
            return Err(SqlError::Schema(format!(
                "column {want} is missing from table {} in {where_} (it has: {}); if it is named differently set columns.{field} in the config",
                s.table,
                have.join(", ")
            )));
        }
    }
    let ty = cols
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(c.stamp.name()))
        .map(|(_, t)| t.clone())
        .unwrap_or_default();
    if !s.dialect.is_timestamp_type(&ty) {
        return Err(SqlError::Schema(format!(
            "column {} of table {} is `{ty}`, not a timestamp; {} needs a timestamp column (timestamp/timestamptz on PostgreSQL, DATETIME/TIMESTAMP on MySQL)",
            c.stamp,
            s.table,
            s.scheme.scheme()
        )));
    }
    let key_type = cols
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(c.key.name()))
        .map(|(_, t)| t.clone())
        .unwrap_or_default();
    Ok(Schema {
        stamp_type: ty,
        key_type,
    })
}
