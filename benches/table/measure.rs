//! The measures of one build against one rig: the dashboard idle and under churn, `watch
//! --json` under churn beside the store's own watch, `status` and the first frame.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::lines::Lines;
use crate::rigs::Rig;
use crate::{procs, tui, zk_reads};

/// How long each CPU window lasts and how many runs a timed command gets.
#[derive(Clone, Copy)]
pub struct Plan {
    pub window: Duration,
    pub runs: usize,
    pub n: usize,
}

/// One build's figures; `None` where a measure failed or does not apply.
#[derive(Default, Clone)]
pub struct Figures {
    pub idle: Option<f64>,
    pub churn: Option<f64>,
    /// Changes a second the churn reached while the dashboard ran.
    pub reached: f64,
    pub rss: Option<f64>,
    pub syscw: Option<f64>,
    /// The same calls by where they went, over a traced window of their own.
    pub writes: Option<crate::writes::Writes>,
    pub watch_cpu: Option<f64>,
    /// p50, p99 and max ms after the store's own watch (or the write's reply), and misses.
    pub lag: Option<(f64, f64, f64, usize)>,
    /// The same of a second of the store's own watches after the first, in the same
    /// window: the floor of the measure on this machine.
    pub tool_lag: Option<(f64, f64, f64)>,
    pub status_ms: Option<f64>,
    pub first_ms: Option<f64>,
}

/// Write system calls so far (`/proc/PID/io`).
fn syscw(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/io"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("syscw:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// CPU time of every thread of `pid` so far, in nanoseconds (`schedstat`): the clock
/// ticks of `/proc/PID/stat` (10 ms) are too coarse for an idle process's fraction of a
/// percent over seconds.
pub fn cpu(pid: u32) -> Duration {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Duration::ZERO;
    };
    let ns: u64 = tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    Duration::from_nanos(ns)
}

/// Share of one core `pid` used over `window`, in %.
fn cpu_percent(pid: u32, window: Duration) -> f64 {
    let (c0, t0) = (cpu(pid), Instant::now());
    let perf = perf_start(pid, "idle");
    std::thread::sleep(window);
    perf_end(perf);
    (cpu(pid) - c0).as_secs_f64() * 100.0 / t0.elapsed().as_secs_f64()
}

