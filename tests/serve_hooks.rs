//! `electop serve`'s change hooks against a real shell and a loopback HTTP receiver: every
//! change of a driven sequence arrives, in order, none lost; a hook that hangs is cut off and
//! counted, and never holds up `send`.

mod common;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use electop::model::{Cause, Event, EventKind};
use electop::serve_hooks::{HookConfig, HookStats, Hooks, event_json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The `n`th change of a driven sequence: `node-n` hands over to `node-(n+1)`, at revision n.
fn change(n: i64) -> Event {
    Event {
        at: Some(SystemTime::now()),
        source: "etcd 127.0.0.1:2379 /e/".into(),
        election: Some("jobs".into()),
        kind: EventKind::LeaderChanged,
        from: Some(format!("node-{n}")),
        to: Some(format!("node-{}", n + 1)),
        cause: Some(Cause::Resigned),
        was: None,
        revision: Some(n),
        replayed: false,
        detail: None,
    }
}

fn start(cfg: HookConfig) -> (Hooks, Arc<HookStats>) {
    let stats = Arc::new(HookStats::new());
    let hooks = Hooks::start(cfg, stats.clone()).expect("hooks start");
    (hooks, stats)
}

fn read_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// The revisions of the JSON lines, in the order they came.
fn revisions(lines: &[String]) -> Vec<i64> {
    lines
        .iter()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
            v["revision"].as_i64().expect("revision")
        })
        .collect()
}

