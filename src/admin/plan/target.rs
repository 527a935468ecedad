//! The settings of a source that decide what an action writes: the SQL table, columns and
//! dialect, the etcd prefix. Read from the source's config; the dashboard gets them from the
//! runtime, so the dialog names the columns that will be written.

use crate::backend::sql::dialect::{Dialect, Ident};
use crate::backend::sql::{Columns, SqlSettings};
use crate::config::SourceConfig;
use crate::model::Scheme;

#[derive(Clone, Debug)]
pub enum Target {
    Etcd { prefix: String },
    Sql(SqlTarget),
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
    /// The source's settings; infallible because loading the config checked them (table
    /// and column names included).
    pub fn from_config(cfg: &SourceConfig) -> Target {
        match cfg {
            SourceConfig::Etcd(c) => Target::Etcd {
                prefix: c.prefix.clone(),
            },
            SourceConfig::Sql(c) => {
                let s = SqlSettings::new(c);
                Target::Sql(SqlTarget {
                    dialect: s.dialect,
                    table: s.table.clone(),
                    columns: s.scheme.columns().clone(),
                    heartbeat_ms: s.scheme.term_ms(),
                })
            }
        }
    }

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
            _ => Target::Etcd {
                prefix: String::new(),
            },
        }
    }
}
