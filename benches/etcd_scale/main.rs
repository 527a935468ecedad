//! Drives a real, throwaway etcd (and a SQLite file) and prints what electop costs beside
//! what etcdctl costs in the same run: `cargo bench --bench etcd_scale` (all of it, a few
//! minutes), or `-- --sizes 1000,10000` for fewer elections, `--layouts el-own,lk-shared` for
//! fewer layouts, `--skip-live`, `--skip-sql`, `--skip-serve` for less, `--restart-etcd` to take the reads
//! again after restarting etcd (see `reads`); `ELECTOP_BENCH_BIN=path` times another build.
//! Figures, never assertions;
//! under `cargo test` it does nothing, so CI's timed tests never start it.

#[path = "../../tests/common/mod.rs"]
#[allow(dead_code, unused_imports, clippy::all)]
mod common;
mod drive;
mod load;
mod procs;
mod serve;
mod sql;
mod tui;
mod watchers;

use std::process::Command;
use std::time::Duration;

use common::EtcdServer;
use load::{Layout, Leases};

/// The electop under test: this build's, or `ELECTOP_BENCH_BIN` to compare another build
/// in the same run of the same bench.
pub fn bin() -> &'static str {
    static BIN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        std::env::var("ELECTOP_BENCH_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_electop").into())
    })
}

const COMBOS: [(Layout, Leases, &str); 4] = [
    (Layout::Election, Leases::Shared, "el-shared"),
    (Layout::Election, Leases::PerCandidate, "el-own"),
    (Layout::LeaseKey, Leases::Shared, "lk-shared"),
    (Layout::LeaseKey, Leases::PerCandidate, "lk-own"),
];

/// The layouts to run: all, or those named by `--layouts el-own,lk-own`.
fn combos() -> Vec<(Layout, Leases, &'static str)> {
    let args: Vec<String> = std::env::args().collect();
    let only: Option<Vec<String>> = args
        .iter()
        .position(|a| a == "--layouts")
        .and_then(|i| args.get(i + 1))
        .map(|s| s.split(',').map(String::from).collect());
    COMBOS
        .into_iter()
        .filter(|(_, _, name)| only.as_ref().is_none_or(|o| o.iter().any(|n| n == name)))
        .collect()
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1000.0)
}

fn electop(home: &std::path::Path) -> Command {
    let mut c = Command::new(bin());
    c.env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_DATA_HOME", home.join("data"))
        .env("HOME", home);
    c
}

fn source_args(etcd: &EtcdServer, prefix: &str, layout: Layout) -> Vec<String> {
    let p = format!("/b/{prefix}/");
    [
        "--etcd",
        &etcd.endpoint(),
        "--prefix",
        &p,
        "--scheme",
        layout.scheme(),
    ]
    .map(String::from)
    .to_vec()
}

/// Status and first frame for every layout at `n` elections.
fn reads(rt: &tokio::runtime::Runtime, home: &std::path::Path, n: usize) {
    let restart = std::env::args().any(|a| a == "--restart-etcd");
    let mut etcd = EtcdServer::start();
    let client = rt.block_on(etcd.client());
    for (layout, leases, name) in combos() {
        let t = std::time::Instant::now();
        rt.block_on(load::load(
            &client,
            &format!("/b/{name}/"),
            n,
            layout,
            leases,
        ));
        eprintln!("loaded {n} {name} in {:?}", t.elapsed());
        let prefix = format!("/b/{name}/");
        // etcd goes on working after a load (a raft snapshot every 100,000 entries, backend
        // commits): whichever command ran then would pay for it.
        procs::wait_idle(etcd.pid(), std::time::Duration::from_secs(60));
        let args = source_args(&etcd, name, layout);
        let t = turns(&etcd, home, &prefix, &args);
        let first = procs::median(3, || tui::first_frame(home, &args));
        row(n, name, &t, &ms(first));
        // etcd 3.4 copies its whole read buffer into every read, and that buffer never
        // shrinks after a burst of writes such as a load (etcd-io/etcd#12933, fixed in 3.5):
        // every call costs more until a restart. The same reads once it restarted.
        if restart {
            etcd.restart();
            procs::wait_idle(etcd.pid(), std::time::Duration::from_secs(60));
            let t = turns(&etcd, home, &prefix, &args);
            row(n, &format!("{name}, etcd restarted"), &t, "");
        }
    }
}

