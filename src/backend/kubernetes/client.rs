//! Reaching a cluster as kubectl does: the kubeconfig given, else `$KUBECONFIG` (its files
//! merged), else `~/.kube/config`, else the pod's service account; the context asked for
//! or the file's current one. kube-rs reads the credentials (tokens, client certificates,
//! exec plugins); electop keeps only the client it makes, and says the server's address
//! without them.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::config::{KubeConfigOptions, Kubeconfig};

use super::error::KubeError;
use crate::config::KubeSource;

/// A client of one cluster, with the server's address for messages.
#[derive(Clone)]
pub(crate) struct Cluster {
    pub client: kube::Client,
    /// The API server's URL, without credentials.
    pub server: String,
}

impl Cluster {
    /// The client for `cfg`'s cluster; no request is sent yet.
    pub(crate) async fn new(cfg: &KubeSource, timeout: Duration) -> Result<Cluster, KubeError> {
        let mut config = config_of(cfg).await?;
        let server = shown(&config.cluster_url);
        config.connect_timeout = Some(timeout);
        // A watch waits as long as nothing changes: the follow task bounds each wait.
        config.read_timeout = None;
        let client = kube::Client::try_from(config)
            .map_err(|e| KubeError::Config(format!("kubernetes {server}: {e}")))?;
        Ok(Cluster { client, server })
    }

    /// The Leases of `namespace` (none: every namespace).
    pub(crate) fn leases(&self, namespace: Option<&str>) -> kube::Api<Lease> {
        match namespace {
            Some(ns) => kube::Api::namespaced(self.client.clone(), ns),
            None => kube::Api::all(self.client.clone()),
        }
    }
}

/// The client config of `cfg`: from a kubeconfig when there is one, else in-cluster.
async fn config_of(cfg: &KubeSource) -> Result<kube::Config, KubeError> {
    let file = match &cfg.kubeconfig {
        Some(path) => Some((Kubeconfig::read_from(path), path.display().to_string())),
        None => match Kubeconfig::from_env() {
            Ok(Some(k)) => Some((Ok(k), "$KUBECONFIG".to_string())),
            Err(e) => Some((Err(e), "$KUBECONFIG".to_string())),
            Ok(None) => default_file().map(|p| (Kubeconfig::read_from(&p), p)),
        },
    };
    let Some((read, named)) = file else {
        return kube::Config::incluster().map_err(|e| {
            KubeError::Config(format!(
                "no kubeconfig ($KUBECONFIG unset, no ~/.kube/config) and not inside a pod \
                 ({e}): give --kubeconfig FILE"
            ))
        });
    };
    let kc = read.map_err(|e| {
        KubeError::Config(format!(
            "kubeconfig {named} cannot be read: {e}; `kubectl config view` shows what is wrong"
        ))
    })?;
    let context = cfg.context.clone().or_else(|| kc.current_context.clone());
    let known: Vec<&str> = kc.contexts.iter().map(|c| c.name.as_str()).collect();
    match &context {
        Some(c) if !known.contains(&c.as_str()) => {
            return Err(KubeError::Config(format!(
                "kubeconfig {named} has no context `{c}`; it has: {} (`kubectl config \
                 get-contexts`)",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            )));
        }
        None => {
            return Err(KubeError::Config(format!(
                "kubeconfig {named} sets no current-context: give --kube=CONTEXT (its \
                 contexts: {})",
                known.join(", ")
            )));
        }
        Some(_) => {}
    }
    let opts = KubeConfigOptions {
        context,
        ..Default::default()
    };
    kube::Config::from_custom_kubeconfig(kc, &opts)
        .await
        .map_err(|e| KubeError::Config(format!("kubeconfig {named}: {e}")))
}

/// `~/.kube/config`, when it exists.
fn default_file() -> Option<String> {
    let home = std::env::var_os("HOME")?;
    let path = std::path::Path::new(&home).join(".kube").join("config");
    path.exists().then(|| path.display().to_string())
}

/// A server URL as messages show it: scheme, host and port only.
fn shown(url: &impl std::fmt::Display) -> String {
    let text = url.to_string();
    match url::Url::parse(&text) {
        Ok(u) => match (u.host_str(), u.port()) {
            (Some(h), Some(p)) => format!("{}://{h}:{p}", u.scheme()),
            (Some(h), None) => format!("{}://{h}", u.scheme()),
            _ => text,
        },
        Err(_) => text,
    }
}
