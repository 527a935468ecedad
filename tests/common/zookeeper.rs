//! A throwaway standalone ZooKeeper (Debian's `zookeeper` package: its jars, run by `java`)
//! and ZooKeeper's own CLI (`ZooKeeperMain`) to read what is stored, for integration tests.
//!
//! Every server gets its own temp dir (`zoo.cfg`, data, `zookeeper.log`) and a free loopback
//! client port, so tests can run in parallel. The process is SIGKILLed on drop. Ticks are
//! short (200 ms), so sessions of a few seconds are allowed and expire promptly.

use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use super::scratch::Scratch;

use super::process::{kill_and_reap, log_tail, port_clash, signal};
use super::{POLL_INTERVAL, free_ports};

/// The server's classpath: Debian's zookeeper.jar names its dependencies (netty, jute,
/// slf4j-api, jline...) in its manifest; slf4j-simple makes it log to stderr (our log file).
/// netty-codec and netty-resolver are missing from that manifest, and Netty's TLS handler
/// (`secureClientPort`, [`ZkServer::start_tls`]) needs them.
pub const SERVER_CLASSPATH: &str = "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar:\
     /usr/share/java/netty-codec.jar:/usr/share/java/netty-resolver.jar";
/// The CLI's classpath: the same jar, with its logging off (its stdout is what we parse).
pub const CLI_CLASSPATH: &str = "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-nop.jar";
/// JVM flags for every ZooKeeper-side process: small heap and quick start-up, since tests
/// run several JVMs at once on a shared machine.
pub const JVM_FLAGS: [&str; 3] = ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx256m"];
/// ZooKeeper's tick: sessions may last from 2 ticks to `MAX_SESSION_MS`.
pub const TICK_MS: u32 = 200;
pub const MAX_SESSION_MS: u32 = 60_000;
/// How long `ZkServer::start` waits for `ruok` to answer `imok` (a JVM starting on a busy
/// machine takes a few seconds).
pub const READY_TIMEOUT: Duration = Duration::from_secs(30);
const START_MARKER: &str = "--- electop test harness: starting zookeeper";
pub(super) const SPAWN_FAILED: &str =
    "spawn java (is zookeeper installed? run scripts/install-deps.sh)";

/// A running standalone ZooKeeper on 127.0.0.1 with a temporary data dir.
pub struct ZkServer {
    child: Option<Child>,
    dir: Scratch,
    client_port: u16,
    /// The `secureClientPort` of a server started by [`ZkServer::start_tls`].
    secure_port: Option<u16>,
}

/// What a TLS server is given: its certificate and key (PEM) and the CA it trusts for
/// client certificates, with `ssl.clientAuth=need`.
pub struct ZkTls<'a> {
    pub cert: &'a Path,
    pub key: &'a Path,
    pub ca: &'a Path,
}

pub(super) enum NotReady {
    Exited(ExitStatus),
    TimedOut,
}

impl ZkServer {
    /// Starts ZooKeeper and waits (up to 30 s) until `ruok` answers `imok`. Panics with the
    /// tail of its log if it does not.
    pub fn start() -> ZkServer {
        Self::start_with(None, None)
    }

    /// A server that answers only the four-letter words `words` (`4lw.commands.whitelist`;
    /// ZooKeeper's own default is `srvr` alone), e.g. one that refuses `cons` and `dump`.
    pub fn start_with_words(words: &str) -> ZkServer {
        Self::start_with(None, Some(words))
    }

    /// A server with a `secureClientPort` (Netty, PEM key and trust stores, client
    /// certificates required) beside its plain `clientPort`, which the test's own clients
    /// and `wait_ready` use.
    pub fn start_tls(tls: &ZkTls<'_>) -> ZkServer {
        Self::start_with(Some(tls), None)
    }

