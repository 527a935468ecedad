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
/// Each run at 1,000 changes/s.
const WINDOW: Duration = Duration::from_secs(5);
/// Each idle window: long enough that the clock's 10 ms ticks of CPU time are 0.05%.
const IDLE: Duration = Duration::from_secs(20);
/// Runs of each, for a median: the machine is shared.
const RUNS: usize = 3;
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
    let serve = start(home, &etcd, name, &addr);
    let pid = serve.0.id();
    println!("\n## `electop serve`, {N} lease-key elections with a lease each\n");
    let perf = Perf::start(pid, "scrape");
    scrape_table(&addr, pid);
    drop(perf);
    if let Ok(dir) = std::env::var("ELECTOP_BENCH_PERF") {
        let (_, body) = http::request(&addr, "/metrics", &[]);
        std::fs::write(format!("{dir}/scrape.txt"), body).expect("keep a scrape");
    }
    etcd_scrapes(&etcd);
    idle_and_busy(rt, pid, (&client, &prefix, &leases));
    latency(rt, &etcd, &client, &addr, &prefix, &leases);
    if let Some(minutes) = env_num("ELECTOP_BENCH_SOAK_MIN") {
        let rate = env_num("ELECTOP_BENCH_SOAK_RATE").unwrap_or(100.0) as usize;
        soak(
            rt,
            (&client, &prefix, &leases),
            (pid, &addr),
            minutes as u32,
            rate,
        );
    }
}

/// `electop serve` on the loaded elections, ready (every source synced) and settled.
fn start(home: &Path, etcd: &EtcdServer, name: &str, addr: &str) -> Serve {
    let args = source_args(etcd, name, Layout::LeaseKey);
    let serve = Serve(
        electop(home)
            .args(&args)
            .args(["serve", "--listen", addr])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("electop serve"),
    );
    let t0 = Instant::now();
    while http::get(addr, "/readyz").map_or(true, |r| r.status != 200) {
        assert!(t0.elapsed() < Duration::from_secs(120), "serve never ready");
        std::thread::sleep(Duration::from_millis(50));
    }
    procs::wait_idle(serve.0.id(), Duration::from_secs(30));
    serve
}

/// etcd's own `/metrics`, scraped the same way, beside electop's.
fn etcd_scrapes(etcd: &EtcdServer) {
    let etcd_pid = etcd.server_pid();
    let (time, cpu, bytes) = scrapes(&etcd.endpoint(), &[], || procs::cpu(etcd_pid));
    println!("\n| beside it | time per scrape | CPU per scrape | bytes |\n|---|---|---|---|");
    println!(
        "| etcd's own `/metrics` | {:.1} ms | {:.1} ms | {bytes} |",
        time * 1e3,
        cpu * 1e3
    );
}

/// serve's CPU idle, then in windows of 1,000 changes/s, and its RSS after.
fn idle_and_busy(
    rt: &tokio::runtime::Runtime,
    pid: u32,
    (client, prefix, leases): (&etcd_client::Client, &str, &[i64]),
) {
    let perf = Perf::start(pid, "idle");
    let idle: Vec<f64> = (0..RUNS).map(|_| procs::cpu_percent(pid, IDLE)).collect();
    drop(perf);
    let perf = Perf::start(pid, "busy");
    let busy: Vec<(f64, f64)> = (0..RUNS)
        .map(|_| {
            let c0 = procs::cpu(pid);
            let w0 = Instant::now();
            let made = rt.block_on(drive::run(
                client,
                prefix,
                leases,
                1000,
                WINDOW.as_secs_f64(),
            ));
            let secs = w0.elapsed().as_secs_f64();
            (
                (procs::cpu(pid) - c0).as_secs_f64() * 100.0 / secs,
                made as f64 / secs,
            )
        })
        .collect();
    drop(perf);
    println!(
        "\n| process | idle CPU (median of {RUNS} × {}s) | CPU at 1,000/s (median of {RUNS} × {}s) | RSS |",
        IDLE.as_secs(),
        WINDOW.as_secs()
    );
    println!("|---|---|---|---|");
    let cpu: Vec<f64> = busy.iter().map(|b| b.0).collect();
    let rates: Vec<f64> = busy.iter().map(|b| b.1).collect();
    println!(
        "| electop serve | {:.2}% ({}) | {:.1}% ({}; {:.0}/s reached) | {:.0} MiB |",
        median(&idle),
        list(&idle, 2),
        median(&cpu),
        list(&cpu, 1),
        median(&rates),
        procs::rss_mib(pid)
    );
}

