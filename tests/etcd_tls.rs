//! electop against TLS etcd started by the harness, with certificates made in the test:
//! mutual TLS for status, admin actions and participants; each way TLS can fail told in
//! words, quickly (a lasting error is not retried until the timeout); the TLS settings
//! checked before anything connects.

mod common;

use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use common::certs::Certs;
use common::electop::{command, election, status_json};
use common::etcd::{TlsEtcd, TlsSetup};
use serde_json::Value;

/// A lasting error must come well before `status`'s 5 s timeout.
const QUICK: Duration = Duration::from_secs(3);

fn home() -> common::scratch::Scratch {
    common::scratch::tempdir()
}

/// Lease-key elections under /lk/ at `endpoint`, with `--cacert CA` and `--cert NAME.pem
/// --key NAME-key.pem` when given (file names in `certs`).
fn source(certs: &Certs, endpoint: &str, ca: Option<&str>, identity: Option<&str>) -> Vec<String> {
    let mut a: Vec<String> = [
        "--etcd",
        endpoint,
        "--prefix",
        "/lk/",
        "--scheme",
        "etcd-lease-key",
    ]
    .map(String::from)
    .to_vec();
    if let Some(ca) = ca {
        a.extend(["--cacert".into(), certs.arg(ca)]);
    }
    if let Some(id) = identity {
        a.extend(["--cert".into(), certs.arg(&format!("{id}.pem"))]);
        a.extend(["--key".into(), certs.arg(&format!("{id}-key.pem"))]);
    }
    a
}

/// Mutual TLS as it should be.
fn mtls(certs: &Certs, endpoint: &str) -> Vec<String> {
    source(certs, endpoint, Some("ca.pem"), Some("client"))
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// `status --json` that must fail quickly with `expected` in its message.
fn refused(home: &std::path::Path, args: &[String], expected: &str) -> String {
    let started = Instant::now();
    let out: Output = command(home)
        .args(args)
        .args(["status", "--json", "--timeout", "5s"])
        .output()
        .expect("run electop status");
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!out.status.success(), "{args:?} succeeded: {stderr}");
    assert!(
        stderr.contains(expected),
        "{args:?}: {expected:?} not in {stderr}"
    );
    assert!(took < QUICK, "{args:?} took {took:?} to fail: {stderr}");
    stderr
}

#[test]
fn mutual_tls_works_and_each_refusal_says_why() {
    let certs = Certs::generate();
    let etcd = TlsEtcd::start(TlsSetup {
        certs: &certs,
        server_cert: "server",
        client_cert_auth: true,
    });
    etcd.put_leased("/lk/billing", "node-a", 60);
    etcd.put_leased("/lk/reports", "node-b", 60);
    let h = home();

    for endpoint in [etcd.endpoint(), etcd.https()] {
        let s = status_json(h.path(), &strs(&mtls(&certs, &endpoint)));
        assert_eq!(election(&s, "billing")["leader"]["id"], "node-a", "{s:#}");
        assert_eq!(election(&s, "reports")["leader"]["id"], "node-b", "{s:#}");
    }

    let ep = etcd.endpoint();
    // Plain text against the TLS port.
    refused(
        h.path(),
        &source(&certs, &ep, None, None),
        "the server speaks TLS: use https:// or --cacert",
    );
    // A CA that did not sign the server's certificate.
    let msg = refused(
        h.path(),
        &source(&certs, &ep, Some("other-ca.pem"), Some("client")),
        "is not signed by the CA in --cacert",
    );
    assert!(
        msg.contains(&certs.arg("other-ca.pem")) && msg.contains("(unknown issuer)"),
        "{msg}"
    );
    // No client certificate, where etcd requires one.
    refused(
        h.path(),
        &source(&certs, &ep, Some("ca.pem"), None),
        "the server requires a client certificate: give --cert and --key",
    );
    // A client certificate from a CA etcd does not trust.
    refused(
        h.path(),
        &source(&certs, &ep, Some("ca.pem"), Some("other-client")),
        "the server refused the client certificate",
    );
}

