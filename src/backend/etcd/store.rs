//! etcd as a [`Store`]: the follow task, the plans of its three schemes (election API,
//! lease key, Patroni) and their transactions, and its participants.

use std::time::Duration;

use super::{EtcdBackend, admin, participant, plan};
use crate::admin::{AdminRequest, Outcome, Plan};
use crate::backend::{Backend, BackendOptions, BoxFuture, LocalBoxFuture, Store};
use crate::config::EtcdSource;
use crate::model::{Scheme, SourceId};
use crate::node::{Options, Run};

/// etcd, registered in `backend`'s `stores!` for its etcd sources.
pub struct Etcd;

/// What decides what an action writes on an etcd source: the prefix its lease keys are put
/// under.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EtcdTarget {
    pub prefix: String,
}

impl Store for Etcd {
    type Config = EtcdSource;
    type Target = EtcdTarget;

    fn backend(
        &self,
        cfg: &EtcdSource,
        id: SourceId,
        short: String,
        opts: &BackendOptions,
    ) -> Box<dyn Backend> {
        Box::new(EtcdBackend::new(id, short, cfg.clone(), opts.clone()))
    }

    fn target(&self, cfg: &EtcdSource) -> EtcdTarget {
        EtcdTarget {
            prefix: cfg.prefix.clone(),
        }
    }

    fn default_target(&self, scheme: Scheme) -> Option<EtcdTarget> {
        (scheme.store() == crate::model::StoreKind::Etcd).then(|| EtcdTarget {
            prefix: String::new(),
        })
    }

    fn plan(&self, req: &AdminRequest, target: &EtcdTarget) -> Result<Plan, String> {
        plan::plan(req, &target.prefix)
    }

    fn execute<'a>(
        &'a self,
        cfg: &'a EtcdSource,
        req: &'a AdminRequest,
        timeout: Duration,
    ) -> BoxFuture<'a, Outcome> {
        Box::pin(admin::execute(cfg, req, timeout))
    }

    fn participate<'a>(
        &'a self,
        cfg: &'a EtcdSource,
        scheme: Scheme,
        args: &'a Options,
        run: &'a Run,
    ) -> LocalBoxFuture<'a, anyhow::Result<()>> {
        let stop = run.stop.clone();
        Box::pin(participant::run(
            cfg,
            scheme,
            args,
            run.timing,
            &run.report,
            stop,
        ))
    }
}
