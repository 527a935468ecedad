//! The demo on Kubernetes (`electop demo --store kubernetes`, a
//! [`crate::backend::demo::Demo`]): the nodes take one Lease, `default/electop-demo`, as
//! client-go's candidates do (see `participant`), on the cluster the kubeconfig names
//! (`--kube[=CONTEXT]`, `--kubeconfig`). electop cannot start a cluster itself.

use std::path::Path;

use anyhow::{Result, bail};

use crate::backend::BoxFuture;
use crate::backend::demo::{Demo, Facts, Given, Setup, Spawned};
use crate::config::{KubeSource, SourceConfig};
use crate::model::{Scheme, StoreKind};

/// Kubernetes's demo, registered in `backend`'s `DEMOS`.
pub struct KubeDemo;

const FACTS: Facts = Facts {
    name: "kubernetes",
    help: "A Kubernetes cluster the kubeconfig names (--kube[=CONTEXT])",
    kind: StoreKind::Kubernetes,
    source_flag: "--kube[=CONTEXT]",
    spawn_flag: "",
    spawns: "a Kubernetes cluster",
    takes_password: false,
};

/// The namespace and Lease the nodes take.
const NAMESPACE: &str = "default";
const LEASE: &str = "default/electop-demo";

impl Demo for KubeDemo {
    fn facts(&self) -> &'static Facts {
        &FACTS
    }

    fn election(&self) -> &'static str {
        LEASE
    }

    /// A context name is the kubeconfig's to check, at connect.
    fn check_address(&self, _: &str) -> Result<(), String> {
        Ok(())
    }

    fn spawn<'a>(&'a self, _: &'a Path) -> BoxFuture<'a, Result<Spawned>> {
        Box::pin(async { bail!("electop cannot start a Kubernetes cluster: give --kube") })
    }

    fn setup(&self, given: &Given, _: Option<&str>) -> Result<Setup> {
        if let Some(s) = given.scheme {
            bail!(
                "--scheme {s} does not run on Kubernetes: the nodes take a Lease as client-go \
                 does; leave --scheme out"
            );
        }
        let context = given.source.clone().filter(|c| !c.is_empty());
        let cfg = KubeSource {
            name: None,
            kubeconfig: given.file.clone(),
            context: context.clone(),
            namespaces: vec![NAMESPACE.to_string()],
            selector: None,
            read_only: given.read_only,
        };
        let mut node_source_args = vec![match &context {
            Some(c) => format!("--kube={c}"),
            None => "--kube".to_string(),
        }];
        if let Some(f) = &given.file {
            node_source_args.extend(["--kubeconfig".into(), f.display().to_string()]);
        }
        node_source_args.extend(["--namespace".into(), NAMESPACE.into()]);
        let label = format!("{} on kubernetes {}", Scheme::KubeLease, cfg.describe());
        Ok(Setup {
            source: SourceConfig::Kubernetes(cfg),
            node_source_args,
            label,
        })
    }
}
