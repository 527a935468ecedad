//! What every server harness does to its child processes: read the tail of its log, tell
//! whether the latest start lost a port race, signal it, stop it with a grace period.

use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How often a stopping process is checked for having exited.
const EXIT_POLL: Duration = Duration::from_millis(5);

/// The last `lines` lines of the log at `path` (empty if it cannot be read).
pub fn log_tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Whether the latest start logged after `marker` failed because a port was taken. Free
/// ports are only free "a moment ago": a parallel test may have grabbed one meanwhile.
pub fn port_clash(log_path: &Path, marker: &str) -> bool {
    let log = std::fs::read_to_string(log_path).unwrap_or_default();
    let latest = log.rsplit(marker).next().unwrap_or_default();
    latest
        .to_ascii_lowercase()
        .contains("address already in use")
}

/// Sends `sig` ("-TERM", "-STOP"...) to each of `pids` through kill(1).
pub fn signal(sig: &str, pids: &[u32]) {
    if pids.is_empty() {
        return;
    }
    let _ = Command::new("kill")
        .arg(sig)
        .args(pids.iter().map(u32::to_string))
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Sends `sig`, waits up to `grace` for the process to exit, then SIGKILLs it. Returns the
/// exit status.
pub fn terminate(child: &mut Child, sig: &str, grace: Duration) -> ExitStatus {
    if let Ok(Some(status)) = child.try_wait() {
        return status;
    }
    signal(sig, &[child.id()]);
    match wait_exit(child, grace) {
        Some(status) => status,
        None => kill_and_reap(child),
    }
}

/// The exit status, if the process exits within `grace`.
pub fn wait_exit(child: &mut Child, grace: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + grace;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(EXIT_POLL);
    }
}

/// SIGKILL, then reap (no zombie left behind).
pub fn kill_and_reap(child: &mut Child) -> ExitStatus {
    let _ = child.kill();
    child.wait().expect("wait for a child process")
}
