//! What a process's write system calls go to, by the file each writes: the disk (the history
//! journal, the log), the network (the store's requests), the terminal (frames) or another
//! thread (eventfd wake-ups). `/proc/PID/io`'s `syscw` counts them all as one figure; the
//! issue's "at most one flush every 100 ms" is about the disk alone.
//!
//! Counted by `strace -f -y` over a window of its own: strace slows what it traces, so the
//! CPU figures come from a window without it.

use std::path::Path;
use std::process::{Child, Command, Stdio};

/// Writes a second, by where they went.
#[derive(Default, Clone, Copy)]
pub struct Writes {
    /// To the history (`.../electop/history.sqlite3` and its `-wal`; the journal files of a
    /// build before it).
    pub journal: f64,
    /// To other files: the log, the audit log.
    pub disk: f64,
    pub network: f64,
    pub terminal: f64,
    pub wakeups: f64,
    pub other: f64,
}

impl Writes {
    pub fn total(&self) -> f64 {
        self.journal + self.disk + self.network + self.terminal + self.wakeups + self.other
    }
}

/// strace on every thread of `pid`, its write-like calls (those `syscw` counts) with each
/// descriptor's file; `None` without strace.
pub fn trace(pid: u32, out: &Path) -> Option<Child> {
    Command::new("strace")
        .args(["-f", "-qq", "-y", "-e", "signal=none", "-e"])
        .arg("trace=write,writev,pwrite64,pwritev,pwritev2")
        .arg("-o")
        .arg(out)
        .args(["-p", &pid.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()
}

/// Stops the trace and counts its calls over `secs`.
pub fn count(mut child: Child, out: &Path, secs: f64) -> Option<Writes> {
    // SIGINT: strace detaches and flushes its file.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let _ = child.wait();
    let text = std::fs::read_to_string(out).ok()?;
    let mut w = Writes::default();
    for line in text.lines() {
        let Some(kind) = classify(line) else { continue };
        *match kind {
            Kind::Journal => &mut w.journal,
            Kind::Disk => &mut w.disk,
            Kind::Network => &mut w.network,
            Kind::Terminal => &mut w.terminal,
            Kind::Wakeup => &mut w.wakeups,
            Kind::Other => &mut w.other,
        } += 1.0 / secs;
    }
    Some(w)
}

enum Kind {
    Journal,
    Disk,
    Network,
    Terminal,
    Wakeup,
    Other,
}

/// A traced call's kind, by the file strace's `-y` names beside its descriptor:
/// `1234 write(7</home/x/journal.jsonl>, ...) = 80`; `None` for a line that is no call
/// (strace's own notes, a call it could not finish tracing).
fn classify(line: &str) -> Option<Kind> {
    let call = line
        .split_once(' ')
        .map_or(line, |(_, rest)| rest)
        .trim_start();
    if !call.starts_with("write") && !call.starts_with("pwrite") {
        return None;
    }
    let file = call.split_once('<')?.1.split_once('>')?.0;
    Some(
        if file.starts_with("socket:") || file.starts_with("TCP") || file.starts_with("UNIX") {
            Kind::Network
        } else if file.starts_with("anon_inode:[eventfd]") {
            Kind::Wakeup
        } else if file.starts_with("/dev/pts/") || file.starts_with("/dev/tty") {
            Kind::Terminal
        } else if file.contains("/electop/history.sqlite3")
            || (file.contains("/electop/") && file.contains("history") && file.ends_with(".jsonl"))
        {
            // The database and its write-ahead log (a build before it: its journal files).
            Kind::Journal
        } else if file.starts_with('/') && !file.starts_with("/dev/") {
            Kind::Disk
        } else {
            Kind::Other
        },
    )
}
