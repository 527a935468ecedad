//! Kubernetes sources: the Lease objects (`coordination.k8s.io/v1`) of one cluster, reached
//! as kubectl reaches it (a kubeconfig's context, or a pod's service account), in every
//! namespace or the ones given, with an optional label selector. The credentials stay in
//! the kubeconfig: nothing here holds a token.

use std::path::PathBuf;

use serde::Deserialize;

use super::{Flags, OwnFlags, SourceConfig};
use crate::model::StoreKind;

/// The namespace of kubelets' node heartbeats: Leases, but not elections.
pub const NODE_LEASES: &str = "kube-node-lease";

#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct KubeSource {
    /// What the source is called on screen and in `SOURCE/NAME`; `kube1`, `kube2`...
    #[serde(default)]
    pub name: Option<String>,
    /// The kubeconfig file; else `$KUBECONFIG`, else `~/.kube/config`, else, inside a pod,
    /// its service account.
    #[serde(default)]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig's context to use; its `current-context` when not given.
    #[serde(default)]
    pub context: Option<String>,
    /// The namespaces whose Leases are read; every namespace (but `kube-node-lease`) when
    /// empty.
    #[serde(default)]
    pub namespaces: Vec<String>,
    /// A label selector (`app=web,tier!=cache`), as kubectl's `-l` takes it.
    #[serde(default)]
    pub selector: Option<String>,
    /// Refuse admin actions on this source.
    #[serde(default)]
    pub read_only: bool,
}

impl KubeSource {
    /// The namespaces and selector can be sent as given: a namespace is a DNS label, and
    /// neither holds what would change the request's meaning.
    pub fn check(&self) -> Result<(), String> {
        for ns in &self.namespaces {
            let label = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-';
            if ns.is_empty() || ns.len() > 63 || !ns.chars().all(label) || ns.starts_with('-') {
                return Err(format!(
                    "namespace `{}` is not a Kubernetes namespace name (lower-case letters, \
                     digits and `-`, at most 63): `kubectl get namespaces` lists them",
                    crate::model::escape_bytes(ns.as_bytes())
                ));
            }
        }
        if let Some(sel) = &self.selector
            && sel.chars().any(char::is_control)
        {
            return Err("the label selector holds control characters".to_string());
        }
        Ok(())
    }

    /// Node heartbeats are read only when their namespace is asked for.
    pub fn node_leases(&self) -> bool {
        self.namespaces.iter().any(|n| n == NODE_LEASES)
    }

    /// What the source is, for the screen: the context and the namespaces read.
    pub fn describe(&self) -> String {
        let context = self.context.as_deref().unwrap_or("current context");
        let namespaces = match self.namespaces.is_empty() {
            true => "all namespaces".to_string(),
            false => self.namespaces.join(","),
        };
        match &self.selector {
            Some(sel) => format!("{context} {namespaces} -l {sel}"),
            None => format!("{context} {namespaces}"),
        }
    }
}

/// `--kube` and its other flags, as given: no TLS files of its own (the kubeconfig has
/// them).
pub(super) fn own_flags(f: &Flags) -> OwnFlags<'_> {
    let other = [
        ("--kubeconfig", f.kubeconfig.is_some()),
        ("--namespace", !f.namespace.is_empty()),
        ("--selector", f.selector.is_some()),
    ];
    OwnFlags {
        store: StoreKind::Kubernetes,
        flag: "--kube",
        sources: &f.kube,
        tls_prefix: "--kube-",
        cacert: None,
        cert: None,
        key: None,
        not_etcd_tls: concat!(
            "--cacert/--cert/--key/--insecure-skip-tls-verify are etcd's; ",
            "a Kubernetes cluster's TLS is its kubeconfig's ",
            "(certificate-authority, client-certificate, insecure-skip-tls-verify)"
        ),
        tls_not_for: |_| String::new(),
        other: other
            .into_iter()
            .find(|(_, given)| *given)
            .map(|(flag, _)| flag),
        file: f.kubeconfig.as_deref(),
    }
}

/// One source per `--kube` (`--kube=CONTEXT`), with `--kubeconfig`, `--namespace` and
/// `--selector`.
pub(super) fn sources(f: &Flags) -> Result<Vec<SourceConfig>, String> {
    let mut out = Vec::new();
    for context in &f.kube {
        let src = KubeSource {
            name: None,
            kubeconfig: f.kubeconfig.clone(),
            context: Some(context.clone()).filter(|c| !c.is_empty()),
            namespaces: f.namespace.clone(),
            selector: f.selector.clone(),
            read_only: false,
        };
        src.check()
            .map_err(|e| format!("--namespace/--selector: {e}"))?;
        out.push(SourceConfig::Kubernetes(src));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_source_and_its_checks() {
        let text = "[[source]]\nkind = \"kubernetes\"\ncontext = \"prod\"\n\
                    namespaces = [\"kube-system\"]\n";
        let c = crate::config::Config::parse(text, std::path::Path::new("c.toml")).expect("ok");
        let SourceConfig::Kubernetes(k) = &c.sources[0] else {
            panic!("a kubernetes source: {c:?}")
        };
        assert_eq!(k.name.as_deref(), Some("kube1"));
        assert_eq!(k.describe(), "prod kube-system");
        let bad = "[[source]]\nkind = \"kubernetes\"\nnamespaces = [\"Kube_System\"]\n";
        let e = crate::config::Config::parse(bad, std::path::Path::new("c.toml"))
            .expect_err("not a namespace name");
        assert!(e.to_string().contains("Kube_System"), "{e}");
        assert!(!k.node_leases());
    }
}
