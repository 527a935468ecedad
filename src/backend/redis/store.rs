//! Redis as a [`Store`]: the follow task, the admin actions (`plan`, `admin`) and
//! `electop node` (`participant`).

use std::time::Duration;

use super::RedisBackend;
use crate::admin::{AdminRequest, Outcome, Plan};
use crate::backend::probe::Answerer;
use crate::backend::{Backend, BackendOptions, BoxFuture, LocalBoxFuture, Store};
use crate::config::RedisSource;
use crate::model::{Scheme, SourceId, StoreKind};
use crate::node::{Options, Run};

/// Redis servers, registered in `backend`'s `stores!` for its Redis sources.
pub struct Redis;

/// What decides what an action writes on a Redis source: the pattern its lock keys match.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedisKeys {
    pub pattern: String,
}

impl Store for Redis {
    type Config = RedisSource;
    type Target = RedisKeys;

    fn backend(
        &self,
        cfg: &RedisSource,
        id: SourceId,
        short: String,
        opts: &BackendOptions,
    ) -> Box<dyn Backend> {
        Box::new(RedisBackend::new(id, short, cfg.clone(), opts.clone()))
    }

    fn target(&self, cfg: &RedisSource) -> RedisKeys {
        RedisKeys {
            pattern: cfg.prefix.clone(),
        }
    }

    fn default_target(&self, scheme: Scheme) -> Option<RedisKeys> {
        (scheme.store() == StoreKind::Redis).then(|| RedisKeys {
            pattern: "*".to_string(),
        })
    }

    /// The script compares the key and token seen, not the pattern.
    fn plan(&self, req: &AdminRequest, _: &RedisKeys) -> Result<Plan, String> {
        super::plan::plan(req)
    }

    fn execute<'a>(
        &'a self,
        cfg: &'a RedisSource,
        req: &'a AdminRequest,
        timeout: Duration,
    ) -> BoxFuture<'a, Outcome> {
        Box::pin(super::admin::execute(cfg, req, timeout))
    }

    fn participate<'a>(
        &'a self,
        cfg: &'a RedisSource,
        scheme: Scheme,
        args: &'a Options,
        run: &'a Run,
    ) -> LocalBoxFuture<'a, anyhow::Result<()>> {
        Box::pin(async move {
            if scheme != Scheme::RedisLock {
                anyhow::bail!(
                    "--scheme {scheme} does not run on Redis: on --redis, electop node takes a \
                     lock key with SET NX PX (leave --scheme out)"
                );
            }
            let stop = run.stop.clone();
            super::participant::run(cfg, args, run.timing, &run.report, stop).await
        })
    }

    /// An error or status line (`-ERR unknown command 'PRI'`, `+OK`): RESP.
    fn recognise(&self, first: &[u8]) -> Option<Answerer> {
        matches!(first.first(), Some(b'-' | b'+')).then(|| {
            let line = crate::backend::probe::first_line(first);
            Answerer::Recognised {
                store: StoreKind::Redis,
                said: format!(
                    "it answered `{line}`, as Redis does (for Redis: --redis redis://HOST:PORT)"
                ),
            }
        })
    }
}
