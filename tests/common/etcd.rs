//! A throwaway single-member etcd (the `etcd` binary from PATH, Debian's 3.4)
//! and `etcdctl elect` campaigners, for integration tests.
//!
//! Every server gets its own temp dir (data + `etcd.log`) and its own free
//! loopback ports, so tests can run in parallel. Processes are killed on drop.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::scratch::Scratch;

use super::process::{kill_and_reap, log_tail, port_clash, terminate};
use super::{POLL_INTERVAL, free_ports};

/// How long `EtcdServer::start`/`restart` wait for the server to be healthy.
pub const READY_TIMEOUT: Duration = Duration::from_secs(10);
const START_MARKER: &str = "--- electop test harness: starting etcd";
/// Grace period between SIGTERM/SIGINT and SIGKILL.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(5);

/// A running single-member etcd on 127.0.0.1 with a temporary data dir.
pub struct EtcdServer {
    child: Option<Child>,
    dir: Scratch,
    client_port: u16,
    peer_port: u16,
    /// The caller's etcd flags ([`EtcdServer::start_with`]), kept for a restart.
    serve: Vec<String>,
}

enum NotReady {
    /// The process exited.
    Exited(ExitStatus),
    TimedOut,
}

impl EtcdServer {
    /// The server's process id (0 once stopped), for benchmarks that watch its CPU.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(Child::id).unwrap_or(0)
    }

    /// Starts etcd and waits (up to 10 s) until `etcdctl endpoint health`
    /// succeeds. Panics with the tail of the etcd log if it does not.
    pub fn start() -> EtcdServer {
        EtcdServer::start_with(&[])
    }

    /// [`EtcdServer::start`] with etcd's own flags after the harness's, which they
    /// override (a benchmark's etcd with etcd's default timing, not the tests' quick one).
    /// A `restart` starts it with the same flags.
    pub fn start_with(serve: &[String]) -> EtcdServer {
        let dir = super::scratch::with_prefix("electop-etcd-");
        // Free ports are only free "a moment ago": if another test grabbed one
        // in between, etcd exits with "address already in use"; pick again.
        const ATTEMPTS: u32 = 3;
        for attempt in 1..=ATTEMPTS {
            let [client_port, peer_port] = free_ports::<2>();
            let mut child = spawn_etcd(dir.path(), client_port, peer_port, "http", serve);
            match wait_ready(&mut child, client_port, "http", &[]) {
                Ok(()) => {
                    return EtcdServer {
                        child: Some(child),
                        dir,
                        client_port,
                        peer_port,
                        serve: serve.to_vec(),
                    };
                }
                Err(NotReady::Exited(_)) if attempt < ATTEMPTS && clashed(dir.path()) => {
                    let _ = std::fs::remove_dir_all(dir.path().join("data"));
                }
                Err(err) => {
                    kill_and_reap(&mut child);
                    panic!("{}", not_ready_message(&err, dir.path(), client_port));
                }
            }
        }
        unreachable!("the last attempt either returns or panics")
    }

    /// "127.0.0.1:PORT", the form electop and etcd-client take.
    pub fn endpoint(&self) -> String {
        format!("127.0.0.1:{}", self.client_port)
    }

    /// "http://127.0.0.1:PORT", the form etcdctl's `--endpoints` takes.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.client_port)
    }

    pub fn client_port(&self) -> u16 {
        self.client_port
    }

    pub fn peer_port(&self) -> u16 {
        self.peer_port
    }

    /// The etcd data dir (kept across `restart`).
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// etcd's stdout+stderr, appended to across restarts.
    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("etcd.log")
    }

    /// The last `lines` lines of the etcd log.
    pub fn log_tail(&self, lines: usize) -> String {
        log_tail(&self.log_path(), lines)
    }

    pub fn is_running(&mut self) -> bool {
        match &mut self.child {
            Some(child) => matches!(child.try_wait(), Ok(None)),
            None => false,
        }
    }

    /// The server's process id, while it runs (for SIGSTOP/SIGCONT).
    pub fn server_pid(&self) -> u32 {
        self.child.as_ref().map(Child::id).expect("etcd is running")
    }

    /// Graceful stop: SIGTERM, wait up to 5 s, then SIGKILL. No-op if stopped.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            terminate(&mut child, "-TERM", STOP_TIMEOUT);
        }
    }

    /// Crash: SIGKILL, no chance to clean up. No-op if stopped.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            kill_and_reap(&mut child);
        }
    }

    /// Stops (if running) and starts again with the same data dir and ports,
    /// then waits until healthy. Panics with the log tail on failure.
    pub fn restart(&mut self) {
        self.stop();
        let (client, peer) = (self.client_port, self.peer_port);
        let mut child = spawn_etcd(self.dir.path(), client, peer, "http", &self.serve);
        if let Err(err) = wait_ready(&mut child, client, "http", &[]) {
            kill_and_reap(&mut child);
            panic!(
                "restart: {}",
                not_ready_message(&err, self.dir.path(), self.client_port)
            );
        }
        self.child = Some(child);
    }

    /// `etcdctl` (API v3) against this server; panics with stderr on failure.
    pub fn etcdctl(&self, args: &[&str]) -> Output {
        let out = self.try_etcdctl(args);
        if !out.status.success() {
            panic!(
                "etcdctl {} failed ({}): {}{}",
                args.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stderr),
                String::from_utf8_lossy(&out.stdout),
            );
        }
        out
    }

    /// `etcdctl` (API v3) against this server; the caller checks the status.
    pub fn try_etcdctl(&self, args: &[&str]) -> Output {
        self.etcdctl_command()
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run etcdctl (is etcd-client installed?)")
    }

    /// A ready-to-extend `etcdctl --endpoints=URL` command with ETCDCTL_API=3.
    pub fn etcdctl_command(&self) -> Command {
        let mut cmd = Command::new("etcdctl");
        cmd.env("ETCDCTL_API", "3")
            .env_remove("ETCDCTL_ENDPOINTS")
            .arg(format!("--endpoints={}", self.url()));
        cmd
    }

    /// Stdout of a successful `etcdctl` call, as a String.
    pub fn etcdctl_stdout(&self, args: &[&str]) -> String {
        String::from_utf8(self.etcdctl(args).stdout).expect("etcdctl output is UTF-8")
    }

    /// `(key, value)` pairs under `prefix`, oldest (create revision) first.
    /// Parses etcdctl's simple output, so values must not contain newlines.
    pub fn get_prefix(&self, prefix: &str) -> Vec<(String, String)> {
        let out = self.etcdctl_stdout(&[
            "get",
            "--prefix",
            "--sort-by=CREATE",
            "--order=ASCEND",
            prefix,
        ]);
        let lines: Vec<&str> = out.lines().collect();
        assert!(
            lines.len().is_multiple_of(2),
            "odd line count from etcdctl get --prefix {prefix}: {out:?}"
        );
        lines
            .chunks(2)
            .map(|kv| (kv[0].to_string(), kv[1].to_string()))
            .collect()
    }

    /// The proposals campaigning in `election` (`etcdctl elect` names its keys
    /// `ELECTION/LEASE_ID_HEX`), in line order: the first one is the leader.
    pub fn candidates(&self, election: &str) -> Vec<String> {
        self.get_prefix(&format!("{}/", election.trim_end_matches('/')))
            .into_iter()
            .map(|(_, value)| value)
            .collect()
    }

    /// How many watchers etcd serves now (its `etcd_debugging_mvcc_watcher_total` gauge):
    /// a client's watch is registered here before it acts on what the watch tells.
    pub fn watchers(&self) -> u64 {
        let addr = format!("127.0.0.1:{}", self.client_port);
        let metrics = super::http::get(&addr, "/metrics").unwrap_or_else(|e| panic!("{e}"));
        metrics
            .body
            .lines()
            .find_map(|l| l.strip_prefix("etcd_debugging_mvcc_watcher_total "))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .map(|v| v as u64)
            .unwrap_or_else(|| panic!("no watcher gauge in etcd's /metrics"))
    }

    /// An etcd-client connected to this server.
    pub async fn client(&self) -> etcd_client::Client {
        let endpoint = self.endpoint();
        etcd_client::Client::connect([endpoint.as_str()], None)
            .await
            .unwrap_or_else(|e| panic!("etcd-client connect to {endpoint}: {e}"))
    }
}

