//! Redis: lock keys set with `SET key token NX PX ms` (redis-py `Lock`, Node `redlock` on one
//! instance), matched by a key pattern, read with `GET` + `PTTL`, then followed through
//! keyspace notifications where the server has them on, else polled every second. One
//! server per source, plain or TLS (`rediss://`); a cluster node or a sentinel is refused.

mod admin;
mod demo;
mod error;
mod events;
mod follow;
mod participant;
mod plan;
mod read;
mod store;
mod tls;
mod token;
pub(crate) mod tracker;

pub use demo::RedisDemo;
pub(crate) use read::address;
pub use store::{Redis, RedisKeys};

use crate::backend::{Backend, BackendFuture, BackendIo, BackendOptions};
use crate::config::RedisSource;
use crate::model::{Scheme, SourceId, SourceInfo};

/// The follow task of one Redis source.
pub struct RedisBackend {
    info: SourceInfo,
    cfg: RedisSource,
    opts: BackendOptions,
}

impl RedisBackend {
    pub fn new(id: SourceId, short: String, cfg: RedisSource, opts: BackendOptions) -> Self {
        let address = read::address(&cfg);
        let info = SourceInfo {
            store: crate::model::StoreKind::Redis,
            id,
            // Without user or password: the address and the pattern.
            name: format!("redis {address} {}", cfg.prefix),
            label: cfg.prefix.clone(),
            short,
            endpoints: address,
            scheme: Some(Scheme::RedisLock),
            read_only: cfg.read_only,
            clustered: false,
            idle_is_normal: false,
            notice: None,
        };
        RedisBackend { info, cfg, opts }
    }
}

impl Backend for RedisBackend {
    fn info(&self) -> SourceInfo {
        self.info.clone()
    }

    fn run(self: Box<Self>, io: BackendIo) -> BackendFuture {
        Box::pin(follow::run(*self, io))
    }
}
