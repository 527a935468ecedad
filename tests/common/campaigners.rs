//! Third-party etcd election participants, each reporting what it believes: `etcdctl elect`,
//! a Go program on etcd 3.4's `clientv3/concurrency` (tests/campaigners/go) and a Node
//! program on the npm `etcd3` package (tests/campaigners/node).
//!
//! Each belief change is a `Belief` with a wall-clock time in ms: the Go and Node campaigners
//! print them as JSON lines; for `etcdctl elect` the harness derives them from its output
//! (the leader key and proposal once elected; its exit once it notices its session ended).
//!
//! All three keep their keys under one election directory when it is `election/<name>`
//! (the Node package always uses `election/<name>/`), so one electop prefix sees them all.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Deserialize;

use super::etcd::EtcdServer;

/// Where the Node package keeps every election.
pub const NODE_PREFIX: &str = "election/";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Client {
    /// `etcdctl elect` (its session TTL is fixed at 60 s).
    Etcdctl,
    /// etcd 3.4's Go `clientv3/concurrency`.
    Go,
    /// The npm `etcd3` package.
    Node,
}

impl Client {
    pub const ALL: [Client; 3] = [Client::Etcdctl, Client::Go, Client::Node];

    pub fn name(self) -> &'static str {
        match self {
            Client::Etcdctl => "etcdctl elect",
            Client::Go => "Go concurrency",
            Client::Node => "Node etcd3",
        }
    }
}

/// One change of what a participant believes about itself.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct Belief {
    /// Wall clock, ms since the Unix epoch.
    pub t_ms: u64,
    pub id: String,
    /// "follower", "leader" or "lost".
    pub belief: String,
    #[serde(default)]
    pub detail: String,
}

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// A running participant and the beliefs it reported so far.
pub struct Participant {
    pub client: Client,
    pub id: String,
    child: Child,
    rx: Receiver<Belief>,
    beliefs: Vec<Belief>,
    stderr: Arc<Mutex<String>>,
}

impl Participant {
    /// Starts campaigning for `election` (e.g. `election/jobs`) as `id`, with a session of
    /// `ttl_secs` (ignored by `etcdctl elect`, whose sessions last 60 s).
    pub fn start(
        client: Client,
        server: &EtcdServer,
        election: &str,
        id: &str,
        ttl_secs: u32,
    ) -> Participant {
        let mut child = command(client, server, election, id, ttl_secs)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn the {} campaigner: {e}", client.name()));
        let (tx, rx) = mpsc::channel();
        let stdout = child.stdout.take().expect("piped stdout");
        let (who, prefix) = (
            id.to_string(),
            format!("{}/", election.trim_end_matches('/')),
        );
        let lines = super::lines::text_lines(stdout);
        std::thread::spawn(move || match client {
            Client::Etcdctl => read_etcdctl(lines, &who, &prefix, &tx),
            Client::Go | Client::Node => read_json(lines, &tx),
        });
        let stderr = super::lines::drain(child.stderr.take().expect("piped stderr"));
        Participant {
            client,
            id: id.to_string(),
            child,
            rx,
            beliefs: Vec::new(),
            stderr,
        }
    }

    /// Every belief reported so far, oldest first.
    pub fn beliefs(&mut self) -> &[Belief] {
        self.beliefs.extend(self.rx.try_iter());
        &self.beliefs
    }

    /// What it believes now ("follower" until it reported anything).
    pub fn belief(&mut self) -> String {
        self.beliefs()
            .last()
            .map_or_else(|| "follower".into(), |b| b.belief.clone())
    }

    /// Waits until it reports `belief`; false on timeout.
    pub fn wait_belief(&mut self, belief: &str, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if self.beliefs().iter().any(|b| b.belief == belief) {
                return true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(b) => self.beliefs.push(b),
                Err(_) => return false,
            }
        }
    }

    /// What it wrote to stderr (errors).
    pub fn stderr(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Stops it: SIGKILL, so it neither resigns nor revokes.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Participant {
    fn drop(&mut self) {
        self.kill();
    }
}

fn command(client: Client, server: &EtcdServer, election: &str, id: &str, ttl: u32) -> Command {
    let ttl = ttl.to_string();
    let mut c = match client {
        Client::Etcdctl => {
            let mut c = server.etcdctl_command();
            c.args(["elect", election, id]);
            return c;
        }
        Client::Go => {
            let mut c = Command::new(go_campaigner());
            c.args(["--election", election]);
            c
        }
        Client::Node => {
            let name = election.strip_prefix(NODE_PREFIX).unwrap_or_else(|| {
                panic!("the Node etcd3 package campaigns under {NODE_PREFIX}, not {election}")
            });
            let mut c = Command::new("node");
            c.arg(node_campaigner()).args(["--election", name]);
            c
        }
    };
    c.args(["--endpoints", &server.endpoint(), "--id", id, "--ttl", &ttl]);
    c
}

/// Go and Node: one JSON belief per line.
fn read_json(lines: Receiver<String>, tx: &Sender<Belief>) {
    for line in lines {
        match serde_json::from_str(&line) {
            Ok(b) => {
                if tx.send(b).is_err() {
                    break;
                }
            }
            Err(e) => eprintln!("campaigner printed a non-belief line ({e}): {line}"),
        }
    }
}

/// `etcdctl elect`: follower from the start, leader once it prints its key and proposal,
/// lost when it exits (it does on "session expired").
fn read_etcdctl(lines: Receiver<String>, id: &str, prefix: &str, tx: &Sender<Belief>) {
    let say = |belief: &str, detail: &str| {
        let b = Belief {
            t_ms: now_ms(),
            id: id.to_string(),
            belief: belief.to_string(),
            detail: detail.to_string(),
        };
        tx.send(b).is_ok()
    };
    if !say("follower", "campaigning") {
        return;
    }
    let mut last = String::new();
    for line in lines {
        if line == id && last.starts_with(prefix) && !say("leader", &format!("elected: {last}")) {
            return;
        }
        last = line;
    }
    say("lost", "etcdctl elect exited");
}

/// Builds the Go campaigner once per test run (into target/, rebuilt when its source is
/// newer), offline against Debian's golang-etcd-server-dev.
pub fn go_campaigner() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/campaigners/go/campaign.go");
        go_build(&src, "campaign")
    })
    .clone()
}

