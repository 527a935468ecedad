//! `--on-change CMD`: one `sh -c CMD` per event, the event's JSON on stdin and in
//! `ELECTOP_*` variables, cut off at the timeout.
//!
//! The command runs in a process group of its own, so that cutting it off kills what it
//! started too (`sh -c 'curl …'` would otherwise leave `curl` running after `sh` is killed),
//! and so that a Ctrl-C at the terminal running `electop serve` is not also delivered to it
//! by the shell's job control mid-run: electop decides when a hook ends.

use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{ChildStderr, Command};

use super::payload::Payload;
use super::stats::Outcome;

/// How long to wait, after the command exits, for the rest of its stderr: a process it left
/// in the background may hold the pipe open for good.
const STDERR_GRACE: Duration = Duration::from_millis(200);
/// The longest stderr line kept for the log.
const LINE_MAX: usize = 300;

/// Runs `cmd` for one event. Returns the outcome and, when it is not `Ok`, why (for the log).
pub(super) async fn run(cmd: &str, p: &Payload, timeout: Duration) -> (Outcome, String) {
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(cmd)
        .envs(p.env().iter().map(|(k, v)| (*k, v.as_str())))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = match command.spawn() {
        Ok(c) => c,
        Err(e) => return (Outcome::Failed, format!("could not start sh: {e}")),
    };
    // From here until it is reaped, dropping this future (drain out of time) kills the group.
    let mut group = GroupKill(child.id());
    let stderr = child.stderr.take().map(|s| tokio::spawn(last_line(s)));
    let mut stdin = child.stdin.take();
    let line = format!("{}\n", p.json());
    let write = async {
        if let Some(s) = stdin.as_mut() {
            // A command that does not read its stdin closes it: not an error.
            let _ = s.write_all(line.as_bytes()).await;
        }
        drop(stdin.take());
    };
    let waited = tokio::time::timeout(timeout, async {
        let ((), status) = tokio::join!(write, child.wait());
        status
    })
    .await;
    match waited {
        Ok(Ok(status)) => {
            group.disarm();
            exited(status, stderr).await
        }
        Ok(Err(e)) => (Outcome::Failed, format!("waiting for it failed: {e}")),
        Err(_) => {
            group.kill();
            let _ = child.wait().await;
            group.disarm();
            if let Some(h) = stderr {
                h.abort();
            }
            let ms = timeout.as_millis();
            (
                Outcome::Timeout,
                format!("still running after {ms} ms: killed"),
            )
        }
    }
}

async fn exited(
    status: ExitStatus,
    stderr: Option<tokio::task::JoinHandle<String>>,
) -> (Outcome, String) {
    if status.success() {
        if let Some(h) = stderr {
            h.abort();
        }
        return (Outcome::Ok, String::new());
    }
    let last = match stderr {
        Some(mut h) => match tokio::time::timeout(STDERR_GRACE, &mut h).await {
            Ok(Ok(line)) => line,
            _ => {
                h.abort();
                String::new()
            }
        },
        None => String::new(),
    };
    let how = match status.code() {
        Some(code) => format!("exited with {code}"),
        None => format!("ended by {status}"),
    };
    let why = if last.is_empty() {
        how
    } else {
        format!("{how}: {last}")
    };
    (Outcome::Failed, why)
}

/// The last non-empty line the command wrote to stderr, cut to [`LINE_MAX`] characters.
/// Reading all of it keeps a chatty command from blocking on a full pipe.
async fn last_line(stderr: ChildStderr) -> String {
    let mut lines = BufReader::new(stderr).lines();
    let mut last = String::new();
    while let Ok(Some(line)) = lines.next_line().await {
        let line = line.trim();
        if !line.is_empty() {
            last = line.chars().take(LINE_MAX).collect();
        }
    }
    last
}

/// Kills the command's whole process group when dropped while armed, so neither a timeout
/// nor an aborted task leaves the command or its children behind.
struct GroupKill(Option<u32>);

impl GroupKill {
    fn kill(&mut self) {
        if let Some(pgid) = self.0.and_then(|p| libc::pid_t::try_from(p).ok()) {
            // SAFETY: kill(2) takes plain integers. The group is the child's (process_group(0)
            // makes its id the child's pid), and the child is not reaped yet, so the id cannot
            // have been reused by an unrelated group.
            unsafe {
                libc::kill(-pgid, libc::SIGKILL);
            }
        }
    }

    fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for GroupKill {
    fn drop(&mut self) {
        self.kill();
    }
}