impl Drop for EtcdServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A single-member etcd in `dir` (data and `etcd.log`), its client port speaking `scheme`
/// (`http`, or `https` with the `serve` flags), with quick elections.
fn spawn_etcd(
    dir: &Path,
    client_port: u16,
    peer_port: u16,
    scheme: &str,
    serve: &[String],
) -> Child {
    let log_path = dir.join("etcd.log");
    let mut log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .unwrap_or_else(|e| panic!("open {}: {e}", log_path.display()));
    let _ = writeln!(
        log,
        "{START_MARKER} ({scheme} client {client_port}, peer {peer_port}) ---"
    );
    let client = format!("{scheme}://127.0.0.1:{client_port}");
    let peer = format!("http://127.0.0.1:{peer_port}");
    etcd_command(
        "t",
        &dir.join("data"),
        &client,
        &peer,
        &format!("t={peer}"),
        log,
    )
    // The caller's flags last: etcd takes a flag's last value.
    .args(["--heartbeat-interval=10", "--election-timeout=100"])
    .args(serve)
    .spawn()
    .expect(SPAWN_FAILED)
}

pub(super) const SPAWN_FAILED: &str =
    "spawn etcd (is etcd-server installed? run scripts/install-deps.sh)";

/// `etcd` with what every harness member shares: its name, data dir, URLs and cluster, quiet
/// logs appended to `log`, and no ETCD_* settings from the environment.
pub(super) fn etcd_command(
    name: &str,
    data_dir: &Path,
    client: &str,
    peer: &str,
    initial_cluster: &str,
    log: File,
) -> Command {
    let stderr = log.try_clone().expect("clone log file handle");
    let mut cmd = Command::new("etcd");
    cmd.arg(format!("--name={name}"))
        .arg(format!("--data-dir={}", data_dir.display()))
        .arg(format!("--listen-client-urls={client}"))
        .arg(format!("--advertise-client-urls={client}"))
        .arg(format!("--listen-peer-urls={peer}"))
        .arg(format!("--initial-advertise-peer-urls={peer}"))
        .arg(format!("--initial-cluster={initial_cluster}"))
        .args(["--logger=zap", "--log-level=error"])
        .env_remove("ETCD_DATA_DIR")
        .env_remove("ETCD_NAME")
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(stderr);
    cmd
}

