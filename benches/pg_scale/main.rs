//! Drives a real, throwaway PostgreSQL and prints what one pg-advisory poll costs electop
//! beside the same query run by `psql`, in the same run: `cargo bench --bench pg_scale`
//! (1,000 advisory locks with 3 sessions each: 3,000 `pg_locks` rows joined with
//! `pg_stat_activity`), or `-- --locks N`; `ELECTOP_BENCH_BIN=path` times another build.
//! The three sessions hold every lock in shared mode, which puts the same 3,000 rows in
//! `pg_locks` as a holder and two waiters per lock would, from 3 connections instead of
//! 2,001. `PG_SCALE_EXPLAIN=1` also prints the query's plan (`EXPLAIN ANALYZE`). Figures,
//! never assertions; under `cargo test` it does nothing.

#[path = "../../tests/common/mod.rs"]
#[allow(dead_code, unused_imports, clippy::all)]
mod common;
#[path = "../etcd_scale/procs.rs"]
#[allow(dead_code)]
mod procs;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::postgres::{DATABASE, PASSWORD, PG_BIN, Postgres, USER};

/// Runs of each timed command; the median is printed.
const RUNS: usize = 5;
/// electop's poll while its CPU is measured.
const POLL: Duration = Duration::from_millis(500);
/// How long electop's CPU is measured.
const WINDOW: Duration = Duration::from_secs(10);

fn bin() -> String {
    std::env::var("ELECTOP_BENCH_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_electop").into())
}

fn psql(pg: &Postgres) -> Command {
    let mut c = Command::new(format!("{PG_BIN}/psql"));
    c.env("PGPASSWORD", PASSWORD)
        .args(["-X", "-At", "-h", "127.0.0.1", "-p", &pg.port().to_string()])
        .args(["-U", USER, "-d", DATABASE]);
    c
}

/// A session holding locks 1..=n shared, until killed.
fn holder(pg: &Postgres, n: usize) -> Child {
    psql(pg)
        .args([
            "-c",
            &format!("SELECT count(pg_advisory_lock_shared(i)) FROM generate_series(1, {n}) i"),
            "-c",
            "SELECT pg_sleep(3600)",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("psql")
}

fn locks() -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == "--locks")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000)
}

/// `psql` running the poll query: its own `\timing` of the query, and the whole process.
fn psql_query(pg: &Postgres, query: &str) -> (f64, Duration) {
    let t = Instant::now();
    let out = psql(pg)
        .args(["-c", "\\timing on", "-c", query])
        .output()
        .expect("psql");
    let wall = t.elapsed();
    let text = String::from_utf8_lossy(&out.stdout);
    let ms = text
        .lines()
        .find_map(|l| l.strip_prefix("Time: ")?.split(' ').next()?.parse().ok())
        .unwrap_or(f64::NAN);
    (ms, wall)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("pg_scale: run it with `cargo bench --bench pg_scale`");
        return;
    }
    procs::as_shipped();
    let home = tempfile::tempdir().expect("home");
    let pg = Postgres::start();
    pg.psql(&format!("GRANT pg_read_all_stats TO {USER}"));
    let n = locks();
    let mut sessions: Vec<Child> = (0..3).map(|_| holder(&pg, n)).collect();
    common::wait_until("every lock taken", Duration::from_secs(60), || {
        pg.psql("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'")
            .trim()
            .parse::<usize>()
            .is_ok_and(|c| c == 3 * n)
    });
    let url = pg.url();
    let mut watch = Command::new(bin())
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .env("XDG_DATA_HOME", home.path().join("data"))
        .env("HOME", home.path())
        .args(["--sql", &url, "--scheme", "pg-advisory", "--poll", "500ms"])
        .args(["watch", "--json"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("electop watch");
    // Past the first read (and the process's start).
    std::thread::sleep(Duration::from_secs(3));
    let pid = watch.id();
    let per_poll: Vec<f64> = (0..RUNS)
        .map(|_| {
            let pct = procs::cpu_percent(pid, WINDOW / RUNS as u32);
            // Percent of a core over the window, at one poll every POLL.
            pct / 100.0 * POLL.as_secs_f64() * 1000.0
        })
        .collect();
    let _ = watch.kill();
    let _ = watch.wait();
    let query = electop::backend::session_lock::postgres_poll_query();
    let timed: Vec<(f64, Duration)> = (0..RUNS).map(|_| psql_query(&pg, &query)).collect();
    if std::env::var("PG_SCALE_EXPLAIN").is_ok() {
        let out = psql(&pg)
            .args(["-c", &format!("EXPLAIN ANALYZE {query}")])
            .output()
            .expect("psql");
        println!("{}", String::from_utf8_lossy(&out.stdout));
        let plain = "SELECT count(*) FROM pg_locks l WHERE l.locktype = 'advisory'";
        println!("pg_locks alone: {:?}", psql_query(&pg, plain));
        let join = "SELECT count(*) FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory'";
        println!("join: {:?}", psql_query(&pg, join));
    }
    let psql_query_ms = median(timed.iter().map(|t| t.0).collect());
    let psql_wall_ms = median(timed.iter().map(|t| t.1.as_secs_f64() * 1000.0).collect());
    let electop_ms = median(per_poll);
    println!(
        "\n## pg-advisory: {n} advisory locks, 3 sessions each ({} pg_locks rows), one poll (medians of {RUNS})\n",
        3 * n
    );
    println!(
        "| electop CPU per poll | psql: the same query (its \\timing) | psql: whole run | electop / psql query |"
    );
    println!("|---|---|---|---|");
    println!(
        "| {electop_ms:.1} ms | {psql_query_ms:.1} ms | {psql_wall_ms:.1} ms | {:.2}x |",
        electop_ms / psql_query_ms
    );
    for s in &mut sessions {
        let _ = s.kill();
        let _ = s.wait();
    }
}
