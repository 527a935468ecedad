//! Session locks as a [`Store`]: the follow task, the admin actions (`plan`, `admin`) and
//! `electop node` (both servers: [`super::participant`]).

use std::time::Duration;

use super::SessionLockBackend;
use crate::admin::{AdminRequest, Outcome, Plan};
use crate::backend::{Backend, BackendOptions, BoxFuture, LocalBoxFuture, Store};
use crate::config::Dialect;
use crate::config::SqlSource;
use crate::model::{Scheme, SourceId};
use crate::node::{Options, Run};

/// PostgreSQL advisory locks and MySQL `GET_LOCK`, registered in `backend`'s `stores!` for
/// the SQL sources whose scheme is a session lock.
pub struct SessionLocks;

/// What decides what an action writes on a session-lock source: the server's own words to
/// end a session in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionLockTarget {
    pub dialect: Dialect,
}

impl SessionLocks {
    /// The server whose words end a session of `scheme`.
    fn target_of(scheme: Scheme) -> SessionLockTarget {
        SessionLockTarget {
            dialect: super::dialect(super::Flavor::of(scheme)),
        }
    }
}

impl Store for SessionLocks {
    type Config = SqlSource;
    type Target = SessionLockTarget;

    fn backend(
        &self,
        cfg: &SqlSource,
        id: SourceId,
        short: String,
        opts: &BackendOptions,
    ) -> Box<dyn Backend> {
        Box::new(SessionLockBackend::new(id, short, cfg, opts.clone()))
    }

    fn target(&self, cfg: &SqlSource) -> SessionLockTarget {
        Self::target_of(cfg.scheme)
    }

    fn default_target(&self, scheme: Scheme) -> Option<SessionLockTarget> {
        scheme.is_session_lock().then(|| Self::target_of(scheme))
    }

    fn plan(&self, req: &AdminRequest, target: &SessionLockTarget) -> Result<Plan, String> {
        super::plan::plan(req, target.dialect)
    }

    fn execute<'a>(
        &'a self,
        cfg: &'a SqlSource,
        req: &'a AdminRequest,
        timeout: Duration,
    ) -> BoxFuture<'a, Outcome> {
        Box::pin(super::admin::execute(cfg, req, timeout))
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
                Scheme::PgAdvisory | Scheme::MysqlLock => {
                    super::participant::run(cfg, args, run.timing, &run.report, run.stop.clone())
                        .await
                }
                _ => anyhow::bail!("electop node cannot hold a {scheme} lock on this source"),
            }
        })
    }
}
