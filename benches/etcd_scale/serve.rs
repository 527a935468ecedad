//! `electop serve` at 10,000 lease-key elections: a scrape's CPU, time and size beside
//! etcd's own `/metrics`, the process idle and at 1,000 changes/s, and how long after
//! `etcdctl watch` a change reaches `/api/v1/events`.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::EtcdServer;
use crate::common::http;
use crate::load::{self, Layout, Leases};
use crate::watchers::Lines;
use crate::{drive, electop, procs, source_args};

const N: usize = 10_000;
const WINDOW: Duration = Duration::from_secs(5);
const SCRAPES: u32 = 20;

struct Serve(Child);

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn run(rt: &tokio::runtime::Runtime, home: &Path) {
    let etcd = EtcdServer::start();
    let client = rt.block_on(etcd.client());
    let name = "serve";
    let prefix = format!("/b/{name}/");
    let leases = rt.block_on(load::load(
        &client,
        &prefix,
        N,
        Layout::LeaseKey,
        Leases::PerCandidate,
    ));
    let addr = format!("127.0.0.1:{}", crate::common::free_port());
    let args = source_args(&etcd, name, Layout::LeaseKey);
    let serve = Serve(
        electop(home)
            .args(&args)
            .args(["serve", "--listen", &addr])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("electop serve"),
    );
    let pid = serve.0.id();
    let t0 = Instant::now();
    while http::get(&addr, "/readyz").map_or(true, |r| r.status != 200) {
        assert!(t0.elapsed() < Duration::from_secs(120), "serve never ready");
        std::thread::sleep(Duration::from_millis(50));
    }
    procs::wait_idle(pid, Duration::from_secs(30));
    println!("\n## `electop serve`, {N} lease-key elections with a lease each\n");
    println!("| what | time per scrape (median of {SCRAPES}) | CPU per scrape | bytes |");
    println!("|---|---|---|---|");
    let (time, cpu, bytes) = scrapes(&addr, || procs::cpu(pid));
    println!(
        "| electop serve `/metrics` | {:.1} ms | {:.1} ms | {bytes} |",
        time * 1e3,
        cpu * 1e3
    );
    let etcd_pid = etcd.server_pid();
    let etcd_addr = etcd.endpoint();
    let (time, cpu, bytes) = scrapes(&etcd_addr, || procs::cpu(etcd_pid));
    println!(
        "| etcd's own `/metrics` (beside it) | {:.1} ms | {:.1} ms | {bytes} |",
        time * 1e3,
        cpu * 1e3
    );
    let idle = procs::cpu_percent(pid, WINDOW);
    let c0 = procs::cpu(pid);
    let w0 = Instant::now();
    let made = rt.block_on(drive::run(
        &client,
        &prefix,
        &leases,
        1000,
        WINDOW.as_secs_f64(),
    ));
    let busy = (procs::cpu(pid) - c0).as_secs_f64() * 100.0 / w0.elapsed().as_secs_f64();
    let rate = made as f64 / w0.elapsed().as_secs_f64();
    println!("\n| process | idle CPU | CPU at 1,000/s | RSS |");
    println!("|---|---|---|---|");
    println!(
        "| electop serve | {idle:.2}% | {busy:.1}% ({rate:.0}/s reached) | {:.0} MiB |",
        procs::rss_mib(pid)
    );
    latency(rt, &etcd, &client, &addr, &prefix, &leases);
}

/// Median wall time and mean CPU (by `cpu`) of a scrape, and its size.
fn scrapes(addr: &str, cpu: impl Fn() -> Duration) -> (f64, f64, usize) {
    let mut times = Vec::new();
    let mut bytes = 0;
    let c0 = cpu();
    for _ in 0..SCRAPES {
        let t = Instant::now();
        let (code, body) = http::request(addr, "/metrics", &[]);
        assert_eq!(code, 200, "scrape {addr}");
        times.push(t.elapsed().as_secs_f64());
        bytes = body.len();
    }
    let per = (cpu() - c0).as_secs_f64() / f64::from(SCRAPES);
    times.sort_by(f64::total_cmp);
    (times[times.len() / 2], per, bytes)
}

/// Each change's arrival on `/api/v1/events` minus its arrival at `etcdctl watch`.
fn latency(
    rt: &tokio::runtime::Runtime,
    etcd: &EtcdServer,
    client: &etcd_client::Client,
    addr: &str,
    prefix: &str,
    leases: &[i64],
) {
    // The stream read by a process of its own, as for etcdctl, so both are timed alike.
    let url = format!("http://{addr}/api/v1/events");
    let read = "import sys, urllib.request\nfor l in urllib.request.urlopen(sys.argv[1]):\n    print(l.decode().rstrip(), flush=True)";
    let ours = Lines::start(Command::new("/usr/bin/python3").args(["-c", read, &url]));
    let theirs = Lines::start(etcd.etcdctl_command().args(["watch", "--prefix", prefix]));
    std::thread::sleep(Duration::from_millis(500));
    let (missed, (p50, p99, max)) =
        crate::watchers::extra_delay(rt, client, (prefix, leases), 2_000_000, (&ours, &theirs));
    println!("\n## `/api/v1/events` vs `etcdctl watch`, 20 changes/s\n");
    println!("| changes | missed | extra p50 | extra p99 | extra max |");
    println!("|---|---|---|---|---|");
    println!("| 200 | {missed} | {p50:.2} ms | {p99:.2} ms | {max:.2} ms |");
}
