//! A real kube-apiserver (Kubernetes 1.20, built from Debian's source package by
//! `scripts/build-kube.sh`) on 127.0.0.1, on its own throwaway etcd, with a bearer token for
//! an admin; and client-go's own leader-election candidate (its `examples/leader-election`,
//! built from the same tree) as the real participant.

use std::fs::File;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls_pki_types::pem::PemObject;
use serde_json::Value;

use super::process::{kill_and_reap, log_tail};
use super::scratch::Scratch;
use super::{EtcdServer, POLL_INTERVAL, free_port};

/// How long the API server may take to answer `/readyz` with `ok` (about 4 s here).
const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// The admin's bearer token, in the server's token file only: a test secret.
pub const ADMIN_TOKEN: &str = "electop-test-admin-token";
/// A user in no group: under RBAC it may do only what a binding grants it.
pub const VIEWER_TOKEN: &str = "electop-test-viewer-token";

/// Where `scripts/build-kube.sh` keeps the binaries.
pub fn bin(name: &str) -> PathBuf {
    let dir =
        std::env::var_os("ELECTOP_KUBE_DIR").map_or("/var/lib/electop-kube".into(), PathBuf::from);
    let path = dir.join("bin").join(name);
    assert!(
        path.exists(),
        "{} is missing: run scripts/build-kube.sh (it builds kube-apiserver and client-go's \
         leader-election candidate from Debian's kubernetes source package, once)",
        path.display()
    );
    path
}

/// A running kube-apiserver and the etcd it stores in; both stopped by PID when dropped.
pub struct KubeServer {
    child: Option<Child>,
    dir: Scratch,
    port: u16,
    _etcd: EtcdServer,
}

impl KubeServer {
    pub fn start() -> KubeServer {
        KubeServer::start_with("AlwaysAllow")
    }

    /// With RBAC: the admin (system:masters) may do anything, the viewer only what a
    /// binding grants.
    pub fn start_rbac() -> KubeServer {
        KubeServer::start_with("RBAC")
    }

    fn start_with(authorization: &str) -> KubeServer {
        let etcd = EtcdServer::start();
        let dir = super::scratch::with_prefix("electop-kube-");
        let key = dir.path().join("sa.key");
        let made = Command::new("openssl")
            .args(["genrsa", "-out"])
            .arg(&key)
            .arg("2048")
            .stderr(Stdio::null())
            .status()
            .expect("run openssl");
        assert!(made.success(), "openssl genrsa");
        let tokens = dir.path().join("tokens.csv");
        std::fs::write(
            &tokens,
            format!("{ADMIN_TOKEN},admin,admin,\"system:masters\"\n{VIEWER_TOKEN},viewer,viewer\n"),
        )
        .expect("write the token file");
        let port = free_port();
        let log = File::create(dir.path().join("apiserver.log")).expect("apiserver log");
        let child = Command::new(bin("kube-apiserver"))
            .args(["--etcd-servers", &etcd.url(), "--bind-address", "127.0.0.1"])
            .args(["--secure-port", &port.to_string()])
            .arg("--cert-dir")
            .arg(dir.path().join("certs"))
            .arg("--token-auth-file")
            .arg(&tokens)
            .args(["--authorization-mode", authorization])
            .args(["--service-account-issuer", "https://kubernetes.default.svc"])
            .arg("--service-account-key-file")
            .arg(&key)
            .arg("--service-account-signing-key-file")
            .arg(&key)
            .args(["--service-cluster-ip-range", "10.0.0.0/24"])
            .stdout(log.try_clone().expect("clone the log"))
            .stderr(log)
            .spawn()
            .expect("spawn kube-apiserver");
        let mut s = KubeServer {
            child: Some(child),
            dir,
            port,
            _etcd: etcd,
        };
        s.wait_ready();
        s
    }

