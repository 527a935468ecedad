//! electop against a real ZooKeeper serving a `secureClientPort` (Netty, PEM stores, client
//! certificates required), with certificates made in the test. One server for the binary:
//! its plain `clientPort` is where the test's own client writes kazoo-style candidates, and
//! electop reads them over TLS, re-elects over TLS (an admin action's own session) and takes
//! part over TLS (`electop node`). Each way TLS can go wrong is said in words, and nothing a
//! key file holds reaches the output.

mod common;

use std::process::Output;
use std::time::{Duration, Instant};

use common::T;
use common::certs::Certs;
use common::electop::{command, election, status_json};
use common::zookeeper::{ZkServer, ZkTls};
use zookeeper_client::{Acls, Client, CreateMode};

/// A lasting error must come well before `status`'s 5 s timeout.
const QUICK: Duration = Duration::from_secs(4);

/// Kazoo-style candidates `ids` in `election` (ephemeral sequential `<uuid>__lock__` nodes
/// holding the id), written over the plain port; the client holds their sessions.
async fn candidates(endpoint: &str, election: &str, ids: &[&str]) -> Client {
    let connect = Client::connector()
        .with_session_timeout(Duration::from_secs(20))
        .connect(endpoint);
    let client = tokio::time::timeout(T, connect)
        .await
        .expect("the test's client connects within the deadline")
        .expect("connect");
    let dir = CreateMode::Persistent.with_acls(Acls::anyone_all());
    client.mkdir(election, &dir).await.expect("mkdir");
    let mode = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
    for (i, id) in ids.iter().enumerate() {
        let node = format!("{election}/{i:04x}__lock__");
        client
            .create(&node, id.as_bytes(), &mode)
            .await
            .expect("create");
    }
    client
}

