//! The settings of a source that decide what an action writes: the SQL table, columns and
//! dialect, the etcd prefix, the ZooKeeper prefix. Each store reads them from the source's config
//! (`backend::target`); the dashboard gets them from the runtime, so the dialog names the
//! columns that will be written.

use crate::config::{Columns, Dialect, Ident};
use crate::model::Scheme;

#[derive(Clone, Debug)]
pub enum Target {
    Etcd {
        prefix: String,
    },
    Sql(SqlTarget),
    /// A ZooKeeper source: the znode its elections live under.
    Zookeeper {
        prefix: String,
    },
    /// A Redis source: the pattern its lock keys match.
    Redis {
        pattern: String,
    },
    /// Locks held by a SQL server's sessions (`pg-advisory`, `mysql-lock`): actions end
    /// sessions, in the server's own words.
    SessionLock {
        dialect: Dialect,
    },
}

#[derive(Clone, Debug)]
pub struct SqlTarget {
    pub dialect: Dialect,
    pub table: Ident,
    pub columns: Columns,
    /// The heartbeat timeout (sql-heartbeat).
    pub heartbeat_ms: Option<i64>,
}

impl Target {
    /// A scheme's default settings, for a dashboard built without configs (the demo, tests):
    /// the runtime always passes the configured ones.
    pub fn defaults(scheme: Scheme) -> Target {
        let ident = |s: &str| Ident::column(s).expect("a valid default name");
        let sql = |table: &str, key: &str, holder: &str, stamp: &str, heartbeat_ms| {
            Target::Sql(SqlTarget {
                dialect: Dialect::Sqlite,
                table: Ident::table(table).expect("a valid default table"),
                columns: Columns {
                    key: ident(key),
                    holder: ident(holder),
                    stamp: ident(stamp),
                },
                heartbeat_ms,
            })
        };
        match scheme {
            Scheme::SqlLease => sql("leaderlock", "key", "leader_id", "valid_until", None),
            Scheme::SqlHeartbeat => sql(
                "service_election",
                "anchor",
                "service_id",
                "last_seen_active",
                Some(20_000),
            ),
            Scheme::ZkRecipe | Scheme::KafkaZk | Scheme::HadoopHa => Target::Zookeeper {
                prefix: "/".to_string(),
            },
            Scheme::RedisLock => Target::Redis {
                pattern: "*".to_string(),
            },
            Scheme::PgAdvisory => Target::SessionLock {
                dialect: Dialect::Postgres,
            },
            Scheme::MysqlLock => Target::SessionLock {
                dialect: Dialect::MySql,
            },
            _ => Target::Etcd {
                prefix: String::new(),
            },
        }
    }
}
