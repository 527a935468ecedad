//! ZooKeeper as a [`Store`]: the follow task, the admin actions (`plan`, `admin`) and the
//! participant of `electop node` (`participant`).

use std::time::Duration;

use super::ZkBackend;
use crate::admin::{AdminRequest, Outcome, Plan, Target};
use crate::backend::{Backend, BackendOptions, BoxFuture, LocalBoxFuture, Store, short_name};
use crate::config::SourceConfig;
use crate::model::{Scheme, SourceId};
use crate::node::{Options, Run};

/// ZooKeeper ensembles, registered in `backend::store_of` for `SourceConfig::Zookeeper`.
pub struct Zookeeper;

/// Not a ZooKeeper source: `store_of` never hands one here.
const NOT_ZK: &str = "not a ZooKeeper source";

impl Store for Zookeeper {
    fn backend(
        &self,
        configs: &[SourceConfig],
        id: SourceId,
        opts: &BackendOptions,
    ) -> Box<dyn Backend> {
        let SourceConfig::Zookeeper(cfg) = &configs[id] else {
            unreachable!("{NOT_ZK}")
        };
        let short = short_name(configs, id);
        Box::new(ZkBackend::new(id, short, cfg.clone(), opts.clone()))
    }

    fn target(&self, cfg: &SourceConfig) -> Target {
        let prefix = match cfg {
            SourceConfig::Zookeeper(c) => c.prefix.clone(),
            _ => String::new(),
        };
        Target::Zookeeper { prefix }
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
                SourceConfig::Zookeeper(c) => super::admin::execute(c, req, timeout).await,
                _ => Outcome::Refused {
                    reason: NOT_ZK.into(),
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
            let SourceConfig::Zookeeper(c) = cfg else {
                anyhow::bail!("{NOT_ZK}")
            };
            if scheme != Scheme::ZkRecipe {
                anyhow::bail!(
                    "--scheme {scheme} does not run on ZooKeeper: on --zk, electop node joins an \
                     ephemeral sequential line (leave --scheme out)"
                );
            }
            let stop = run.stop.clone();
            super::participant::run(c, args, run.timing, &run.report, stop).await
        })
    }
}
