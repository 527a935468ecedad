//! electop against real SQL stores (SQLite files, PostgreSQL and MariaDB started by the
//! harness), with participants running the articles' own statements: leaders and deadlines
//! from the database's clock, leader changes and their causes, history that survives a
//! restart, and an error that says what to fix for each way a source can be wrong.

mod common;

use std::time::Duration;

use common::electop::{Watch, command, election, status_json};
use common::sqlstore::Store;
use serde_json::Value;

use common::T;

fn args<'a>(url: &'a str, scheme: &'a str, table: &'a str) -> Vec<&'a str> {
    vec![
        "--sql", url, "--scheme", scheme, "--table", table, "--poll", "100ms",
    ]
}

fn status_err(home: &std::path::Path, args: &[&str]) -> String {
    let out = command(home)
        .args(args)
        .args(["status", "--json", "--timeout", "8s"])
        .output()
        .expect("run electop");
    assert_eq!(
        out.status.code(),
        Some(1),
        "status must fail: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(!err.contains("s3cret-pw"), "no password in errors: {err}");
    err
}

fn leader_event(w: &mut Watch, kind: &str, election: &str) -> Value {
    w.wait_for(kind, T, |v| v["kind"] == kind && v["election"] == election)
}

/// sql-lease end to end: a leader and its deadline; a forced takeover; expiry; a new leader;
/// a deleted row; and all of it again from the history file after a restart.
fn lease_scenario(store: Store) {
    store.create_lease_table("leaderlock");
    assert!(store.lease_attempt("leaderlock", "jobs", "node-a", 3));
    assert!(
        !store.lease_attempt("leaderlock", "jobs", "node-b", 3),
        "held: node-b stays follower"
    );
    let home = common::scratch::tempdir();
    let url = store.url();
    let a = args(&url, "sql-lease", "leaderlock");

    let s = status_json(home.path(), &a);
    let e = election(&s, "jobs");
    assert_eq!(e["scheme"], "sql-lease");
    assert_eq!(e["leader"]["id"], "node-a");
    let ttl = e["ttl_ms"].as_i64().expect("ttl");
    assert!(
        ttl > 1_000 && ttl <= 3_000,
        "deadline from the database clock: {ttl}"
    );
    assert!(e["leader"]["deadline"].is_string(), "{e}");

    let mut w = Watch::start(home.path(), &a);
    w.wait_synced(1);
    let key = if matches!(store, Store::My(_)) {
        "`key`"
    } else {
        "key"
    };
    store.exec(&format!(
        "UPDATE leaderlock SET leader_id = 'node-x' WHERE {key} = 'jobs'"
    ));
    let ev = leader_event(&mut w, "leader_changed", "jobs");
    assert_eq!(
        (ev["from"].as_str(), ev["to"].as_str(), ev["cause"].as_str()),
        (Some("node-a"), Some("node-x"), Some("unknown"))
    );
    let ev = leader_event(&mut w, "leader_lost", "jobs");
    assert_eq!(ev["cause"], "expired", "{ev}");
    assert!(store.lease_attempt("leaderlock", "jobs", "node-b", 30));
    let ev = leader_event(&mut w, "leader_elected", "jobs");
    assert_eq!(ev["to"], "node-b");
    store.exec(&format!("DELETE FROM leaderlock WHERE {key} = 'jobs'"));
    let ev = w.wait_for("deleted", T, |v| {
        v["kind"] == "leader_lost" && v["cause"] == "deleted"
    });
    assert_eq!(ev["from"], "node-b");
    drop(w);

    // A new process reads back what the last one saw.
    let s = status_json(home.path(), &a);
    let e = election(&s, "jobs");
    let hist: Vec<(Value, Value, Value)> = e["history"]
        .as_array()
        .expect("history")
        .iter()
        .map(|h| (h["from"].clone(), h["to"].clone(), h["cause"].clone()))
        .collect();
    assert_eq!(
        hist,
        [
            ("node-a".into(), "node-x".into(), "unknown".into()),
            ("node-x".into(), Value::Null, "expired".into()),
            (Value::Null, "node-b".into(), "elected".into()),
            ("node-b".into(), Value::Null, "deleted".into()),
        ]
    );
    assert!(
        e["history"][0]["at"]
            .as_str()
            .is_some_and(|t| t.contains('T')),
        "{e}"
    );
    assert_eq!(e["leader"], Value::Null);
}

/// sql-heartbeat end to end with the MySQL election article's statement: the timeout from the configuration,
/// expiry when the leader stops beating, a takeover by the next service.
fn heartbeat_scenario(store: Store) {
    store.create_heartbeat_table("service_election");
    assert!(store.heartbeat("service_election", 1, "my_service_number_7", 2));
    assert!(!store.heartbeat("service_election", 1, "my_service_number_12", 2));
    let home = common::scratch::tempdir();
    let url = store.url();
    let mut a = args(&url, "sql-heartbeat", "service_election");
    a.extend(["--heartbeat-timeout", "2s"]);
    let s = status_json(home.path(), &a);
    let e = election(&s, "1");
    assert_eq!(e["scheme"], "sql-heartbeat");
    assert_eq!(e["leader"]["id"], "my_service_number_7");
    let ttl = e["ttl_ms"].as_i64().expect("ttl");
    assert!(
        ttl > 0 && ttl <= 2_000,
        "last_seen_active + 2 s - db now: {ttl}"
    );

    let mut w = Watch::start(home.path(), &a);
    w.wait_synced(1);
    // Service 7 stops beating: it is deposed when the timeout passes.
    let ev = leader_event(&mut w, "leader_lost", "1");
    assert_eq!(
        (ev["from"].as_str(), ev["cause"].as_str()),
        (Some("my_service_number_7"), Some("expired"))
    );
    common::wait_until("service 12 takes over", T, || {
        store.heartbeat("service_election", 1, "my_service_number_12", 2)
    });
    let ev = leader_event(&mut w, "leader_elected", "1");
    assert_eq!(ev["to"], "my_service_number_12");
}

/// Each way a source can be wrong gets an error naming what to fix.
fn error_scenario(store: Store) {
    let home = common::scratch::tempdir();
    let url = store.url();
    let started = std::time::Instant::now();
    let err = status_err(home.path(), &args(&url, "sql-lease", "nosuchtable"));
    assert!(
        err.contains("nosuchtable") && err.contains("does not exist"),
        "{err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "a missing table is reported without waiting out --timeout"
    );

    store.exec("CREATE TABLE wrongcols (key2 varchar(20) PRIMARY KEY, leader_id varchar(20), valid_until varchar(30))");
    store.grant("wrongcols");
    let err = status_err(home.path(), &args(&url, "sql-lease", "wrongcols"));
    assert!(
        err.contains("column key is missing") && err.contains("key2"),
        "{err}"
    );

    if !matches!(store, Store::Sqlite { .. }) {
        store.exec("CREATE TABLE wrongtype (k varchar(20) PRIMARY KEY, leader_id varchar(20), valid_until integer)");
        store.grant("wrongtype");
        let cfg = home.path().join("cols.toml");
        std::fs::write(
            &cfg,
            format!(
                "[[source]]\nkind = \"sql\"\nurl = \"{url}\"\nscheme = \"sql-lease\"\ntable = \"wrongtype\"\ncolumns = {{ key = \"k\" }}\n"
            ),
        )
        .expect("config");
        let cfg_s = cfg.display().to_string();
        let err = status_err(home.path(), &["--config", &cfg_s]);
        assert!(
            err.contains("valid_until") && err.contains("not a timestamp"),
            "{err}"
        );

        // A table the user may not read.
        let secret = if matches!(store, Store::My(_)) {
            "other.secretlock"
        } else {
            "secretlock"
        };
        store.create_lease_table_private(secret);
        let err = status_err(home.path(), &args(&url, "sql-lease", secret));
        assert!(
            err.contains("permission denied") && err.contains("GRANT SELECT"),
            "{err}"
        );
    }
}

fn down_and_back_scenario(mut store: Store) {
    store.create_lease_table("leaderlock");
    assert!(store.lease_attempt("leaderlock", "jobs", "node-a", 60));
    let home = common::scratch::tempdir();
    let url = store.url();
    let a = args(&url, "sql-lease", "leaderlock");
    let mut w = Watch::start(home.path(), &a);
    w.wait_synced(1);

    // A hung server (SIGSTOP) is STALE within 3 s, and live again after.
    let frozen = std::time::Instant::now();
    store.freeze(true);
    w.wait_for("stale", T, |v| v["kind"] == "stale");
    let took = frozen.elapsed();
    store.freeze(false);
    assert!(took < Duration::from_secs(3), "stale after {took:?}");
    w.wait_for("fresh", T, |v| v["kind"] == "fresh");

    store.stop();
    let ev = w.wait_for("disconnected", T, |v| v["kind"] == "disconnected");
    let detail = ev["detail"].as_str().unwrap_or_default().to_string();
    assert!(
        detail.contains("cannot connect") || detail.contains("127.0.0.1"),
        "says what is down: {detail}"
    );
    assert!(!detail.contains("s3cret-pw"), "{detail}");
    let err = status_err(home.path(), &a);
    assert!(err.contains("127.0.0.1"), "{err}");
    store.restart();
    let key = if matches!(store, Store::My(_)) {
        "`key`"
    } else {
        "key"
    };
    store.exec(&format!(
        "UPDATE leaderlock SET leader_id = 'node-z' WHERE {key} = 'jobs'"
    ));
    let ev = leader_event(&mut w, "leader_changed", "jobs");
    assert_eq!(ev["to"], "node-z", "polling resumed after the outage");
}

#[test]
fn sqlite_lease() {
    lease_scenario(Store::sqlite());
}

#[test]
fn sqlite_heartbeat() {
    heartbeat_scenario(Store::sqlite());
}

#[test]
fn sqlite_errors() {
    error_scenario(Store::sqlite());
    let home = common::scratch::tempdir();
    let err = status_err(
        home.path(),
        &args("sqlite:///nonexistent/dir/x.db", "sql-lease", "leaderlock"),
    );
    assert!(
        err.contains("/nonexistent/dir/x.db") && err.contains("does not exist"),
        "{err}"
    );
}

#[test]
fn postgres_lease() {
    lease_scenario(Store::postgres());
}

#[test]
fn postgres_heartbeat() {
    heartbeat_scenario(Store::postgres());
}

#[test]
fn postgres_errors() {
    error_scenario(Store::postgres());
}

#[test]
fn postgres_down_and_back() {
    down_and_back_scenario(Store::postgres());
}

#[test]
fn mariadb_lease() {
    lease_scenario(Store::mariadb());
}

#[test]
fn mariadb_heartbeat() {
    heartbeat_scenario(Store::mariadb());
}

#[test]
fn mariadb_errors() {
    error_scenario(Store::mariadb());
}

#[test]
fn mariadb_down_and_back() {
    down_and_back_scenario(Store::mariadb());
}

/// Deadlines come from the database's clock: a server in another time zone and a local
/// process in a third change nothing.
#[test]
fn deadlines_ignore_time_zones() {
    let pg = Store::Pg(common::postgres::Postgres::start_with_time_zone(
        "Asia/Tokyo",
    ));
    pg.create_lease_table("leaderlock");
    // Time taken since the first row was written counts against its TTL: on a loaded
    // machine that is seconds, which is still far from the hours a zone mix-up would be.
    let written = std::time::Instant::now();
    assert!(pg.lease_attempt("leaderlock", "jobs", "node-a", 30));
    let my = Store::My(common::mariadb::MariaDb::start_with_time_zone("+05:30"));
    my.create_heartbeat_table("service_election");
    assert!(my.heartbeat("service_election", 1, "svc-7", 20));
    // A DATETIME holds the writer's wall-clock time (NOW() in the server's zone).
    my.create_lease_table("leaderlock");
    assert!(my.lease_attempt("leaderlock", "jobs", "node-m", 30));
    let home = common::scratch::tempdir();
    for (url, scheme, table, name, max) in [
        (pg.url(), "sql-lease", "leaderlock", "jobs", 30_000),
        (my.url(), "sql-heartbeat", "service_election", "1", 20_000),
        (my.url(), "sql-lease", "leaderlock", "jobs", 30_000),
    ] {
        let out = command(home.path())
            .env("TZ", "Pacific/Honolulu")
            .args(args(&url, scheme, table))
            .args(["status", "--json"])
            .output()
            .expect("electop");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let s: Value = serde_json::from_slice(&out.stdout).expect("json");
        let ttl = election(&s, name)["ttl_ms"].as_i64().expect("ttl");
        let since = written.elapsed().as_millis() as i64;
        assert!(
            ttl > max - 2_000 - since && ttl <= max,
            "{scheme}: {ttl} ms left, not hours off"
        );
    }
}

/// The config file mixes etcd and SQL sources in one dashboard, and a password can come
/// from an environment variable or a file instead of the URL; a wrong one is named as such
/// without being shown.
#[test]
fn config_mixes_sources_and_passwords_stay_hidden() {
    let etcd = common::etcd::EtcdServer::start();
    etcd.etcdctl(&["put", "/cfg/leader/billing", "node-b"]);
    let pg = common::postgres::Postgres::start();
    let store = Store::Pg(pg);
    store.create_lease_table("leaderlock");
    assert!(store.lease_attempt("leaderlock", "jobs", "node-a", 30));
    let Store::Pg(pg) = &store else {
        unreachable!()
    };
    let home = common::scratch::tempdir();
    let pw_file = home.path().join("pw");
    std::fs::write(&pw_file, "s3cret-pw\n").expect("pw file");
    let cfg = home.path().join("electop.toml");
    std::fs::write(
        &cfg,
        format!(
            r#"
[[source]]
kind = "etcd"
endpoints = ["{etcd}"]
prefix = "/cfg/leader/"
scheme = "etcd-lease-key"

[[source]]
kind = "sql"
url = "{url}"
password_file = "{pw}"
scheme = "sql-lease"
poll = "100ms"
"#,
            etcd = etcd.endpoint(),
            url = pg.url_without_password(),
            pw = pw_file.display()
        ),
    )
    .expect("config");
    let cfg_s = cfg.display().to_string();
    let s = status_json(home.path(), &["--config", &cfg_s]);
    assert_eq!(election(&s, "billing")["leader"]["id"], "node-b");
    assert_eq!(election(&s, "jobs")["leader"]["id"], "node-a");
    assert_eq!(s["sources"].as_array().map(Vec::len), Some(2));
    assert!(!s.to_string().contains("s3cret-pw"));

    let url = pg.url_without_password();
    let out = command(home.path())
        .env("PG_PW", "s3cret-pw")
        .args([
            "--sql",
            &url,
            "--scheme",
            "sql-lease",
            "--password-env",
            "PG_PW",
            "status",
            "--json",
        ])
        .output()
        .expect("electop");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let out = command(home.path())
        .env("PG_PW", "wrong-horse-battery")
        .args([
            "--sql",
            &url,
            "--scheme",
            "sql-lease",
            "--password-env",
            "PG_PW",
            "status",
            "--timeout",
            "2s",
        ])
        .output()
        .expect("electop");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(err.contains("authentication failed"), "{err}");
    assert!(!err.contains("wrong-horse-battery"), "{err}");
    let log = std::fs::read_to_string(home.path().join("data/electop/electop.log"))
        .expect("the log file");
    assert!(log.contains("source down"), "the failure is logged: {log}");
    assert!(
        !log.contains("wrong-horse-battery") && !log.contains("s3cret-pw"),
        "no password in the log"
    );
}

/// Whether `s` holds a character that draws as nothing or reorders what is around it.
fn has_raw_format_char(s: &str) -> bool {
    s.chars().any(|c| {
        matches!(c, '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
            || matches!(c, '\u{feff}' | '\u{61c}' | '\u{ad}')
    })
}

/// Hostile text in a real store stays inert: an election name and a leader id holding
/// bidirectional overrides and zero-width characters are printed escaped by `status`, the
/// same escaped form in the text and in the JSON.
#[test]
fn format_characters_in_a_store_are_escaped() {
    let store = Store::sqlite();
    store.create_lease_table("leaderlock");
    // Short enough that the text output's columns do not cut their escaped forms.
    let name = "jobs\u{202e}\u{200b}nimda";
    let id = "n-a\u{2066}\u{feff}";
    assert!(store.lease_attempt("leaderlock", name, id, 60));
    let home = common::scratch::tempdir();
    let url = store.url();
    let a = args(&url, "sql-lease", "leaderlock");
    let text = common::electop::status_table(home.path(), &a);
    assert!(
        !has_raw_format_char(&text),
        "raw format character in {text:?}"
    );
    assert!(text.contains("jobs\\u{202e}\\u{200b}nimda"), "{text}");
    assert!(text.contains("n-a\\u{2066}\\u{feff}"), "{text}");

    let s = status_json(home.path(), &a);
    let e = election(&s, "jobs\\u{202e}\\u{200b}nimda");
    assert_eq!(e["leader"]["id"], "n-a\\u{2066}\\u{feff}");
    assert!(!has_raw_format_char(&s.to_string()));

    // `watch` in text: a takeover by another hostile id prints escaped, too.
    let mut child = command(home.path())
        .args(&a)
        .arg("watch")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn electop watch");
    let stdout = child.stdout.take().expect("stdout");
    let lines = common::lines::text_lines(stdout);
    let next_line = |what: &str| {
        lines
            .recv_timeout(T)
            .unwrap_or_else(|_| panic!("watch printed no {what} within {T:?}"))
    };
    while !next_line("synced marker").contains("synced") {}
    store.exec(&format!(
        "UPDATE leaderlock SET leader_id = 'x\u{2029}y\u{202d}' WHERE key = '{name}'"
    ));
    let line = next_line("leader change");
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        !has_raw_format_char(&line),
        "raw format character in {line:?}"
    );
    assert!(
        line.contains("leader n-a\\u{2066}\\u{feff} → x\\u{2029}y\\u{202d}"),
        "{line}"
    );
}

/// `status` must fail at once with one line about TLS: a TLS failure is a lasting error, so
/// it is not retried until `--timeout` runs out.
fn tls_err(home: &std::path::Path, url: &str) -> String {
    let started = std::time::Instant::now();
    let out = command(home)
        .args(args(url, "sql-lease", "leaderlock"))
        .args(["status", "--json", "--timeout", "20s"])
        .output()
        .expect("run electop");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "status must fail: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(err.contains("TLS"), "{err}");
    assert!(!err.contains("s3cret-pw"), "no password in errors: {err}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "a TLS failure is lasting, not waited out: {:?}",
        started.elapsed()
    );
    err
}

/// PostgreSQL with `ssl=on` and a certificate made in the test: `sslmode=verify-full` with
/// the CA works (and the connection really is TLS); an unknown CA, a host name the
/// certificate does not hold, and a server without TLS each get their own words.
#[test]
fn postgres_over_tls() {
    let ca = common::pki::Ca::new("electop test CA");
    let server = ca.issue_server("pg", &["DNS:localhost"]);
    let pg = common::postgres::Postgres::start_with_tls(&server.cert, &server.key);
    let port = pg.port();
    let store = Store::Pg(pg);
    store.create_lease_table("leaderlock");
    assert!(store.lease_attempt("leaderlock", "jobs", "node-a", 60));
    let url = |host: &str, port: u16, query: &str| {
        format!("postgres://tester:s3cret-pw@{host}:{port}/electop?{query}")
    };
    let ca_file = ca.cert.display().to_string();
    let home = common::scratch::tempdir();

    let full = url(
        "localhost",
        port,
        &format!("sslmode=verify-full&sslrootcert={ca_file}"),
    );
    let s = status_json(home.path(), &args(&full, "sql-lease", "leaderlock"));
    assert_eq!(election(&s, "jobs")["leader"]["id"], "node-a");
    let mut w = Watch::start(home.path(), &args(&full, "sql-lease", "leaderlock"));
    w.wait_synced(1);
    let tls_sessions = store.exec(
        "SELECT count(*) FROM pg_stat_ssl JOIN pg_stat_activity USING (pid) WHERE usename = 'tester' AND ssl",
    );
    assert_ne!(tls_sessions, "0", "electop's sessions use TLS");
    drop(w);
    let ca_only = url(
        "127.0.0.1",
        port,
        &format!("sslmode=verify-ca&sslrootcert={ca_file}"),
    );
    let s = status_json(home.path(), &args(&ca_only, "sql-lease", "leaderlock"));
    assert_eq!(election(&s, "jobs")["leader"]["id"], "node-a");

    let other = common::pki::Ca::new("someone else's CA");
    let other_file = other.cert.display().to_string();
    let err = tls_err(
        home.path(),
        &url(
            "localhost",
            port,
            &format!("sslmode=verify-full&sslrootcert={other_file}"),
        ),
    );
    assert!(
        err.contains("unknown CA") && err.contains(&other_file),
        "{err}"
    );

    let err = tls_err(
        home.path(),
        &url(
            "127.0.0.1",
            port,
            &format!("sslmode=verify-full&sslrootcert={ca_file}"),
        ),
    );
    assert!(
        err.contains("not valid for the host name `127.0.0.1`") && err.contains("verify-ca"),
        "{err}"
    );

    let missing = format!("{}/nope.pem", home.path().display());
    let err = tls_err(
        home.path(),
        &url(
            "localhost",
            port,
            &format!("sslmode=verify-full&sslrootcert={missing}"),
        ),
    );
    assert!(
        err.contains(&format!("cannot read sslrootcert={missing}")),
        "{err}"
    );

    let plain = common::postgres::Postgres::start();
    let err = tls_err(
        home.path(),
        &url("127.0.0.1", plain.port(), "sslmode=require"),
    );
    assert!(
        err.contains("does not offer TLS") && err.contains("sslmode=require"),
        "{err}"
    );
}

/// MariaDB with TLS and a certificate made in the test: `ssl-mode=VERIFY_CA` with the CA
/// works over TLS; another CA is named as unknown; a server without TLS says so.
#[test]
fn mariadb_over_tls() {
    let ca = common::pki::Ca::new("electop test CA");
    let server = ca.issue_server("my", &["DNS:db.example"]);
    let my = common::mariadb::MariaDb::start_with_tls(&server.cert, &server.key);
    let port = my.port();
    let store = Store::My(my);
    store.create_lease_table("leaderlock");
    assert!(store.lease_attempt("leaderlock", "jobs", "node-m", 60));
    let url = |port: u16, query: &str| {
        format!("mysql://tester:s3cret-pw@127.0.0.1:{port}/electop?{query}")
    };
    // Only a TLS session can log in now: success below means the connection is TLS.
    store.exec("ALTER USER 'tester'@'127.0.0.1' REQUIRE SSL");
    let home = common::scratch::tempdir();
    let verify_ca = url(
        port,
        &format!("ssl-mode=VERIFY_CA&ssl-ca={}", ca.cert.display()),
    );
    let s = status_json(home.path(), &args(&verify_ca, "sql-lease", "leaderlock"));
    assert_eq!(election(&s, "jobs")["leader"]["id"], "node-m");
    let plain_text = url(port, "ssl-mode=DISABLED");
    let err = status_err(home.path(), &args(&plain_text, "sql-lease", "leaderlock"));
    assert!(
        err.contains("authentication failed"),
        "refused in plain text: {err}"
    );

    let other = common::pki::Ca::new("someone else's CA");
    let err = tls_err(
        home.path(),
        &url(
            port,
            &format!("ssl-mode=VERIFY_CA&ssl-ca={}", other.cert.display()),
        ),
    );
    assert!(
        err.contains("unknown CA") && err.contains("ssl-ca="),
        "{err}"
    );

    let plain = common::mariadb::MariaDb::start();
    let err = tls_err(home.path(), &url(plain.port(), "ssl-mode=REQUIRED"));
    assert!(
        err.contains("does not offer TLS") && err.contains("ssl-mode=REQUIRED"),
        "{err}"
    );
}