/// Whether `etcdctl endpoint health` succeeds against `url` (`tls`: its certificate flags).
pub(super) fn healthy(url: &str, tls: &[String]) -> bool {
    Command::new("etcdctl")
        .env("ETCDCTL_API", "3")
        .env_remove("ETCDCTL_ENDPOINTS")
        .arg(format!("--endpoints={url}"))
        .args(tls)
        .args([
            "--dial-timeout=1s",
            "--command-timeout=1s",
            "endpoint",
            "health",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Polls every 20 ms: TCP connect to the client port, then `etcdctl endpoint health`
/// (which needs a committed raft proposal, i.e. a leader).
fn wait_ready(
    child: &mut Child,
    client_port: u16,
    scheme: &str,
    tls: &[String],
) -> Result<(), NotReady> {
    let deadline = Instant::now() + READY_TIMEOUT;
    let addr = SocketAddr::from(([127, 0, 0, 1], client_port));
    let url = format!("{scheme}://127.0.0.1:{client_port}");
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(NotReady::Exited(status));
        }
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
            && healthy(&url, tls)
        {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(NotReady::TimedOut);
        }
        std::thread::sleep(POLL_INTERVAL);
    }
}

/// Whether the latest start in `dir` lost a port race.
fn clashed(dir: &Path) -> bool {
    port_clash(&dir.join("etcd.log"), START_MARKER)
}

fn not_ready_message(err: &NotReady, dir: &Path, client_port: u16) -> String {
    let what = match err {
        NotReady::Exited(status) => format!("etcd exited early ({status})"),
        NotReady::TimedOut => format!("etcd not healthy after {READY_TIMEOUT:?}"),
    };
    format!(
        "{what} on 127.0.0.1:{client_port}; tail of {}:\n{}",
        dir.join("etcd.log").display(),
        log_tail(&dir.join("etcd.log"), 40)
    )
}

/// `etcdctl elect ELECTION PROPOSAL` running as a child process.
///
/// etcdctl prints two lines once this proposal leads: the leader key
/// (`ELECTION/LEASE_ID_HEX`) and the proposal, then holds leadership until
/// SIGINT, on which it resigns (deletes its key) and exits 0. SIGINT while
/// still waiting in line exits 1 ("Error: context canceled"), also deleting
/// the key. SIGKILL leaves the key behind until its session lease (TTL 60 s)
/// expires.
pub struct Campaigner {
    child: Child,
    election: String,
    proposal: String,
    lines: Receiver<String>,
    stdout: Vec<String>,
    stderr: Arc<Mutex<String>>,
    key: Option<String>,
    status: Option<ExitStatus>,
}

impl Campaigner {
    pub fn start(server: &EtcdServer, election: &str, proposal: &str) -> Campaigner {
        let mut child = server
            .etcdctl_command()
            .args(["elect", election, proposal])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn etcdctl elect");
        let stdout = child.stdout.take().expect("piped stdout");
        let lines = super::lines::text_lines(stdout);
        let stderr = super::lines::drain(child.stderr.take().expect("piped stderr"));
        Campaigner {
            child,
            election: election.to_string(),
            proposal: proposal.to_string(),
            lines,
            stdout: Vec::new(),
            stderr,
            key: None,
            status: None,
        }
    }

    /// Waits until etcdctl reports this proposal as leader. False on timeout
    /// or if etcdctl exited first (see `stderr()`).
    pub fn wait_elected(&mut self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while self.key.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.stdout.push(line);
                    if let [.., key, value] = self.stdout.as_slice()
                        && *value == self.proposal
                        && key.starts_with(&format!("{}/", self.election.trim_end_matches('/')))
                    {
                        self.key = Some(key.clone());
                    }
                }
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => return false,
            }
        }
        true
    }

    /// The leader key (`ELECTION/LEASE_ID_HEX`), once `wait_elected` saw it.
    pub fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }

    pub fn election(&self) -> &str {
        &self.election
    }

    pub fn proposal(&self) -> &str {
        &self.proposal
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What etcdctl wrote to stderr so far (errors such as "session expired").
    pub fn stderr(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    pub fn is_running(&mut self) -> bool {
        self.status.is_none() && matches!(self.child.try_wait(), Ok(None))
    }

    /// SIGINT: etcdctl resigns (deletes its key) and exits; SIGKILL after 5 s.
    /// Returns the exit status (0 if it was leader, 1 if still waiting).
    pub fn resign(&mut self) -> ExitStatus {
        if let Some(status) = self.status {
            return status;
        }
        let status = terminate(&mut self.child, "-INT", STOP_TIMEOUT);
        self.status = Some(status);
        status
    }

    /// SIGKILL: no resignation; the key stays until its lease (60 s) expires.
    pub fn kill(&mut self) {
        if self.status.is_none() {
            self.status = Some(kill_and_reap(&mut self.child));
        }
    }
}

impl Drop for Campaigner {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Starts one `etcdctl elect` campaigner per proposal, each waiting until the previous one
/// is in line, so the line order is the order given; the first is the leader.
pub fn campaign_in_order<const N: usize>(
    server: &EtcdServer,
    election: &str,
    proposals: [&str; N],
) -> [Campaigner; N] {
    std::array::from_fn(|i| {
        let p = proposals[i];
        let mut c = Campaigner::start(server, election, p);
        if i == 0 {
            assert!(
                c.wait_elected(Duration::from_secs(10)),
                "{p} elected: {}",
                c.stderr()
            );
        } else {
            super::wait_until(&format!("{p} in line"), Duration::from_secs(10), || {
                server.candidates(election).len() == i + 1
            });
        }
        c
    })
}

// ---- TLS etcd ------------------------------------------------------------------------------

/// How a TLS etcd is started: which of `Certs`' server certificates it serves (`server`,
/// `wrong-name`, `expired`) and whether it demands client certificates signed by `ca.pem`.
pub struct TlsSetup<'a> {
    pub certs: &'a super::certs::Certs,
    pub server_cert: &'a str,
    pub client_cert_auth: bool,
}

/// A single-member etcd whose client port speaks TLS only (https://), with an etcdctl that
/// knows the certificates.
pub struct TlsEtcd {
    pub server: EtcdServer,
    etcdctl_tls: Vec<String>,
}

impl TlsEtcd {
    /// Starts etcd and waits (up to 10 s) until `etcdctl endpoint health` over TLS succeeds.
    pub fn start(setup: TlsSetup<'_>) -> TlsEtcd {
        let c = setup.certs;
        let mut serve = vec![
            format!(
                "--cert-file={}",
                c.arg(&format!("{}.pem", setup.server_cert))
            ),
            format!(
                "--key-file={}",
                c.arg(&format!("{}-key.pem", setup.server_cert))
            ),
        ];
        if setup.client_cert_auth {
            serve.push("--client-cert-auth".into());
            serve.push(format!("--trusted-ca-file={}", c.arg("ca.pem")));
        }
        // The harness's etcdctl trusts the server whatever its certificate (wrong name,
        // expired): those are what electop is tested against, not what etcdctl checks.
        let etcdctl_tls = vec![
            "--insecure-skip-tls-verify".to_string(),
            format!("--cert={}", c.arg("client.pem")),
            format!("--key={}", c.arg("client-key.pem")),
        ];
        let dir = super::scratch::with_prefix("electop-etcd-tls-");
        for attempt in 1..=3 {
            let [client_port, peer_port] = free_ports::<2>();
            let mut child = spawn_etcd(dir.path(), client_port, peer_port, "https", &serve);
            match wait_ready(&mut child, client_port, "https", &etcdctl_tls) {
                Ok(()) => {
                    let server = EtcdServer {
                        child: Some(child),
                        dir,
                        client_port,
                        peer_port,
                        // A restart serves plain HTTP: no TLS test restarts.
                        serve: Vec::new(),
                    };
                    return TlsEtcd {
                        server,
                        etcdctl_tls,
                    };
                }
                Err(NotReady::Exited(_)) if attempt < 3 && clashed(dir.path()) => {
                    let _ = std::fs::remove_dir_all(dir.path().join("data"));
                }
                Err(err) => {
                    kill_and_reap(&mut child);
                    panic!("TLS {}", not_ready_message(&err, dir.path(), client_port));
                }
            }
        }
        unreachable!("the last attempt either returns or panics")
    }

    /// "127.0.0.1:PORT": bare, so TLS comes from the flags.
    pub fn endpoint(&self) -> String {
        self.server.endpoint()
    }

    /// "https://127.0.0.1:PORT".
    pub fn https(&self) -> String {
        format!("https://127.0.0.1:{}", self.server.client_port())
    }

    /// `etcdctl` over TLS (client certificate given); panics with stderr on failure.
    pub fn etcdctl(&self, args: &[&str]) -> String {
        let out = Command::new("etcdctl")
            .env("ETCDCTL_API", "3")
            .env_remove("ETCDCTL_ENDPOINTS")
            .arg(format!("--endpoints={}", self.https()))
            .args(&self.etcdctl_tls)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run etcdctl");
        assert!(
            out.status.success(),
            "etcdctl {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("etcdctl output is UTF-8")
    }

    /// Puts `key = value` on a fresh lease of `ttl` seconds: a lease-key scheme leader.
    pub fn put_leased(&self, key: &str, value: &str, ttl: u32) {
        let granted = self.etcdctl(&["lease", "grant", &ttl.to_string()]);
        // "lease 694d7a... granted with TTL(60s)"
        let id = granted
            .split_whitespace()
            .nth(1)
            .unwrap_or_else(|| panic!("lease id in {granted:?}"));
        self.etcdctl(&["put", "--lease", id, key, value]);
    }
}
