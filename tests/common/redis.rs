//! A throwaway Redis (Debian's `redis-server`) on 127.0.0.1, with its own config file, data
//! dir and log, on a free port; and `redis-cli` to write and read keys as a user would.
//! It starts in milliseconds, so a test binary may start one per server setting it needs
//! (keyspace events on or off, a password). SIGKILLed on drop.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::scratch::Scratch;

use super::process::{kill_and_reap, log_tail, port_clash, signal};
use super::{POLL_INTERVAL, free_port};

const READY_TIMEOUT: Duration = Duration::from_secs(10);
const START_MARKER: &str = "--- electop test harness: starting redis";

pub struct RedisServer {
    child: Option<Child>,
    dir: Scratch,
    port: u16,
    password: Option<String>,
    /// The `tls-port`, when started with TLS.
    tls_port: Option<u16>,
    /// Its config file, to start it again on the same port after a kill.
    conf: PathBuf,
}

/// A `tls-port` beside the plain one: the server's certificate and key, the CA that signs
/// client certificates, and whether a client must present one (`tls-auth-clients`).
pub struct TlsPort<'a> {
    pub cert: &'a Path,
    pub key: &'a Path,
    pub ca: &'a Path,
    pub auth_clients: bool,
}

impl RedisServer {
    /// Starts redis-server with `notify-keyspace-events` set to `events` ("" is off) and,
    /// with `password`, `requirepass`. Waits until it answers PING.
    pub fn start(events: &str, password: Option<&str>) -> RedisServer {
        Self::start_with(events, password, None, "", false)
    }

    /// [`Self::start`] with more lines of config (`cluster-enabled yes`).
    pub fn start_conf(events: &str, extra: &str) -> RedisServer {
        Self::start_with(events, None, None, extra, false)
    }

    /// A Redis Sentinel (`redis-server --sentinel`) watching a master that is not there.
    pub fn start_sentinel() -> RedisServer {
        let monitor = "sentinel monitor mymaster 127.0.0.1 1 1\n";
        Self::start_with("", None, None, monitor, true)
    }

    /// [`Self::start`], with a `tls-port` too (the plain port stays, for `redis-cli`).
    pub fn start_tls(events: &str, tls: TlsPort) -> RedisServer {
        Self::start_with(events, None, Some(tls), "", false)
    }

    fn start_with(
        events: &str,
        password: Option<&str>,
        tls: Option<TlsPort>,
        extra: &str,
        sentinel: bool,
    ) -> RedisServer {
        let dir = super::scratch::with_prefix("electop-redis-");
        for attempt in 1..=3 {
            let port = free_port();
            let conf = dir.path().join("redis.conf");
            let mut text = format!(
                "bind 127.0.0.1\nport {port}\ndir {}\nlogfile {}\nsave \"\"\nappendonly no\n\
                 daemonize no\nnotify-keyspace-events \"{events}\"\n",
                dir.path().display(),
                dir.path().join("redis.log").display()
            );
            if let Some(pw) = password {
                text.push_str(&format!("requirepass {pw}\n"));
            }
            text.push_str(extra);
            let tls_port = tls.as_ref().map(|t| {
                let p = free_port();
                text.push_str(&format!(
                    "tls-port {p}\ntls-cert-file {}\ntls-key-file {}\ntls-ca-cert-file {}\n\
                     tls-auth-clients {}\n",
                    t.cert.display(),
                    t.key.display(),
                    t.ca.display(),
                    if t.auth_clients { "yes" } else { "no" }
                ));
                p
            });
            std::fs::write(&conf, text).expect("write redis.conf");
            let log = dir.path().join("redis.log");
            let mut marker = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&log)
                .expect("open redis.log");
            std::io::Write::write_all(&mut marker, format!("{START_MARKER}\n").as_bytes())
                .expect("write the start marker");
            let mut child = Command::new("redis-server")
                .arg(&conf)
                .args(sentinel.then_some("--sentinel"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn redis-server (is it installed? run scripts/install-deps.sh)");
            let deadline = Instant::now() + READY_TIMEOUT;
            loop {
                if let Ok(Some(status)) = child.try_wait() {
                    if attempt < 3 && port_clash(&log, START_MARKER) {
                        break;
                    }
                    panic!("redis-server exited ({status}):\n{}", log_tail(&log, 20));
                }
                if cli(port, password, &["PING"]).trim() == "PONG" {
                    return RedisServer {
                        child: Some(child),
                        dir,
                        port,
                        password: password.map(str::to_string),
                        tls_port,
                        conf,
                    };
                }
                if Instant::now() > deadline {
                    kill_and_reap(&mut child);
                    panic!(
                        "redis-server on port {port} did not answer PING within {READY_TIMEOUT:?}:\n{}",
                        log_tail(&log, 20)
                    );
                }
                std::thread::sleep(POLL_INTERVAL);
            }
        }
        unreachable!("the last attempt returns or panics")
    }

    /// `redis://127.0.0.1:PORT/0`, without a password.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `rediss://127.0.0.1:TLSPORT/0`, when started with TLS.
    pub fn tls_url(&self) -> String {
        let p = self.tls_port.expect("started with start_tls");
        format!("rediss://127.0.0.1:{p}/0")
    }

    pub fn tls_port(&self) -> u16 {
        self.tls_port.expect("started with start_tls")
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(Child::id).unwrap_or(0)
    }

    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("redis.log")
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// `redis-cli` with `args`: its output, errors included.
    pub fn cli(&self, args: &[&str]) -> String {
        cli(self.port, self.password.as_deref(), args)
    }

    /// The key's `PTTL` in ms (-2: gone, -1: no expiry).
    pub fn pttl(&self, key: &str) -> i64 {
        self.cli(&["PTTL", key]).trim().parse().unwrap_or(-2)
    }

    /// SIGSTOP (`true`) or SIGCONT (`false`).
    pub fn freeze(&self, stop: bool) {
        if let Some(child) = &self.child {
            signal(if stop { "-STOP" } else { "-CONT" }, &[child.id()]);
        }
    }

    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            signal("-CONT", &[child.id()]);
            kill_and_reap(&mut child);
        }
    }
}

