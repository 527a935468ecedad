//! SQL tables as a [`Store`]: the poll task, the one statement per admin action of its two
//! schemes (lease and heartbeat rows), and its participant.

use std::time::Duration;

use super::{SqlBackend, SqlSettings, admin, participant, plan};
use crate::admin::{AdminRequest, Outcome, Plan};
use crate::backend::{Backend, BackendOptions, BoxFuture, LocalBoxFuture, Store};
use crate::config::{Columns, Dialect, Ident, SqlSource};
use crate::model::{Scheme, SourceId};
use crate::node::{Options, Run};

/// SQL tables on PostgreSQL, MySQL/MariaDB and SQLite, registered in `backend`'s `stores!`
/// for the SQL sources whose scheme is a table's.
pub struct Sql;

/// What decides what an action writes on a SQL table source: the row, in the server's
/// dialect.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SqlTarget {
    pub dialect: Dialect,
    pub table: Ident,
    pub columns: Columns,
    /// The heartbeat timeout (sql-heartbeat).
    pub heartbeat_ms: Option<i64>,
}

impl Store for Sql {
    type Config = SqlSource;
    type Target = SqlTarget;

    fn backend(
        &self,
        cfg: &SqlSource,
        id: SourceId,
        short: String,
        opts: &BackendOptions,
    ) -> Box<dyn Backend> {
        Box::new(SqlBackend::new(id, short, cfg, opts.clone()))
    }

    fn target(&self, cfg: &SqlSource) -> SqlTarget {
        let s = SqlSettings::new(cfg);
        SqlTarget {
            dialect: s.dialect,
            table: s.table.clone(),
            columns: s.scheme.columns().clone(),
            heartbeat_ms: s.scheme.term_ms(),
        }
    }

    /// The presets' tables (`leaderlock`, `service_election`) on SQLite.
    fn default_target(&self, scheme: Scheme) -> Option<SqlTarget> {
        let ident = |s: &str| Ident::column(s).expect("a valid default name");
        let sql = |table: &str, key: &str, holder: &str, stamp: &str, heartbeat_ms| SqlTarget {
            dialect: Dialect::Sqlite,
            table: Ident::table(table).expect("a valid default table"),
            columns: Columns {
                key: ident(key),
                holder: ident(holder),
                stamp: ident(stamp),
            },
            heartbeat_ms,
        };
        match scheme {
            Scheme::SqlLease => Some(sql("leaderlock", "key", "leader_id", "valid_until", None)),
            Scheme::SqlHeartbeat => Some(sql(
                "service_election",
                "anchor",
                "service_id",
                "last_seen_active",
                Some(20_000),
            )),
            _ => None,
        }
    }

    fn plan(&self, req: &AdminRequest, target: &SqlTarget) -> Result<Plan, String> {
        plan::plan_for(req, target)
    }

    fn execute<'a>(
        &'a self,
        cfg: &'a SqlSource,
        req: &'a AdminRequest,
        timeout: Duration,
    ) -> BoxFuture<'a, Outcome> {
        Box::pin(admin::execute(cfg, req, timeout))
    }

    fn participate<'a>(
        &'a self,
        cfg: &'a SqlSource,
        scheme: Scheme,
        args: &'a Options,
        run: &'a Run,
    ) -> LocalBoxFuture<'a, anyhow::Result<()>> {
        Box::pin(async move {
            match scheme {
                Scheme::SqlLease | Scheme::SqlHeartbeat => {
                    participant::run(cfg, args, run.timing, &run.report, run.stop.clone()).await
                }
                scheme => anyhow::bail!("scheme {scheme} needs --etcd HOST:PORT"),
            }
        })
    }
}
