//! Redis as a [`Store`]: the follow task, the admin actions (`plan`, `admin`) and
//! `electop node` (`participant`).

use std::time::Duration;

use super::RedisBackend;
use crate::admin::{AdminRequest, Outcome, Plan, Target};
use crate::backend::{Backend, BackendOptions, BoxFuture, LocalBoxFuture, Store, short_name};
use crate::config::SourceConfig;
use crate::model::{Scheme, SourceId};
use crate::node::{Options, Run};

/// Redis servers, registered in `backend::store_of` for `SourceConfig::Redis`.
pub struct Redis;

impl Store for Redis {
    fn backend(
        &self,
        configs: &[SourceConfig],
        id: SourceId,
        opts: &BackendOptions,
    ) -> Box<dyn Backend> {
        let SourceConfig::Redis(cfg) = &configs[id] else {
            unreachable!("not a Redis source")
        };
        let short = short_name(configs, id);
        Box::new(RedisBackend::new(id, short, cfg.clone(), opts.clone()))
    }

    fn target(&self, cfg: &SourceConfig) -> Target {
        let pattern = match cfg {
            SourceConfig::Redis(c) => c.prefix.clone(),
            _ => String::new(),
        };
        Target::Redis { pattern }
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
                SourceConfig::Redis(c) => super::admin::execute(c, req, timeout).await,
                _ => Outcome::Refused {
                    reason: "not a Redis source".into(),
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
            let SourceConfig::Redis(c) = cfg else {
                anyhow::bail!("not a Redis source")
            };
            if scheme != Scheme::RedisLock {
                anyhow::bail!(
                    "--scheme {scheme} does not run on Redis: on --redis, electop node takes a \
                     lock key with SET NX PX (leave --scheme out)"
                );
            }
            let stop = run.stop.clone();
            super::participant::run(c, args, run.timing, &run.report, stop).await
        })
    }
}