impl RedisServer {
    /// Starts it again (after [`Self::stop`]) with the same config on the same port, empty
    /// (nothing is saved); waits until it answers PING.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "restart after stop");
        let mut child = Command::new("redis-server")
            .arg(&self.conf)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn redis-server");
        let deadline = Instant::now() + READY_TIMEOUT;
        while self.cli(&["PING"]).trim() != "PONG" {
            if let Ok(Some(status)) = child.try_wait() {
                panic!(
                    "redis-server exited on restart ({status}):\n{}",
                    log_tail(&self.log_path(), 20)
                );
            }
            assert!(
                Instant::now() < deadline,
                "redis-server did not answer PING after a restart"
            );
            std::thread::sleep(POLL_INTERVAL);
        }
        self.child = Some(child);
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `redis-cli` against 127.0.0.1:`port`, the password through the environment (never the
/// command line).
pub fn cli(port: u16, password: Option<&str>, args: &[&str]) -> String {
    let mut c = Command::new("redis-cli");
    c.args(["-h", "127.0.0.1", "-p", &port.to_string()]);
    if let Some(pw) = password {
        c.env("REDISCLI_AUTH", pw);
    }
    let out = c.args(args).output().expect("run redis-cli");
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// A third-party lock holder: redis-py `Lock` (tests/campaigners/redis) or Node `redlock`
/// (tests/campaigners/node/redlock.js), each taking the lock in a loop and printing what it
/// believes, its token in `detail`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockClient {
    RedisPy,
    Redlock,
}

pub struct Holder {
    pub id: String,
    child: Child,
    rx: std::sync::mpsc::Receiver<super::campaigners::Belief>,
    pub beliefs: Vec<super::campaigners::Belief>,
}

impl Holder {
    /// Campaigns for `key` on the server at `port` with a lock of `ttl_ms`; the password,
    /// if any, in REDIS_PASSWORD.
    pub fn start(
        client: LockClient,
        port: u16,
        password: Option<&str>,
        key: &str,
        id: &str,
        ttl_ms: u32,
    ) -> Holder {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/campaigners");
        let mut c = match client {
            LockClient::RedisPy => {
                let mut c = Command::new("/usr/bin/python3");
                c.arg("-u")
                    .arg(root.join("redis/campaign.py"))
                    .env_remove("PYTHONPATH");
                c
            }
            LockClient::Redlock => {
                assert!(
                    root.join("node/node_modules/redlock").is_dir(),
                    "npm redlock is missing: run scripts/install-node-deps.sh"
                );
                let mut c = Command::new("node");
                c.arg(root.join("node/redlock.js"));
                c
            }
        };
        c.args(["--port", &port.to_string(), "--name", key, "--id", id])
            .args(["--ttl-ms", &ttl_ms.to_string()]);
        if let Some(pw) = password {
            c.env("REDIS_PASSWORD", pw);
        }
        let mut child = c
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn the {client:?} holder: {e}"));
        let lines = super::lines::text_lines(child.stdout.take().expect("piped stdout"));
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in lines {
                if let Ok(b) = serde_json::from_str(&line)
                    && tx.send(b).is_err()
                {
                    break;
                }
            }
        });
        Holder {
            id: id.to_string(),
            child,
            rx,
            beliefs: Vec::new(),
        }
    }

    /// The token it last said it leads with, if its latest belief is `leader`.
    pub fn leading(&mut self) -> Option<String> {
        self.beliefs.extend(self.rx.try_iter());
        self.beliefs
            .last()
            .filter(|b| b.belief == "leader")
            .map(|b| b.detail.clone())
    }

    /// SIGKILL: it neither releases the lock nor renews it again.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Waits until one of `holders` leads; its index and token.
pub fn wait_leader(holders: &mut [Holder], timeout: Duration) -> (usize, String) {
    let deadline = Instant::now() + timeout;
    loop {
        for (i, h) in holders.iter_mut().enumerate() {
            if let Some(token) = h.leading() {
                return (i, token);
            }
        }
        assert!(
            Instant::now() < deadline,
            "no holder leads within {timeout:?}"
        );
        std::thread::sleep(POLL_INTERVAL);
    }
}
