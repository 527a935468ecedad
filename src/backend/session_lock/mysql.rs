//! MySQL/MariaDB `GET_LOCK`: not built yet (the `mysql-lock` scheme is another change's).
//! Each function answers that it is not built, so a `mysql-lock` source says so in words.

use std::collections::HashSet;

use sqlx::AnyPool;

use super::naming::Resolved;
use super::{LockRead, SessionRef};
use crate::backend::sql::{SqlError, SqlSettings};

fn not_built() -> SqlError {
    SqlError::Settings(
        "scheme mysql-lock is not built yet in this electop; use pg-advisory on PostgreSQL".into(),
    )
}

pub(super) async fn check(_pool: &AnyPool, _s: &SqlSettings) -> Result<(), SqlError> {
    Err(not_built())
}

pub(super) async fn read(
    _pool: &AnyPool,
    _s: &SqlSettings,
    _naming: &Resolved,
) -> Result<Vec<LockRead>, SqlError> {
    Err(not_built())
}

pub(super) async fn alive(
    _pool: &AnyPool,
    _s: &SqlSettings,
    _sessions: &[SessionRef],
) -> Result<HashSet<SessionRef>, SqlError> {
    Err(not_built())
}

pub(super) async fn end_session(
    _pool: &AnyPool,
    _s: &SqlSettings,
    _id: i64,
    _start: &str,
) -> Result<bool, SqlError> {
    Err(not_built())
}

pub(super) fn privilege_hint(user: &str) -> String {
    format!("{user} cannot see other connections' details")
}
