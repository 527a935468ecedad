//! Kubernetes Leases (`coordination.k8s.io/v1`), where client-go's `leaderelection` keeps
//! its elections (kube-controller-manager, kube-scheduler, controller-runtime's managers):
//! each Lease is an election, its `holderIdentity` the leader, counted down as client-go
//! counts it. Listed, then watched from the list's resourceVersion, through kube-rs on the
//! project's rustls; the admin actions are compare-and-swap writes on the resourceVersion.

mod admin;
mod client;
mod demo;
mod error;
mod follow;
mod lease;
mod participant;
mod plan;
mod tracker;

use std::time::Duration;

pub use demo::KubeDemo;

use crate::admin::{AdminRequest, Outcome, Plan};
use crate::backend::{
    Backend, BackendFuture, BackendIo, BackendOptions, BoxFuture, LocalBoxFuture, Store,
};
use crate::config::KubeSource;
use crate::model::{Scheme, SourceId, SourceInfo, StoreKind};
use crate::node::{Options, Run};

/// Kubernetes clusters, registered in `backend`'s `stores!` for their sources.
pub struct Kubernetes;

/// What decides what an action writes on a Kubernetes source: nothing beyond the Lease
/// the election is (its `namespace/name`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseSource;

/// The follow task of one Kubernetes source.
pub struct KubeBackend {
    info: SourceInfo,
    cfg: KubeSource,
    opts: BackendOptions,
}

impl Backend for KubeBackend {
    fn info(&self) -> SourceInfo {
        self.info.clone()
    }

    fn run(self: Box<Self>, io: BackendIo) -> BackendFuture {
        Box::pin(follow::run(*self, io))
    }
}

impl Store for Kubernetes {
    type Config = KubeSource;
    type Target = LeaseSource;

    fn backend(
        &self,
        cfg: &KubeSource,
        id: SourceId,
        short: String,
        opts: &BackendOptions,
    ) -> Box<dyn Backend> {
        let described = cfg.describe();
        let info = SourceInfo {
            store: StoreKind::Kubernetes,
            id,
            name: format!("kubernetes {}", cfg.describe()),
            label: described,
            short,
            // Where the cluster's address comes from (the server is the kubeconfig's).
            endpoints: match &cfg.kubeconfig {
                Some(path) => path.display().to_string(),
                None => "kubeconfig".to_string(),
            },
            scheme: Some(Scheme::KubeLease),
            read_only: cfg.read_only,
            clustered: false,
            idle_is_normal: false,
            notice: None,
        };
        Box::new(KubeBackend {
            info,
            cfg: cfg.clone(),
            opts: opts.clone(),
        })
    }

    fn target(&self, _: &KubeSource) -> LeaseSource {
        LeaseSource
    }

    fn default_target(&self, scheme: Scheme) -> Option<LeaseSource> {
        (scheme == Scheme::KubeLease).then_some(LeaseSource)
    }

    fn plan(&self, req: &AdminRequest, _: &LeaseSource) -> Result<Plan, String> {
        plan::plan(req)
    }

    fn execute<'a>(
        &'a self,
        cfg: &'a KubeSource,
        req: &'a AdminRequest,
        timeout: Duration,
    ) -> BoxFuture<'a, Outcome> {
        Box::pin(admin::execute(cfg, req, timeout))
    }

    fn participate<'a>(
        &'a self,
        cfg: &'a KubeSource,
        scheme: Scheme,
        args: &'a Options,
        run: &'a Run,
    ) -> LocalBoxFuture<'a, anyhow::Result<()>> {
        Box::pin(async move {
            if scheme != Scheme::KubeLease {
                anyhow::bail!(
                    "--scheme {scheme} does not run on Kubernetes: on --kube, electop node \
                     takes a Lease as client-go does (leave --scheme out)"
                );
            }
            let stop = run.stop.clone();
            participant::run(cfg, args, run.timing, &run.report, stop).await
        })
    }
}
