//! Redis as a [`Store`]: the follow task. Admin actions and `electop node` are not
//! available on Redis yet, and say so.

use std::time::Duration;

use super::RedisBackend;
use crate::admin::{AdminRequest, Outcome, Plan, Target};
use crate::backend::{Backend, BackendOptions, BoxFuture, LocalBoxFuture, Store, short_name};
use crate::config::SourceConfig;
use crate::model::{Scheme, SourceId};
use crate::node::{Options, Run};

/// Redis servers, registered in `backend::store_of` for `SourceConfig::Redis`.
pub struct Redis;

/// Said by every admin action on a Redis source.
pub(crate) const NO_ADMIN: &str = "admin actions are not yet available on Redis: electop \
     shows the lock keys, their tokens and time left, but does not change them yet";

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

    fn plan(&self, _req: &AdminRequest) -> Result<Plan, String> {
        Err(NO_ADMIN.to_string())
    }

    fn execute<'a>(
        &'a self,
        _cfg: &'a SourceConfig,
        _req: &'a AdminRequest,
        _timeout: Duration,
    ) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            Outcome::Refused {
                reason: NO_ADMIN.into(),
            }
        })
    }

    fn participate<'a>(
        &'a self,
        _cfg: &'a SourceConfig,
        _scheme: Scheme,
        _args: &'a Options,
        _run: &'a Run,
    ) -> LocalBoxFuture<'a, anyhow::Result<()>> {
        Box::pin(async move {
            anyhow::bail!(
                "electop node does not run on Redis yet; hold a Redis lock with your client \
                 (redis-py Lock, Node redlock) and watch it with electop"
            )
        })
    }
}
