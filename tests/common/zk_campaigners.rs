//! Third-party ZooKeeper election participants, each reporting what it believes: Apache
//! Curator's `LeaderLatch` and `LeaderSelector` (tests/campaigners/java, compiled once per
//! test run) and kazoo's `Election` (tests/campaigners/kazoo, Debian's python3-kazoo).
//!
//! Each prints one JSON `Belief` per line, the same shape as the etcd campaigners.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::campaigners::Belief;
use super::zookeeper::JVM_FLAGS;

/// What javac compiles against and java runs with: curator-recipes.jar's manifest names
/// curator-framework, curator-client, guava, zookeeper and the rest.
pub const CURATOR_CLASSPATH: &str = "/usr/share/java/curator-recipes.jar";
/// Curator and ZooKeeper log through slf4j: to stderr, warnings and worse.
const SLF4J_SIMPLE: &str = "/usr/share/java/slf4j-simple.jar";
/// Debian's python3-kazoo is only on the system interpreter's path.
const PYTHON: &str = "/usr/bin/python3";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZkClient {
    /// Curator `LeaderLatch`: `<path>/_c_<uuid>-latch-<seq>`.
    CuratorLatch,
    /// Curator `LeaderSelector` (an `InterProcessMutex`): `<path>/_c_<uuid>-lock-<seq>`.
    CuratorSelector,
    /// kazoo `Election` (a `Lock`): `<path>/<uuid hex>__lock__<seq>`.
    Kazoo,
}

impl ZkClient {
    pub const ALL: [ZkClient; 3] = [
        ZkClient::CuratorLatch,
        ZkClient::CuratorSelector,
        ZkClient::Kazoo,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ZkClient::CuratorLatch => "Curator LeaderLatch",
            ZkClient::CuratorSelector => "Curator LeaderSelector",
            ZkClient::Kazoo => "kazoo Election",
        }
    }
}

/// A running participant and the beliefs it reported so far.
pub struct ZkParticipant {
    pub client: ZkClient,
    pub id: String,
    child: Child,
    rx: Receiver<Belief>,
    beliefs: Vec<Belief>,
    stderr: Arc<Mutex<String>>,
}

impl ZkParticipant {
    /// Starts campaigning on `path` (e.g. `/election/jobs`) as `id` against `endpoint` (a
    /// ZooKeeper connect string), asking for a session of `session_ms`.
    pub fn start(
        client: ZkClient,
        endpoint: &str,
        path: &str,
        id: &str,
        session_ms: u32,
    ) -> ZkParticipant {
        let mut child = command(client)
            .args(["--connect", endpoint, "--path", path, "--id", id])
            .args(["--session-ms", &session_ms.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn the {} campaigner: {e}", client.name()));
        let lines = super::lines::text_lines(child.stdout.take().expect("piped stdout"));
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in lines {
                match serde_json::from_str::<Belief>(&line) {
                    Ok(b) => {
                        if tx.send(b).is_err() {
                            break;
                        }
                    }
                    Err(e) => eprintln!("campaigner printed a non-belief line ({e}): {line}"),
                }
            }
        });
        let stderr = super::lines::drain(child.stderr.take().expect("piped stderr"));
        ZkParticipant {
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

    /// What it believes now (None until it reported anything).
    pub fn belief(&mut self) -> Option<String> {
        self.beliefs().last().map(|b| b.belief.clone())
    }

    /// Waits until its latest belief is `belief`; false on timeout.
    pub fn wait_belief(&mut self, belief: &str, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if self.belief().as_deref() == Some(belief) {
                return true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(b) => self.beliefs.push(b),
                Err(_) => return false,
            }
        }
    }

    /// The first time (ms since the epoch) it reported `belief`, if it did.
    pub fn first(&mut self, belief: &str) -> Option<u64> {
        self.beliefs()
            .iter()
            .find(|b| b.belief == belief)
            .map(|b| b.t_ms)
    }

    /// What it wrote to stderr (errors, Curator's and kazoo's warnings).
    pub fn stderr(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The process id, for SIGSTOP/SIGCONT.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGTERM: it closes its session (`client.stop()`), which removes its node, and exits;
    /// SIGKILL if it has not within `grace`. Its exit status.
    pub fn terminate(&mut self, grace: Duration) -> std::process::ExitStatus {
        super::process::terminate(&mut self.child, "-TERM", grace)
    }

    /// SIGKILL: it neither resigns nor closes its session, which ends only by timing out.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ZkParticipant {
    fn drop(&mut self) {
        self.kill();
    }
}

fn command(client: ZkClient) -> Command {
    match client {
        ZkClient::CuratorLatch | ZkClient::CuratorSelector => {
            let recipe = if client == ZkClient::CuratorLatch {
                "latch"
            } else {
                "selector"
            };
            let mut c = Command::new("java");
            c.args(JVM_FLAGS)
                .arg("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn")
                .arg("-cp")
                .arg(format!(
                    "{}:{CURATOR_CLASSPATH}:{SLF4J_SIMPLE}",
                    java_campaigner().display()
                ))
                .args(["Campaign", "--recipe", recipe])
                .env_remove("CLASSPATH");
            c
        }
        ZkClient::Kazoo => {
            let script =
                Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/campaigners/kazoo/campaign.py");
            let mut c = Command::new(PYTHON);
            c.arg("-u").arg(script).env_remove("PYTHONPATH");
            c
        }
    }
}

/// Compiles the Java campaigner once per test run into `target/tmp/campaigners/java/classes`
/// (kept while newer than its source) and returns that class dir.
pub fn java_campaigner() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let src =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/campaigners/java/Campaign.java");
        javac(&src)
    })
    .clone()
}

fn javac(src: &Path) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("campaigners/java");
    let classes = dir.join("classes");
    if is_newer(&classes.join("Campaign.class"), src) {
        return classes;
    }
    std::fs::create_dir_all(&dir).expect("create the Java build dir");
    // Test binaries build in parallel: each into its own dir, then one atomic rename.
    let tmp = dir.join(format!("classes.{}", std::process::id()));
    let out = Command::new("javac")
        .arg("-cp")
        .arg(CURATOR_CLASSPATH)
        .arg("-d")
        .arg(&tmp)
        .arg(src)
        .env_remove("CLASSPATH")
        .output()
        .expect("run javac (is openjdk-17-jdk-headless installed? run scripts/install-deps.sh)");
    assert!(
        out.status.success(),
        "javac of {} failed (is libcurator-recipes-java installed?): {}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    // Another test binary may have won the race: its classes are as good as ours, and may
    // be running already.
    if is_newer(&classes.join("Campaign.class"), src) {
        let _ = std::fs::remove_dir_all(&tmp);
        return classes;
    }
    let _ = std::fs::remove_dir_all(&classes);
    std::fs::rename(&tmp, &classes).expect("move the Java classes into place");
    classes
}

fn is_newer(built: &Path, src: &Path) -> bool {
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    matches!((modified(built), modified(src)), (Some(b), Some(s)) if b >= s)
}
