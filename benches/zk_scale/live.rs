//! Live costs: the dashboard and `watch --json` idle, and failovers: a leader's node
//! deleted, timed from the `NodeDeleted` event a ZooKeeper watch in the bench receives to
//! `watch --json`'s `leader_changed` line and to the screen.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zookeeper_client::{AddWatchMode, Client, EventType};

use crate::painted::{self, Painted};
use crate::{load, procs, tui};

/// Deletions at a steady rate: 200 at 20 a second.
const DELETIONS: usize = 200;
const EVERY: Duration = Duration::from_millis(50);

/// When the bench's own watch saw each node deleted, and when it had re-read that node's
/// election after it (by node path).
#[derive(Default)]
struct Times {
    deleted: HashMap<String, Instant>,
    reread: HashMap<String, Instant>,
}
type Deleted = Arc<Mutex<Times>>;

/// A persistent recursive watch on `prefix` from a session of its own, recording when
/// each `NodeDeleted` arrived (the reference every delay is measured from), then what
/// any client that shows the next leader must do, as electop does: the election's
/// `getChildren`, then a `getData` of each child (the new leader's id is its node's data):
/// the floor of a failover on screen, with this crate's client, in the same run.
async fn reference(endpoint: &str, prefix: &str) -> (Client, Deleted) {
    let client = load::connect(endpoint).await;
    let mut watcher = client
        .watch(prefix, AddWatchMode::PersistentRecursive)
        .await
        .expect("the bench's watch");
    let deleted: Deleted = Arc::default();
    let sink = deleted.clone();
    let reader = client.clone();
    tokio::spawn(async move {
        loop {
            let ev = watcher.changed().await;
            if ev.event_type != EventType::NodeDeleted {
                continue;
            }
            let at = Instant::now();
            sink.lock()
                .expect("times")
                .deleted
                .insert(ev.path.clone(), at);
            let (reader, sink) = (reader.clone(), sink.clone());
            tokio::spawn(async move {
                let parent = ev.path.rsplit_once('/').map(|(p, _)| p).unwrap_or("/");
                let Ok(names) = reader.list_children(parent).await else {
                    return;
                };
                let reads = names.iter().map(|n| {
                    let path = format!("{parent}/{n}");
                    let reader = reader.clone();
                    async move { reader.get_data(&path).await }
                });
                futures::future::join_all(reads).await;
                let done = Instant::now();
                sink.lock().expect("times").reread.insert(ev.path, done);
            });
        }
    });
    (client, deleted)
}

const FAILOVER_TABLE: &str = "\n## Failover after the leader's node is deleted (after the `NodeDeleted` a ZooKeeper watch in the bench received)\n\n| seen by | failovers | missed | p50 | p99 | max |\n|---|---|---|---|---|---|";