/// Builds the Go program `src` offline against Debian's golang-etcd-server-dev, into
/// `campaigners/go/NAME` beside electop's binary; kept while newer than its source.
pub fn go_build(src: &Path, name: &str) -> PathBuf {
    let dir = Path::new(super::electop::bin())
        .parent()
        .expect("target dir")
        .join("campaigners/go");
    let bin = dir.join(name);
    if is_newer(&bin, src) {
        return bin;
    }
    std::fs::create_dir_all(&dir).expect("create the Go build dir");
    // Test binaries build in parallel: each into its own file, then one atomic rename.
    let tmp = dir.join(format!("{name}.{}", std::process::id()));
    let out = Command::new("go")
        .args(["build", "-o"])
        .arg(&tmp)
        .arg(src)
        .env("GO111MODULE", "off")
        .env(
            "GOPATH",
            format!("{}:/usr/share/gocode", dir.join("gopath").display()),
        )
        .env("GOCACHE", dir.join("cache"))
        .env("GOFLAGS", "")
        .output()
        .expect("run go (is golang-go installed? run scripts/install-deps.sh)");
    assert!(
        out.status.success(),
        "go build of {} failed (is golang-etcd-server-dev installed?): {}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::rename(&tmp, &bin).expect("move the Go binary into place");
    bin
}

fn is_newer(built: &Path, src: &Path) -> bool {
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    matches!((modified(built), modified(src)), (Some(b), Some(s)) if b >= s)
}

/// The Node campaigner's script; its node_modules come from scripts/install-node-deps.sh.
pub fn node_campaigner() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/campaigners/node");
    assert!(
        dir.join("node_modules/etcd3").is_dir(),
        "the Node campaigner's etcd3 package is missing: run scripts/install-node-deps.sh"
    );
    dir.join("campaign.js")
}

/// Starts one participant per id, each only once the previous one is in line, so the line
/// order is the order given; the first must be elected.
pub fn line_up(
    client: Client,
    server: &EtcdServer,
    election: &str,
    ids: &[&str],
    ttl_secs: u32,
) -> Vec<Participant> {
    let members: Vec<(Client, &str)> = ids.iter().map(|id| (client, *id)).collect();
    line_up_mixed(server, election, &members, ttl_secs)
}

/// `line_up` with a client of its own for each participant.
pub fn line_up_mixed(
    server: &EtcdServer,
    election: &str,
    members: &[(Client, &str)],
    ttl_secs: u32,
) -> Vec<Participant> {
    let timeout = Duration::from_secs(15);
    let mut line: Vec<Participant> = Vec::new();
    for (i, (client, id)) in members.iter().enumerate() {
        let mut p = Participant::start(*client, server, election, id, ttl_secs);
        if i == 0 && !p.wait_belief("leader", timeout) {
            let err = p.stderr();
            panic!(
                "{} {id} not elected: {:?} {err}",
                client.name(),
                p.beliefs()
            );
        } else if i > 0 {
            super::wait_until(&format!("{id} in line"), timeout, || {
                server.candidates(election).len() == i + 1
            });
        }
        line.push(p);
    }
    line
}

/// The longest time (ms) during which two of `beliefs` (any participants) both believed
/// they led, up to `until_ms` for whoever still leads then; 0 if never.
pub fn longest_overlap(beliefs: &[Belief], until_ms: u64) -> u64 {
    // Each participant's leading spans, then the pairwise overlaps of spans.
    let mut spans: Vec<(String, u64, u64)> = Vec::new();
    let mut open: std::collections::HashMap<&str, u64> = Default::default();
    let mut sorted: Vec<&Belief> = beliefs.iter().collect();
    sorted.sort_by_key(|b| b.t_ms);
    for b in sorted {
        match (b.belief.as_str(), open.get(b.id.as_str()).copied()) {
            ("leader", None) => {
                open.insert(&b.id, b.t_ms);
            }
            ("leader", Some(_)) => {}
            (_, Some(from)) => {
                open.remove(b.id.as_str());
                spans.push((b.id.clone(), from, b.t_ms));
            }
            (_, None) => {}
        }
    }
    spans.extend(
        open.into_iter()
            .map(|(id, from)| (id.to_string(), from, until_ms)),
    );
    let mut longest = 0;
    for (i, a) in spans.iter().enumerate() {
        for b in &spans[i + 1..] {
            if a.0 != b.0 {
                longest = longest.max(a.2.min(b.2).saturating_sub(a.1.max(b.1)));
            }
        }
    }
    longest
}
