//! One table of what electop costs on every store at 10,000 elections, beside the store's
//! own tools in the same run, and optionally beside another build run in turns:
//! `scripts/bench.sh` (which runs `cargo bench --bench table -- ...`). Options:
//! `--stores etcd,sqlite,pg,zk,redis,kube`, `--quick` (shorter windows, fewer runs),
//! `--baseline PATH` (another electop, measured in turns with this one, a ratio column),
//! `--bin PATH` (the electop measured: bench.sh passes its release build; `cargo bench`
//! alone measures the one it built), `--n N` (elections), `--only dashboard,watch,status`
//! (those measures alone: a quicker loop while working on one; the status and first-frame
//! figures then come from a store that saw no churn), `--etcd-as-loaded` (etcd measured
//! as the load left it, not restarted: its lease reads two to three times slower).
//! Figures, never assertions; under `cargo test` it does nothing.

#[path = "../../tests/common/mod.rs"]
#[allow(dead_code, unused_imports, clippy::all)]
mod common;
mod lines;
#[path = "../etcd_scale/load.rs"]
#[allow(dead_code)]
mod load;
mod measure;
#[path = "../etcd_scale/procs.rs"]
#[allow(dead_code)]
mod procs;
mod report;
mod rigs;
#[path = "../etcd_scale/tui.rs"]
#[allow(dead_code)]
mod tui;
mod writes;
#[path = "../zk_scale/load.rs"]
#[allow(dead_code)]
mod zk_load;
#[path = "../zk_scale/reads.rs"]
#[allow(dead_code)]
mod zk_reads;

use std::path::Path;
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

use measure::{Figures, Plan};
use rigs::Rig;

/// The builds measured: this one first, then the baseline if any.
static BUILDS: Mutex<Vec<String>> = Mutex::new(Vec::new());
/// Which of them the shared helpers (`tui`) start now.
static CURRENT: Mutex<usize> = Mutex::new(0);

pub fn bin() -> String {
    let i = *CURRENT.lock().expect("current");
    BUILDS.lock().expect("builds")[i].clone()
}

/// The store being measured, for file names.
static STORE: Mutex<String> = Mutex::new(String::new());

pub fn store_now() -> String {
    STORE.lock().expect("store").clone()
}

pub fn use_build(i: usize) {
    *CURRENT.lock().expect("current") = i;
}

pub fn electop(home: &Path) -> Command {
    let mut c = Command::new(bin());
    c.env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_DATA_HOME", home.join("data"))
        .env("HOME", home);
    c
}

pub fn electop_bin(i: usize, home: &Path) -> Command {
    use_build(i);
    electop(home)
}

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    let i = args.iter().position(|a| a == name)?;
    args.get(i + 1).cloned()
}

/// Whether `--only` (a comma-separated list; every measure without it) names `measure`.
fn wanted(measure: &str) -> bool {
    arg("--only").is_none_or(|only| only.split(',').any(|m| m == measure))
}

/// Every measure of one store, the builds in turns.
fn run_store<R: Rig>(rt: &tokio::runtime::Runtime, store: &str, rig: &R, plan: Plan) {
    *STORE.lock().expect("store") = store.to_string();
    let builds = BUILDS.lock().expect("builds").len();
    // A home each: the history journal of one build is not the other's to replay.
    let homes: Vec<tempfile::TempDir> = (0..builds).map(|_| rigs::home()).collect();
    let paths: Vec<&Path> = homes.iter().map(|h| h.path()).collect();
    let mut figs = vec![Figures::default(); builds];
    let window = plan.window + measure::TRACED;
    let step = (rig.rate() as f64 * window.as_secs_f64()) as usize + 1;
    let mut seq = 0;
    for (i, home) in paths.iter().enumerate().filter(|_| wanted("dashboard")) {
        use_build(i);
        eprintln!("{store}: the dashboard, build {i}");
        measure::dashboard(rt, rig, home, plan, seq, &mut figs[i]);
        seq += step;
    }
    for (i, home) in paths.iter().enumerate().filter(|_| wanted("watch")) {
        use_build(i);
        eprintln!("{store}: watch --json, build {i}");
        measure::watch(rt, rig, home, plan, seq, &mut figs[i]);
        seq += step;
    }
    let mut refs = measure::StatusRefs::default();
    if wanted("status") {
        eprintln!("{store}: status and the first frame");
        refs = measure::status_turns(rt, rig, &paths, plan, &mut figs);
        measure::first_frame_turns(rig, &paths, plan, &mut figs);
    }
    let watch_tool = rig.tool_watch().map(|(n, _)| n);
    report::store(store, rig.rate(), &figs, &refs, watch_tool);
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("table: run it with scripts/bench.sh");
        return;
    }
    procs::as_shipped();
    let quick = std::env::args().any(|a| a == "--quick");
    let n: usize = arg("--n").and_then(|s| s.parse().ok()).unwrap_or(10_000);
    let plan = Plan {
        // TABLE_WINDOW=SECS: longer windows, e.g. for a profile of an idle process.
        window: Duration::from_secs(
            std::env::var("TABLE_WINDOW")
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(if quick { 4 } else { 10 }),
        ),
        // TABLE_RUNS=N: more runs of `status` and the first frame, for a steadier median.
        runs: std::env::var("TABLE_RUNS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(if quick { 3 } else { 5 }),
        n,
    };
    {
        let mut b = BUILDS.lock().expect("builds");
        b.push(arg("--bin").unwrap_or_else(|| env!("CARGO_BIN_EXE_electop").into()));
        b.extend(arg("--baseline"));
    }
    let stores = arg("--stores").unwrap_or_else(|| "etcd,sqlite,pg,zk,redis,kube".into());
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    for store in stores.split(',') {
        eprintln!("{store}: loading {n} elections");
        match store {
            "etcd" => {
                let restart = !etcd_as_loaded();
                run_store(&rt, store, &rigs::Etcd::start(&rt, n, restart), plan)
            }
            "sqlite" => run_store(&rt, store, &rigs::Sql::start(&rt, false, n), plan),
            "pg" => run_store(&rt, store, &rigs::Sql::start(&rt, true, n), plan),
            "zk" => run_store(&rt, store, &rigs::Zk::start(&rt, n), plan),
            "redis" => run_store(&rt, store, &rigs::Redis::start(&rt, n), plan),
            "kube" => run_store(&rt, store, &rigs::Kube::start(&rt, n), plan),
            other => eprintln!("unknown store {other}: etcd, sqlite, pg, zk, redis, kube"),
        }
    }
    report::print(&BUILDS.lock().expect("builds"), plan, &load());
}

/// `--etcd-as-loaded`: etcd measured as its load left it, not restarted.
pub fn etcd_as_loaded() -> bool {
    std::env::args().any(|a| a == "--etcd-as-loaded")
}

/// The machine's load average as /proc says it, for the table's heading.
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}