    fn start_with(tls: Option<&ZkTls<'_>>, words: Option<&str>) -> ZkServer {
        let dir = super::scratch::with_prefix("electop-zk-");
        // A free port is only free "a moment ago": on a clash pick again.
        const ATTEMPTS: u32 = 3;
        for attempt in 1..=ATTEMPTS {
            let [client_port, secure] = free_ports::<2>();
            write_config(dir.path(), client_port, &[]);
            if let Some(words) = words {
                let cfg = dir.path().join("zoo.cfg");
                let text = std::fs::read_to_string(&cfg)
                    .expect("read zoo.cfg")
                    .replace(
                        "4lw.commands.whitelist=srvr,mntr,ruok,cons,dump",
                        &format!("4lw.commands.whitelist={words}"),
                    );
                std::fs::write(&cfg, text).expect("write zoo.cfg");
            }
            let secure_port = tls.map(|t| {
                write_tls_config(dir.path(), secure, t);
                secure
            });
            let log = dir.path().join("zookeeper.log");
            let mut child = spawn_java(
                &log,
                START_MARKER,
                "org.apache.zookeeper.server.ZooKeeperServerMain",
                &dir.path().join("zoo.cfg"),
            );
            match wait_ready(&mut child, client_port) {
                Ok(()) => {
                    return ZkServer {
                        child: Some(child),
                        dir,
                        client_port,
                        secure_port,
                    };
                }
                Err(NotReady::Exited(_))
                    if attempt < ATTEMPTS && port_clash(&log, START_MARKER) => {}
                Err(err) => {
                    kill_and_reap(&mut child);
                    panic!("{}", not_ready_message(&err, &log, client_port));
                }
            }
        }
        unreachable!("the last attempt either returns or panics")
    }

    /// "127.0.0.1:PORT", the connect string ZooKeeper clients take.
    pub fn endpoint(&self) -> String {
        format!("127.0.0.1:{}", self.client_port)
    }

    pub fn client_port(&self) -> u16 {
        self.client_port
    }

    /// "127.0.0.1:PORT" of the `secureClientPort` ([`ZkServer::start_tls`] only).
    pub fn secure_endpoint(&self) -> String {
        let port = self.secure_port.expect("a server started with start_tls");
        format!("127.0.0.1:{port}")
    }

    /// The server's process id (0 once stopped).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(Child::id).unwrap_or(0)
    }

    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("zookeeper.log")
    }

    pub fn log_tail(&self, lines: usize) -> String {
        log_tail(&self.log_path(), lines)
    }

    /// SIGKILL and reap; no-op once stopped.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            signal("-CONT", &[child.id()]);
            kill_and_reap(&mut child);
        }
    }

    /// SIGSTOP (`true`) or SIGCONT (`false`): the server stops answering, its clients'
    /// sessions are neither renewed nor expired until it is thawed.
    pub fn freeze(&self, stop: bool) {
        if let Some(child) = &self.child {
            signal(if stop { "-STOP" } else { "-CONT" }, &[child.id()]);
        }
    }

    /// A four-letter word (`ruok`, `srvr`, `mntr`) and its answer; None if unanswered.
    pub fn four_letter(&self, word: &str) -> Option<String> {
        four_letter(self.client_port, word)
    }

    /// ZooKeeper's own CLI (`ZooKeeperMain`) against this server, fed `commands` one per line
    /// on stdin; see `cli`.
    pub fn cli(&self, commands: &[String]) -> Vec<String> {
        cli(&self.endpoint(), commands)
    }

    /// The children of each of `paths` with their data, read with ZooKeeper's CLI (one `ls`
    /// run, one `get` run): `[(name, data)]` per path, names in sequence order.
    pub fn nodes(&self, paths: &[&str]) -> Vec<Vec<(String, String)>> {
        nodes(&self.endpoint(), paths)
    }
}

