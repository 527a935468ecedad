//! Drives a real, throwaway redis-server and prints what electop costs beside what
//! `redis-cli` costs for the same reads, in the same run: `cargo bench --bench
//! redis_scale` (10,000 lock keys set with `SET key token PX ms`), or `-- --sizes
//! 1000,10000` for other sizes, `--skip-live` for the reads alone, `--screen-only` for the
//! releases on screen alone; `ELECTOP_BENCH_BIN=path` times another build. Figures, never
//! assertions; under `cargo test` it does nothing.

#[path = "../../tests/common/mod.rs"]
#[allow(dead_code, unused_imports, clippy::all)]
mod common;
#[path = "../zk_scale/idle.rs"]
mod idle;
#[path = "../zk_scale/lines.rs"]
#[allow(dead_code)]
mod lines;
mod live;
#[path = "../zk_scale/painted.rs"]
mod painted;
#[path = "../etcd_scale/procs.rs"]
#[allow(dead_code)]
mod procs;
#[path = "../zk_scale/reads.rs"]
#[allow(dead_code)]
mod reads;
#[path = "../etcd_scale/tui.rs"]
#[allow(dead_code)]
mod tui;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::redis::RedisServer;

/// Runs of each timed command; the median is printed.
const RUNS: usize = 5;
/// The lock keys' time: far beyond the run, so none expires while it is measured.
const TTL_MS: u64 = 3_600_000;

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

/// `lock:n<n>:<i>`, held by `tok-<i>`: zero-padded, so the first page shows the first.
pub fn key(n: usize, i: usize) -> String {
    format!("lock:n{n}:{i:05}")
}

pub fn token(i: usize) -> String {
    format!("tok-{i:05}")
}

/// Commands as RESP, for `redis-cli --pipe`.
fn resp(cmds: impl Iterator<Item = Vec<String>>) -> Vec<u8> {
    let mut out = Vec::new();
    for c in cmds {
        out.extend(format!("*{}\r\n", c.len()).into_bytes());
        for a in c {
            out.extend(format!("${}\r\n{a}\r\n", a.len()).into_bytes());
        }
    }
    out
}

/// `redis-cli --pipe` with `input`: its wall time.
fn pipe(port: u16, input: &[u8]) -> Duration {
    let t = Instant::now();
    let mut child = Command::new("redis-cli")
        .args(["-p", &port.to_string(), "--pipe"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("redis-cli --pipe");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input)
        .expect("write");
    assert!(child.wait().expect("wait").success(), "redis-cli --pipe");
    t.elapsed()
}

/// redis-cli's own time for what electop reads: the `SCAN` of the pattern (counted by
/// `wc -l`), and `GET` + `PTTL` of every key pipelined.
fn floor(port: u16, pattern: &str, reads: &[u8]) -> (Duration, Duration) {
    let scan = procs::time(Command::new("sh").args([
        "-c",
        &format!("redis-cli -p {port} --scan --pattern '{pattern}' | wc -l > /dev/null"),
    ]));
    (scan, pipe(port, reads))
}

/// redis-cli's floor and `status` in turns, then the first frame: one row of the table.
fn timed_reads(home: &Path, server: &RedisServer, args: &[String], n: usize) {
    let (port, pattern) = (server.port(), &args[3]);
    let get = (0..n).flat_map(|i| {
        [
            vec!["GET".to_string(), key(n, i)],
            vec!["PTTL".to_string(), key(n, i)],
        ]
    });
    let get = resp(get);
    let (mut scan, mut pttl, mut wall, mut cpu) = (vec![], vec![], vec![], vec![]);
    for _ in 0..RUNS {
        let (s, p) = floor(port, pattern, &get);
        scan.push(s);
        pttl.push(p);
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
    let (scan, pttl) = (reads::median(&mut scan), reads::median(&mut pttl));
    let (wall, cpu) = (reads::median(&mut wall), reads::median(&mut cpu));
    let first = procs::median(RUNS, || tui::first_frame(home, args));
    let cli = scan + pttl;
    println!(
        "| {n} | {:.1} ms (scan {:.1} ms + GET/PTTL pipe {:.1} ms) | {:.1} ms ({:.2}x) | {:.1} ms | {:.1} ms |",
        ms(cli),
        ms(scan),
        ms(pttl),
        ms(wall),
        ms(wall) / ms(cli),
        ms(cpu),
        ms(first),
    );
}

/// `n` lock keys set, then their reads timed and the live costs.
fn reads(home: &Path, server: &RedisServer, n: usize) {
    let port = server.port();
    let set = (0..n).map(|i| {
        vec![
            "SET".into(),
            key(n, i),
            token(i),
            "PX".into(),
            TTL_MS.to_string(),
        ]
    });
    let t = Instant::now();
    pipe(port, &resp(set));
    eprintln!("set {n} lock keys in {:?}", t.elapsed());
    let pattern = format!("lock:n{n}:*");
    let args: Vec<String> = ["--redis", &server.url(), "--prefix", &pattern]
        .map(String::from)
        .to_vec();
    if !screen_only() {
        timed_reads(home, server, &args, n);
    }
    if !std::env::args().any(|a| a == "--skip-live") && n == *sizes().last().expect("a size") {
        live::run(home, server, &args, n);
    }
}

/// `--screen-only`: the keys set, then only the releases on screen (the reads' figures,
/// idle and `watch --json` left out).
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
        println!("redis_scale: run it with `cargo bench --bench redis_scale`");
        return;
    }
    procs::as_shipped();
    let home = tempfile::tempdir().expect("home");
    let server = RedisServer::start("KEA", None);
    println!(
        "## Reads: Redis lock keys (`SET key token PX ms`), `electop status` beside redis-cli (medians of {RUNS})\n"
    );
    println!(
        "| lock keys | redis-cli: --scan --pattern, then GET + PTTL of each with --pipe | electop status --output json (x redis-cli) | status CPU | first frame |"
    );
    println!("|---|---|---|---|---|");
    for n in sizes() {
        reads(home.path(), &server, n);
    }
}
