//! The settings of a source that decide what an action writes: the SQL table, columns and
//! dialect, the etcd prefix, the ZooKeeper prefix. Each store reads its own from its typed
//! config (`Store::target`), and `backend::target` wraps it here, one variant per store; the
//! dashboard gets them from the runtime, so the dialog names the columns that will be
//! written. What the settings are without a config (the demo, tests) is each store's
//! (`backend::default_target`).

use crate::config::{Columns, Dialect, Ident};

/// One store's settings, as the request of an action carries them.
#[derive(Clone, Debug)]
pub enum Target {
    Etcd(EtcdTarget),
    Sql(SqlTarget),
    Zookeeper(ZkTarget),
    Redis(RedisKeys),
    SessionLock(SessionLockTarget),
}

/// An etcd source: the prefix its lease keys are put under.
#[derive(Clone, Debug)]
pub struct EtcdTarget {
    pub prefix: String,
}

/// A SQL table source: the row an action writes, in the server's dialect.
#[derive(Clone, Debug)]
pub struct SqlTarget {
    pub dialect: Dialect,
    pub table: Ident,
    pub columns: Columns,
    /// The heartbeat timeout (sql-heartbeat).
    pub heartbeat_ms: Option<i64>,
}

/// A ZooKeeper source: the znode its elections live under.
#[derive(Clone, Debug)]
pub struct ZkTarget {
    pub prefix: String,
}

/// A Redis source: the pattern its lock keys match.
#[derive(Clone, Debug)]
pub struct RedisKeys {
    pub pattern: String,
}

/// Locks held by a SQL server's sessions (`pg-advisory`, `mysql-lock`): actions end
/// sessions, in the server's own words.
#[derive(Clone, Debug)]
pub struct SessionLockTarget {
    pub dialect: Dialect,
}