fn quoted(p: &Path) -> String {
    format!("'{}'", p.display())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_command_gets_every_change_in_order_on_stdin_and_in_its_environment() {
    let dir = common::scratch::tempdir();
    let (stdin_log, env_log) = (dir.path().join("stdin.log"), dir.path().join("env.log"));
    let cmd = format!(
        "cat >> {}; printf '%s %s %s %s\\n' \"$ELECTOP_KIND\" \"$ELECTOP_SOURCE\" \
         \"$ELECTOP_FROM\" \"$ELECTOP_TO\" >> {}",
        quoted(&stdin_log),
        quoted(&env_log)
    );
    let (hooks, stats) = start(HookConfig {
        on_change: Some(cmd),
        ..HookConfig::default()
    });
    for n in 0..200 {
        // Both ways in: the event with its handle, and the ready-made JSON value.
        if n % 2 == 0 {
            hooks.send_event(&change(n), "etcd1");
        } else {
            hooks.send(event_json(&change(n), "etcd1"));
        }
    }
    hooks.drain(Duration::from_secs(60)).await;

    let lines = read_lines(&stdin_log);
    assert_eq!(revisions(&lines), (0..200).collect::<Vec<_>>());
    assert!(lines[0].contains("\"source_id\":\"etcd1\""), "{}", lines[0]);
    let env = read_lines(&env_log);
    let expected: Vec<String> = (0..200)
        .map(|n| format!("leader_changed etcd1 node-{n} node-{}", n + 1))
        .collect();
    assert_eq!(env, expected);
    assert_eq!(stats.get("on_change", "ok"), 200);
    assert_eq!(stats.get("on_change", "failed"), 0);
}

/// True once no process `pid` runs (gone, or a zombie waiting for a reaper).
fn not_running(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

async fn eventually(what: &str, within: Duration, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !ok() {
        assert!(Instant::now() < deadline, "not within {within:?}: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_command_is_cut_off_with_what_it_started_and_the_next_changes_still_run() {
    let dir = common::scratch::tempdir();
    let (log, pids) = (dir.path().join("stdin.log"), dir.path().join("pids"));
    // The change to `node-2` hangs in a child of the shell, as `sh -c 'curl …'` would.
    let cmd = format!(
        "if [ \"$ELECTOP_TO\" = node-2 ]; then sleep 60 & echo $! > {}; wait; fi; \
         cat >> {}; if [ \"$ELECTOP_TO\" = node-4 ]; then echo 'no route to pager' >&2; exit 3; fi",
        quoted(&pids),
        quoted(&log)
    );
    let (hooks, stats) = start(HookConfig {
        on_change: Some(cmd),
        timeout: Duration::from_millis(300),
        ..HookConfig::default()
    });
    let began = Instant::now();
    for n in 0..6 {
        hooks.send_event(&change(n), "etcd1");
    }
    hooks.drain(Duration::from_secs(30)).await;
    assert!(
        began.elapsed() < Duration::from_secs(10),
        "{:?}",
        began.elapsed()
    );

    assert_eq!(revisions(&read_lines(&log)), [0, 2, 3, 4, 5]);
    assert_eq!(stats.get("on_change", "timeout"), 1);
    assert_eq!(stats.get("on_change", "failed"), 1, "exit 3 is a failure");
    assert_eq!(stats.get("on_change", "ok"), 4);
    let sleeper = std::fs::read_to_string(&pids).expect("the hanging run's pid");
    let sleeper = sleeper.trim().to_string();
    eventually(
        "the hanging command's child is killed with it",
        Duration::from_secs(5),
        || not_running(&sleeper),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_returns_at_once_while_the_command_hangs_and_every_event_is_counted() {
    let dir = common::scratch::tempdir();
    let pids = dir.path().join("pids");
    let (hooks, stats) = start(HookConfig {
        on_change: Some(format!("sleep 60 & echo $! >> {}; wait", quoted(&pids))),
        queue: 100,
        ..HookConfig::default()
    });
    let events: Vec<Event> = (0..10_000).map(change).collect();
    let began = Instant::now();
    for e in &events {
        hooks.send_event(e, "etcd1");
    }
    let took = began.elapsed();
    assert!(
        took < Duration::from_millis(250),
        "10,000 sends took {took:?}"
    );
    // Nothing delivered, and nothing unaccounted: the queue kept the newest 100.
    assert!(stats.get("on_change", "dropped") >= 9_899);

    // Shutdown out of time cuts the run off and counts what it could not deliver.
    hooks.drain(Duration::from_millis(300)).await;
    let counts: u64 = stats
        .snapshot()
        .iter()
        .filter(|(hook, _, _)| *hook == "on_change")
        .map(|(_, _, n)| n)
        .sum();
    assert_eq!(counts, 10_000, "{:?}", stats.snapshot());
    assert_eq!(stats.get("on_change", "dropped"), 10_000);
    let sleeper = read_lines(&pids).first().cloned().expect("the run's pid");
    eventually(
        "drain kills the command it cut off",
        Duration::from_secs(5),
        || not_running(&sleeper),
    )
    .await;
}

/// What the loopback receiver answers to its `n`th request (from 0).
type Answer = fn(usize) -> Option<u16>;

/// A small HTTP/1.1 receiver on 127.0.0.1: records each request's body (and content type)
/// and answers as `answer` says (`None`: never answer), keeping connections alive as the
/// client's pool expects.
struct Receiver {
    url: String,
    bodies: Arc<Mutex<Vec<(String, String)>>>,
}

impl Receiver {
    async fn start(answer: Answer) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!(
            "http://{}/hooks/electop?token=s3cret",
            listener.local_addr().expect("addr")
        );
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let seen = bodies.clone();
        tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                tokio::spawn(serve(conn, seen.clone(), answer));
            }
        });
        Receiver { url, bodies }
    }

    fn bodies(&self) -> Vec<(String, String)> {
        self.bodies.lock().expect("bodies").clone()
    }
}

async fn serve(mut conn: TcpStream, seen: Arc<Mutex<Vec<(String, String)>>>, answer: Answer) {
    let mut buf = Vec::new();
    loop {
        let Some(end) = read_until_headers(&mut conn, &mut buf).await else {
            return;
        };
        let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
        let header = |name: &str| {
            head.lines()
                .find_map(|l| {
                    l.strip_prefix(&format!("{name}:"))
                        .map(|v| v.trim().to_string())
                })
                .unwrap_or_default()
        };
        let len: usize = header("content-length").parse().unwrap_or(0);
        let content_type = header("content-type");
        while buf.len() < end + 4 + len {
            let mut chunk = [0u8; 4096];
            match conn.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        let body = String::from_utf8_lossy(&buf[end + 4..end + 4 + len]).to_string();
        buf.drain(..end + 4 + len);
        let n = {
            let mut s = seen.lock().expect("bodies");
            s.push((content_type, body));
            s.len() - 1
        };
        let Some(code) = answer(n) else {
            // Hold the connection open, never answering.
            let _ = conn.read(&mut [0u8; 1]).await;
            return;
        };
        let reply = format!("HTTP/1.1 {code} X\r\ncontent-length: 2\r\n\r\nok");
        if conn.write_all(reply.as_bytes()).await.is_err() {
            return;
        }
    }
}

/// Reads until `buf` holds a whole request head; returns where it ends.
async fn read_until_headers(conn: &mut TcpStream, buf: &mut Vec<u8>) -> Option<usize> {
    loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            return Some(at);
        }
        let mut chunk = [0u8; 4096];
        match conn.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_webhook_gets_every_change_in_order_retrying_a_5xx() {
    // The first request fails with a 500: the same event is posted again, then the rest.
    let receiver = Receiver::start(|n| Some(if n == 0 { 500 } else { 200 })).await;
    let (hooks, stats) = start(HookConfig {
        webhooks: vec![receiver.url.clone()],
        timeout: Duration::from_secs(5),
        ..HookConfig::default()
    });
    for n in 0..200 {
        hooks.send_event(&change(n), "etcd1");
    }
    hooks.drain(Duration::from_secs(60)).await;

    let got = receiver.bodies();
    assert!(
        got.iter().all(|(ct, _)| ct == "application/json"),
        "{:?}",
        got[0]
    );
    let bodies: Vec<String> = got.into_iter().map(|(_, b)| b).collect();
    assert_eq!(bodies[0], bodies[1], "the failed post is retried");
    assert_eq!(revisions(&bodies[1..]), (0..200).collect::<Vec<_>>());
    assert_eq!(stats.get("webhook", "ok"), 200);
    assert_eq!(stats.get("webhook", "failed"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_that_never_answers_or_refuses_is_counted_without_holding_up_send() {
    let silent = Receiver::start(|_| None).await;
    let refusing = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        format!("http://{}/", l.local_addr().expect("addr"))
        // Dropped here: nothing listens on that port any more.
    };
    let rejecting = Receiver::start(|_| Some(404)).await;
    let (hooks, stats) = start(HookConfig {
        webhooks: vec![silent.url.clone(), refusing, rejecting.url.clone()],
        timeout: Duration::from_millis(300),
        retries: 1,
        ..HookConfig::default()
    });
    let began = Instant::now();
    for n in 0..3 {
        hooks.send_event(&change(n), "etcd1");
    }
    assert!(
        began.elapsed() < Duration::from_millis(100),
        "{:?}",
        began.elapsed()
    );
    hooks.drain(Duration::from_secs(30)).await;

    // Silent: each event tried twice, each attempt cut off at 300 ms.
    assert_eq!(stats.get("webhook", "timeout"), 3);
    assert_eq!(
        revisions(
            &silent
                .bodies()
                .into_iter()
                .map(|(_, b)| b)
                .collect::<Vec<_>>()
        ),
        [0, 0, 1, 1, 2, 2]
    );
    // Refused: failed after its retry. Rejected (404): failed at once, not retried.
    assert_eq!(stats.get("webhook", "failed"), 6);
    assert_eq!(rejecting.bodies().len(), 3, "a 4xx is not retried");
    assert_eq!(stats.get("webhook", "ok"), 0);
}

/// The log lines written while a test runs on this thread.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Log {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("log").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

// One thread, so that the hooks' tasks log to this test's subscriber.
#[tokio::test(flavor = "current_thread")]
async fn a_failing_hook_is_logged_with_why_and_never_with_its_secrets() {
    let log = Log::default();
    let writer = log.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let _logging = tracing::subscriber::set_default(subscriber);
    let refusing = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        format!("http://{}/T0/s3cret", l.local_addr().expect("addr"))
    };
    let (hooks, stats) = start(HookConfig {
        on_change: Some(
            "TOKEN=hunter2; echo 'first'>&2; echo 'no route to pager' >&2; exit 3".into(),
        ),
        webhooks: vec![refusing],
        retries: 0,
        ..HookConfig::default()
    });
    hooks.send_event(&change(7), "etcd1");
    hooks.drain(Duration::from_secs(30)).await;

    let text = String::from_utf8(log.0.lock().expect("log").clone()).expect("utf-8");
    assert_eq!(stats.get("on_change", "failed"), 1);
    assert_eq!(stats.get("webhook", "failed"), 1);
    assert!(
        text.contains(
            "on-change command failed for leader_changed etcd1/jobs: exited with 3: no route to pager"
        ),
        "{text}"
    );
    assert!(text.contains("webhook http://127.0.0.1:"), "{text}");
    assert!(text.contains("Connection refused"), "{text}");
    assert!(
        !text.contains("s3cret") && !text.contains("hunter2"),
        "{text}"
    );
}
