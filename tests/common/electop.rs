//! Running the real `electop` binary from tests.

use std::path::Path;
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

/// `status`'s table, piped, which must succeed.
pub fn status_table(home: &std::path::Path, args: &[impl AsRef<std::ffi::OsStr>]) -> String {
    let out = command(home)
        .args(args)
        .arg("status")
        .output()
        .expect("run electop status");
    assert!(
        out.status.success(),
        "electop status failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("the table is UTF-8")
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

/// How long after a change electop may keep it in memory before its history journal has it
/// (docs/history.md): a process killed sooner may leave it out.
pub const JOURNAL_FLUSH: Duration = Duration::from_millis(100);

/// `JOURNAL_FLUSH` and room for a loaded machine's scheduling.
pub const JOURNAL_GRACE: Duration = Duration::from_millis(400);

/// `electop watch --json` running in the background, its lines collected. Dropped, it is
/// killed (no clean stop), but not within [`JOURNAL_GRACE`] of its last line read: what it
/// told is in the journal for the next electop, as it is for a process killed in earnest a
/// while after its last change.
pub struct Watch {
    child: Child,
    lines: mpsc::Receiver<(Instant, Value)>,
    pub seen: Vec<Value>,
    /// When the last line kept in `seen` was read.
    last: Option<Instant>,
    killed: bool,
}

impl Watch {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn start(home: &std::path::Path, args: &[&str]) -> Watch {
        Watch::start_env(home, args, &[])
    }

    /// [`Watch::start`] with these environment variables set too (`ELECTOP_LOG`).
    pub fn start_env(home: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> Watch {
        let mut child = command(home)
            .envs(env.iter().copied())
            .args(args)
            .args(["watch", "--json"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn electop watch");
        let out = child.stdout.take().expect("stdout");
        let lines = super::lines::read_lines(out, |l| {
            let v = serde_json::from_str::<Value>(&l.text)
                .unwrap_or_else(|e| panic!("watch printed non-JSON {:?}: {e}", l.text));
            (l.at, v)
        });
        Watch {
            child,
            lines,
            seen: Vec::new(),
            last: None,
            killed: false,
        }
    }

    /// The next line within `left`, kept in `seen`.
    fn next(&mut self, left: Duration) -> Option<Value> {
        let (at, v) = self.lines.recv_timeout(left).ok()?;
        self.last = Some(at);
        self.seen.push(v.clone());
        Some(v)
    }

    /// SIGTERM (a clean stop) and its exit status.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill").args(["-TERM", &pid]).status();
        assert!(sent.is_ok_and(|s| s.success()), "kill -TERM {pid}");
        self.killed = true;
        self.child.wait().expect("wait for watch")
    }

    /// SIGKILL now, whatever it has not written yet.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.killed = true;
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
            match self.next(left) {
                Some(v) => {
                    if pred(&v) {
                        return v;
                    }
                }
                None => panic!(
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
            match self.next(left) {
                Some(_) => {}
                None => panic!("watch: not {n} {what} within {timeout:?}: {:#?}", self.seen),
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
            self.next(left);
        }
    }

    /// Keeps every line already printed, without waiting.
    pub fn pump(&mut self) {
        while self.next(Duration::ZERO).is_some() {}
    }

    /// Waits until `sources` sources have finished their snapshot and replay.
    pub fn wait_synced(&mut self, sources: usize) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.seen.iter().filter(|v| v["kind"] == "synced").count() < sources {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next(left) {
                Some(_) => {}
                None => panic!("watch never synced {sources} sources: {:#?}", self.seen),
            }
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        if self.killed {
            return;
        }
        self.pump();
        if let Some(last) = self.last {
            std::thread::sleep((last + JOURNAL_GRACE).saturating_duration_since(Instant::now()));
        }
        self.kill();
    }
}

/// The records in the history database under `home` of the journals whose keys start with
/// `prefix`, in the order written: (journal, kind, line). None before any electop wrote.
#[allow(dead_code)]
pub fn history_records(home: &Path, prefix: &str) -> Vec<(String, String, String)> {
    let path = home.join("data/electop/history.sqlite3");
    let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY;
    let Ok(c) = rusqlite::Connection::open_with_flags(&path, flags) else {
        return Vec::new();
    };
    let Ok(mut q) = c.prepare(
        "SELECT j.key, r.kind, r.line FROM records r JOIN journals j ON j.id = r.journal \
         WHERE substr(j.key, 1, length(?1)) = ?1 ORDER BY r.id",
    ) else {
        return Vec::new();
    };
    let rows = q.query_map([prefix], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)));
    rows.map(|r| r.filter_map(Result::ok).collect())
        .unwrap_or_default()
}