fn env_num(name: &str) -> Option<f64> {
    std::env::var(name).ok()?.parse().ok()
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn list(v: &[f64], digits: usize) -> String {
    let s: Vec<String> = v.iter().map(|x| format!("{x:.digits$}")).collect();
    s.join(", ")
}

/// `perf record` on the serve process while a phase runs, when `ELECTOP_BENCH_PERF` names a
/// directory (a profile per phase, `<dir>/<phase>.data`); stopped when dropped.
struct Perf(Option<Child>);

impl Perf {
    fn start(pid: u32, phase: &str) -> Perf {
        let Ok(dir) = std::env::var("ELECTOP_BENCH_PERF") else {
            return Perf(None);
        };
        let out = format!("{dir}/{phase}.data");
        let child = Command::new("perf")
            .args([
                "record",
                "-F",
                "999",
                // The release build keeps no frame pointers: `-g` stacks stopped at the
                // first frame, so the callers of memcmp or malloc were not told.
                "--call-graph",
                "dwarf,16384",
                "-p",
                &pid.to_string(),
                "-o",
                &out,
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok();
        std::thread::sleep(Duration::from_millis(300));
        Perf(child)
    }
}

impl Drop for Perf {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            // SAFETY: signals our own child, by its id.
            unsafe { libc::kill(c.id() as i32, libc::SIGINT) };
            let _ = c.wait();
        }
    }
}

/// Changes at `rate` a second for `minutes`, with a scrape every 15 s as Prometheus would
/// make: each minute, the CPU used over it and the RSS at its end; then the slope of each.
fn soak(
    rt: &tokio::runtime::Runtime,
    (client, prefix, leases): (&etcd_client::Client, &str, &[i64]),
    (pid, addr): (u32, &str),
    minutes: u32,
    rate: usize,
) {
    println!("\n## soak: {rate} changes/s for {minutes} min, a scrape every 15 s\n");
    println!("| minute | CPU | RSS MiB | scrape bytes | changes/s reached |");
    println!("|---|---|---|---|---|");
    let mut samples = Vec::new();
    for m in 1..=minutes {
        let (c0, w0) = (procs::cpu(pid), Instant::now());
        let (mut bytes, mut made) = (0, 0);
        for _ in 0..4 {
            made += rt.block_on(drive::run(client, prefix, leases, rate, 15.0));
            let (code, body) = http::request(addr, "/metrics", &[]);
            assert_eq!(code, 200, "soak scrape");
            bytes = body.len();
        }
        let secs = w0.elapsed().as_secs_f64();
        let cpu = (procs::cpu(pid) - c0).as_secs_f64() * 100.0 / secs;
        let rss = procs::rss_mib(pid);
        let reached = made as f64 / secs;
        println!("| {m} | {cpu:.2}% | {rss:.1} | {bytes} | {reached:.0} |");
        // As a cluster's own compaction would: an hour at 1,000/s is 3.6 million
        // revisions, over etcd's 2 GB quota if every one were kept.
        rt.block_on(compact(client, prefix));
        samples.push((f64::from(m), cpu, rss));
    }
    let slope = |f: fn(&(f64, f64, f64)) -> f64| {
        let n = samples.len() as f64;
        let mx = samples.iter().map(|s| s.0).sum::<f64>() / n;
        let my = samples.iter().map(f).sum::<f64>() / n;
        let sxy: f64 = samples.iter().map(|s| (s.0 - mx) * (f(s) - my)).sum();
        let sxx: f64 = samples.iter().map(|s| (s.0 - mx).powi(2)).sum();
        sxy / sxx.max(1e-9)
    };
    println!(
        "\nslope over {minutes} min: CPU {:+.3} points/min, RSS {:+.3} MiB/min",
        slope(|s| s.1),
        slope(|s| s.2)
    );
    // The scrapes again now that every election has changed (its counts and `cause`
    // labels, the largest a scrape gets), with the driver stopped so the CPU is theirs.
    procs::wait_idle(pid, Duration::from_secs(30));
    println!("\n## scrapes after the soak\n");
    let perf = Perf::start(pid, "churnscrape");
    scrape_table(addr, pid);
    drop(perf);
    println!("\nRSS after them: {:.1} MiB", procs::rss_mib(pid));
}

/// A scrape in each format, with and without gzip (Prometheus asks for OpenMetrics and
/// gzip): time, electop's CPU and bytes on the wire.
fn scrape_table(addr: &str, pid: u32) {
    println!("| scrape | time per scrape (median of {SCRAPES}) | CPU per scrape (mean) | bytes |");
    println!("|---|---|---|---|");
    let om = "Accept: application/openmetrics-text; version=1.0.0";
    let gz = "Accept-Encoding: gzip";
    for (what, accept) in [
        ("text", &[][..]),
        ("text, gzip", &[gz][..]),
        ("OpenMetrics", &[om][..]),
        ("OpenMetrics, gzip", &[om, gz][..]),
    ] {
        let (time, cpu, bytes) = scrapes(addr, accept, || procs::cpu(pid));
        println!(
            "| electop serve `/metrics` ({what}) | {:.1} ms | {:.1} ms | {bytes} |",
            time * 1e3,
            cpu * 1e3
        );
    }
}

/// Median wall time and mean CPU (by `cpu`) of a scrape, and its size.
fn scrapes(addr: &str, accept: &[&str], cpu: impl Fn() -> Duration) -> (f64, f64, usize) {
    let mut times = Vec::new();
    let mut bytes = 0;
    let c0 = cpu();
    for _ in 0..SCRAPES {
        let t = Instant::now();
        let (code, head, body) = http::request_raw(addr, "/metrics", accept);
        assert_eq!(code, 200, "scrape {addr}: {head}");
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

/// Compacts etcd's history to 10,000 revisions back (electop's watch is past them).
async fn compact(client: &etcd_client::Client, prefix: &str) {
    let mut c = client.clone();
    let head = c.get(prefix, None).await.expect("a read for the revision");
    let rev = head.header().map_or(0, |h| h.revision()) - 10_000;
    if rev > 0 {
        c.compact(rev, None).await.expect("compact");
    }
}
