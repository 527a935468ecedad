//! Live costs on Redis: the dashboard and `watch --json` idle, and releases: a lock key
//! deleted (as its holder releases it), timed from the `del` keyspace event a subscription
//! of the bench's own receives to `watch --json`'s line and to the screen.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::redis::RedisServer;
use crate::painted::{self, Painted};
use crate::{key, procs, token, tui};

/// Releases at a steady rate: 200 at 20 a second.
const RELEASES: usize = 200;
const EVERY: Duration = Duration::from_millis(50);

/// When the bench's own subscription saw each key deleted.
type Deleted = Arc<Mutex<HashMap<String, Instant>>>;

/// A `PSUBSCRIBE` to the keyspace events of `pattern`, on a connection of its own,
/// recording when each `del` arrived: the reference every delay is measured from.
fn reference(rt: &tokio::runtime::Runtime, url: &str, pattern: &str) -> Deleted {
    let deleted: Deleted = Arc::default();
    let sink = deleted.clone();
    let client = redis::Client::open(url).expect("client");
    let channel = format!("__keyspace@0__:{pattern}");
    let mut pubsub = rt
        .block_on(client.get_async_pubsub())
        .expect("the bench's subscription");
    rt.block_on(pubsub.psubscribe(&channel))
        .expect("psubscribe");
    rt.spawn(async move {
        use futures::StreamExt;
        let mut stream = pubsub.on_message();
        while let Some(msg) = stream.next().await {
            let at = Instant::now();
            let payload: String = msg.get_payload().unwrap_or_default();
            if payload == "del" {
                let ch: String = msg.get_channel_name().to_string();
                let k = ch.trim_start_matches("__keyspace@0__:").to_string();
                sink.lock().expect("deleted").insert(k, at);
            }
        }
    });
    deleted
}

const RELEASE_TABLE: &str = "\n## A release (the lock key deleted), after the `del` keyspace event a subscription in the bench received\n\n| seen by | releases | missed | p50 | p99 | max |\n|---|---|---|---|---|---|";

pub fn run(home: &Path, server: &RedisServer, args: &[String], n: usize) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    if crate::screen_only() {
        let deleted = reference(&rt, &server.url(), &args[3]);
        println!("{RELEASE_TABLE}");
        screen(home, server, args, &deleted, n);
        return;
    }
    let ours = crate::idle::idle(home, args, n, "lock keys");
    let deleted = reference(&rt, &server.url(), &args[3]);
    let (mut delays, mut missed) = (Vec::new(), Vec::new());
    // The last keys: the first page's are kept for the screen.
    for i in (n - RELEASES.min(n / 2))..n {
        let k = key(n, i);
        server.cli(&["DEL", &k]);
        let needles = [
            format!("\"election\":\"{k}\""),
            format!("\"from\":\"{}\"", token(i)),
        ];
        let needles: Vec<&str> = needles.iter().map(String::as_str).collect();
        match ours.wait(&needles, Duration::from_secs(5)) {
            None => missed.push(k),
            Some(seen) => {
                let at = deleted_at(&deleted, &k);
                delays.push(seen.saturating_duration_since(at).as_secs_f64() * 1000.0);
            }
        }
        std::thread::sleep(EVERY);
    }
    drop(ours);
    if let Some(m) = missed.first() {
        eprintln!("no line for {m} and {} more", missed.len() - 1);
    }
    let count = delays.len() + missed.len();
    let (p50, p99, max) = procs::percentiles(delays);
    println!("{RELEASE_TABLE}");
    println!(
        "| `watch --json` (leader lost), 20/s | {count} | {} | {p50:.2} ms | {p99:.2} ms | {max:.2} ms |",
        missed.len()
    );
    screen(home, server, args, &deleted, n);
}

/// When the reference subscription saw `k` go (waiting a little: it may come after
/// electop's).
fn deleted_at(deleted: &Deleted, k: &str) -> Instant {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if let Some(t) = deleted.lock().expect("deleted").get(k) {
            return *t;
        }
        assert!(Instant::now() < deadline, "no del event for {k}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// 40 keys of the first page released one at a time: when the header counts one more
/// election without a leader, by `capture-pane` and by the arrival of the frame that
/// showed it ([`Painted::frame`]); the captures made each way of [`painted::CAPTURES`] in
/// turns.
fn screen(home: &Path, server: &RedisServer, args: &[String], deleted: &Deleted, n: usize) {
    let t = tui::start(home, args);
    let painted = Painted::start(&t.tmux, home);
    t.tmux
        .wait_screen("the first key", Duration::from_secs(60), |s| {
            s.contains(&token(0)) && !s.contains("loading snapshot")
        });
    std::thread::sleep(Duration::from_secs(2));
    painted.wait_flowing(Duration::from_secs(10));
    let mut seen: [painted::Seen; 2] = Default::default();
    for i in 0..40 {
        let k = key(n, i);
        let next = format!("✖ {} no leader", i + 1);
        let (quiet, _) = painted::CAPTURES[i % 2];
        let sent = Instant::now();
        server.cli(&["DEL", &k]);
        let shown = painted::poll(&t.tmux, sent, quiet, |l| l.contains(&next));
        let at = deleted_at(deleted, &k);
        seen[i % 2].add(&painted, shown, at);
        std::thread::sleep(Duration::from_millis(200));
    }
    drop(t);
    for (s, (_, how)) in seen.into_iter().zip(painted::CAPTURES) {
        s.rows("releases", how);
    }
    painted::relay_row(home);
}