/// With `TABLE_PERF=DIR`, a `perf record` of `pid` for the window named `what` (this
/// build's only), into `DIR/<store>-<what>.data`.
fn perf_start(pid: u32, what: &str) -> Option<std::process::Child> {
    let dir = std::env::var("TABLE_PERF").ok()?;
    if *crate::CURRENT.lock().expect("current") != 0 {
        return None;
    }
    let out = format!("{dir}/{}-{what}.data", crate::store_now());
    std::process::Command::new("perf")
        .args([
            "record",
            "-F",
            "1999",
            "-g",
            "-q",
            "-o",
            &out,
            "-p",
            &pid.to_string(),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()
}

fn perf_end(child: Option<std::process::Child>) {
    if let Some(c) = child {
        // SIGINT: perf writes its file and exits.
        unsafe { libc::kill(c.id() as i32, libc::SIGINT) };
        let _ = c.wait_with_output();
    }
}

/// `rate` changes a second for `secs`, from change `first` on: each change's token and
/// when its write was answered, and the rate reached.
pub fn churn<R: Rig>(
    rt: &tokio::runtime::Runtime,
    rig: &R,
    first: usize,
    secs: f64,
) -> (Vec<(String, Instant)>, f64) {
    let rate = rig.rate();
    let per_tick = (rate / 100).max(1);
    let total = (rate as f64 * secs) as usize;
    let t0 = Instant::now();
    let made = rt.block_on(async {
        let mut interval = tokio::time::interval(Duration::from_millis(10));
        let mut made = Vec::with_capacity(total);
        let mut seq = first;
        while seq < first + total {
            interval.tick().await;
            let batch = seq..(seq + per_tick).min(first + total);
            seq = batch.end;
            let done = futures::future::join_all(batch.map(|s| async move {
                let token = rig.change(s).await;
                (token, Instant::now())
            }))
            .await;
            made.extend(done);
        }
        made
    });
    let reached = made.len() as f64 / t0.elapsed().as_secs_f64();
    (made, reached)
}

/// The dashboard in a 200x50 tmux: idle CPU once it shows every election, then CPU, RSS
/// and write syscalls under churn.
pub fn dashboard<R: Rig>(
    rt: &tokio::runtime::Runtime,
    rig: &R,
    home: &Path,
    plan: Plan,
    first: usize,
    f: &mut Figures,
) {
    let t = tui::start(home, &rig.args());
    let want = format!("{} elections", plan.n);
    t.tmux
        .wait_screen("the elections", Duration::from_secs(120), |s| {
            s.contains(&want) && !s.contains("replaying")
        });
    // The first seconds' work (history, a member's first probe) is not idling.
    std::thread::sleep(Duration::from_secs(3));
    f.idle = Some(cpu_percent(t.pid, plan.window));
    let (c0, w0, t0) = (cpu(t.pid), syscw(t.pid), Instant::now());
    let perf = perf_start(t.pid, "churn");
    let (_, reached) = churn(rt, rig, first, plan.window.as_secs_f64());
    perf_end(perf);
    let secs = t0.elapsed().as_secs_f64();
    f.churn = Some((cpu(t.pid) - c0).as_secs_f64() * 100.0 / secs);
    f.syscw = Some((syscw(t.pid) - w0) as f64 / secs);
    f.rss = Some(procs::rss_mib(t.pid));
    f.reached = reached;
    let first = first + (rig.rate() as f64 * plan.window.as_secs_f64()) as usize;
    let out = home.join("writes.strace");
    if let Some(trace) = crate::writes::trace(t.pid, &out) {
        // strace attaches thread by thread; let it finish before the window starts.
        std::thread::sleep(Duration::from_millis(300));
        let t0 = Instant::now();
        churn(rt, rig, first, TRACED.as_secs_f64());
        f.writes = crate::writes::count(trace, &out, t0.elapsed().as_secs_f64());
        keep_trace(&out);
    }
}

/// With `TABLE_PERF=DIR`, the write calls' trace of this build is kept beside its profiles,
/// as `DIR/<store>-writes.strace`: which thread wrote what, and when.
fn keep_trace(out: &std::path::Path) {
    let Ok(dir) = std::env::var("TABLE_PERF") else {
        return;
    };
    if *crate::CURRENT.lock().expect("current") == 0 {
        let to = format!("{dir}/{}-writes.strace", crate::store_now());
        let _ = std::fs::copy(out, to);
    }
}

/// The window whose write calls are traced (after the churn window, at the same rate).
pub const TRACED: Duration = Duration::from_secs(3);

/// `watch --json` under churn: its CPU, and each change's lag after the store's own watch
/// (or, for a store without one, after the write's reply).
pub fn watch<R: Rig>(
    rt: &tokio::runtime::Runtime,
    rig: &R,
    home: &Path,
    plan: Plan,
    first: usize,
    f: &mut Figures,
) {
    let ours = Lines::start(
        crate::electop(home)
            .args(rig.args())
            .args(["watch", "--json"]),
    );
    if !ours.wait_synced(Duration::from_secs(120)) {
        eprintln!("watch --json did not sync");
        return;
    }
    let theirs = rig.tool_watch().map(|(_, l)| l);
    let again = rig.tool_watch().map(|(_, l)| l);
    // etcdctl and redis-cli print nothing once ready; give them a moment.
    std::thread::sleep(Duration::from_millis(700));
    ours.reset();
    let (c0, t0) = (cpu(ours.pid()), Instant::now());
    let perf = perf_start(ours.pid(), "watch");
    let (made, _) = churn(rt, rig, first, plan.window.as_secs_f64());
    std::thread::sleep(Duration::from_millis(500));
    perf_end(perf);
    f.watch_cpu = Some((cpu(ours.pid()) - c0).as_secs_f64() * 100.0 / t0.elapsed().as_secs_f64());
    let mut lags = Vec::new();
    let mut missed = 0;
    for (token, written) in &made {
        let Some(at) = ours.first(token) else {
            missed += 1;
            continue;
        };
        let from = theirs
            .as_ref()
            .and_then(|t| t.first(token))
            .unwrap_or(*written);
        lags.push(at.saturating_duration_since(from).as_secs_f64() * 1000.0);
    }
    let (p50, p99, max) = procs::percentiles(lags);
    f.lag = Some((p50, p99, max, missed));
    if let (Some(first), Some(second)) = (&theirs, &again) {
        let lags = made
            .iter()
            .filter_map(|(token, _)| Some((first.first(token)?, second.first(token)?)))
            .map(|(a, b)| b.saturating_duration_since(a).as_secs_f64() * 1000.0)
            .collect();
        f.tool_lag = Some(procs::percentiles(lags));
    }
}

/// The store's tool's median `status` time, and the median of what else `status` asks the
/// store (`Rig::status_asks_more`), each with its name.
#[derive(Default)]
pub struct StatusRefs {
    pub tool: (&'static str, f64),
    pub more: Option<(&'static str, f64)>,
}

/// `status` (median of the runs), each run beside one of the store's tool and of what else
/// it asks the store.
pub fn status_turns<R: Rig>(
    rt: &tokio::runtime::Runtime,
    rig: &R,
    homes: &[&Path],
    plan: Plan,
    figs: &mut [Figures],
) -> StatusRefs {
    let mut tool = Vec::new();
    let mut more = Vec::new();
    let mut ours: Vec<Vec<Duration>> = vec![Vec::new(); homes.len()];
    let (mut name, mut more_name) = ("", "");
    for run in 0..plan.runs {
        let (n, d) = rig.tool_status();
        name = n;
        tool.push(d);
        if let Some((n, d)) = rt.block_on(rig.status_asks_more()) {
            more_name = n;
            more.push(d);
        }
        for i in turns(run, homes.len()) {
            let home = homes[i];
            let mut cmd = crate::electop_bin(i, home);
            cmd.args(rig.args())
                .args(["status", "--output", "json", "--timeout", "60s"]);
            ours[i].push(zk_reads::wall_and_cpu(&mut cmd).0);
        }
    }
    for (i, v) in ours.iter_mut().enumerate() {
        figs[i].status_ms = Some(ms(zk_reads::median(v)));
    }
    StatusRefs {
        tool: (name, ms(zk_reads::median(&mut tool))),
        more: (!more.is_empty()).then(|| (more_name, ms(zk_reads::median(&mut more)))),
    }
}

/// The first frame (median of the runs), the builds in turns.
pub fn first_frame_turns<R: Rig>(rig: &R, homes: &[&Path], plan: Plan, figs: &mut [Figures]) {
    let mut v: Vec<Vec<Duration>> = vec![Vec::new(); homes.len()];
    for run in 0..plan.runs {
        for i in turns(run, homes.len()) {
            let home = homes[i];
            crate::use_build(i);
            v[i].push(tui::first_frame(home, &rig.args()));
        }
    }
    for (i, v) in v.iter_mut().enumerate() {
        figs[i].first_ms = Some(ms(zk_reads::median(v)));
    }
}

/// The builds' order in run `run`: each goes first in every other run, so neither always
/// follows the store's tool (or the other build) and pays for what it left behind.
fn turns(run: usize, builds: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..builds).collect();
    if run % 2 == 1 {
        order.reverse();
    }
    order
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
