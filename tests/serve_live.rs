//! `electop serve` on the real binary against a real SQLite table: what `/metrics`,
//! `/readyz`, `/api/v1/elections` and `/api/v1/events` say before and after a leader
//! change (and Redis lock keys' leader, TTL and deposed-holder series), the metrics as
//! `promtool` checks them, whom it answers (loopback, a token, TLS),
//! and a clean stop on SIGTERM.

mod common;

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::T;
use common::electop::command;
use common::http;
use common::sqlstore::Store;

/// `electop serve` running with `args` (before `serve`) and `serve_args` (after it); stopped
/// with SIGTERM when dropped.
struct Serve {
    child: Child,
    addr: String,
}

impl Serve {
    fn start(home: &std::path::Path, args: &[&str], serve_args: &[&str]) -> Serve {
        let addr = format!("127.0.0.1:{}", common::free_port());
        let child = command(home)
            .args(args)
            .args(["serve", "--listen", &addr])
            .args(serve_args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn electop serve");
        Serve { child, addr }
    }

    fn ready(&self) {
        common::wait_until("serve ready", T, || {
            std::net::TcpStream::connect(&self.addr).is_ok()
                && http::request(&self.addr, "/readyz", &[]).0 == 200
        });
    }

    fn metrics(&self) -> String {
        let (code, body) = http::request(&self.addr, "/metrics", &[]);
        assert_eq!(code, 200, "{body}");
        body
    }

    /// SIGTERM, then how long it took to exit and its status.
    fn terminate(&mut self) -> (Duration, std::process::ExitStatus) {
        let t0 = Instant::now();
        let pid = self.child.id().to_string();
        std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill");
        let status = self.child.wait().expect("wait");
        (t0.elapsed(), status)
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn sql_args(store: &Store) -> Vec<String> {
    vec![
        "--sql".into(),
        store.url(),
        "--scheme".into(),
        "sql-lease".into(),
    ]
}

/// The sample of `series` (its name and labels exactly), if any.
fn sample(metrics: &str, series: &str) -> Option<f64> {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
}

#[test]
fn metrics_api_and_events_follow_a_leader_change_and_sigterm_stops_it() {
    let store = Store::sqlite();
    store.create_lease_table("leaderlock");
    assert!(store.lease_attempt("leaderlock", "jobs", "node-a", 60));
    let home = common::scratch::tempdir();
    let args = sql_args(&store);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut serve = Serve::start(home.path(), &args, &[]);
    serve.ready();

    let labels = r#"{source="sql1",election="jobs",scheme="sql-lease"}"#;
    let m = serve.metrics();
    assert_eq!(
        sample(&m, &format!("electop_election_has_leader{labels}")),
        Some(1.0)
    );
    let holder_a = r#"electop_election_leader_info{source="sql1",election="jobs",scheme="sql-lease",holder="node-a"}"#;
    assert_eq!(sample(&m, holder_a), Some(1.0), "{m}");
    let ttl = sample(&m, &format!("electop_election_leader_ttl_seconds{labels}"));
    assert!(ttl.is_some_and(|t| t > 50.0 && t <= 60.0), "{ttl:?}");
    assert_eq!(
        sample(&m, r#"electop_source_up{source="sql1",store="sql"}"#),
        Some(1.0)
    );
    promtool_accepts(&m);

    let events = http::lines(&serve.addr, "/api/v1/events");
    let first: serde_json::Value =
        serde_json::from_str(&events.recv_timeout(T).expect("a current line")).expect("JSON");
    assert_eq!(first["kind"], "current");
    assert_eq!(
        (&first["to"], &first["source_id"]),
        (&"node-a".into(), &"sql1".into())
    );

    store.exec("UPDATE leaderlock SET leader_id = 'node-b' WHERE key = 'jobs'");
    let deadline = Instant::now() + T;
    let change = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = events
            .recv_timeout(left)
            .expect("the change on /api/v1/events");
        let v: serde_json::Value = serde_json::from_str(&line).expect("JSON");
        if v["kind"] == "leader_changed" {
            break v;
        }
    };
    assert_eq!(
        (&change["from"], &change["to"]),
        (&"node-a".into(), &"node-b".into())
    );
    let cause = change["cause"].as_str().expect("cause").to_string();

    let m = serve.metrics();
    let holder_b = holder_a.replace("node-a", "node-b");
    assert_eq!(sample(&m, &holder_b), Some(1.0), "{m}");
    assert_eq!(
        sample(&m, holder_a),
        None,
        "the old holder's series is replaced"
    );
    let changes = format!(
        r#"electop_election_leader_changes_total{{source="sql1",election="jobs",scheme="sql-lease",cause="{cause}"}}"#
    );
    assert_eq!(sample(&m, &changes), Some(1.0), "{m}");
    let age = sample(
        &m,
        &format!("electop_election_last_change_age_seconds{labels}"),
    );
    assert!(age.is_some_and(|a| a < 10.0), "{age:?}");

    let (code, body) = http::request(&serve.addr, "/api/v1/elections", &[]);
    assert_eq!(code, 200);
    let doc: serde_json::Value = serde_json::from_str(&body).expect("the status document");
    assert_eq!(
        common::electop::election(&doc, "jobs")["leader"]["id"],
        "node-b"
    );
    assert_eq!(http::request(&serve.addr, "/healthz", &[]).0, 200);

    let (took, status) = serve.terminate();
    assert!(status.success(), "SIGTERM is a clean stop: {status}");
    assert!(took < Duration::from_secs(10), "{took:?}");
}

/// `promtool check metrics` (Prometheus's own linter) on a real scrape.
fn promtool_accepts(metrics: &str) {
    use std::io::Write;
    let mut p = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool (scripts/install-deps.sh installs prometheus)");
    p.stdin
        .take()
        .expect("stdin")
        .write_all(metrics.as_bytes())
        .expect("write");
    let out = p.wait_with_output().expect("promtool");
    assert!(
        out.status.success(),
        "promtool check metrics: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `/metrics` as Prometheus asks for it (`Accept-Encoding: gzip`, OpenMetrics or text):
/// a gzip body that decodes to what the same scrape is without it; identity when not asked.
#[test]
fn a_scrape_asking_for_gzip_gets_the_same_series_gzipped() {
    let store = Store::sqlite();
    store.create_lease_table("leaderlock");
    for (name, holder) in [("jobs", "node-a"), ("mail", "node-b"), ("db", "node-d")] {
        assert!(store.lease_attempt("leaderlock", name, holder, 60));
    }
    let home = common::scratch::tempdir();
    let args = sql_args(&store);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let serve = Serve::start(home.path(), &args, &[]);
    serve.ready();
    store.exec("UPDATE leaderlock SET leader_id = 'node-c' WHERE key = 'jobs'");
    common::wait_until("the change counted", T, || {
        serve
            .metrics()
            .contains("electop_election_leader_changes_total{")
    });
    let om = "Accept: application/openmetrics-text; version=1.0.0";
    for accept in [None, Some(om)] {
        let plain: Vec<&str> = accept.into_iter().collect();
        let (code, head, text) = http::request_raw(&serve.addr, "/metrics", &plain);
        assert_eq!(code, 200, "{head}");
        assert!(!head.to_lowercase().contains("content-encoding"), "{head}");
        let text = String::from_utf8(text).expect("identity is text");
        let zipped: Vec<&str> = plain
            .iter()
            .copied()
            .chain(["Accept-Encoding: gzip"])
            .collect();
        let (code, head, body) = http::request_raw(&serve.addr, "/metrics", &zipped);
        assert_eq!(code, 200, "{head}");
        let head = head.to_lowercase();
        assert!(head.contains("content-encoding: gzip"), "{head}");
        assert!(head.contains("vary: accept-encoding"), "{head}");
        assert!(body.len() < text.len(), "{} of {}", body.len(), text.len());
        let mut decoded = String::new();
        use std::io::Read;
        flate2::read::GzDecoder::new(&body[..])
            .read_to_string(&mut decoded)
            .expect("a gzip body");
        assert_same_scrape(&text, &decoded);
        if accept.is_none() {
            promtool_accepts(&decoded);
        }
    }
    // Refused by q=0: the text as it is.
    let (_, head, body) =
        http::request_raw(&serve.addr, "/metrics", &["Accept-Encoding: gzip;q=0"]);
    assert!(!head.to_lowercase().contains("content-encoding"), "{head}");
    assert!(String::from_utf8(body).is_ok_and(|t| t.contains("electop_source_up")));
}

/// Two scrapes a moment apart: the same lines in the same order, and the same numbers but
/// for those the clock moves (seconds, timestamps).
fn assert_same_scrape(a: &str, b: &str) {
    let (a, b): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    assert_eq!(a.len(), b.len(), "{a:#?}\n{b:#?}");
    for (x, y) in a.iter().zip(&b) {
        match (x.rsplit_once(' '), y.rsplit_once(' ')) {
            (Some((sx, _)), Some((sy, _))) if !x.starts_with('#') && sx.contains("_seconds") => {
                assert_eq!(sx, sy)
            }
            _ => assert_eq!(x, y),
        }
    }
    assert!(
        a.iter()
            .any(|l| l.starts_with("electop_election_leader_changes_total{"))
    );
}

#[test]
fn off_loopback_it_asks_who_is_reading_and_never_shows_the_token() {
    let store = Store::sqlite();
    store.create_lease_table("leaderlock");
    let home = common::scratch::tempdir();
    let args = sql_args(&store);
    let out = command(home.path())
        .args(&args)
        .args(["serve", "--listen", "0.0.0.0:0"])
        .output()
        .expect("electop serve");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--bearer-token-file"), "{err}");

    let token = home.path().join("token");
    std::fs::write(&token, "tok-3f9a1c\n").expect("token");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let token_arg = token.display().to_string();
    let mut serve = Serve::start(home.path(), &args, &["--bearer-token-file", &token_arg]);
    common::wait_until("listening", T, || {
        std::net::TcpStream::connect(&serve.addr).is_ok()
    });
    assert_eq!(http::request(&serve.addr, "/metrics", &[]).0, 401);
    assert_eq!(
        http::request(&serve.addr, "/metrics", &["Authorization: Bearer wrong"]).0,
        401
    );
    let (code, body) = http::request(
        &serve.addr,
        "/metrics",
        &["Authorization: Bearer tok-3f9a1c"],
    );
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("electop_source_up"));
    serve.terminate();
    let mut log = String::new();
    use std::io::Read;
    if let Some(mut e) = serve.child.stderr.take() {
        e.read_to_string(&mut log).ok();
    }
    assert!(
        !log.contains("tok-3f9a1c"),
        "the token is never logged: {log}"
    );
}

#[test]
fn tls_serves_https_with_the_given_certificate() {
    let store = Store::sqlite();
    store.create_lease_table("leaderlock");
    assert!(store.lease_attempt("leaderlock", "jobs", "node-a", 60));
    let ca = common::pki::Ca::new("electop serve test CA");
    let server = ca.issue_server("serve", &["IP:127.0.0.1"]);
    let home = common::scratch::tempdir();
    let args = sql_args(&store);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (cert, key) = (
        server.cert.display().to_string(),
        server.key.display().to_string(),
    );
    let serve = Serve::start(
        home.path(),
        &args,
        &["--tls-cert", &cert, "--tls-key", &key],
    );
    common::wait_until("listening", T, || {
        std::net::TcpStream::connect(&serve.addr).is_ok()
    });
    // The election's series, not only the HELP lines a scrape before the first read has.
    let body = common::wait_for("an HTTPS answer with the election", T, || {
        let out = https_get(&serve.addr, &ca.cert, "/metrics");
        match out.contains("electop_election_has_leader{") {
            true => Ok(out),
            false => Err(out),
        }
    });
    assert!(body.contains("holder=\"node-a\""), "{body}");
    // Plain HTTP to the TLS port gets no metrics.
    let plain = std::panic::catch_unwind(|| http::request(&serve.addr, "/metrics", &[]));
    assert!(plain.is_err() || plain.as_ref().is_ok_and(|(c, _)| *c != 200));
}

/// `GET path` over TLS, the server checked against `ca` (openssl s_client).
fn https_get(addr: &str, ca: &std::path::Path, path: &str) -> String {
    use std::io::Write;
    let mut p = std::process::Command::new("openssl")
        .args([
            "s_client",
            "-quiet",
            "-verify_return_error",
            "-connect",
            addr,
        ])
        .arg("-CAfile")
        .arg(ca)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("openssl s_client");
    let req = format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n");
    p.stdin
        .take()
        .expect("stdin")
        .write_all(req.as_bytes())
        .ok();
    let out = p.wait_with_output().expect("s_client");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// SIGHUP reads the config file again: the sources it names now are served, on the same
/// listener.
#[test]
fn sighup_serves_the_sources_the_config_names_now() {
    let (one, two) = (Store::sqlite(), Store::sqlite());
    for (s, name, id) in [(&one, "jobs", "node-a"), (&two, "billing", "node-b")] {
        s.create_lease_table("leaderlock");
        assert!(s.lease_attempt("leaderlock", name, id, 60));
    }
    let home = common::scratch::tempdir();
    let cfg = home.path().join("electop.toml");
    let write = |store: &Store| {
        let text = format!(
            "[[source]]\nname = \"db\"\nkind = \"sql\"\nurl = \"{}\"\nscheme = \"sql-lease\"\npoll = \"100ms\"\n",
            store.url()
        );
        std::fs::write(&cfg, text).expect("config");
    };
    write(&one);
    let cfg_arg = cfg.display().to_string();
    let serve = Serve::start(home.path(), &["--config", &cfg_arg], &[]);
    serve.ready();
    assert!(serve.metrics().contains("holder=\"node-a\""));
    write(&two);
    std::process::Command::new("kill")
        .args(["-HUP", &serve.child.id().to_string()])
        .status()
        .expect("kill");
    let m = common::wait_for("the new source served", T, || {
        let m = serve.metrics();
        match m.contains("holder=\"node-b\"") {
            true => Ok(m),
            false => Err(m),
        }
    });
    assert!(
        !m.contains("holder=\"node-a\""),
        "the old source is gone: {m}"
    );
}

/// `electop serve --redis`: a lock key's leader, its TTL from `PTTL` and its holder's
/// token; another electop's `reelect` raises the deposed-holder gauge while the removed
/// holder's countdown runs (it is not told, and may still believe it leads), and the gauge
/// goes when that countdown would have ended.
#[test]
fn redis_lock_keys_leader_ttl_and_deposed_holder_series() {
    let server = common::redis::RedisServer::start("KEA", None);
    server.cli(&["SET", "svc:jobs", "tok-a", "PX", "6000"]);
    let home = common::scratch::tempdir();
    let url = server.url();
    let args = ["--redis", url.as_str(), "--prefix", "svc:"];
    let serve = Serve::start(home.path(), &args, &[]);
    serve.ready();

    let labels = r#"{source="redis1",election="svc:jobs",scheme="redis-lock"}"#;
    let m = serve.metrics();
    assert_eq!(
        sample(&m, &format!("electop_election_has_leader{labels}")),
        Some(1.0),
        "{m}"
    );
    let ttl = sample(&m, &format!("electop_election_leader_ttl_seconds{labels}"))
        .expect("a TTL from PTTL");
    assert!(ttl > 0.0 && ttl <= 6.0, "{ttl}");
    assert!(
        m.lines()
            .any(|l| l.starts_with("electop_election_leader_info{")
                && l.contains(r#"election="svc:jobs""#)
                && l.contains(r#"holder="tok-a""#)),
        "{m}"
    );
    let deposed = format!("electop_election_deposed_holders{labels}");
    assert_eq!(sample(&m, &deposed), None, "none deposed yet");

    let left = Duration::from_millis(server.pttl("svc:jobs") as u64);
    let out = command(home.path())
        .args(args)
        .args(["reelect", "svc:jobs", "-y"])
        .output()
        .expect("run electop reelect");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reelected = Instant::now();
    common::wait_until("the deposed gauge raised", T, || {
        sample(&serve.metrics(), &deposed) == Some(1.0)
    });
    let m = serve.metrics();
    assert_eq!(
        sample(&m, &format!("electop_election_has_leader{labels}")),
        Some(0.0),
        "{m}"
    );
    common::wait_until("the deposed gauge cleared", T, || {
        sample(&serve.metrics(), &deposed).is_none()
    });
    // Not before the countdown the key had just before the reelect.
    let cleared = reelected.elapsed();
    assert!(
        cleared + Duration::from_millis(300) >= left,
        "cleared {cleared:?} after the reelect, with {left:?} left"
    );
}
