//! Live costs at 10,000 elections: the dashboard idle and at 1,000 changes/s, `watch` at the
//! same rate, `watch --json`'s delay over `etcdctl watch`, and a failover's.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::EtcdServer;
use crate::load::{self, Layout, Leases};
use crate::watchers::Lines;
use crate::{drive, electop, procs, source_args, tui};

const N: usize = 10_000;
const WINDOW: Duration = Duration::from_secs(5);

pub fn run(rt: &tokio::runtime::Runtime, home: &Path) {
    let etcd = EtcdServer::start();
    let client = rt.block_on(etcd.client());
    let mut leases = Vec::new();
    for (leases_kind, name) in [
        (Leases::Shared, "lk-shared"),
        (Leases::PerCandidate, "lk-own"),
    ] {
        let l = rt.block_on(load::load(
            &client,
            &format!("/b/{name}/"),
            N,
            Layout::LeaseKey,
            leases_kind,
        ));
        leases.push((name, l));
    }
    println!(
        "\n## Live, {N} lease-key elections, 1,000 changes/s (CPU: % of one core over {WINDOW:?})\n"
    );
    println!("| leases | process | idle CPU | CPU at 1,000/s | RSS at 1,000/s |");
    println!("|---|---|---|---|---|");
    for (name, l) in &leases {
        let args = source_args(&etcd, name, Layout::LeaseKey);
        let t = tui::start(home, &args);
        t.tmux
            // Idle means after the background history replay, which is a one-off.
            .wait_screen("the elections", Duration::from_secs(60), |s| {
                s.contains(&format!("{N} elections")) && !s.contains("replaying")
            });
        row(rt, &client, name, "TUI 200x50", t.pid, l);
        drop(t);
        let mut w = electop(home);
        w.args(&args).args(["watch", "--json"]);
        let w = Lines::start(&mut w);
        w.wait("\"synced\"", Duration::from_secs(60))
            .expect("watch synced");
        row(rt, &client, name, "watch --json", w.pid(), l);
    }
    let (name, l) = &leases[1];
    latency(rt, home, &etcd, &client, name, l);
    failover(rt, home, &etcd, &client);
}

fn row(
    rt: &tokio::runtime::Runtime,
    client: &etcd_client::Client,
    name: &str,
    what: &str,
    pid: u32,
    leases: &[i64],
) {
    let idle = procs::cpu_percent(pid, WINDOW);
    let prefix = format!("/b/{name}/");
    let c0 = procs::cpu(pid);
    let t0 = Instant::now();
    let made = rt.block_on(drive::run(
        client,
        &prefix,
        leases,
        1000,
        WINDOW.as_secs_f64(),
    ));
    let busy = (procs::cpu(pid) - c0).as_secs_f64() * 100.0 / t0.elapsed().as_secs_f64();
    let rate = made as f64 / t0.elapsed().as_secs_f64();
    println!(
        "| {name} | {what} | {idle:.1}% | {busy:.1}% ({rate:.0}/s reached) | {:.0} MiB |",
        procs::rss_mib(pid)
    );
}

/// Each change's arrival at `watch --json` minus its arrival at `etcdctl watch`.
fn latency(
    rt: &tokio::runtime::Runtime,
    home: &Path,
    etcd: &EtcdServer,
    client: &etcd_client::Client,
    name: &str,
    leases: &[i64],
) {
    let args = source_args(etcd, name, Layout::LeaseKey);
    let mut w = electop(home);
    let ours = Lines::start(w.args(&args).args(["watch", "--json"]));
    ours.wait("\"synced\"", Duration::from_secs(60))
        .expect("watch synced");
    let prefix = format!("/b/{name}/");
    let theirs = Lines::start(etcd.etcdctl_command().args(["watch", "--prefix", &prefix]));
    std::thread::sleep(Duration::from_millis(500)); // etcdctl prints nothing when ready
    // New values: start after the ones the CPU runs wrote.
    let (missed, (p50, p99, max)) =
        crate::watchers::extra_delay(rt, client, (&prefix, leases), 1_000_000, (&ours, &theirs));
    println!(
        "\n## `watch --json` vs `etcdctl watch`, {N} elections with a lease each, 20 changes/s\n"
    );
    println!("| changes | missed | extra p50 | extra p99 | extra max |");
    println!("|---|---|---|---|---|");
    println!(
        "| {} | {missed} | {p50:.2} ms | {p99:.2} ms | {max:.2} ms |",
        200
    );
}

/// A leader's 2 s lease left to run out: when etcd's DELETE shows in `etcdctl watch`, and
/// when electop shows the election without its leader (watch, and the screen).
fn failover(
    rt: &tokio::runtime::Runtime,
    home: &Path,
    etcd: &EtcdServer,
    client: &etcd_client::Client,
) {
    let args = source_args(etcd, "fo", Layout::LeaseKey);
    let mut c = client.clone();
    rt.block_on(c.put("/b/fo/jobs", "node-a", None))
        .expect("seed");
    let mut w = electop(home);
    let ours = Lines::start(w.args(&args).args(["watch", "--json"]));
    ours.wait("\"synced\"", Duration::from_secs(30))
        .expect("watch synced");
    let t = tui::start(home, &args);
    t.tmux
        .wait_screen("the election", Duration::from_secs(30), |s| {
            s.contains("node-a")
        });
    let theirs = Lines::start(etcd.etcdctl_command().args(["watch", "/b/fo/jobs"]));
    std::thread::sleep(Duration::from_millis(500));
    let lease = rt.block_on(c.lease_grant(2, None)).expect("grant").id();
    let opts = etcd_client::PutOptions::new().with_lease(lease);
    rt.block_on(c.put("/b/fo/jobs", "node-b", Some(opts)))
        .expect("put");
    t.tmux
        .wait_screen("node-b", Duration::from_secs(5), |s| s.contains("node-b"));
    let start = Instant::now();
    let screen = loop {
        // "— none —", or "none since 01:02:03" once the election has a past.
        let screen = t.tmux.capture();
        if screen.contains("— none —") || screen.contains("none since") {
            break Instant::now();
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "no failover on screen"
        );
    };
    let delete = theirs
        .wait("DELETE", Duration::from_secs(5))
        .expect("DELETE");
    let lost = ours
        .wait("leader_lost", Duration::from_secs(5))
        .expect("leader_lost");
    let after = |t: Instant| t.saturating_duration_since(delete).as_secs_f64() * 1000.0;
    println!(
        "\n## Failover: a 2 s lease runs out (etcdctl watch's DELETE at {:.2} s)\n",
        (delete - start).as_secs_f64() + 0.0
    );
    println!("| seen by | after the DELETE |");
    println!("|---|---|");
    println!("| `watch --json` (leader_lost) | +{:.1} ms |", after(lost));
    println!(
        "| the screen (tmux capture, polled as fast as it goes) | +{:.1} ms |",
        after(screen)
    );
}
