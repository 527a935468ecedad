//! A process whose output lines are stamped as they arrive, indexed by the change tokens
//! they carry (`chg-N`, a value a change wrote; `node-E-C`, a loaded candidate), so the lag
//! of thousands of changes is looked up, not searched.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Default)]
struct Seen {
    /// Each token's first arrival since the last `reset`.
    first: HashMap<String, Instant>,
    synced: bool,
}

pub struct Lines {
    child: Child,
    seen: Arc<Mutex<Seen>>,
}

fn tokens(line: &str) -> impl Iterator<Item = &str> {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| regex::Regex::new(r"chg-[0-9]+|node-[0-9]+-[0-9]+").expect("regex"))
        .find_iter(line)
        .map(|m| m.as_str())
}

impl Lines {
    pub fn start(cmd: &mut Command) -> Lines {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn a watcher");
        let out = child.stdout.take().expect("piped stdout");
        let seen = Arc::new(Mutex::new(Seen::default()));
        let sink = seen.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                let at = Instant::now();
                let mut s = sink.lock().expect("lines");
                s.synced |= line.contains("\"synced\"");
                for t in tokens(&line) {
                    s.first.entry(t.to_string()).or_insert(at);
                }
            }
        });
        Lines { child, seen }
    }

    /// Waits (up to `timeout`) for `watch --json`'s `synced` line.
    pub fn wait_synced(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while !self.seen.lock().expect("lines").synced {
            if Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        true
    }

    /// Forgets what arrived so far: a snapshot's lines name every election.
    pub fn reset(&self) {
        self.seen.lock().expect("lines").first.clear();
    }

    pub fn first(&self, token: &str) -> Option<Instant> {
        self.seen.lock().expect("lines").first.get(token).copied()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Lines {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
