//! Session locks as a [`Store`]: the follow task, the admin actions (`plan`, `admin`) and
//! `electop node` (both servers: [`super::participant`]).

use std::time::Duration;

use super::SessionLockBackend;
use crate::admin::{AdminRequest, Outcome, Plan, Target};
use crate::backend::{Backend, BackendOptions, BoxFuture, LocalBoxFuture, Store, short_name};
use crate::config::SourceConfig;
use crate::model::{Scheme, SourceId};
use crate::node::{Options, Run};

/// PostgreSQL advisory locks and MySQL `GET_LOCK`, registered in `backend::store_of` for a
/// `SourceConfig::Sql` whose scheme is a session lock.
pub struct SessionLocks;

impl Store for SessionLocks {
    fn backend(
        &self,
        configs: &[SourceConfig],
        id: SourceId,
        opts: &BackendOptions,
    ) -> Box<dyn Backend> {
        let SourceConfig::Sql(cfg) = &configs[id] else {
            unreachable!("not a SQL source")
        };
        let short = short_name(configs, id);
        Box::new(SessionLockBackend::new(id, short, cfg, opts.clone()))
    }

    fn target(&self, cfg: &SourceConfig) -> Target {
        let scheme = cfg.scheme().unwrap_or(Scheme::PgAdvisory);
        Target::SessionLock {
            dialect: super::dialect(super::Flavor::of(scheme)),
        }
    }

    fn plan(&self, req: &AdminRequest) -> Result<Plan, String> {
        super::plan::plan(req)
    }

    fn execute<'a>(
        &'a self,
        cfg: &'a SourceConfig,
        req: &'a AdminRequest,
        timeout: Duration,
    ) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            match cfg {
                SourceConfig::Sql(c) => super::admin::execute(c, req, timeout).await,
                _ => Outcome::Refused {
                    reason: "not a SQL source".into(),
                },
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
                (Scheme::PgAdvisory | Scheme::MysqlLock, SourceConfig::Sql(c)) => {
                    super::participant::run(c, args, run.timing, &run.report, run.stop.clone())
                        .await
                }
                _ => anyhow::bail!("electop node cannot hold a {scheme} lock on this source"),
            }
        })
    }
}
