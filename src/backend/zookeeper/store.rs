//! ZooKeeper as a [`Store`]: the follow task, the admin actions (`plan`, `admin`) and the
//! participant of `electop node` (`participant`).

use std::time::Duration;

use super::ZkBackend;
use crate::admin::{AdminRequest, Outcome, Plan};
use crate::backend::{Backend, BackendOptions, BoxFuture, LocalBoxFuture, Store};
use crate::config::ZkSource;
use crate::model::{Scheme, SourceId};
use crate::node::{Options, Run};

/// ZooKeeper ensembles, registered in `backend`'s `stores!` for its ZooKeeper sources.
pub struct Zookeeper;

/// What decides what an action writes on a ZooKeeper source: the znode its elections live
/// under.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZkTarget {
    pub prefix: String,
}

impl Store for Zookeeper {
    type Config = ZkSource;
    type Target = ZkTarget;

    fn backend(
        &self,
        cfg: &ZkSource,
        id: SourceId,
        short: String,
        opts: &BackendOptions,
    ) -> Box<dyn Backend> {
        Box::new(ZkBackend::new(id, short, cfg.clone(), opts.clone()))
    }

    fn target(&self, cfg: &ZkSource) -> ZkTarget {
        ZkTarget {
            prefix: cfg.prefix.clone(),
        }
    }

    fn default_target(&self, scheme: Scheme) -> Option<ZkTarget> {
        scheme.is_zookeeper().then(|| ZkTarget {
            prefix: "/".to_string(),
        })
    }

    /// The multi deletes the nodes seen, by their paths: the prefix adds nothing.
    fn plan(&self, req: &AdminRequest, _: &ZkTarget) -> Result<Plan, String> {
        super::plan::plan(req)
    }

    fn execute<'a>(
        &'a self,
        cfg: &'a ZkSource,
        req: &'a AdminRequest,
        timeout: Duration,
    ) -> BoxFuture<'a, Outcome> {
        Box::pin(super::admin::execute(cfg, req, timeout))
    }

    fn participate<'a>(
        &'a self,
        cfg: &'a ZkSource,
        scheme: Scheme,
        args: &'a Options,
        run: &'a Run,
    ) -> LocalBoxFuture<'a, anyhow::Result<()>> {
        Box::pin(async move {
            if scheme != Scheme::ZkRecipe {
                anyhow::bail!(
                    "--scheme {scheme} does not run on ZooKeeper: on --zk, electop node joins an \
                     ephemeral sequential line (leave --scheme out)"
                );
            }
            let stop = run.stop.clone();
            super::participant::run(cfg, args, run.timing, &run.report, stop).await
        })
    }
}