#[test]
fn admin_actions_and_participants_use_tls() {
    let certs = Certs::generate();
    let etcd = TlsEtcd::start(TlsSetup {
        certs: &certs,
        server_cert: "server",
        client_cert_auth: true,
    });
    etcd.put_leased("/lk/billing", "node-a", 60);
    let h = home();

    // The first member is dead: the action goes to the next one.
    let dead = format!("127.0.0.1:{}", common::free_port());
    let both = format!("{dead},{}", etcd.endpoint());
    let out = command(h.path())
        .args(mtls(&certs, &both))
        .args(["reelect", "billing", "--expect-leader", "node-a", "--yes"])
        .output()
        .expect("run electop reelect");
    assert!(
        out.status.success(),
        "reelect over mTLS: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        etcd.etcdctl(&["get", "/lk/billing"]),
        "",
        "the leader key is deleted"
    );

    let mut node = command(h.path())
        .args(mtls(&certs, &etcd.endpoint()))
        .args(["node", "--election", "jobs", "--id", "n1", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn electop node");
    let stdout = node.stdout.take().expect("stdout");
    let rx = common::lines::read_lines(stdout, |l| serde_json::from_str::<Value>(&l.text).ok());
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut seen = Vec::new();
    while !seen.iter().any(|v: &Value| v["belief"] == "leader") {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(Some(v)) => seen.push(v),
            Ok(None) => {}
            Err(_) => panic!("node never led over mTLS: {seen:#?}"),
        }
    }
    assert!(
        etcd.etcdctl(&["get", "/lk/jobs"]).contains("n1"),
        "n1 holds the key"
    );
    let _ = node.kill();
    let _ = node.wait();
}

#[test]
fn wrong_name_and_expired_certificates_are_named() {
    let certs = Certs::generate();
    let h = home();
    {
        let etcd = TlsEtcd::start(TlsSetup {
            certs: &certs,
            server_cert: "wrong-name",
            client_cert_auth: false,
        });
        etcd.put_leased("/lk/billing", "node-a", 60);
        refused(
            h.path(),
            &source(&certs, &etcd.endpoint(), Some("ca.pem"), None),
            "TLS: the certificate is for etcd.example, not 127.0.0.1",
        );
        let mut unverified = source(&certs, &etcd.endpoint(), None, None);
        unverified.push("--insecure-skip-tls-verify".into());
        let s = status_json(h.path(), &strs(&unverified));
        assert_eq!(election(&s, "billing")["leader"]["id"], "node-a", "{s:#}");
    }
    let etcd = TlsEtcd::start(TlsSetup {
        certs: &certs,
        server_cert: "expired",
        client_cert_auth: false,
    });
    refused(
        h.path(),
        &source(&certs, &etcd.endpoint(), Some("ca.pem"), None),
        "TLS: the server's certificate expired on 2020-01-02 00:00:00 UTC",
    );
}

/// Settings that cannot work are usage errors (exit 2) naming the file, before any connect.
#[test]
fn bad_tls_settings_are_usage_errors() {
    let certs = Certs::generate();
    let h = home();
    let not_pem = h.path().join("notes.txt");
    std::fs::write(&not_pem, "not a certificate\n").expect("write");
    let not_pem = not_pem.display().to_string();
    let missing = h.path().join("missing.pem").display().to_string();
    let cases: [(Vec<String>, &str); 5] = [
        (vec!["--cert".into(), certs.arg("client.pem")], "--key"),
        (vec!["--key".into(), certs.arg("client-key.pem")], "--cert"),
        (vec!["--cacert".into(), missing.clone()], &missing),
        (
            vec!["--cacert".into(), not_pem.clone()],
            "not a PEM certificate file",
        ),
        (
            vec![
                "--cert".into(),
                certs.arg("client.pem"),
                "--key".into(),
                certs.arg("server-key.pem"),
            ],
            "is not the private key of --cert",
        ),
    ];
    for (args, expected) in cases {
        let out = command(h.path())
            .args(["--etcd", "127.0.0.1:1"])
            .args(&args)
            .args(["status", "--json"])
            .output()
            .expect("run electop");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(expected),
            "{args:?}: {expected:?} not in {stderr}"
        );
    }

    let config = h.path().join("electop.toml");
    let text = format!(
        "[[source]]\nkind = \"etcd\"\nendpoints = [\"127.0.0.1:1\"]\ncert = \"{}\"\n",
        certs.arg("client.pem")
    );
    std::fs::write(&config, text).expect("write config");
    let out = command(h.path())
        .args([
            "--config",
            &config.display().to_string(),
            "status",
            "--json",
        ])
        .output()
        .expect("run electop");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("needs key") && stderr.contains("client.pem"),
        "{stderr}"
    );
}

#[test]
fn tls_against_a_plain_text_server_is_named() {
    let etcd = common::EtcdServer::start();
    let h = home();
    let https = format!("https://{}", etcd.endpoint());
    refused(
        h.path(),
        &["--etcd", &https, "--prefix", "/lk/"].map(String::from),
        "the server speaks plain text, not TLS: write http://",
    );
}
