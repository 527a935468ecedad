//! `status` and `watch` in text, for people, against a real store: aligned, never cut when
//! piped, quiet when the reader goes away.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::process::Stdio;

use common::electop::{command, spawn_lines, status_table as table};
use common::sqlstore::Store;

use common::T;

fn args(url: &str) -> Vec<String> {
    ["--sql", url, "--scheme", "sql-lease", "--poll", "100ms"]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

#[test]
fn status_prints_an_aligned_table_that_is_never_cut_when_piped() {
    let store = Store::sqlite();
    store.create_lease_table("leaderlock");
    let long = format!("an-election-with-a-very-long-name-{}", "z".repeat(60));
    assert!(store.lease_attempt("leaderlock", &long, "node-with-a-long-identity-42", 60));
    assert!(store.lease_attempt("leaderlock", "jobs", "node-a", 60));
    let home = common::scratch::tempdir();
    let text = table(home.path(), &args(&store.url()));
    let lines: Vec<&str> = text.lines().collect();
    for col in [
        "SOURCE",
        "ELECTION",
        "LEADER",
        "TTL",
        "CANDIDATES",
        "CHANGES",
        "RATE",
        "LAST CHANGE",
        "ALARMS",
    ] {
        assert!(lines[0].contains(col), "{col}:\n{text}");
    }
    assert!(text.contains(&long), "the whole name, piped:\n{text}");
    assert!(text.contains("node-with-a-long-identity-42"), "{text}");
    let at = |l: &str, w: &str| l.find(w);
    let row = lines.iter().find(|l| l.contains(" jobs ")).expect("jobs");
    assert_eq!(
        at(lines[0], "LEADER"),
        at(row, "node-a"),
        "aligned:\n{text}"
    );

    let wide = command(home.path())
        .args(args(&store.url()))
        .args(["status", "-o", "wide"])
        .output()
        .expect("electop status -o wide");
    let wide = String::from_utf8_lossy(&wide.stdout);
    assert!(
        wide.contains("SCHEME") && wide.contains("sql-lease"),
        "{wide}"
    );
    let json = command(home.path())
        .args(args(&store.url()))
        .args(["status", "-o", "json"])
        .output()
        .expect("electop status -o json");
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON");
    assert_eq!(v["elections"].as_array().map(Vec::len), Some(2));
    assert_eq!(v["elections"][0]["alarms"], serde_json::json!([]), "{v:#}");
    assert_eq!(v["elections"][0]["changes_per_min"], 0.0, "{v:#}");
}

/// All `child` writes to stderr, read until it closes it.
fn stderr_of(child: &mut std::process::Child) -> String {
    let mut err = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err)
        .expect("stderr");
    err
}

#[test]
fn a_closed_pipe_ends_status_quietly() {
    let store = Store::sqlite();
    store.create_lease_table("leaderlock");
    // More than a pipe's buffer of table, in one statement.
    store.exec(
        "INSERT INTO leaderlock (key, leader_id, valid_until) \
         WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 1999) \
         SELECT printf('e%04d', i), 'n', strftime('%Y-%m-%d %H:%M:%f', 'now', '+60 seconds') FROM n",
    );
    let home = common::scratch::tempdir();
    let mut child = command(home.path())
        .args(args(&store.url()))
        .arg("status")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("electop status");
    // Read one line, like `| head -1`, then hang up.
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("a line");
    assert!(first.starts_with("SOURCE"), "{first}");
    let err = stderr_of(&mut child);
    let status = child.wait().expect("exit");
    assert_eq!(status.code(), Some(0), "exit 0 on a closed pipe: {err}");
    assert!(!err.to_lowercase().contains("broken pipe"), "{err}");
}

/// `electop ARGS` with a stdout whose reader is gone before anything is written, as
/// `| head -1` leaves a writer that outlasts it: its exit code (within `T`) and stderr.
fn with_closed_stdout(home: &std::path::Path, args: &[&str]) -> (Option<i32>, String) {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let mut child = command(home)
        .args(args)
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .expect("electop");
    let err = stderr_of(&mut child);
    let code = common::wait_for("electop to exit", T, || match child.try_wait() {
        Ok(Some(status)) => Ok(status.code()),
        _ => Err("still running".to_string()),
    });
    (code, err)
}