/// `--zk EP --prefix /election`, with `--zk-cacert CA` and the client identity `id`
/// (`NAME.pem`, `NAME-key.pem`) when given.
fn source(certs: &Certs, ep: &str, ca: Option<&str>, id: Option<&str>) -> Vec<String> {
    let mut a: Vec<String> = ["--zk", ep, "--prefix", "/election"]
        .map(String::from)
        .to_vec();
    if let Some(ca) = ca {
        a.extend(["--zk-cacert".into(), certs.arg(ca)]);
    }
    if let Some(id) = id {
        a.extend(["--zk-cert".into(), certs.arg(&format!("{id}.pem"))]);
        a.extend(["--zk-key".into(), certs.arg(&format!("{id}-key.pem"))]);
    }
    a
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// `status --json` that must fail quickly with `expected` in its message; the message.
fn refused(home: &std::path::Path, args: &[String], expected: &str) -> String {
    let started = Instant::now();
    let out: Output = command(home)
        .args(args)
        .args(["status", "--json", "--timeout", "5s"])
        .output()
        .expect("run electop status");
    let took = started.elapsed();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{args:?} must fail: {err}");
    assert!(
        err.contains(expected),
        "{args:?}: want {expected:?} in: {err}"
    );
    assert!(
        took < QUICK,
        "{args:?}: told after {took:?}, want under {QUICK:?}: {err}"
    );
    err
}

/// The base64 lines of a PEM file: what must never be printed.
fn secret_lines(path: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .expect("read the key")
        .lines()
        .filter(|l| !l.starts_with("-----") && l.len() > 16)
        .map(str::to_string)
        .collect()
}

#[test]
fn status_reads_over_tls_and_every_tls_mistake_is_said_in_words() {
    let certs = Certs::generate();
    let (cert, key, ca) = (
        certs.path("server.pem"),
        certs.path("server-key.pem"),
        certs.path("ca.pem"),
    );
    let zk = ZkServer::start_tls(&ZkTls {
        cert: &cert,
        key: &key,
        ca: &ca,
    });
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let _held = rt.block_on(candidates(
        &zk.endpoint(),
        "/election/jobs",
        &["node-a", "node-b", "node-c"],
    ));
    let home = common::scratch::tempdir();
    let secure = zk.secure_endpoint();

    // Over TLS, with the client certificate ZooKeeper requires: the line as written, and
    // the member's health asked inside TLS (the secure port is the only one electop knows).
    let good = source(&certs, &secure, Some("ca.pem"), Some("client"));
    let s = status_json(home.path(), &strs(&good));
    let e = election(&s, "jobs");
    assert_eq!(e["leader"]["id"], "node-a", "{e:#}");
    let line: Vec<&str> = e["candidates"]
        .as_array()
        .expect("candidates")
        .iter()
        .filter_map(|c| c["id"].as_str())
        .collect();
    assert_eq!(line, ["node-a", "node-b", "node-c"], "{e:#}");
    let member = &s["sources"][0]["members"][0];
    assert_eq!(member["mode"], "standalone", "srvr over TLS: {member:#}");
    assert_eq!(member["up"], true, "{member:#}");

    // An admin action dials its own session with the same settings: the leader's node
    // goes in one multi over TLS, and node-b leads.
    let out = command(home.path())
        .args(&good)
        .args([
            "reelect",
            "jobs",
            "--expect-leader",
            "node-a",
            "--yes",
            "--timeout",
            "10s",
        ])
        .output()
        .expect("run electop reelect");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && said.contains("leader now node-b"),
        "reelect over TLS: {said}{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // `electop node` takes part over TLS: it joins a line of its own and leads it.
    let stderr = home.path().join("node.stderr");
    let mut cmd = command(home.path());
    cmd.args(&good)
        .args(["node", "--election", "tls-node", "--id", "n1", "--json"])
        .args(["--ttl", "2s"]);
    let mut node = common::node::Node::spawn(&mut cmd, "n1", "tls-node", stderr);
    node.wait_belief("leader", Some("n1"), T);
    let s = status_json(home.path(), &strs(&good));
    assert_eq!(election(&s, "tls-node")["leader"]["id"], "n1", "{s:#}");
    node.sigkill();

    // The demo on this ZooKeeper: the dashboard and its three nodes all use the TLS flags.
    let mut demo = vec!["--store".to_string(), "zookeeper".into()];
    demo.extend(
        good.iter()
            .filter(|a| *a != "--prefix" && *a != "/election")
            .cloned(),
    );
    common::tmux::demo_elects_and_quits(home.path(), &demo);

    // The wrong CA: the server's certificate is not trusted.
    let wrong_ca = source(&certs, &secure, Some("other-ca.pem"), Some("client"));
    let err = refused(home.path(), &wrong_ca, "certificate not trusted");
    assert!(err.contains("other-ca.pem"), "names the CA file: {err}");

    // TLS settings against the plain port: it does not speak TLS.
    let plain_given_tls = source(&certs, &zk.endpoint(), Some("ca.pem"), Some("client"));
    let err = refused(home.path(), &plain_given_tls, "did not speak TLS");
    assert!(err.contains("secureClientPort"), "{err}");

    // The secure port without TLS settings: it speaks TLS, give --zk-cacert.
    let tls_given_plain = source(&certs, &secure, None, None);
    refused(
        home.path(),
        &tls_given_plain,
        "speaks TLS (a secureClientPort)",
    );

    // No client certificate where ZooKeeper requires one.
    let no_identity = source(&certs, &secure, Some("ca.pem"), None);
    refused(home.path(), &no_identity, "requires a client certificate");

    // A client certificate from a CA the server does not trust.
    let foreign = source(&certs, &secure, Some("ca.pem"), Some("other-client"));
    let err = refused(home.path(), &foreign, "refused the client certificate");

    // Nothing a key file holds reaches the output, whatever went wrong: not the good key's,
    // not a broken key file's.
    let mut said = vec![err];
    let broken = home.path().join("broken-key.pem");
    std::fs::write(
        &broken,
        "-----BEGIN PRIVATE KEY-----\nS3CRETS3CRETS3CRETS3CRET!!\n-----END PRIVATE KEY-----\n",
    )
    .expect("write a broken key");
    let mut bad_key = source(&certs, &secure, Some("ca.pem"), None);
    bad_key.extend(["--zk-cert".into(), certs.arg("client.pem")]);
    bad_key.extend(["--zk-key".into(), broken.display().to_string()]);
    let out = command(home.path())
        .args(&bad_key)
        .args(["status", "--json"])
        .output()
        .expect("run electop status");
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success() && text.contains("--zk-key"), "{text}");
    said.push(text);
    let ok = command(home.path())
        .args(&good)
        .args(["status"])
        .output()
        .expect("run electop status");
    said.push(String::from_utf8_lossy(&ok.stdout).into_owned());
    said.push(String::from_utf8_lossy(&ok.stderr).into_owned());
    let mut secrets = secret_lines(&certs.path("client-key.pem"));
    secrets.extend(secret_lines(&certs.path("other-client-key.pem")));
    secrets.push("S3CRETS3CRET".into());
    for text in &said {
        for secret in &secrets {
            assert!(
                !text.contains(secret.as_str()),
                "a key's content in: {text}"
            );
        }
    }
}
