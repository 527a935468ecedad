//! etcd as a [`Store`]: the follow task, the plans of its three schemes (election API,
//! lease key, Patroni) and their transactions, and its participants.

use std::time::Duration;

use super::{EtcdBackend, admin, participant, plan};
use crate::admin::{AdminRequest, Outcome, Plan, Target};
use crate::backend::{Backend, BackendOptions, BoxFuture, LocalBoxFuture, Store, short_name};
use crate::config::SourceConfig;
use crate::model::{Scheme, SourceId};
use crate::node::{Options, Run};

/// etcd, registered in `backend::store_of` for `SourceConfig::Etcd`.
pub struct Etcd;

/// Not an etcd source: `store_of` never hands one here.
const NOT_ETCD: &str = "not an etcd source";

impl Store for Etcd {
    fn backend(
        &self,
        configs: &[SourceConfig],
        id: SourceId,
        opts: &BackendOptions,
    ) -> Box<dyn Backend> {
        let SourceConfig::Etcd(cfg) = &configs[id] else {
            unreachable!("{NOT_ETCD}")
        };
        let short = short_name(configs, id);
        Box::new(EtcdBackend::new(id, short, cfg.clone(), opts.clone()))
    }

    fn target(&self, cfg: &SourceConfig) -> Target {
        let prefix = match cfg {
            SourceConfig::Etcd(c) => c.prefix.clone(),
            SourceConfig::Sql(_) | SourceConfig::Zookeeper(_) | SourceConfig::Redis(_) => {
                String::new()
            }
        };
        Target::Etcd { prefix }
    }

    fn plan(&self, req: &AdminRequest) -> Result<Plan, String> {
        match &req.target {
            Target::Etcd { prefix } => plan::plan(req, prefix),
            Target::Sql(_)
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
                SourceConfig::Etcd(c) => admin::execute(c, req, timeout).await,
                SourceConfig::Sql(_) | SourceConfig::Zookeeper(_) | SourceConfig::Redis(_) => {
                    Outcome::Refused {
                        reason: NOT_ETCD.into(),
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
            let SourceConfig::Etcd(c) = cfg else {
                anyhow::bail!("scheme {scheme} needs --sql URL")
            };
            participant::run(c, scheme, args, run.timing, &run.report, run.stop.clone()).await
        })
    }
}
