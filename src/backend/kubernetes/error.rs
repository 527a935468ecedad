//! What went wrong talking to a Kubernetes API server, in words that name the cluster, the
//! setting or permission to change, and never a token.

use crate::backend::engine::lifecycle::Failure;
use crate::backend::tls;

#[derive(Debug, thiserror::Error)]
pub(crate) enum KubeError {
    /// The kubeconfig (or the pod's service account) cannot give a client.
    #[error("{0}")]
    Config(String),
    #[error(
        "kubernetes {0}: connection refused (is the API server running there? check the \
         kubeconfig's server)"
    )]
    Refused(String),
    #[error(
        "kubernetes {0}: the credentials were refused (401 Unauthorized): the token or client \
         certificate is wrong or has expired; `kubectl auth whoami` with the same context \
         says the same, and logging in again renews it"
    )]
    Unauthorized(String),
    #[error(
        "kubernetes {server}: the user may not {verb} leases.coordination.k8s.io{scope} \
         (403 Forbidden); grant it, e.g. `kubectl create clusterrole electop-read \
         --verb=list,watch,get --resource=leases.coordination.k8s.io` and a binding (update \
         too for the admin actions)"
    )]
    Forbidden {
        server: String,
        verb: &'static str,
        scope: String,
    },
    /// What answered is not a Kubernetes API server, or one without Leases.
    #[error("kubernetes {0}: {1}")]
    NotKube(String, String),
    #[error("kubernetes {0}: {1}")]
    Tls(String, String),
    /// The watch's resourceVersion is older than the server keeps (410 Gone): list again.
    #[error("kubernetes {0}: the watch's resourceVersion is too old (410 Gone): read again")]
    Gone(String),
    #[error("kubernetes {0}: the watch ended: {1}")]
    Lost(String, String),
    #[error("kubernetes {0}: no answer within {1:?}")]
    Timeout(String, std::time::Duration),
    #[error("kubernetes {0}: {1}")]
    Other(String, String),
}

impl KubeError {
    /// The client's error on `server` for `verb` (`list`, `watch`, `update`) on the Leases
    /// of `namespace` (none: every namespace).
    pub(crate) fn from_client(
        e: &kube::Error,
        server: &str,
        verb: &'static str,
        namespace: Option<&str>,
    ) -> KubeError {
        let server = server.to_string();
        if let kube::Error::Api(status) = e {
            let message = status.message.clone();
            return match status.code {
                401 => KubeError::Unauthorized(server),
                403 => KubeError::Forbidden {
                    server,
                    verb,
                    scope: match namespace {
                        Some(ns) => format!(" in namespace {ns}"),
                        None => " at the cluster scope (every namespace; --namespace reads \
                                 fewer)"
                            .to_string(),
                    },
                },
                404 if matches!(verb, "list" | "watch") => KubeError::NotKube(
                    server,
                    format!(
                        "the server has no coordination.k8s.io/v1 Leases (404 {message}): is \
                         this a Kubernetes API server of version 1.14 or later?"
                    ),
                ),
                410 => KubeError::Gone(server),
                code => KubeError::Other(server, format!("{code} {}: {message}", status.reason)),
            };
        }
        if let kube::Error::Auth(_) = e {
            // Its text may hold an exec plugin's output and environment: not shown.
            return KubeError::Config(format!(
                "kubernetes {server}: the kubeconfig's credentials could not be obtained (its \
                 token file, client certificate or auth plugin failed); `kubectl auth whoami` \
                 with the same context shows why"
            ));
        }
        let mut source: Option<&dyn std::error::Error> = Some(e);
        while let Some(s) = source {
            if let Some(io) = s.downcast_ref::<std::io::Error>() {
                if io.kind() == std::io::ErrorKind::ConnectionRefused {
                    return KubeError::Refused(server);
                }
                if let Some(t) = rustls_in(io) {
                    return KubeError::Tls(server, describe_tls(t));
                }
            }
            if let Some(t) = s.downcast_ref::<rustls::Error>() {
                return KubeError::Tls(server, describe_tls(t));
            }
            source = s.source();
        }
        match e {
            kube::Error::SerdeError(_) => KubeError::NotKube(
                server,
                format!("the answer is not a Kubernetes object ({e}): is this an API server?"),
            ),
            _ => KubeError::Other(server, chain(e)),
        }
    }

    /// Waiting will not help until someone acts.
    fn lasting(&self) -> bool {
        matches!(
            self,
            KubeError::Config(_)
                | KubeError::Unauthorized(_)
                | KubeError::Forbidden { .. }
                | KubeError::NotKube(..)
                | KubeError::Tls(..)
        )
    }
}

/// The rustls error inside `io`, which the client's connector wraps in another I/O error
/// (whose `source` skips it).
fn rustls_in(io: &std::io::Error) -> Option<&rustls::Error> {
    match io.get_ref()?.downcast_ref::<std::io::Error>() {
        Some(inner) => rustls_in(inner),
        None => tls::inner(io),
    }
}

/// A handshake failure as the kubeconfig's settings name the files.
fn describe_tls(e: &rustls::Error) -> String {
    let files = tls::Files::new(
        [
            "the kubeconfig's certificate-authority(-data)",
            "client-certificate",
            "client-key",
        ],
        [None, None, None],
    );
    let words = tls::Words {
        lead: String::new(),
        files: &files,
        server_cert: "--tls-cert-file",
        server_ca: "--client-ca-file",
        client_auth: "",
        not_tls: "the server does not speak TLS there: is the kubeconfig's server an https:// \
                  URL of the API server's secure port?",
    };
    tls::describe(e, "the API server", &words)
}

/// An error and its causes, each said once.
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

impl crate::backend::engine::drive::StoreError for KubeError {
    fn failure(&self) -> Failure {
        match self {
            KubeError::Gone(_) => Failure::Resnapshot,
            e if e.lasting() => Failure::Lasting,
            _ => Failure::Transient,
        }
    }

    fn ends_one_shot(&self) -> bool {
        matches!(self, KubeError::Refused(_)) || self.lasting()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(code: u16, reason: &str) -> kube::Error {
        let mut s = kube::core::Status::failure("denied", reason);
        s.code = code;
        kube::Error::Api(Box::new(s))
    }

    #[test]
    fn each_refusal_says_what_to_do() {
        let e = KubeError::from_client(&api(403, "Forbidden"), "https://h:6443", "watch", None);
        let text = e.to_string();
        assert!(
            text.contains("may not watch leases.coordination.k8s.io"),
            "{text}"
        );
        assert!(text.contains("cluster scope"), "{text}");
        let e = KubeError::from_client(&api(401, "Unauthorized"), "h", "list", Some("a"));
        assert!(e.to_string().contains("401"), "{e}");
        let gone = KubeError::from_client(&api(410, "Expired"), "h", "watch", None);
        use crate::backend::engine::drive::StoreError as _;
        assert_eq!(gone.failure(), Failure::Resnapshot);
        assert_eq!(e.failure(), Failure::Lasting);
    }
}