/// The listings, an admin verb's report and a participant's beliefs: a closed pipe ends
/// each with 0, not with a panic (`completions` panicked in clap_complete's own write).
#[test]
fn a_closed_pipe_ends_every_command_quietly() {
    let home = common::scratch::tempdir();
    for args in [&["completions", "bash"][..], &["presets"], &["contexts"]] {
        let (code, err) = with_closed_stdout(home.path(), args);
        assert_eq!(code, Some(0), "electop {}: {err}", args.join(" "));
        assert!(
            !err.contains("panicked"),
            "electop {}: {err}",
            args.join(" ")
        );
    }
    let store = Store::sqlite();
    let url = store.url();
    let node = [
        "node",
        "--sql",
        &url,
        "--scheme",
        "sql-lease",
        "--create-table",
        "--election",
        "jobs",
        "--id",
        "node-a",
    ];
    let (code, err) = with_closed_stdout(home.path(), &node);
    assert_eq!(
        code,
        Some(0),
        "a node whose reader left stops as on SIGTERM: {err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        store.lease_attempt("leaderlock", "jobs", "node-b", 60),
        "node-a resigned on its way out"
    );
}

#[test]
fn watch_prints_one_readable_line_per_change() {
    let store = Store::sqlite();
    store.create_lease_table("leaderlock");
    assert!(store.lease_attempt("leaderlock", "jobs", "node-a", 60));
    let home = common::scratch::tempdir();
    let (mut child, lines) =
        spawn_lines(command(home.path()).args(args(&store.url())).arg("watch"));
    let next = |what: &str| {
        lines
            .recv_timeout(T)
            .unwrap_or_else(|_| panic!("watch printed no {what} within {T:?}"))
    };
    while !next("synced").contains("synced") {}
    store.exec("UPDATE leaderlock SET leader_id = 'node-b' WHERE key = 'jobs'");
    let line = next("the takeover");
    let _ = child.kill();
    let _ = child.wait();
    // `12:34:56.789 sql1 jobs leader node-a → node-b (unknown) ttl 59.9s`
    let (time, rest) = line.split_once(' ').expect("a time first");
    assert!(
        time.len() == 12
            && time.as_bytes()[8] == b'.'
            && time[9..].bytes().all(|b| b.is_ascii_digit()),
        "local time to the millisecond: {line}"
    );
    assert!(
        rest.starts_with("sql1 jobs leader node-a → node-b (unknown)"),
        "{line}"
    );
    assert!(rest.contains(" ttl "), "the new leader's TTL: {line}");
}

/// `status --json` piped is one line a program parses (a person at a terminal gets it
/// indented; `-o json` is the same output).
#[test]
fn status_json_piped_is_one_line() {
    let store = Store::sqlite();
    store.create_lease_table("leaderlock");
    assert!(store.lease_attempt("leaderlock", "jobs", "node-a", 60));
    let home = common::scratch::tempdir();
    for flag in [&["--json"][..], &["-o", "json"]] {
        let out = command(home.path())
            .args(args(&store.url()))
            .arg("status")
            .args(flag)
            .stdin(Stdio::null())
            .output()
            .expect("electop status");
        assert!(out.status.success(), "{flag:?}: {out:?}");
        let text = String::from_utf8(out.stdout).expect("UTF-8");
        assert_eq!(text.lines().count(), 1, "{flag:?}: {text}");
        let v: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        assert_eq!(v["elections"][0]["leader"]["id"], "node-a", "{text}");
    }
}

