//! What electop needs from a Redis server, against real redis-servers: TLS (`rediss://` to
//! a `tls-port`, a private CA, a client certificate) with each mistake said in words naming
//! the fix and no key material in any output; an ACL user with only the permissions
//! electop needs, and each missing one named (NOPERM); and the servers electop does not
//! read as one source (a Redis Cluster node, a Sentinel) refused with the reason.

mod common;

use std::path::Path;

use common::T;
use common::certs::Certs;
use common::electop::{Watch, command, election};
use common::redis::{RedisServer, TlsPort};
use serde_json::Value;

/// `electop ARGS status --output json --timeout 3s`: success, and stdout + stderr.
fn status(home: &Path, args: &[&str]) -> (bool, String) {
    let out = command(home)
        .args(args)
        .args(["status", "--output", "json", "--timeout", "3s"])
        .output()
        .expect("run electop");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

fn json(text: &str) -> Value {
    let end = text.rfind('}').map(|i| i + 1).unwrap_or(0);
    serde_json::from_str(&text[..end]).unwrap_or_else(|e| panic!("JSON ({e}): {text}"))
}

/// No output may hold key material: the PEM armour or any line of a key file.
fn no_key_material(text: &str, certs: &Certs) {
    assert!(!text.contains("PRIVATE KEY"), "{text}");
    for name in ["client-key.pem", "other-client-key.pem", "server-key.pem"] {
        let body = std::fs::read_to_string(certs.path(name)).expect("key file");
        for line in body.lines().filter(|l| !l.starts_with("-----")) {
            assert!(!text.contains(line), "{name} leaked: {text}");
        }
    }
}

fn tls_server(certs: &Certs, auth_clients: bool) -> RedisServer {
    let (cert, key, ca) = (
        certs.path("server.pem"),
        certs.path("server-key.pem"),
        certs.path("ca.pem"),
    );
    RedisServer::start_tls(
        "KEA",
        TlsPort {
            cert: &cert,
            key: &key,
            ca: &ca,
            auth_clients,
        },
    )
}

/// `rediss://` with the CA that signs the server: read, and followed live through keyspace
/// events on a TLS subscription. Each mistake said, naming the setting to change.
#[test]
fn tls_works_and_each_mistake_names_the_fix() {
    let certs = Certs::generate();
    let server = tls_server(&certs, false);
    server.cli(&["SET", "tls:jobs", "tok-tls", "PX", "60000"]);
    let home = common::scratch::tempdir();
    let url = server.tls_url();
    let ca = certs.arg("ca.pem");
    let a = ["--redis", &url, "--prefix", "tls:", "--redis-cacert", &ca];
    let (ok, text) = status(home.path(), &a);
    assert!(ok, "{text}");
    let s = json(&text);
    assert_eq!(election(&s, "tls:jobs")["leader"]["id"], "tok-tls", "{s:#}");
    assert_eq!(s["sources"][0]["layout_notice"], "live: keyspace events");

    let mut w = Watch::start(home.path(), &a);
    w.wait_synced(1);
    server.cli(&["SET", "tls:other", "tok-2", "PX", "60000"]);
    w.wait_for("a change seen over TLS", T, |v| {
        v["election"] == "tls:other" && v["to"] == "tok-2"
    });
    drop(w);

    // The demo on this server: the dashboard and its three nodes all use rediss:// and the CA.
    let demo = ["--store", "redis", "--redis", &url, "--redis-cacert", &ca];
    common::tmux::demo_elects_and_quits(home.path(), &demo.map(String::from));

    let other_ca = certs.arg("other-ca.pem");
    let plain_as_tls = format!("rediss://127.0.0.1:{}/0", server.port());
    let tls_as_plain = format!("redis://127.0.0.1:{}/0", server.tls_port());
    let cases: [(Vec<&str>, &[&str]); 4] = [
        (
            vec!["--redis", &url, "--redis-cacert", &other_ca],
            &["certificate not trusted", "--redis-cacert"],
        ),
        (
            vec!["--redis", &plain_as_tls, "--redis-cacert", &ca],
            &["did not speak TLS", "plain port", "redis://"],
        ),
        (
            vec!["--redis", &tls_as_plain],
            &["speaks TLS", "rediss://", "--redis-cacert"],
        ),
        (
            vec!["--redis", &tls_as_plain, "--redis-cacert", &ca],
            &["--redis-cacert", "rediss://"],
        ),
    ];
    for (args, says) in cases {
        let (ok, text) = status(home.path(), &args);
        assert!(!ok, "{args:?}: {text}");
        for s in says {
            assert!(text.contains(s), "{args:?}: no `{s}` in: {text}");
        }
        no_key_material(&text, &certs);
    }
}

/// `tls-auth-clients yes`: without a client certificate, said (naming --redis-cert and
/// --redis-key); with one the server's CA signed, read; with one from another CA, refused.
#[test]
fn a_client_certificate_needed_given_and_refused() {
    let certs = Certs::generate();
    let server = tls_server(&certs, true);
    server.cli(&["SET", "mtls:jobs", "tok-m", "PX", "60000"]);
    let home = common::scratch::tempdir();
    let url = server.tls_url();
    let ca = certs.arg("ca.pem");
    let base = [
        "--redis",
        url.as_str(),
        "--prefix",
        "mtls:",
        "--redis-cacert",
        &ca,
    ];

    let (ok, text) = status(home.path(), &base);
    assert!(!ok, "{text}");
    assert!(
        text.contains("requires a client certificate")
            && text.contains("--redis-cert and --redis-key"),
        "{text}"
    );

    let (cert, key) = (certs.arg("client.pem"), certs.arg("client-key.pem"));
    let mut a = base.to_vec();
    a.extend(["--redis-cert", &cert, "--redis-key", &key]);
    let (ok, text) = status(home.path(), &a);
    assert!(ok, "{text}");
    assert_eq!(election(&json(&text), "mtls:jobs")["leader"]["id"], "tok-m");
    no_key_material(&text, &certs);

    let (cert, key) = (
        certs.arg("other-client.pem"),
        certs.arg("other-client-key.pem"),
    );
    let mut a = base.to_vec();
    a.extend(["--redis-cert", &cert, "--redis-key", &key]);
    let (ok, text) = status(home.path(), &a);
    assert!(!ok, "{text}");
    assert!(
        text.contains("refused the client certificate") && text.contains("other-client.pem"),
        "{text}"
    );
    no_key_material(&text, &certs);
}

/// A user with only what electop needs to watch (`+ping +@read +psubscribe +config|get` on
/// the lock keys and their keyspace channel) follows live; without PTTL it is told NOPERM
/// naming PTTL (never a lock read as gone); without PSUBSCRIBE it polls and says why;
/// without EVAL (or DEL, which its script runs), reelect fails naming it and writes nothing.
#[test]
fn an_acl_user_with_what_electop_needs_and_each_missing_permission_named() {
    let server = RedisServer::start("KEA", None);
    let watch = "+ping +@read +psubscribe +config|get";
    for (user, perms) in [
        ("watcher", format!("{watch} &__keyspace@0__:acl:*")),
        ("admin", format!("{watch} +eval +del &__keyspace@0__:acl:*")),
        ("nodel", format!("{watch} +eval &__keyspace@0__:acl:*")),
        ("nopttl", format!("{watch} -pttl &__keyspace@0__:acl:*")),
        ("nosub", "+ping +@read +config|get".to_string()),
    ] {
        let mut args = vec!["ACL", "SETUSER", user, "on", ">pw-acl-1", "~acl:*"];
        args.extend(perms.split(' '));
        let out = server.cli(&args);
        assert_eq!(out.trim(), "OK", "{user}: {out}");
    }
    server.cli(&["SET", "acl:jobs", "tok-acl", "PX", "60000"]);
    let home = common::scratch::tempdir();
    let url = |u: &str| format!("redis://{u}@127.0.0.1:{}/0", server.port());
    let run = |user: &str, extra: &[&str]| {
        let u = url(user);
        let out = command(home.path())
            .env("RPW", "pw-acl-1")
            .args(["--redis", &u, "--prefix", "acl:", "--password-env", "RPW"])
            .args(extra)
            .output()
            .expect("run electop");
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.success(), text)
    };
    let status_of = |user: &str| run(user, &["status", "--output", "json", "--timeout", "3s"]);

    let (ok, text) = status_of("watcher");
    assert!(ok, "{text}");
    let s = json(&text);
    assert_eq!(s["sources"][0]["layout_notice"], "live: keyspace events");
    assert_eq!(election(&s, "acl:jobs")["leader"]["id"], "tok-acl");

    let (ok, text) = status_of("nopttl");
    assert!(!ok, "{text}");
    assert!(
        text.contains("may not run PTTL") && text.contains("NOPERM"),
        "{text}"
    );

    let (ok, text) = status_of("nosub");
    assert!(ok, "{text}");
    let notice = json(&text)["sources"][0]["layout_notice"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        notice.starts_with("polled every 1 s: PSUBSCRIBE to keyspace events was refused (NOPERM"),
        "{notice}"
    );

    let (ok, text) = run("watcher", &["reelect", "acl:jobs", "-y"]);
    assert!(!ok, "{text}");
    assert!(text.contains("may not run EVAL"), "{text}");
    assert_eq!(server.cli(&["GET", "acl:jobs"]).trim(), "tok-acl");
    let (ok, text) = run("nodel", &["reelect", "acl:jobs", "-y"]);
    assert!(!ok, "{text}");
    assert!(
        text.contains("may not run a command of the script"),
        "{text}"
    );
    assert_eq!(server.cli(&["GET", "acl:jobs"]).trim(), "tok-acl");
    let (ok, text) = run("admin", &["reelect", "acl:jobs", "-y"]);
    assert!(ok, "{text}");
    assert_eq!(server.cli(&["EXISTS", "acl:jobs"]).trim(), "0");
    assert!(!text.contains("pw-acl-1"), "{text}");
}

/// A Redis Cluster node and a Sentinel are refused, each with the reason.
#[test]
fn a_cluster_node_and_a_sentinel_are_refused_with_the_reason() {
    let home = common::scratch::tempdir();
    let cluster = RedisServer::start_conf("KEA", "cluster-enabled yes\n");
    let (ok, text) = status(home.path(), &["--redis", &cluster.url()]);
    assert!(!ok, "{text}");
    assert!(
        text.contains("Redis Cluster node") && text.contains("not supported"),
        "{text}"
    );
    let sentinel = RedisServer::start_sentinel();
    let (ok, text) = status(home.path(), &["--redis", &sentinel.url()]);
    assert!(!ok, "{text}");
    assert!(
        text.contains("Redis Sentinel") && text.contains("get-master-addr-by-name"),
        "{text}"
    );
}