fn row(n: usize, name: &str, t: &Turns, first: &str) {
    let status = match &t.status {
        Ok(d) => format!(
            "{} ({:.1}x; {:.1}x the Go client){}",
            ms(*d),
            ratio(*d, t.get),
            ratio(*d, t.floor),
            t.unread
                .as_ref()
                .map(|u| format!(", TTLs not read: {u}"))
                .unwrap_or_default()
        ),
        Err(e) => format!("fails: {e}"),
    };
    let etcd_cpu = format!("{} / {}", ms(t.etcd_get), ms(t.etcd_status));
    println!(
        "| {n} | {name} | {} | {} | {status} | {etcd_cpu} | {first} |",
        ms(t.get),
        ms(t.floor),
    );
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64()
}

/// Medians of three turns of `etcdctl get`, the Go client's floor and `electop status`, and
/// what etcd itself spent serving each `get` and `status` (mean).
struct Turns {
    get: Duration,
    floor: Duration,
    status: Result<Duration, String>,
    /// What the median `status` said it could not read in time ("N of M").
    unread: Option<String>,
    etcd_get: Duration,
    etcd_status: Duration,
}

/// Taken in turns, so all see the machine as it is; the default --timeout (5 s), as a user
/// runs it. etcd's own CPU shows what waits on etcd: with a lease per candidate, `status`
/// waits mostly on etcd answering one TTL read per lease.
fn turns(etcd: &EtcdServer, home: &std::path::Path, prefix: &str, args: &[String]) -> Turns {
    let floor_bin = floor();
    let (mut gets, mut floors, mut statuses) = (Vec::new(), Vec::new(), Vec::new());
    let (mut etcd_get, mut etcd_status) = (Duration::ZERO, Duration::ZERO);
    for _ in 0..3 {
        let before = procs::cpu(etcd.pid());
        gets.push(procs::time(
            etcd.etcdctl_command().args(["get", "--prefix", prefix]),
        ));
        etcd_get += procs::cpu(etcd.pid()).saturating_sub(before);
        floors.push(procs::time(
            Command::new(&floor_bin).args([&etcd.endpoint(), prefix]),
        ));
        let before = procs::cpu(etcd.pid());
        statuses.push(procs::try_time(
            electop(home).args(args).args(["status", "--json"]),
        ));
        etcd_status += procs::cpu(etcd.pid()).saturating_sub(before);
    }
    let mid = |mut v: Vec<Duration>| {
        v.sort();
        v[1]
    };
    let status = statuses
        .into_iter()
        .collect::<Result<Vec<_>, _>>()
        .map(|mut v| {
            v.sort_by_key(|(d, _)| *d);
            v.swap_remove(1)
        });
    // "9000 of 20000 leases not read within half the 5s timeout: …"
    let unread = status.as_ref().ok().and_then(|(_, err)| {
        let before = &err[..err.find(" leases not read")?];
        let words: Vec<&str> = before.split_whitespace().rev().take(3).collect();
        Some(format!("{} of {}", words.get(2)?, words.first()?))
    });
    Turns {
        get: mid(gets),
        floor: mid(floors),
        status: status.map(|(d, _)| d),
        unread,
        etcd_get: etcd_get / 3,
        etcd_status: etcd_status / 3,
    }
}

/// The Go program that does only what `status` must ask etcd (`floor.go`), built once.
fn floor() -> std::path::PathBuf {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/etcd_scale/floor.go");
    common::campaigners::go_build(&src, "floor")
}

fn main() {
    procs::as_shipped();
    let args: Vec<String> = std::env::args().collect();
    if !args.iter().any(|a| a == "--bench") {
        println!("etcd_scale: run it with `cargo bench --bench etcd_scale`");
        return;
    }
    let sizes: Vec<usize> = args
        .iter()
        .position(|a| a == "--sizes")
        .and_then(|i| args.get(i + 1))
        .map(|s| s.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_else(|| vec![1_000, 10_000, 100_000]);
    let home = tempfile::tempdir().expect("home");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    println!(
        "## Reads: `status` and the first frame, beside `etcdctl get --prefix` (medians of 3)\n"
    );
    println!(
        "| elections | layout | etcdctl get | Go client: range + TTLs | electop status | etcd CPU: get / status | first frame |"
    );
    println!("|---|---|---|---|---|---|---|");
    for n in &sizes {
        reads(&rt, home.path(), *n);
    }
    let skip = |part: &str| args.iter().any(|a| a == &format!("--skip-{part}"));
    if !skip("live") {
        live::run(&rt, home.path());
    }
    if !skip("sql") {
        sql::run(home.path());
    }
    if !skip("serve") {
        serve::run(&rt, home.path());
    }
}

mod live;