impl Drop for ZkServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Writes `dir/zoo.cfg` (data in `dir/data`); `servers` lists `(peer, election)` ports of an
/// ensemble's members, empty for a standalone server.
pub(super) fn write_config(dir: &Path, client_port: u16, servers: &[(u16, u16)]) {
    let data = dir.join("data");
    std::fs::create_dir_all(&data).expect("create zookeeper data dir");
    let mut cfg = format!(
        "tickTime={TICK_MS}\ninitLimit=50\nsyncLimit=10\ndataDir={}\n\
         clientPort={client_port}\nclientPortAddress=127.0.0.1\n\
         minSessionTimeout={}\nmaxSessionTimeout={MAX_SESSION_MS}\n\
         4lw.commands.whitelist=srvr,mntr,ruok,cons,dump\nadmin.enableServer=false\n",
        data.display(),
        2 * TICK_MS,
    );
    for (i, (peer, election)) in servers.iter().enumerate() {
        cfg.push_str(&format!("server.{}=127.0.0.1:{peer}:{election}\n", i + 1));
    }
    std::fs::write(dir.join("zoo.cfg"), cfg).expect("write zoo.cfg");
}

/// Appends a `secureClientPort` to `dir/zoo.cfg`: Netty (the NIO factory has no TLS), the
/// key store a PEM file of the key and certificate, the trust store the CA's PEM.
fn write_tls_config(dir: &Path, secure_port: u16, tls: &ZkTls<'_>) {
    let read =
        |p: &Path| std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let keystore = dir.join("keystore.pem");
    std::fs::write(&keystore, read(tls.key) + &read(tls.cert)).expect("write keystore.pem");
    let cfg = format!(
        "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n\
         secureClientPort={secure_port}\nsecureClientPortAddress=127.0.0.1\n\
         ssl.keyStore.location={}\nssl.keyStore.type=PEM\n\
         ssl.trustStore.location={}\nssl.trustStore.type=PEM\nssl.clientAuth=need\n",
        keystore.display(),
        tls.ca.display()
    );
    let mut f = OpenOptions::new()
        .append(true)
        .open(dir.join("zoo.cfg"))
        .expect("open zoo.cfg");
    f.write_all(cfg.as_bytes())
        .expect("append TLS settings to zoo.cfg");
}

/// `java <main> <cfg>` with the server classpath, stdout and stderr appended to `log` after
/// a marker line (so a port clash is told apart from an earlier start's).
pub(super) fn spawn_java(log: &Path, marker: &str, main: &str, cfg: &Path) -> Child {
    let mut out = OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .unwrap_or_else(|e| panic!("open {}: {e}", log.display()));
    let _ = writeln!(out, "{marker} ({}) ---", cfg.display());
    let err = out.try_clone().expect("clone log file handle");
    Command::new("java")
        .args(JVM_FLAGS)
        .arg("-cp")
        .arg(SERVER_CLASSPATH)
        .arg(main)
        .arg(cfg)
        .env_remove("CLASSPATH")
        .env_remove("JAVA_TOOL_OPTIONS")
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .expect(SPAWN_FAILED)
}

/// Sends a four-letter word to `127.0.0.1:port` and reads the answer to the end.
pub fn four_letter(port: u16, word: &str) -> Option<String> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_millis(300)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(1))).ok()?;
    s.write_all(word.as_bytes()).ok()?;
    let mut answer = String::new();
    s.read_to_string(&mut answer).ok()?;
    (!answer.is_empty()).then_some(answer)
}

/// The `Mode:` line of `srvr` ("standalone", "leader", "follower"), if it answers.
pub fn mode(port: u16) -> Option<String> {
    let srvr = four_letter(port, "srvr")?;
    srvr.lines()
        .find_map(|l| l.strip_prefix("Mode: "))
        .map(|m| m.trim().to_string())
}

fn wait_ready(child: &mut Child, client_port: u16) -> Result<(), NotReady> {
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(NotReady::Exited(status));
        }
        if four_letter(client_port, "ruok").as_deref() == Some("imok") {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(NotReady::TimedOut);
        }
        std::thread::sleep(POLL_INTERVAL * 5);
    }
}

