//! The dashboard's and `watch --json`'s CPU while nothing changes, shared by zk_scale and
//! redis_scale (which takes this file by path).

use std::path::Path;
use std::time::Duration;

use crate::lines::Lines;
use crate::{electop, procs, tui};

/// How long "idle" is measured.
pub const IDLE: Duration = Duration::from_secs(20);

/// The dashboard's and `watch --json`'s idle CPU, `n` `what` loaded; the `watch`, still
/// running.
pub fn idle(home: &Path, args: &[String], n: usize, what: &str) -> Lines {
    println!("\n## Idle, {n} {what}, nothing changing (% of one core over {IDLE:?})\n");
    println!("| process | idle CPU | RSS |");
    println!("|---|---|---|");
    let t = tui::start(home, args);
    t.tmux
        .wait_screen("the elections", Duration::from_secs(60), |s| {
            s.contains(&format!("{n} elections"))
        });
    // The first second's work (history, the members' first probe) is not idling.
    std::thread::sleep(Duration::from_secs(2));
    idle_row("TUI 200x50", t.pid);
    drop(t);
    let ours = watch(home, args);
    std::thread::sleep(Duration::from_secs(2));
    idle_row("watch --json", ours.pid());
    ours
}

/// `watch --json`, once it has read its sources through.
pub fn watch(home: &Path, args: &[String]) -> Lines {
    let mut w = electop(home);
    let ours = Lines::start(w.args(args).args(["watch", "--json"]));
    ours.wait(&["\"synced\""], Duration::from_secs(60))
        .unwrap_or_else(|| panic!("watch not synced: {:?}", ours.all()));
    ours
}

fn idle_row(what: &str, pid: u32) {
    let idle = procs::cpu_percent(pid, IDLE);
    println!("| {what} | {idle:.2}% | {:.0} MiB |", procs::rss_mib(pid));
}