/// One source down never hides the others: `status` prints what it could read, names the
/// source it could not (stderr, and in the table and the JSON beside the others), exits 3,
/// and a refused connection is final at once rather than waited on until `--timeout`.
#[test]
fn status_with_one_source_down_prints_the_others_and_names_it() {
    let store = Store::sqlite();
    store.create_lease_table("leaderlock");
    assert!(store.lease_attempt("leaderlock", "jobs", "node-a", 60));
    let home = common::scratch::tempdir();
    let endpoint = format!("127.0.0.1:{}", common::free_port());
    for json in [false, true] {
        let started = std::time::Instant::now();
        let out = command(home.path())
            .args(["--etcd", &endpoint])
            .args(args(&store.url()))
            .args(["status", "--timeout", "20s"])
            .args(json.then_some("--json"))
            .output()
            .expect("electop status");
        let took = started.elapsed();
        let err = String::from_utf8_lossy(&out.stderr);
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(3),
            "some sources down: {err}\n{text}"
        );
        assert_eq!(
            err.trim_end().lines().count(),
            1,
            "one line per down source: {err}"
        );
        assert!(err.contains(&endpoint), "names the endpoint: {err}");
        assert!(
            took < std::time::Duration::from_secs(10),
            "a refused connection is not waited on until --timeout: {took:?}"
        );
        if json {
            let v: serde_json::Value = serde_json::from_str(&text).expect("JSON");
            let states: Vec<&str> = v["sources"]
                .as_array()
                .expect("sources")
                .iter()
                .map(|s| s["state"].as_str().unwrap_or("?"))
                .collect();
            assert_eq!(states, ["down", "connected"], "{v:#}");
            let error = v["sources"][0]["error"].as_str().unwrap_or("");
            assert!(error.contains(&endpoint), "{v:#}");
            assert_eq!(
                common::electop::election(&v, "jobs")["leader"]["id"],
                "node-a"
            );
        } else {
            assert!(
                text.contains("node-a"),
                "the SQLite election is shown:\n{text}"
            );
            assert!(
                text.contains("etcd1: DOWN:"),
                "the etcd source is named:\n{text}"
            );
        }
    }
}

/// `watch` starts with how each election stands (one `current` line each, before the
/// `synced` marker), as text and as JSON; `--changes-only` leaves them out.
#[test]
fn watch_starts_with_the_current_state_unless_changes_only() {
    let store = Store::sqlite();
    store.create_lease_table("leaderlock");
    assert!(store.lease_attempt("leaderlock", "jobs", "node-a", 60));
    assert!(store.lease_attempt("leaderlock", "cron", "node-c", 60));
    let home = common::scratch::tempdir();
    let until_synced = |extra: &[&str]| {
        let (mut child, lines) = spawn_lines(
            command(home.path())
                .args(args(&store.url()))
                .arg("watch")
                .args(extra),
        );
        let mut before = Vec::new();
        loop {
            let line = lines
                .recv_timeout(T)
                .unwrap_or_else(|_| panic!("no synced marker within {T:?}: {before:#?}"));
            if line.contains("synced") {
                break;
            }
            before.push(line);
        }
        let _ = child.kill();
        let _ = child.wait();
        before
    };
    let text = until_synced(&[]);
    let now: Vec<&String> = text.iter().filter(|l| l.contains(" now")).collect();
    assert_eq!(now.len(), 2, "one line per election: {text:#?}");
    assert!(now[0].contains("sql1 cron leader node-c now"), "{text:#?}");
    assert!(now[1].contains("sql1 jobs leader node-a now"), "{text:#?}");

    let json = until_synced(&["--json"]);
    let current: Vec<serde_json::Value> = json
        .iter()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["kind"] == "current")
        .collect();
    assert_eq!(current.len(), 2, "{json:#?}");
    assert!(
        current.iter().all(|v| v["source_id"] == "sql1"),
        "the handle status and the table use: {json:#?}"
    );
    assert_eq!(
        (current[1]["election"].as_str(), current[1]["to"].as_str()),
        (Some("jobs"), Some("node-a"))
    );

    let changes_only = until_synced(&["--changes-only"]);
    assert!(
        !changes_only.iter().any(|l| l.contains(" now")),
        "{changes_only:#?}"
    );
}