pub(super) fn not_ready_message(err: &NotReady, log: &Path, client_port: u16) -> String {
    let what = match err {
        NotReady::Exited(status) => format!("zookeeper exited early ({status})"),
        NotReady::TimedOut => format!("zookeeper did not answer ruok within {READY_TIMEOUT:?}"),
    };
    format!(
        "{what} on 127.0.0.1:{client_port}; tail of {}:\n{}",
        log.display(),
        log_tail(log, 40)
    )
}

/// Runs ZooKeeper's CLI against `endpoint`, `commands` one per line on stdin (piped stdin
/// turns JLine off, so there are no prompts), and returns what the commands printed: the
/// CLI's own lines ("Connecting to", "Welcome", the WATCHER events) are left out.
pub fn cli(endpoint: &str, commands: &[String]) -> Vec<String> {
    let mut child = Command::new("java")
        .args(JVM_FLAGS)
        .arg("-cp")
        .arg(CLI_CLASSPATH)
        .args(["org.apache.zookeeper.ZooKeeperMain", "-server", endpoint])
        .env_remove("CLASSPATH")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn java for ZooKeeper's CLI (is zookeeper installed?)");
    let mut script = commands.join("\n");
    script.push_str("\nquit\n");
    let mut stdin = child.stdin.take().expect("piped stdin");
    stdin.write_all(script.as_bytes()).expect("feed the CLI");
    drop(stdin);
    let out = child.wait_with_output().expect("wait for ZooKeeper's CLI");
    let text = String::from_utf8_lossy(&out.stdout);
    let chatter = |l: &&str| {
        l.is_empty()
            || l.starts_with("Connecting to ")
            || l.starts_with("Welcome to ZooKeeper")
            || l.starts_with("JLine support")
            || l.starts_with("WATCHER::")
            || l.starts_with("WatchedEvent ")
    };
    text.lines()
        .filter(|l| !chatter(l))
        .map(str::to_string)
        .collect()
}

/// `ls` of each path, then `get` of each child, in two CLI runs.
pub fn nodes(endpoint: &str, paths: &[&str]) -> Vec<Vec<(String, String)>> {
    let listed = cli(
        endpoint,
        &paths.iter().map(|p| format!("ls {p}")).collect::<Vec<_>>(),
    );
    assert_eq!(
        listed.len(),
        paths.len(),
        "ZooKeeper's CLI: one `ls` line per path expected for {paths:?}, got {listed:?}"
    );
    let mut names: Vec<Vec<String>> = listed.iter().map(|l| parse_ls(l)).collect();
    for n in &mut names {
        n.sort_by_key(|name| sequence(name));
    }
    let gets: Vec<String> = paths
        .iter()
        .zip(&names)
        .flat_map(|(p, ns)| ns.iter().map(move |n| format!("get {p}/{n}")))
        .collect();
    let data = if gets.is_empty() {
        Vec::new()
    } else {
        cli(endpoint, &gets)
    };
    assert_eq!(
        data.len(),
        gets.len(),
        "ZooKeeper's CLI: one data line per node expected for {gets:?}, got {data:?}"
    );
    let mut data = data.into_iter();
    names
        .into_iter()
        .map(|ns| {
            ns.into_iter()
                .map(|n| (n, data.next().expect("counted above")))
                .collect()
        })
        .collect()
}

/// `[a, b, c]` (the CLI's `ls` output) as names; panics on anything else (an error line).
fn parse_ls(line: &str) -> Vec<String> {
    let inner = line
        .strip_prefix('[')
        .and_then(|l| l.strip_suffix(']'))
        .unwrap_or_else(|| panic!("ZooKeeper's CLI `ls` printed {line:?}, not a list"));
    inner
        .split(", ")
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .collect()
}

/// The sequence number a sequential node's name ends with (10 digits); u64::MAX if none.
pub fn sequence(name: &str) -> u64 {
    let digits = name.len().saturating_sub(10);
    name.get(digits..)
        .and_then(|d| d.parse().ok())
        .unwrap_or(u64::MAX)
}
