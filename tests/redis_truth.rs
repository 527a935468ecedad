//! What electop reports of a Redis source is what Redis did, step by step, and nothing
//! else: a release followed at once by another holder's acquire is a loss, then an
//! election (keyspace events give both steps, in order); a holder that kept its token
//! through an outage longer than its TTL did not change; and a polled source is connected
//! once per connection, not at every poll, nor at a failed reconnect.

mod common;

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::T;
use common::electop::Watch;
use common::proxy::Proxy;
use common::redis::RedisServer;
use serde_json::Value;

fn args(url: &str, prefix: &str) -> Vec<String> {
    vec![
        "--redis".into(),
        url.into(),
        "--prefix".into(),
        prefix.into(),
    ]
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// `redis-cli` reading `script` (one command a line) on one connection: back to back.
fn cli_script(server: &RedisServer, script: &str) -> String {
    let mut child = Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &server.port().to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run redis-cli");
    let mut stdin = child.stdin.take().expect("stdin");
    std::io::Write::write_all(&mut stdin, script.as_bytes()).expect("write the script");
    drop(stdin);
    let out = child.wait_with_output().expect("redis-cli output");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The leader events of `key`, as (kind, from, to, cause), in the order printed.
fn changes(seen: &[Value], key: &str) -> Vec<(String, String, String, String)> {
    let s = |v: &Value| v.as_str().unwrap_or("-").to_string();
    seen.iter()
        .filter(|v| v["election"] == key && s(&v["kind"]).starts_with("leader_"))
        .map(|v| (s(&v["kind"]), s(&v["from"]), s(&v["to"]), s(&v["cause"])))
        .collect()
}

fn count(seen: &[Value], kind: &str) -> usize {
    seen.iter().filter(|v| v["kind"] == kind).count()
}

fn change(kind: &str, from: &str, to: &str, cause: &str) -> (String, String, String, String) {
    (kind.into(), from.into(), to.into(), cause.into())
}

/// `DEL` then another token's `SET NX`, atomically (`MULTI`) and then as two commands back
/// to back: Redis notifies `del` then `set`; a re-read at the `del` already shows the new
/// holder, and the `del` is still a loss of its own. A renewal (`PEXPIRE`) just before is
/// no change: the read at its event already shows the next holder, whose steps follow.
#[test]
fn a_release_and_another_acquire_back_to_back_are_a_loss_then_an_election() {
    let server = RedisServer::start("KEA", None);
    let home = common::scratch::tempdir();
    let key = "bb:jobs";
    let a = args(&server.url(), "bb:");
    let mut w = Watch::start(home.path(), &strs(&a));
    w.wait_synced(1);
    server.cli(&["SET", key, "tok-a", "NX", "PX", "60000"]);
    w.wait_for("tok-a elected", T, |v| v["to"] == "tok-a");
    let out = cli_script(
        &server,
        &format!("MULTI\nDEL {key}\nSET {key} tok-b NX PX 60000\nEXEC\n"),
    );
    assert!(out.contains("OK"), "{out}");
    w.wait_for("tok-b elected", T, |v| v["to"] == "tok-b");
    let out = cli_script(
        &server,
        &format!("DEL {key}\nSET {key} tok-c NX PX 60000\n"),
    );
    assert!(out.contains("OK"), "{out}");
    w.wait_for("tok-c elected", T, |v| v["to"] == "tok-c");
    let out = cli_script(
        &server,
        &format!("MULTI\nPEXPIRE {key} 60000\nDEL {key}\nSET {key} tok-d NX PX 60000\nEXEC\n"),
    );
    assert!(out.contains("OK"), "{out}");
    w.wait_for("tok-d elected", T, |v| v["to"] == "tok-d");
    assert_eq!(
        changes(&w.seen, key),
        [
            change("leader_elected", "-", "tok-a", "elected"),
            change("leader_lost", "tok-a", "-", "resigned"),
            change("leader_elected", "-", "tok-b", "elected"),
            change("leader_lost", "tok-b", "-", "resigned"),
            change("leader_elected", "-", "tok-c", "elected"),
            change("leader_lost", "tok-c", "-", "resigned"),
            change("leader_elected", "-", "tok-d", "elected"),
        ],
        "{:#?}",
        w.seen
    );
}

/// A holder renewing its lock (`SET key token PX`) every 300 ms, the same token throughout,
/// straight to the server (not through electop's proxy); stopped on drop.
struct Renewer {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Renewer {
    fn start(port: u16, key: &str, token: &str, ttl_ms: u32) -> Renewer {
        let stop = Arc::new(AtomicBool::new(false));
        let (s, key, token) = (Arc::clone(&stop), key.to_string(), token.to_string());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::SeqCst) {
                let ttl = ttl_ms.to_string();
                common::redis::cli(port, None, &["SET", &key, &token, "PX", &ttl]);
                std::thread::sleep(Duration::from_millis(300));
            }
        });
        Renewer {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Renewer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Redis killed for longer than the holder's TTL, then started again; the holder, which
/// kept renewing, writes its same token again before electop is back (electop reaches
/// Redis through a proxy held frozen until then). Its countdown ran out while electop was
/// disconnected, which is no observation: no leader change, one `disconnected`, one
/// `connected` back.
#[test]
fn a_holder_that_kept_its_token_through_an_outage_did_not_change() {
    const TTL_MS: u32 = 2000;
    let mut server = RedisServer::start("KEA", None);
    let proxy = Proxy::start(server.port(), Duration::from_secs(120));
    let home = common::scratch::tempdir();
    let key = "out:jobs";
    let url = format!("redis://127.0.0.1:{}/0", proxy.port());
    let a = args(&url, "out:");
    let mut w = Watch::start(home.path(), &strs(&a));
    w.wait_synced(1);
    let renewer = Renewer::start(server.port(), key, "tok-h", TTL_MS);
    w.wait_for("tok-h elected", T, |v| v["to"] == "tok-h");

    server.stop();
    let killed = Instant::now();
    w.wait_for("disconnected", T, |v| v["kind"] == "disconnected");
    // The outage outlasts the TTL by a second: the countdown runs out meanwhile.
    let outage = Duration::from_millis(u64::from(TTL_MS) + 1000);
    std::thread::sleep(outage.saturating_sub(killed.elapsed()));
    proxy.freeze();
    server.restart();
    common::wait_until("the holder wrote its token again", T, || {
        server.cli(&["GET", key]).trim() == "tok-h"
    });
    proxy.thaw();
    w.wait_count("connected", 2, T, |v| v["kind"] == "connected");
    drop(renewer);
    assert_eq!(
        changes(&w.seen, key),
        [change("leader_elected", "-", "tok-h", "elected")],
        "{:#?}",
        w.seen
    );
    assert_eq!(count(&w.seen, "disconnected"), 1, "{:#?}", w.seen);
    assert_eq!(count(&w.seen, "connected"), 2, "{:#?}", w.seen);
}

/// Keyspace events off: polled every second. Over several polls the source is connected
/// once; while Redis is down, each failed reconnect claims no contact (no `fresh`, no
/// `connected`) and the outage is one `disconnected`; back, one `connected`.
#[test]
fn a_polled_source_is_connected_once_per_connection() {
    let mut server = RedisServer::start("", None);
    let home = common::scratch::tempdir();
    let key = "poll:jobs";
    let a = args(&server.url(), "poll:");
    let mut w = Watch::start(home.path(), &strs(&a));
    w.wait_synced(1);
    server.cli(&["SET", key, "tok-p", "PX", "60000"]);
    w.wait_for("tok-p elected", T, |v| v["to"] == "tok-p");
    // Three more polls at least.
    w.collect_for(Duration::from_millis(3500));
    assert_eq!(count(&w.seen, "connected"), 1, "{:#?}", w.seen);

    server.stop();
    w.wait_for("disconnected", T, |v| v["kind"] == "disconnected");
    let mark = w.seen.len();
    // Reconnects fail at 0.5, 1 and 2 s (the wait doubles).
    w.collect_for(Duration::from_secs(4));
    let during = &w.seen[mark..];
    for kind in ["fresh", "connected", "disconnected"] {
        assert_eq!(count(during, kind), 0, "{kind} while down: {:#?}", w.seen);
    }
    server.restart();
    w.wait_count("connected", 2, T, |v| v["kind"] == "connected");
    w.collect_for(Duration::from_millis(2500));
    assert_eq!(count(&w.seen, "connected"), 2, "{:#?}", w.seen);
    assert_eq!(count(&w.seen, "disconnected"), 1, "{:#?}", w.seen);
}
