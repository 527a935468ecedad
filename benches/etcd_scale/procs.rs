//! Timing processes from outside, and what /proc says of their CPU and memory.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Every process a bench starts runs as shipped: `cargo bench` hands the bench its build's
/// library folders (`LD_LIBRARY_PATH`), every child would inherit them, and a dynamically
/// linked electop then looks for each system library in each folder first (200 failed
/// opens, 10-20 ms of a `status`, which a static etcdctl never pays). Called first in
/// `main`, before any other thread runs.
pub fn as_shipped() {
    // SAFETY: no other thread runs yet (see above).
    unsafe { std::env::remove_var("LD_LIBRARY_PATH") };
}

/// Wall time of a command run to its end (output thrown away); panics if it fails.
pub fn time(cmd: &mut Command) -> Duration {
    try_time(cmd)
        .map(|(d, _)| d)
        .unwrap_or_else(|e| panic!("{cmd:?} failed: {e}"))
}

/// Wall time of a command run to its end and its error output, or that output alone when
/// it fails.
pub fn try_time(cmd: &mut Command) -> Result<(Duration, String), String> {
    let t = Instant::now();
    let out = cmd.stdout(Stdio::null()).stderr(Stdio::piped()).output();
    let out = out.expect("run the command");
    let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
    match out.status.success() {
        true => Ok((t.elapsed(), stderr)),
        false => Err(stderr),
    }
}

/// The median of `runs` timings.
pub fn median(runs: usize, mut f: impl FnMut() -> Duration) -> Duration {
    let mut v: Vec<Duration> = (0..runs).map(|_| f()).collect();
    v.sort();
    v[v.len() / 2]
}

/// CPU time (user + system) a process has used so far.
pub fn cpu(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name, which may hold spaces: utime and stime are 14 and 15.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<u64> = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|x| x.parse().ok())
        .collect();
    let ticks = f.iter().sum::<u64>();
    // SAFETY: sysconf only reads a constant of the system.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Duration::from_millis(ticks * 1000 / hz)
}

/// Resident memory now, in MiB.
pub fn rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kib: f64 = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    kib / 1024.0
}

/// Share of one core `pid` used over `window`, as a percentage, while `during` runs.
pub fn cpu_percent(pid: u32, window: Duration) -> f64 {
    let (c0, t0) = (cpu(pid), Instant::now());
    std::thread::sleep(window);
    let (c1, t1) = (cpu(pid), Instant::now());
    (c1 - c0).as_secs_f64() * 100.0 / (t1 - t0).as_secs_f64()
}

/// Waits (up to `limit`) until process `pid` uses under 5% of a core over a quarter second.
pub fn wait_idle(pid: u32, limit: Duration) {
    let deadline = Instant::now() + limit;
    while cpu_percent(pid, Duration::from_millis(250)) >= 5.0 {
        if Instant::now() > deadline {
            eprintln!("etcd still busy after {limit:?}; measuring anyway");
            return;
        }
    }
}

/// Percentiles of a list of latencies in ms: p50, p99, max.
pub fn percentiles(mut v: Vec<f64>) -> (f64, f64, f64) {
    if v.is_empty() {
        return (f64::NAN, f64::NAN, f64::NAN);
    }
    v.sort_by(f64::total_cmp);
    let at = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
    (at(0.5), at(0.99), v[v.len() - 1])
}