    fn wait_ready(&mut self) {
        let deadline = Instant::now() + READY_TIMEOUT;
        let mut last = String::new();
        loop {
            if let Some(Ok(Some(status))) = self.child.as_mut().map(Child::try_wait) {
                panic!("kube-apiserver exited ({status}):\n{}", self.log_tail(30));
            }
            if self.ca().exists() {
                match self.request("GET", "/readyz", None) {
                    Ok((200, body)) if body.trim() == "ok" => return,
                    Ok((code, body)) => last = format!("{code}: {body}"),
                    Err(e) => last = e,
                }
            }
            assert!(
                Instant::now() < deadline,
                "kube-apiserver not ready within {READY_TIMEOUT:?} ({last}):\n{}",
                self.log_tail(30)
            );
            std::thread::sleep(POLL_INTERVAL);
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `https://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("https://127.0.0.1:{}", self.port)
    }

    /// The serving certificate the server made itself (self-signed): the CA to trust.
    pub fn ca(&self) -> PathBuf {
        self.dir.path().join("certs/apiserver.crt")
    }

    pub fn log_tail(&self, lines: usize) -> String {
        log_tail(&self.dir.path().join("apiserver.log"), lines)
    }

    /// A kubeconfig for the admin, in `dir`, its one context `local` (namespace `default`).
    pub fn kubeconfig(&self, dir: &Path) -> PathBuf {
        self.kubeconfig_for(dir, "kubeconfig", ADMIN_TOKEN)
    }

    /// A kubeconfig named `name` in `dir` for the user of `token`.
    pub fn kubeconfig_for(&self, dir: &Path, name: &str, token: &str) -> PathBuf {
        let path = dir.join(name);
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: local\n  cluster:\n    server: {}\n    \
             certificate-authority: {}\ncontexts:\n- name: local\n  context: {{cluster: local, \
             user: admin, namespace: default}}\ncurrent-context: local\nusers:\n- name: admin\n  \
             user: {{token: {token}}}\n",
            self.url(),
            self.ca().display()
        );
        std::fs::write(&path, text).expect("write the kubeconfig");
        path
    }

    fn lease_path(namespace: &str, name: &str) -> String {
        format!("/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}")
    }

    /// The Lease as the server holds it (`None`: there is none).
    pub fn lease(&self, namespace: &str, name: &str) -> Option<Value> {
        match self.request("GET", &Self::lease_path(namespace, name), None) {
            Ok((200, body)) => Some(serde_json::from_str(&body).expect("a Lease")),
            Ok((404, _)) => None,
            other => panic!("GET lease {namespace}/{name}: {other:?}"),
        }
    }

    /// PUTs `lease` back (its resourceVersion the compare-and-swap): the status and body.
    pub fn put_lease(&self, lease: &Value) -> (u16, String) {
        let meta = &lease["metadata"];
        let path = Self::lease_path(
            meta["namespace"].as_str().expect("namespace"),
            meta["name"].as_str().expect("name"),
        );
        self.request("PUT", &path, Some(&lease.to_string()))
            .unwrap_or_else(|e| panic!("PUT {path}: {e}"))
    }

    /// One HTTP/1.0 request as the admin over TLS (the server closes the connection after
    /// the answer and never chunks it).
    pub fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<&str>,
    ) -> Result<(u16, String), String> {
        self.request_as(method, path, body, "application/json")
    }

    /// [`KubeServer::request`] with the body's content type (a PATCH's kind of patch).
    pub fn request_as(
        &self,
        method: &str,
        path: &str,
        body: Option<&str>,
        content_type: &str,
    ) -> Result<(u16, String), String> {
        let mut roots = rustls::RootCertStore::empty();
        let pem = std::fs::read(self.ca()).map_err(|e| format!("read the CA: {e}"))?;
        for cert in rustls_pki_types::CertificateDer::pem_slice_iter(&pem) {
            roots
                .add(cert.map_err(|e| e.to_string())?)
                .map_err(|e| e.to_string())?;
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let name = rustls_pki_types::ServerName::try_from("127.0.0.1").expect("an IP");
        let conn = rustls::ClientConnection::new(Arc::new(config), name.to_owned())
            .map_err(|e| e.to_string())?;
        let sock =
            TcpStream::connect(("127.0.0.1", self.port)).map_err(|e| format!("connect: {e}"))?;
        sock.set_read_timeout(Some(Duration::from_secs(10))).ok();
        let mut tls = rustls::StreamOwned::new(conn, sock);
        let body = body.unwrap_or_default();
        let head = format!(
            "{method} {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {ADMIN_TOKEN}\r\n\
             Content-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        tls.write_all(head.as_bytes())
            .map_err(|e| format!("write: {e}"))?;
        tls.write_all(body.as_bytes())
            .map_err(|e| format!("write: {e}"))?;
        let mut raw = Vec::new();
        // The server closes without a TLS close_notify at times: what was read is the answer.
        if let Err(e) = tls.read_to_end(&mut raw)
            && raw.is_empty()
        {
            return Err(format!("read: {e}"));
        }
        let text = String::from_utf8_lossy(&raw);
        let (head, body) = text.split_once("\r\n\r\n").ok_or("no end of headers")?;
        let code = head
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .ok_or_else(|| format!("bad status line: {head}"))?;
        Ok((code, body.to_string()))
    }
}

impl Drop for KubeServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            kill_and_reap(&mut child);
        }
    }
}

/// client-go's `examples/leader-election` candidate: a 60 s lease, a 15 s renew deadline,
/// a retry every 5 s, released on SIGTERM; it exits when it loses the lead. Its klog lines
/// go to a file read as it runs.
pub struct ClientGoCandidate {
    pub id: String,
    child: Option<Child>,
    log: PathBuf,
}

impl ClientGoCandidate {
    pub fn start(kubeconfig: &Path, namespace: &str, name: &str, id: &str) -> ClientGoCandidate {
        let log = kubeconfig.with_file_name(format!("{id}.log"));
        let out = File::create(&log).expect("candidate log");
        let child = Command::new(bin("leader-election"))
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args([
                "--id",
                id,
                "--lease-lock-name",
                name,
                "--lease-lock-namespace",
                namespace,
            ])
            .stdout(out.try_clone().expect("clone the log"))
            .stderr(out)
            .spawn()
            .expect("spawn client-go's leader-election");
        ClientGoCandidate {
            id: id.to_string(),
            child: Some(child),
            log,
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits until its log has a line containing `text`; when it was seen.
    pub fn wait_log(&self, text: &str, timeout: Duration) -> Instant {
        let deadline = Instant::now() + timeout;
        loop {
            if self.log().contains(text) {
                return Instant::now();
            }
            assert!(
                Instant::now() < deadline,
                "{}: no {text:?} within {timeout:?}:\n{}",
                self.id,
                self.log()
            );
            std::thread::sleep(POLL_INTERVAL);
        }
    }

    /// It leads (client-go's "successfully acquired lease").
    pub fn wait_leading(&self, timeout: Duration) -> Instant {
        self.wait_log("successfully acquired lease", timeout)
    }

    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }
}

impl Drop for ClientGoCandidate {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            kill_and_reap(&mut child);
        }
    }
}

/// Now as a Lease's `renewTime` and `acquireTime` are written (client-go's MicroTime:
/// RFC 3339 with six fractional digits, UTC).
pub fn micro_time_now() -> String {
    let t = time::OffsetDateTime::now_utc();
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.microsecond()
    )
}
