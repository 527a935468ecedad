//! Redis locks as electop shows them, against a real redis-server and the clients users
//! hold them with: redis-py `Lock` and Node `redlock`. Leader = the holder's token, time
//! left from `PTTL`; a holder killed without releasing is shown until its `PTTL` ends, then
//! no leader (expired), then the next holder; both with keyspace events and polled; a
//! password from a file never shown; a refused port and a frozen server said.
//!
//! redis-server starts in milliseconds, so each test has its own (the setting under test
//! is the server's: keyspace events on or off, a password), and tests run in parallel.

mod common;

use std::time::{Duration, Instant};

use common::T;
use common::electop::{Watch, command, election, status_json};
use common::redis::{Holder, LockClient, RedisServer, wait_leader};
use serde_json::Value;

/// The holders' lock: short, so a killed holder's key expires soon.
const TTL_MS: u32 = 3000;

fn args(server: &RedisServer, prefix: &str) -> Vec<String> {
    vec![
        "--redis".into(),
        server.url(),
        "--prefix".into(),
        prefix.into(),
    ]
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// Two holders of `client` on `key`; the leader is shown with its token and a TTL counting
/// down from `PTTL`; killed, it stays shown until the key expires, then the leader is lost
/// (expired) and the other holder takes the lock, as it believes too.
fn failover(server: &RedisServer, client: LockClient, key: &str, notice: &str) {
    let home = common::scratch::tempdir();
    let a = args(server, &format!("{key}*"));
    let mut w = Watch::start(home.path(), &strs(&a));
    w.wait_synced(1);
    let mut holders = vec![
        Holder::start(client, server.port(), None, key, "a", TTL_MS),
        Holder::start(client, server.port(), None, key, "b", TTL_MS),
    ];
    let (i, token) = wait_leader(&mut holders, T);
    w.wait_for("the holder elected", T, |v| {
        v["election"] == key && v["to"] == token.as_str()
    });
    let s = status_json(home.path(), &strs(&a));
    assert_eq!(s["sources"][0]["layout_notice"], notice, "{s:#}");
    assert_eq!(s["sources"][0]["scheme"], "redis-lock");
    let e = election(&s, key);
    assert_eq!(
        e["leader"]["id"],
        token.as_str(),
        "the token is the leader: {e:#}"
    );
    let ttl = e["ttl_ms"].as_i64().expect("a TTL from PTTL");
    assert!(ttl > 0 && ttl <= i64::from(TTL_MS), "ttl {ttl} ms");

    // Killed without releasing: the key lives on until its PTTL ends.
    let left = server.pttl(key);
    holders[i].kill();
    let killed = Instant::now();
    assert!(left > 0, "the key expires: {left}");
    let s = status_json(home.path(), &strs(&a));
    assert_eq!(
        election(&s, key)["leader"]["id"],
        token.as_str(),
        "still shown while its PTTL runs: {s:#}"
    );
    let lost = w.wait_for("the killed holder's lock expired", T, |v| {
        v["election"] == key && v["from"] == token.as_str()
    });
    let shown_for = killed.elapsed();
    assert_eq!(lost["cause"], "lease_expired", "{lost:#}");
    assert!(
        shown_for + Duration::from_millis(200) >= Duration::from_millis(left as u64),
        "shown {shown_for:?} after the kill, PTTL was {left} ms"
    );
    // The other holder takes it, and electop shows its token.
    let other = 1 - i;
    let deadline = Instant::now() + T;
    let next = loop {
        if let Some(t) = holders[other].leading() {
            break t;
        }
        assert!(Instant::now() < deadline, "the other holder never led");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_ne!(next, token);
    w.wait_for("the next holder elected", T, |v| {
        v["election"] == key && v["to"] == next.as_str()
    });
    // A later electop reads back from the journal what the watch recorded: the same
    // changes, with the causes the watch saw live.
    let s = common::electop::status_history_json(home.path(), &strs(&a));
    let history = election(&s, key)["history"].clone();
    let h = history.as_array().expect("history");
    let elected = h.iter().position(|h| h["to"] == token.as_str());
    let elected = elected.expect("the first holder's election read back");
    assert_eq!(h[elected]["cause"], "elected", "{history:#}");
    // Polling may see the expiry and the next acquire in one read: one change, then.
    let lost = &h[elected + 1];
    assert_eq!(
        (lost["from"].as_str(), lost["cause"].as_str()),
        (Some(token.as_str()), Some("lease_expired")),
        "{history:#}"
    );
    assert_eq!(
        h.last().map(|h| h["to"].clone()),
        Some(next.as_str().into())
    );
}

#[test]
fn redis_py_lock_holders_followed_through_keyspace_events() {
    let server = RedisServer::start("KEA", None);
    failover(
        &server,
        LockClient::RedisPy,
        "py:jobs",
        "live: keyspace events",
    );
}

#[test]
fn node_redlock_holders_polled_when_keyspace_events_are_off() {
    let server = RedisServer::start("", None);
    let notice = "polled every 1 s: notify-keyspace-events is off";
    failover(&server, LockClient::Redlock, "node:jobs", notice);
}

/// Released (`DEL` with time left) is a resignation; a key without expiry is noted, and
/// its deletion is no expiry; a value written over is a take-over. With the classes a
/// lock needs only (`Kg$xe`), live.
#[test]
fn released_overwritten_and_unexpiring_keys() {
    let server = RedisServer::start("Kg$xe", None);
    let home = common::scratch::tempdir();
    let a = args(&server, "lock:");
    let mut w = Watch::start(home.path(), &strs(&a));
    w.wait_synced(1);
    server.cli(&["SET", "lock:a", "tok-1", "NX", "PX", "60000"]);
    server.cli(&["SET", "lock:forever", "me"]);
    server.cli(&["SET", "other:x", "not-ours", "PX", "60000"]);
    w.wait_for("forever elected", T, |v| v["election"] == "lock:forever");
    let s = status_json(home.path(), &strs(&a));
    assert_eq!(s["sources"][0]["layout_notice"], "live: keyspace events");
    let f = election(&s, "lock:forever");
    assert_eq!(
        f["notes"][0]["text"], "no expiry: held until deleted",
        "{f:#}"
    );
    assert!(f["ttl_ms"].is_null());
    let names: Vec<&str> = s["elections"]
        .as_array()
        .expect("elections")
        .iter()
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert!(
        !names.contains(&"other:x"),
        "outside the pattern: {names:?}"
    );
    server.cli(&["SET", "lock:a", "tok-2", "PX", "60000"]);
    let v = w.wait_for("taken over", T, |v| v["to"] == "tok-2");
    assert_eq!(
        (&v["kind"], &v["cause"]),
        (&Value::from("leader_changed"), &Value::from("taken_over"))
    );
    server.cli(&["DEL", "lock:a", "lock:forever"]);
    let v = w.wait_for("released", T, |v| v["from"] == "tok-2");
    assert_eq!(v["cause"], "resigned", "{v:#}");
    let v = w.wait_for("deleted", T, |v| v["from"] == "me");
    assert_eq!(v["cause"], "deleted", "{v:#}");
}

/// The password, from a file, opens the server; it is in no output, error or log. A wrong
/// one is said as such (without being shown), and so is a password that is needed and
/// missing.
#[test]
fn a_password_from_a_file_works_and_is_never_shown() {
    const SECRET: &str = "s3cret-Pw-9f2a";
    let server = RedisServer::start("KEA", Some(SECRET));
    let home = common::scratch::tempdir();
    let pw = home.path().join("redis.pw");
    std::fs::write(&pw, format!("{SECRET}\n")).expect("write the password file");
    server.cli(&["SET", "auth:jobs", "tok-auth", "PX", "60000"]);
    let mut a = args(&server, "auth:");
    a.extend(["--password-file".into(), pw.display().to_string()]);
    let out = command(home.path())
        .args(&a)
        .args(["status", "--output", "json"])
        .output()
        .expect("run electop");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    let s: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(election(&s, "auth:jobs")["leader"]["id"], "tok-auth");
    assert!(!text.contains(SECRET), "{text}");

    let wrong = home.path().join("wrong.pw");
    std::fs::write(&wrong, "not-it-7c1\n").expect("write");
    for (extra, says) in [
        (
            vec!["--password-file".to_string(), wrong.display().to_string()],
            "authentication failed",
        ),
        (vec![], "authentication failed"),
    ] {
        let mut a = args(&server, "auth:");
        a.extend(extra);
        let out = command(home.path())
            .args(&a)
            .args(["status", "--timeout", "2s"])
            .output()
            .expect("run electop");
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{text}");
        assert!(text.contains(says), "{text}");
        assert!(
            !text.contains(SECRET) && !text.contains("not-it-7c1"),
            "{text}"
        );
    }
    // Nothing electop wrote (its log included) holds the password.
    let mut files = vec![home.path().to_path_buf()];
    while let Some(p) = files.pop() {
        if p.is_dir() {
            files.extend(
                std::fs::read_dir(&p)
                    .expect("read dir")
                    .map(|e| e.expect("entry").path()),
            );
        } else if p != pw {
            let body = std::fs::read(&p).unwrap_or_default();
            let body = String::from_utf8_lossy(&body);
            assert!(!body.contains(SECRET), "{} holds the password", p.display());
        }
    }
}

/// Nobody on the port: a clear refusal. A frozen server (SIGSTOP): stale within a few
/// seconds, fresh again once thawed.
#[test]
fn a_refused_port_and_a_frozen_server_are_said() {
    let home = common::scratch::tempdir();
    let port = common::free_port();
    let url = format!("redis://127.0.0.1:{port}");
    let out = command(home.path())
        .args(["--redis", &url, "status", "--timeout", "2s"])
        .output()
        .expect("run electop");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains(&format!("redis 127.0.0.1:{port}/0: connection refused")),
        "{err}"
    );

    let server = RedisServer::start("KEA", None);
    server.cli(&["SET", "frz:jobs", "tok-f", "PX", "600000"]);
    let a = args(&server, "frz:");
    let mut w = Watch::start(home.path(), &strs(&a));
    w.wait_synced(1);
    server.freeze(true);
    let frozen = Instant::now();
    w.wait_for("stale", T, |v| v["kind"] == "stale");
    let took = frozen.elapsed();
    server.freeze(false);
    assert!(took < Duration::from_secs(5), "stale after {took:?}");
    w.wait_for("fresh again", T * 2, |v| {
        v["kind"] == "fresh" || v["kind"] == "connected"
    });
}

/// An ACL user who may not run `CONFIG`: electop cannot tell whether keyspace events are
/// on, says so, and polls. `electop node` refuses a lock key its `--prefix` does not match.
#[test]
fn an_acl_user_without_config_is_polled() {
    let server = RedisServer::start("KEA", None);
    let out = server.cli(&[
        "ACL",
        "SETUSER",
        "reader",
        "on",
        ">reader-pw",
        "~*",
        "&*",
        "+@all",
        "-config",
    ]);
    assert_eq!(out.trim(), "OK", "{out}");
    server.cli(&["SET", "acl:jobs", "tok-acl", "PX", "60000"]);
    let home = common::scratch::tempdir();
    let url = format!("redis://reader@127.0.0.1:{}/0", server.port());
    let a = [
        "--redis",
        url.as_str(),
        "--prefix",
        "acl:",
        "--password-env",
        "RPW",
    ];
    let out = command(home.path())
        .env("RPW", "reader-pw")
        .args(a)
        .args(["status", "--output", "json"])
        .output()
        .expect("run electop");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let notice = s["sources"][0]["layout_notice"]
        .as_str()
        .unwrap_or_default();
    assert!(
        notice.starts_with("polled every 1 s: CONFIG GET notify-keyspace-events was refused"),
        "{notice}"
    );
    assert_eq!(election(&s, "acl:jobs")["leader"]["id"], "tok-acl");

    let a = ["--redis", url.as_str(), "--prefix", "acl:"];
    let out = command(home.path())
        .args(a)
        .args(["node", "--election", "jobs", "--id", "n1"])
        .output()
        .expect("run electop node");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("--election jobs does not match --prefix acl:*"),
        "{err}"
    );
}

