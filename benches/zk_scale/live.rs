//! Live costs: the dashboard and `watch --json` idle, and failovers: a leader's node
//! deleted, timed from the `NodeDeleted` event a ZooKeeper watch in the bench receives to
//! `watch --json`'s `leader_changed` line and to the screen.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zookeeper_client::{AddWatchMode, Client, EventType};

use crate::lines::Lines;
use crate::{electop, load, procs, tui};

/// Deletions at a steady rate: 200 at 20 a second.
const DELETIONS: usize = 200;
const EVERY: Duration = Duration::from_millis(50);
/// How long "idle" is measured.
const IDLE: Duration = Duration::from_secs(20);

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

pub fn run(rt: &tokio::runtime::Runtime, home: &Path, loader: &Client, args: &[String], n: usize) {
    let endpoint = args[1].clone();
    let prefix = args[3].clone();
    println!("\n## Idle, {n} elections, nothing changing (% of one core over {IDLE:?})\n");
    println!("| process | idle CPU | RSS |");
    println!("|---|---|---|");
    let t = tui::start(home, args);
    t.tmux
        .wait_screen("the elections", Duration::from_secs(60), |s| {
            s.contains(&format!("{n} elections"))
        });
    // The first second's work (history, the members' first probe) is not idling.
    std::thread::sleep(Duration::from_secs(2));
    idle_row("TUI 200x50", t.pid);
    drop(t);
    let ours = watch(home, args);
    std::thread::sleep(Duration::from_secs(2));
    idle_row("watch --json", ours.pid());

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
    println!(
        "\n## Failover after the leader's node is deleted (after the `NodeDeleted` a ZooKeeper watch in the bench received)\n"
    );
    println!("| seen by | failovers | missed | p50 | p99 | max |");
    println!("|---|---|---|---|---|---|");
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
    screen(rt, home, loader, args, &deleted);
}

fn watch(home: &Path, args: &[String]) -> Lines {
    let mut w = electop(home);
    let ours = Lines::start(w.args(args).args(["watch", "--json"]));
    ours.wait(&["\"synced\""], Duration::from_secs(60))
        .unwrap_or_else(|| panic!("watch not synced: {:?}", ours.all()));
    ours
}

fn idle_row(what: &str, pid: u32) {
    let idle = procs::cpu_percent(pid, IDLE);
    println!("| {what} | {idle:.2}% | {:.0} MiB |", procs::rss_mib(pid));
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

/// The second candidate of each of the first 20 elections (on the screen's first page)
/// deleted, one at a time: when the third shows as leader in tmux, polled as fast as
/// `capture-pane` goes (a few ms a capture, which bounds the resolution).
fn screen(
    rt: &tokio::runtime::Runtime,
    home: &Path,
    loader: &Client,
    args: &[String],
    deleted: &Deleted,
) {
    let prefix = &args[3];
    let t = tui::start(home, args);
    t.tmux
        .wait_screen("node-0-1", Duration::from_secs(60), |s| {
            s.contains("node-0-1")
        });
    let mut delays = Vec::new();
    for e in 0..20 {
        let next = format!("node-{e}-2");
        if !t.tmux.capture().contains(&format!("node-{e}-1")) {
            continue; // not on the first page
        }
        let node = rt.block_on(load::leader(loader, prefix, e));
        rt.block_on(loader.delete(&node, None)).expect("delete");
        let start = Instant::now();
        let seen = loop {
            if t.tmux.capture().contains(&next) {
                break Instant::now();
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "no {next} on screen"
            );
        };
        let at = deleted_at(deleted, &node);
        delays.push(seen.saturating_duration_since(at).as_secs_f64() * 1000.0);
        std::thread::sleep(Duration::from_millis(200));
    }
    let count = delays.len();
    let (p50, p99, max) = procs::percentiles(delays);
    println!(
        "| the screen (tmux capture, polled) | {count} | 0 | {p50:.2} ms | {p99:.2} ms | {max:.2} ms |"
    );
}
