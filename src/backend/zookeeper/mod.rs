//! ZooKeeper: the recipes that elect a leader with ephemeral sequential znodes (Curator,
//! kazoo), read once and then followed through a persistent recursive watch on the prefix.

mod admin;
mod deposed;
pub(crate) mod dial;
mod error;
mod follow;
mod inputs;
pub mod layout;
pub mod members;
mod participant;
mod plan;
mod preview;
mod read;
mod record;
mod sessions;
pub(crate) mod single;
mod step;
mod store;
mod tls;
pub(crate) mod tracker;
mod tree;

pub use store::{ZkTarget, Zookeeper};

use crate::backend::{Backend, BackendFuture, BackendIo, BackendOptions};
use crate::config::ZkSource;
use crate::model::{SourceId, SourceInfo};

/// The follow task of one ZooKeeper source.
pub struct ZkBackend {
    info: SourceInfo,
    cfg: ZkSource,
    opts: BackendOptions,
}

impl ZkBackend {
    pub fn new(id: SourceId, short: String, cfg: ZkSource, opts: BackendOptions) -> Self {
        let connect = cfg.connect_string();
        let info = SourceInfo {
            store: crate::model::StoreKind::Zookeeper,
            id,
            name: format!("zookeeper {connect} {}", cfg.prefix),
            label: cfg.prefix.clone(),
            short,
            endpoints: connect,
            scheme: Some(cfg.scheme()),
            read_only: cfg.read_only,
            // Each member is probed (`srvr`/`mntr`) like etcd's, a standalone server too (its
            // mode and latency), and `status` waits for the first round.
            clustered: true,
            idle_is_normal: false,
            notice: None,
        };
        ZkBackend { info, cfg, opts }
    }
}

impl Backend for ZkBackend {
    fn info(&self) -> SourceInfo {
        self.info.clone()
    }

    fn run(self: Box<Self>, io: BackendIo) -> BackendFuture {
        Box::pin(follow::run(*self, io))
    }
}
