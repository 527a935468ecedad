//! Running the real `electop` binary from tests.

use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_electop")
}

/// A command with a private log file and config dir, so tests never read the user's nor
/// each other's: every XDG directory electop could look in is under `home`.
pub fn command(home: &std::path::Path) -> Command {
    let mut c = Command::new(bin());
    c.env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_STATE_HOME", home.join("state"))
        .env("XDG_CACHE_HOME", home.join("cache"))
        .env("HOME", home);
    c
}

pub fn status(home: &std::path::Path, args: &[&str]) -> Output {
    command(home)
        .args(args)
        .args(["status", "--json"])
        .output()
        .expect("run electop status")
}

/// `status --json`, which must succeed.
pub fn status_json(home: &std::path::Path, args: &[&str]) -> Value {
    let out = status(home, args);
    assert!(
        out.status.success(),
        "electop status failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("status prints JSON")
}

/// `status --json --history`: etcd's past leader changes replayed too.
pub fn status_history_json(home: &std::path::Path, args: &[&str]) -> Value {
    let out = command(home)
        .args(args)
        .args(["status", "--json", "--history"])
        .output()
        .expect("run electop status");
    assert!(
        out.status.success(),
        "electop status --history failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("status prints JSON")
}

pub fn election<'a>(status: &'a Value, name: &str) -> &'a Value {
    status["elections"]
        .as_array()
        .and_then(|a| a.iter().find(|e| e["name"] == name))
        .unwrap_or_else(|| panic!("no election {name} in {status:#}"))
}

/// `cmd` started with its stdout read line by line on a thread (stderr dropped): the child,
/// to kill, and its lines as they come, to wait for with a deadline (`recv_timeout`).
pub fn spawn_lines(cmd: &mut Command) -> (Child, mpsc::Receiver<String>) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn electop");
    let stdout = child.stdout.take().expect("stdout");
    (child, super::lines::text_lines(stdout))
}

/// `electop watch --json` running in the background, its lines collected.
pub struct Watch {
    child: Child,
    lines: mpsc::Receiver<Value>,
    pub seen: Vec<Value>,
}

impl Watch {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn start(home: &std::path::Path, args: &[&str]) -> Watch {
        let mut child = command(home)
            .args(args)
            .args(["watch", "--json"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn electop watch");
        let out = child.stdout.take().expect("stdout");
        let lines = super::lines::read_lines(out, |l| {
            serde_json::from_str::<Value>(&l.text)
                .unwrap_or_else(|e| panic!("watch printed non-JSON {:?}: {e}", l.text))
        });
        Watch {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Waits for a line matching `pred`; returns it. Every line read is kept in `seen`.
    pub fn wait_for(
        &mut self,
        what: &str,
        timeout: Duration,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        let deadline = Instant::now() + timeout;
        if let Some(v) = self.seen.iter().find(|v| pred(v)) {
            return v.clone();
        }
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(v) => {
                    self.seen.push(v.clone());
                    if pred(&v) {
                        return v;
                    }
                }
                Err(_) => panic!(
                    "watch: no {what} within {timeout:?}; saw:\n{:#?}",
                    self.seen
                ),
            }
        }
    }

    /// Waits until `n` lines seen match `pred` (those seen already count).
    pub fn wait_count(
        &mut self,
        what: &str,
        n: usize,
        timeout: Duration,
        pred: impl Fn(&Value) -> bool,
    ) {
        let deadline = Instant::now() + timeout;
        while self.seen.iter().filter(|v| pred(v)).count() < n {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(v) => self.seen.push(v),
                Err(_) => panic!("watch: not {n} {what} within {timeout:?}: {:#?}", self.seen),
            }
        }
    }

    /// Keeps in `seen` whatever it prints during `span` (for a test that something does
    /// not happen over a while).
    pub fn collect_for(&mut self, span: Duration) {
        let until = Instant::now() + span;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            if let Ok(v) = self.lines.recv_timeout(left) {
                self.seen.push(v);
            }
        }
    }

    /// Keeps every line already printed, without waiting.
    pub fn pump(&mut self) {
        while let Ok(v) = self.lines.try_recv() {
            self.seen.push(v);
        }
    }

    /// Waits until `sources` sources have finished their snapshot and replay.
    pub fn wait_synced(&mut self, sources: usize) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.seen.iter().filter(|v| v["kind"] == "synced").count() < sources {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(v) => self.seen.push(v),
                Err(_) => panic!("watch never synced {sources} sources: {:#?}", self.seen),
            }
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