pub fn run(rt: &tokio::runtime::Runtime, home: &Path, loader: &Client, args: &[String], n: usize) {
    let endpoint = args[1].clone();
    let prefix = args[3].clone();
    if crate::screen_only() {
        let (_client, deleted) = rt.block_on(reference(&endpoint, &prefix));
        println!("{FAILOVER_TABLE}");
        screen(rt, home, loader, args, (&deleted, 0));
        return;
    }
    let ours = crate::idle::idle(home, args, n, "elections");
    let (_client, deleted) = rt.block_on(reference(&endpoint, &prefix));
    let (mut delays, mut notified, mut floor) = (Vec::new(), Vec::new(), Vec::new());
    let mut missed = Vec::new();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    for e in 0..DELETIONS.min(n) {
        let node = rt.block_on(load::leader(loader, &prefix, e));
        let mark = ours.mark();
        let sent = Instant::now();
        rt.block_on(loader.delete(&node, None)).expect("delete");
        let name = load::election(e);
        let next = format!("node-{e}-1");
        match ours.wait_from(
            mark,
            &[&name, "leader_changed", &next],
            Duration::from_secs(5),
        ) {
            None => missed.push(name),
            Some(seen) => {
                let at = deleted_at(&deleted, &node);
                delays.push(ms(seen.saturating_duration_since(at)));
                notified.push(ms(at.saturating_duration_since(sent)));
                if let Some(done) = reread_at(&deleted, &node) {
                    floor.push(ms(done.saturating_duration_since(at)));
                }
            }
        }
        std::thread::sleep(EVERY);
    }
    drop(ours);
    if let Some(m) = missed.first() {
        eprintln!("no leader_changed for {m} and {} more", missed.len() - 1);
    }
    let (p50, p99, max) = procs::percentiles(delays);
    println!("{FAILOVER_TABLE}");
    let count = DELETIONS.min(n);
    let (n50, n99, nmax) = procs::percentiles(notified);
    println!(
        "| the bench's watch: its `NodeDeleted` after the delete was sent (not from `NodeDeleted`) | {count} | 0 | {n50:.2} ms | {n99:.2} ms | {nmax:.2} ms |"
    );
    let (f50, f99, fmax) = procs::percentiles(floor);
    println!(
        "| the bench's client re-reading the election on it (getChildren, then getData of each child): the floor | {count} | 0 | {f50:.2} ms | {f99:.2} ms | {fmax:.2} ms |"
    );
    println!(
        "| `watch --json` (leader_changed), 20/s | {} | {} | {p50:.2} ms | {p99:.2} ms | {max:.2} ms |",
        DELETIONS.min(n),
        missed.len()
    );
    // The first 200 elections' first candidates went above: the second ones lead.
    screen(rt, home, loader, args, (&deleted, 1));
}

/// When the reference had re-read `node`'s election after it went (waiting a little).
fn reread_at(times: &Deleted, node: &str) -> Option<Instant> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if let Some(t) = times.lock().expect("times").reread.get(node) {
            return Some(*t);
        }
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// When the reference watch saw `node` go (waiting a little: it may come after electop's).
fn deleted_at(deleted: &Deleted, node: &str) -> Instant {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if let Some(t) = deleted.lock().expect("times").deleted.get(node) {
            return *t;
        }
        assert!(Instant::now() < deadline, "no NodeDeleted for {node}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The leader of each of the first 40 elections (on the screen's first page), candidate
/// `first`, deleted one at a time: when the next shows as leader, by `capture-pane` and by
/// the arrival of the frame that showed it ([`Painted::frame`]); the captures made each
/// way of [`painted::CAPTURES`] in turns.
fn screen(
    rt: &tokio::runtime::Runtime,
    home: &Path,
    loader: &Client,
    args: &[String],
    (deleted, first): (&Deleted, usize),
) {
    let prefix = &args[3];
    let t = tui::start(home, args);
    let painted = Painted::start(&t.tmux, home);
    let leader = format!("node-0-{first}");
    // Read through: until then the dashboard shows what it read so far and tells no change.
    t.tmux.wait_screen(&leader, Duration::from_secs(60), |s| {
        s.contains(&leader) && !s.contains("loading snapshot")
    });
    // History and the members' first probe, as for idle.
    std::thread::sleep(Duration::from_secs(2));
    painted.wait_flowing(Duration::from_secs(10));
    let mut seen: [painted::Seen; 2] = Default::default();
    for e in 0..40 {
        let next = format!("node-{e}-{}", first + 1);
        if !t.tmux.capture().contains(&format!("node-{e}-{first}")) {
            continue; // not on the first page
        }
        let node = rt.block_on(load::leader(loader, prefix, e));
        let (quiet, _) = painted::CAPTURES[e % 2];
        let sent = Instant::now();
        rt.block_on(loader.delete(&node, None)).expect("delete");
        // The election's own row: the candidates' panel lists the next leader already.
        let row = load::election(e);
        let shown = painted::poll(&t.tmux, sent, quiet, |l| {
            l.contains(&row) && l.contains(&next)
        });
        let at = deleted_at(deleted, &node);
        seen[e % 2].add(&painted, shown, at);
        std::thread::sleep(Duration::from_millis(200));
    }
    drop(t);
    for (s, (_, how)) in seen.into_iter().zip(painted::CAPTURES) {
        s.rows("failovers", how);
    }
    painted::relay_row(home);
}
