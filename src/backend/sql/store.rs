//! SQL tables as a [`Store`]: the poll task, the one statement per admin action of its two
//! schemes (lease and heartbeat rows), and its participant.

use std::time::Duration;

use super::{SqlBackend, SqlSettings, admin, participant, plan};
use crate::admin::{AdminRequest, Outcome, Plan, SqlTarget, Target};
use crate::backend::{Backend, BackendOptions, BoxFuture, LocalBoxFuture, Store, short_name};
use crate::config::SourceConfig;
use crate::model::{Scheme, SourceId};
use crate::node::{Options, Run};

/// SQL tables on PostgreSQL, MySQL/MariaDB and SQLite, registered in `backend::store_of` for
/// `SourceConfig::Sql`.
pub struct Sql;

/// Not a SQL source: `store_of` never hands one here.
const NOT_SQL: &str = "not a SQL source";

impl Store for Sql {
    fn backend(
        &self,
        configs: &[SourceConfig],
        id: SourceId,
        opts: &BackendOptions,
    ) -> Box<dyn Backend> {
        let SourceConfig::Sql(cfg) = &configs[id] else {
            unreachable!("{NOT_SQL}")
        };
        let short = short_name(configs, id);
        Box::new(SqlBackend::new(id, short, cfg, opts.clone()))
    }

    fn target(&self, cfg: &SourceConfig) -> Target {
        let SourceConfig::Sql(c) = cfg else {
            return Target::Etcd {
                prefix: String::new(),
            };
        };
        let s = SqlSettings::new(c);
        Target::Sql(SqlTarget {
            dialect: s.dialect,
            table: s.table.clone(),
            columns: s.scheme.columns().clone(),
            heartbeat_ms: s.scheme.term_ms(),
        })
    }

    fn plan(&self, req: &AdminRequest) -> Result<Plan, String> {
        match &req.target {
            Target::Sql(t) => plan::plan_for(req, t),
            Target::Etcd { .. }
            | Target::Zookeeper { .. }
            | Target::Redis { .. }
            | Target::SessionLock { .. } => Err(format!(
                "{} is not a scheme of this source",
                req.seen.scheme
            )),
        }
    }

    fn execute<'a>(
        &'a self,
        cfg: &'a SourceConfig,
        req: &'a AdminRequest,
        timeout: Duration,
    ) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            match cfg {
                SourceConfig::Sql(c) => admin::execute(c, req, timeout).await,
                SourceConfig::Etcd(_) | SourceConfig::Zookeeper(_) | SourceConfig::Redis(_) => {
                    Outcome::Refused {
                        reason: NOT_SQL.into(),
                    }
                }
            }
        })
    }

    fn participate<'a>(
        &'a self,
        cfg: &'a SourceConfig,
        scheme: Scheme,
        args: &'a Options,
        run: &'a Run,
    ) -> LocalBoxFuture<'a, anyhow::Result<()>> {
        Box::pin(async move {
            match (scheme, cfg) {
                (Scheme::SqlLease | Scheme::SqlHeartbeat, SourceConfig::Sql(c)) => {
                    participant::run(c, args, run.timing, &run.report, run.stop.clone()).await
                }
                (scheme, _) => anyhow::bail!("scheme {scheme} needs --etcd HOST:PORT"),
            }
        })
    }
}