/// SIGTERM ends `watch` as Ctrl-C does: it stops cleanly with status 0 (so its sources shut
/// down and say until when they watched), instead of dying by the signal.
#[test]
fn watch_ends_cleanly_on_sigterm() {
    let store = Store::sqlite();
    store.create_lease_table("leaderlock");
    assert!(store.lease_attempt("leaderlock", "jobs", "node-a", 60));
    let home = common::scratch::tempdir();
    let (mut child, lines) = spawn_lines(
        command(home.path())
            .args(args(&store.url()))
            .args(["watch", "--changes-only"]),
    );
    loop {
        let line = lines
            .recv_timeout(T)
            .unwrap_or_else(|_| panic!("no synced marker within {T:?}"));
        if line.contains("synced") {
            break;
        }
    }
    common::process::signal("-TERM", &[child.id()]);
    let deadline = std::time::Instant::now() + T;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the watch") {
            break status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "watch still running {T:?} after SIGTERM"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert!(
        status.success(),
        "ended by the signal, not cleanly: {status:?}"
    );
}

/// A megabyte leader value is cut in the table as in every store (its length said) and whole
/// in the JSON; a name that is not UTF-8 keeps its escaped text and gains its bytes in base64.
#[test]
fn a_huge_value_is_cut_in_the_table_and_raw_bytes_are_in_the_json() {
    use base64::Engine as _;
    let etcd = common::etcd::EtcdServer::start();
    let huge = vec![b'v'; 1_400_000];
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let mut c = etcd.client().await;
        let lease = c.lease_grant(600, None).await.expect("lease").id();
        let opts = || Some(etcd_client::PutOptions::new().with_lease(lease));
        let big = format!("/election/big/{lease:x}");
        c.put(big, huge.clone(), opts()).await.expect("put big");
        let odd = [
            &b"/election/caf\xe9\xff/"[..],
            format!("{lease:x}").as_bytes(),
        ]
        .concat();
        c.put(odd, &b"node-\xe9\xff"[..], opts())
            .await
            .expect("put odd");
    });
    let home = common::scratch::tempdir();
    let a = ["--etcd", &etcd.endpoint()];
    let text = table(home.path(), &a);
    assert!(text.len() < 4_000, "{} bytes of table", text.len());
    assert!(text.contains("…(1400000 chars)"), "{text}");
    let s = common::electop::status_json(home.path(), &a);
    let by = |n: &str| {
        s["elections"]
            .as_array()
            .and_then(|es| es.iter().find(|e| e["name"] == n))
            .unwrap_or_else(|| panic!("{n} in {s}"))
            .clone()
    };
    let big = by("/election/big");
    assert_eq!(big["leader"]["id"].as_str().map(str::len), Some(1_400_000));
    assert!(big.get("name_base64").is_none(), "plain text has no base64");
    let odd = by("/election/caf\\xe9\\xff");
    let b64 = |v: &serde_json::Value| {
        let text = v.as_str().unwrap_or_else(|| panic!("base64 in {odd}"));
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .expect("base64")
    };
    assert_eq!(b64(&odd["name_base64"]), b"/election/caf\xe9\xff");
    assert_eq!(b64(&odd["leader"]["id_base64"]), b"node-\xe9\xff");
    assert_eq!(odd["leader"]["id"], "node-\\xe9\\xff", "the old field kept");
    assert!(b64(&odd["leader"]["key_base64"]).starts_with(b"/election/caf\xe9\xff/"));

    // Redis cut its tokens at 256 characters in the JSON too, and the table at none.
    let redis = common::redis::RedisServer::start("", None);
    let token = "t".repeat(10_000);
    redis.cli(&["SET", "lock:big", &token, "EX", "600"]);
    let a = ["--redis", &redis.url(), "--prefix", "lock:*"];
    let text = table(home.path(), &a);
    assert!(
        text.contains("…(10000 chars)") && text.len() < 2_000,
        "{text}"
    );
    let s = common::electop::status_json(home.path(), &a);
    assert_eq!(s["elections"][0]["leader"]["id"], token.as_str());
}
