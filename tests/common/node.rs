//! The one `electop node --json` child of the tests: its lines read as they come (each with
//! when it was read), checked to be well-formed beliefs, and waited on with deadlines.

use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, TryRecvError};
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;

use super::POLL_INTERVAL;
use super::lines::{Line, read_lines};

impl Node {
    /// Starts `cmd` (an `electop node --json` command, its stdout free) as participant `id`
    /// of `election`, its stderr in `stderr_path`.
    pub fn spawn(cmd: &mut Command, id: &str, election: &str, stderr_path: PathBuf) -> Node {
        let stderr = std::fs::File::create(&stderr_path).expect("create the node's stderr file");
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr))
            .spawn()
            .expect("spawn electop node");
        let out = child.stdout.take().expect("piped stdout");
        Node {
            id: id.to_string(),
            election: election.to_string(),
            child,
            lines: read_lines(out, |l| l),
            seen: Vec::new(),
            arrived: Vec::new(),
            stderr_path,
            status: None,
        }
    }
}

/// A running `electop node --json`, its lines collected with the instant each was read.
pub struct Node {
    pub id: String,
    pub election: String,
    pub child: Child,
    pub lines: Receiver<Line>,
    /// The wall-clock time each line of `seen` was read, for comparing across processes.
    pub arrived: Vec<SystemTime>,
    pub seen: Vec<(Instant, Value)>,
    pub stderr_path: PathBuf,
    pub status: Option<ExitStatus>,
}

pub fn is_belief(v: &Value, belief: &str, leader: Option<&str>) -> bool {
    v["belief"] == belief && leader.is_none_or(|l| v["leader"] == l)
}

impl Node {
    pub fn record(
        &mut self,
        Line {
            at,
            wall,
            text: line,
        }: Line,
    ) {
        let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| {
            panic!(
                "{} printed a line that is not JSON: {line:?}: {e}\n{}",
                self.id,
                self.dump()
            )
        });
        assert!(
            v["node"] == self.id.as_str()
                && v["election"] == self.election.as_str()
                && v["at"].is_string()
                && (v["belief"].is_string() || v["event"].is_string()),
            "{}: malformed line {v}",
            self.id
        );
        if v["belief"] == "leader" {
            assert_eq!(v["leader"], self.id.as_str(), "a leader names itself: {v}");
        }
        self.seen.push((at, v));
        self.arrived.push(wall);
    }

    /// Reads every line already printed, without waiting.
    pub fn pump(&mut self) {
        loop {
            match self.lines.try_recv() {
                Ok(line) => self.record(line),
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => return,
            }
        }
    }

    /// Reads lines until `deadline` (or until stdout closes).
    pub fn read_until(&mut self, deadline: Instant) {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => self.record(line),
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => return,
            }
        }
    }

    /// The belief lines (not events), oldest first.
    pub fn beliefs(&self) -> impl Iterator<Item = &Value> {
        self.seen
            .iter()
            .map(|(_, v)| v)
            .filter(|v| v.get("belief").is_some())
    }

    /// The latest belief line, with when it was read.
    pub fn current(&self) -> Option<(Instant, &Value)> {
        self.seen
            .iter()
            .rev()
            .find(|(_, v)| v.get("belief").is_some())
            .map(|(at, v)| (*at, v))
    }

    pub fn believes(&self, belief: &str, leader: Option<&str>) -> Option<Instant> {
        self.current()
            .filter(|(_, v)| is_belief(v, belief, leader))
            .map(|(at, _)| at)
    }

    /// Waits until the node's current belief is `belief` (with `leader`, when given);
    /// returns when the line saying so was read (an earlier instant if it already held).
    pub fn wait_belief_at(
        &mut self,
        belief: &str,
        leader: Option<&str>,
        timeout: Duration,
    ) -> Instant {
        let what = format!("not {belief} (leader {leader:?})");
        self.wait_for(&what, timeout, |n| n.believes(belief, leader))
    }

    /// Waits until the node has said `belief` at some point, a belief it may already have
    /// left (a deposed node connects again within a second); returns when it was read.
    pub fn wait_said(&mut self, belief: &str, timeout: Duration) -> Instant {
        self.wait_for(&format!("never {belief}"), timeout, |n| {
            n.seen
                .iter()
                .find(|(_, v)| v["belief"] == belief)
                .map(|(at, _)| *at)
        })
    }

    fn wait_for(
        &mut self,
        what: &str,
        timeout: Duration,
        done: impl Fn(&Self) -> Option<Instant>,
    ) -> Instant {
        let deadline = Instant::now() + timeout;
        self.pump();
        loop {
            if let Some(at) = done(self) {
                return at;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => self.record(line),
                Err(e) => panic!(
                    "{}: {what} within {timeout:?} ({}); {}",
                    self.id,
                    if e == RecvTimeoutError::Timeout {
                        "timed out".to_string()
                    } else {
                        format!("stdout closed, exit {:?}", self.child.try_wait())
                    },
                    self.dump()
                ),
            }
        }
    }

    /// `wait_belief_at`, as the time waited (zero if it already held).
    pub fn wait_belief(
        &mut self,
        belief: &str,
        leader: Option<&str>,
        timeout: Duration,
    ) -> Duration {
        let called = Instant::now();
        self.wait_belief_at(belief, leader, timeout)
            .saturating_duration_since(called)
    }

    pub fn sigkill(&mut self) {
        if self.status.is_none() {
            let _ = self.child.kill();
            self.status = Some(self.child.wait().expect("wait for the killed node"));
        }
    }

    /// SIGTERM, then waits up to `within` for the exit; returns the status and how long it
    /// took. Panics if it does not exit in time. Reads the last lines it printed.
    pub fn sigterm(&mut self, within: Duration) -> (ExitStatus, Duration) {
        let sent = Instant::now();
        let ok = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("run kill")
            .success();
        assert!(ok, "kill -TERM {}", self.id);
        let deadline = sent + within;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                break status;
            }
            if Instant::now() >= deadline {
                panic!(
                    "{} still running {within:?} after SIGTERM; {}",
                    self.id,
                    self.dump()
                );
            }
            std::thread::sleep(POLL_INTERVAL);
        };
        let took = sent.elapsed();
        self.status = Some(status);
        // The reader thread ends at EOF; everything printed before the exit is in the pipe.
        self.read_until(Instant::now() + Duration::from_secs(2));
        (status, took)
    }

    pub fn events(&self) -> impl Iterator<Item = &str> {
        self.seen.iter().filter_map(|(_, v)| v["event"].as_str())
    }

    pub fn dump(&self) -> String {
        let lines: Vec<String> = self.seen.iter().map(|(_, v)| v.to_string()).collect();
        let stderr = std::fs::read_to_string(&self.stderr_path).unwrap_or_default();
        let tail: Vec<&str> = stderr.lines().rev().take(20).collect();
        format!(
            "{} printed:\n  {}\n{} stderr (tail):\n  {}",
            self.id,
            lines.join("\n  "),
            self.id,
            tail.into_iter().rev().collect::<Vec<_>>().join("\n  ")
        )
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        // A paused node (SIGSTOP) is let run, so it dies now rather than when resumed.
        super::process::signal("-CONT", &[self.child.id()]);
        self.sigkill();
    }
}

pub fn dump_all(nodes: &[Node]) -> String {
    nodes.iter().map(Node::dump).collect::<Vec<_>>().join("\n")
}
