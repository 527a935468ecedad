//! Drives a real, throwaway ZooKeeper and prints what electop costs beside what ZooKeeper's
//! own Java client costs for the same reads, in the same run: `cargo bench --bench
//! zk_scale` (10,000 Curator `LeaderLatch` elections of three candidates), or
//! `-- --sizes 1000,10000` for other sizes, `--skip-live` for the reads alone,
//! `--screen-only` for the failovers on screen alone; `ELECTOP_BENCH_BIN=path` times another
//! build. Figures, never assertions; under `cargo test` it does nothing.

#[path = "../../tests/common/mod.rs"]
#[allow(dead_code, unused_imports, clippy::all)]
mod common;
mod idle;
mod lines;
mod live;
mod load;
mod painted;
#[path = "../etcd_scale/procs.rs"]
#[allow(dead_code)]
mod procs;
mod reads;
#[path = "../etcd_scale/tui.rs"]
#[allow(dead_code)]
mod tui;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::zookeeper::ZkServer;

/// Runs of each timed command; the median is printed.
const RUNS: usize = 5;

/// The electop under test: this build's, or `ELECTOP_BENCH_BIN`.
pub fn bin() -> &'static str {
    static BIN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        std::env::var("ELECTOP_BENCH_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_electop").into())
    })
}

pub fn electop(home: &Path) -> Command {
    let mut c = Command::new(bin());
    c.env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_DATA_HOME", home.join("data"))
        .env("HOME", home);
    c
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn median_f64(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// `status` and the Java floor in turns, then the first frames: one row of the table.
fn timed_reads(home: &Path, zk: &ZkServer, args: &[String], n: usize) {
    let prefix = &args[3];
    let (mut cold, mut warm, mut jvm) = (Vec::new(), Vec::new(), Vec::new());
    let (mut wall, mut cpu) = (Vec::new(), Vec::new());
    // In turns, so both see the machine as it is. A 60 s timeout: on a busy shared machine
    // 10,000 elections take longer than the default 5 s to read, for the Java client too.
    for _ in 0..RUNS {
        let (c, w, j) = reads::floor(&zk.endpoint(), prefix);
        cold.push(c);
        warm.push(w);
        jvm.push(j);
        let (d, c) = reads::wall_and_cpu(electop(home).args(args).args([
            "status",
            "--output",
            "json",
            "--timeout",
            "60s",
        ]));
        wall.push(d);
        cpu.push(c);
    }
    let (cold, warm) = (median_f64(cold), median_f64(warm));
    let (wall, cpu) = (reads::median(&mut wall), reads::median(&mut cpu));
    let jvm = reads::median(&mut jvm);
    let first = procs::median(RUNS, || tui::first_frame(home, args));
    // An electop from before `whole` existed never quits on it.
    let whole = match std::env::var("ELECTOP_BENCH_BIN") {
        Ok(_) => "-".to_string(),
        Err(_) => format!(
            "{:.1} ms",
            ms(procs::median(RUNS, || {
                tui::first_frame_until(home, args, "whole")
            }))
        ),
    };
    println!(
        "| {n} | {:.1} ms (cold {cold:.1} ms; {:.0} ms with the JVM's start) | {:.1} ms ({:.2}x) | {:.1} ms | {:.1} ms | {whole} |",
        warm,
        ms(jvm),
        ms(wall),
        ms(wall) / warm,
        ms(cpu),
        ms(first),
    );
}

/// `n` elections loaded under their own prefix, then their reads timed and the live costs.
fn reads(rt: &tokio::runtime::Runtime, home: &Path, zk: &ZkServer, n: usize) {
    let loader = rt.block_on(load::connect(&zk.endpoint()));
    let prefix = format!("/b/n{n}");
    let t = std::time::Instant::now();
    rt.block_on(load::load(&loader, &prefix, n));
    eprintln!("loaded {n} elections in {:?}", t.elapsed());
    procs::wait_idle(zk.pid(), Duration::from_secs(60));
    let args: Vec<String> = ["--zk", &zk.endpoint(), "--prefix", &prefix]
        .map(String::from)
        .to_vec();
    if !screen_only() {
        timed_reads(home, zk, &args, n);
    }
    if !std::env::args().any(|a| a == "--skip-live") && n == *sizes().last().expect("a size") {
        live::run(rt, home, &loader, &args, n);
    }
    // The loader's session ends here, and its ephemeral nodes with it.
    drop(loader);
}

/// `--screen-only`: the load, then only the changes on screen (the reads' figures, idle
/// and `watch --json` left out).
pub fn screen_only() -> bool {
    std::env::args().any(|a| a == "--screen-only")
}

fn sizes() -> Vec<usize> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == "--sizes")
        .and_then(|i| args.get(i + 1))
        .map(|s| s.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_else(|| vec![10_000])
}

fn main() {
    if painted::marker_main() {
        return;
    }
    if !std::env::args().any(|a| a == "--bench") {
        println!("zk_scale: run it with `cargo bench --bench zk_scale`");
        return;
    }
    procs::as_shipped();
    let home = tempfile::tempdir().expect("home");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let zk = ZkServer::start();
    println!(
        "## Reads: Curator LeaderLatch elections of 3 candidates, `electop status` beside ZooKeeper's Java client (medians of {RUNS})\n"
    );
    println!(
        "| elections | Java client: exists + getChildren + getData, all async | electop status --output json (x Java) | status CPU | first frame | first frame with every election |"
    );
    println!("|---|---|---|---|---|---|");
    for n in sizes() {
        reads(&rt, home.path(), &zk, n);
    }
}