fn run(home: &std::path::Path, args: &[&str]) -> (bool, String) {
    let out = command(home).args(args).output().expect("run electop");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

/// `reelect` deletes the key only while it holds the token shown (one Lua script), is
/// recorded as forced, and audited; the redis-py holder learns it lost the lock at its next
/// renewal, and a holder takes it again. `force-leader` is unavailable with the reason;
/// `--read-only` refuses and writes nothing.
#[test]
fn reelect_deletes_the_lock_compared_on_its_token() {
    let server = RedisServer::start("KEA", None);
    let home = common::scratch::tempdir();
    let key = "adm:jobs";
    let a = args(&server, "adm:");
    let mut w = Watch::start(home.path(), &strs(&a));
    w.wait_synced(1);
    let mut holders = vec![Holder::start(
        LockClient::RedisPy,
        server.port(),
        None,
        key,
        "a",
        6000,
    )];
    let (_, token) = wait_leader(&mut holders, T);
    w.wait_for("elected", T, |v| v["to"] == token.as_str());

    let mut cmd = strs(&a);
    cmd.extend(["--read-only", "reelect", key, "-y"]);
    let (ok, text) = run(home.path(), &cmd);
    assert!(!ok && text.contains("read-only"), "{text}");
    assert_eq!(server.cli(&["GET", key]).trim(), token, "nothing written");

    let mut cmd = strs(&a);
    cmd.extend(["force-leader", key, "someone", "-y"]);
    let (ok, text) = run(home.path(), &cmd);
    assert!(
        !ok && text.contains("force-leader is unavailable on Redis"),
        "{text}"
    );

    let mut cmd = strs(&a);
    cmd.extend(["reelect", key, "-y"]);
    let (ok, text) = run(home.path(), &cmd);
    assert!(ok, "{text}");
    assert!(
        text.contains(&format!("if GET {key} == {token} then DEL {key}")),
        "{text}"
    );
    // This watch is another electop: the change is attributed from the audit log.
    let forced = w.wait_for("the re-election attributed", T, |v| {
        v["from"] == token.as_str() && v["cause"] == "forced_reelection"
    });
    let detail = forced["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("another electop"), "{forced:#}");
    // The holder is told nothing; its next renewal fails, and it takes the lock again.
    let deadline = Instant::now() + T;
    while !holders[0].beliefs.iter().any(|b| b.belief == "lost") {
        holders[0].leading();
        assert!(Instant::now() < deadline, "the holder never noticed");
        std::thread::sleep(Duration::from_millis(20));
    }
    let again = w.wait_for("a new holder", T, |v| {
        v["to"].as_str().is_some_and(|t| t != token)
    });
    assert_eq!(again["election"], key);
    let audit = walk_text(home.path());
    assert!(
        audit.contains("reelect") && audit.contains(&token),
        "no audit entry:\n{audit}"
    );
}

/// Every file under `dir`, as text.
fn walk_text(dir: &std::path::Path) -> String {
    let mut out = String::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(p) = todo.pop() {
        if p.is_dir() {
            todo.extend(
                std::fs::read_dir(&p)
                    .expect("read dir")
                    .map(|e| e.expect("entry").path()),
            );
        } else {
            out.push_str(&String::from_utf8_lossy(
                &std::fs::read(&p).unwrap_or_default(),
            ));
        }
    }
    out
}

/// Another electop's `reelect`, learnt from the audit log at start: a later electop shows
/// the removed holder deposed (it still believes it leads) until the countdown its key had
/// would have ended, then no more.
#[test]
fn a_later_electop_shows_the_deposed_holder_from_the_audit_log() {
    let server = RedisServer::start("KEA", None);
    let home = common::scratch::tempdir();
    let key = "dep:jobs";
    server.cli(&["SET", key, "tok-old", "PX", "5000"]);
    let a = args(&server, "dep:");
    let mut cmd = strs(&a);
    cmd.extend(["reelect", key, "-y"]);
    let (ok, text) = run(home.path(), &cmd);
    assert!(ok, "{text}");
    let reelected = Instant::now();
    assert_eq!(server.cli(&["EXISTS", key]).trim(), "0");

    let s = status_json(home.path(), &strs(&a));
    let e = election(&s, key);
    assert_eq!(e["deposed"]["id"], "tok-old", "{e:#}");
    let left = e["deposed"]["ttl_ms"].as_i64().expect("its countdown");
    let shown_at = reelected.elapsed();
    assert!(left > 0 && left <= 5000, "{left}");
    assert!(e["leader"].is_null(), "{e:#}");

    // A new holder does not end it; the old countdown does.
    server.cli(&["SET", key, "tok-new", "PX", "60000"]);
    let s = status_json(home.path(), &strs(&a));
    let e = election(&s, key);
    assert_eq!(
        (e["leader"]["id"].as_str(), e["deposed"]["id"].as_str()),
        (Some("tok-new"), Some("tok-old")),
        "{e:#}"
    );
    common::wait_until("the deposed mark ended", T, || {
        let s = status_json(home.path(), &strs(&a));
        election(&s, key)["deposed"].is_null()
    });
    let ended = reelected.elapsed();
    assert!(
        ended + Duration::from_millis(300) >= shown_at + Duration::from_millis(left as u64),
        "ended {ended:?} after the reelect; {left} ms were left at {shown_at:?}"
    );
}

/// The dashboard's first frame must not wait for every lock key: the first read is shown a
/// `SCAN` batch at a time (as ZooKeeper's is), before the source is read through, and once
/// it is every key is shown.
#[tokio::test(flavor = "multi_thread")]
async fn the_first_read_is_shown_a_batch_at_a_time() {
    use electop::model::SourceEvent;
    const N: usize = 2_500;
    let server = RedisServer::start("KEA", None);
    let mut mset = vec!["MSET".to_string()];
    for i in 0..N {
        mset.extend([format!("batch:e{i:05}"), format!("node-{i}")]);
    }
    let out = server.cli(&mset.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(out.trim(), "OK", "{out}");
    let a = args(&server, "batch:*");
    let mut argv = vec!["electop"];
    argv.extend(strs(&a));
    let cli = <electop::cli::Cli as clap::Parser>::parse_from(argv);
    let sources = cli
        .sources
        .resolve(&electop::config::Config::default())
        .expect("sources");
    let opts = electop::backend::BackendOptions::default();
    let mut s = electop::runtime::Sources::spawn(&sources, &opts).expect("spawn");
    // Each Elections event before the source is read through: how many it held.
    let mut parts = Vec::new();
    let mut names = std::collections::BTreeSet::new();
    let deadline = tokio::time::Instant::now() + T;
    loop {
        let ev = tokio::time::timeout_at(deadline, s.events.recv())
            .await
            .expect("read through within the deadline")
            .expect("source alive");
        match ev {
            SourceEvent::Elections { elections, .. } => {
                parts.push(elections.len());
                names.extend(elections.into_iter().map(|e| e.name));
            }
            SourceEvent::Synced { .. } => break,
            _ => {}
        }
    }
    s.shutdown().await;
    assert_eq!(names.len(), N, "every key shown once read through");
    assert!(
        parts.len() > 1 && parts[0] < N,
        "the first keys shown before the rest are read: {parts:?}"
    );
}

/// How many times Redis ran `command`, from `INFO commandstats`.
fn calls(stats: &str, command: &str) -> usize {
    let line = format!("cmdstat_{command}:calls=");
    stats
        .lines()
        .find_map(|l| l.strip_prefix(line.as_str()))
        .and_then(|rest| rest.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// A lock taken with `SET ... PX` tells two keyspace events (`set`, then `expire`): the key
/// is read once for both, not once each. Counted by Redis itself (`INFO commandstats`).
#[test]
fn a_lock_taken_with_set_px_is_read_once() {
    const N: usize = 40;
    let server = RedisServer::start("KEA", None);
    let home = common::scratch::tempdir();
    let a = args(&server, "lock:");
    let mut w = Watch::start(home.path(), &strs(&a));
    w.wait_synced(1);
    server.cli(&["CONFIG", "RESETSTAT"]);
    for i in 0..N {
        let (key, token) = (format!("lock:r{i}"), format!("tok-{i}"));
        server.cli(&["SET", &key, &token, "NX", "PX", "60000"]);
        w.wait_for("the lock's holder", T, |v| {
            v["election"] == key.as_str() && v["to"] == token.as_str()
        });
    }
    let stats = server.cli(&["INFO", "commandstats"]);
    let gets = calls(&stats, "get");
    assert!(
        (N..=N + N / 4).contains(&gets),
        "{gets} GETs for {N} locks taken:\n{stats}"
    );
}

/// Keyspace events turned on while the dashboard runs make it live, and turned off make it
/// polled again, without a restart (it stayed `polled every 1 s` until restarted).
#[test]
fn keyspace_events_turned_on_and_off_are_followed_without_a_restart() {
    let server = RedisServer::start("", None);
    server.cli(&["SET", "lock:a", "tok-1", "PX", "60000"]);
    let home = common::scratch::tempdir();
    let shell = format!(
        "env XDG_CONFIG_HOME={h}/config XDG_DATA_HOME={h}/data {bin} --redis {url} --prefix 'lock:*'; \
         echo ELECTOP-EXITED $?; sleep 60",
        h = home.path().display(),
        bin = common::electop::bin(),
        url = server.url(),
    );
    let tmux = common::tmux::Tmux::start(160, 30, &shell);
    tmux.wait_screen("polled", T, |s| s.contains("polled every 1 s"));
    server.cli(&["CONFIG", "SET", "notify-keyspace-events", "Kg$xe"]);
    tmux.wait_screen("live", T, |s| s.contains("live: keyspace events"));
    server.cli(&["SET", "lock:a", "tok-2", "PX", "60000"]);
    tmux.wait_screen("the change, live", T, |s| s.contains("tok-2"));
    server.cli(&["CONFIG", "SET", "notify-keyspace-events", ""]);
    tmux.wait_screen("polled again", T, |s| {
        s.contains("polled every 1 s: notify-keyspace-events is off")
    });
    server.cli(&["SET", "lock:a", "tok-3", "PX", "60000"]);
    tmux.wait_screen("the change, polled", T, |s| s.contains("tok-3"));
}
