//! A throwaway PostgreSQL 15 server (Debian's `postgresql-15`, binaries from
//! /usr/lib/postgresql/15/bin) for integration tests.
//!
//! Every server gets its own temp dir and its own free loopback port, so tests
//! can run in parallel. The temp dir holds `data/` (the initdb'd cluster),
//! `initdb.log`, `postgres.log` (server stdout+stderr, appended to across
//! restarts) and the unix socket `.s.PGSQL.PORT`. Dropping the server shuts it
//! down (immediate shutdown) and removes the dir.
//!
//! Root: postgres refuses to run as root. When the tests run as root, the temp
//! dir is chowned to the `postgres` system user and initdb/postgres run as that
//! user (setuid/setgid in the child; no runuser/su in between, so the `Child`
//! is the postmaster itself and signals reach it directly).
//!
//! Auth (our own pg_hba.conf): the unix socket is `trust` (the harness's
//! `psql`, as superuser `postgres`); TCP on 127.0.0.1 and ::1 is
//! `scram-sha-256` for every role, so `url()` needs the right password and the
//! superuser (who has none) cannot log in over TCP at all.
//!
//! Database `electop`; role `tester` (password `s3cret-pw`) has ALL on the
//! database and on schema `public`, and default privileges make tables and
//! sequences that the superuser creates there (e.g. through `psql`) usable by
//! `tester` too.
//!
//! Time zone: initdb writes `timezone` and `log_timezone` into
//! postgresql.conf from the initdb process's zone (TZ, else /etc/localtime:
//! `Etc/UTC` on this machine), so the server zone defaults to the local one.
//! `start_with_time_zone` passes `-c TimeZone=...` instead. Sessions may
//! override it: libpq clients send PGTZ when set (the harness strips PG*
//! variables), and sqlx always sends `TimeZone=UTC` in its startup packet.
//!
//! TLS: `start_with_tls` copies a certificate and key into the temp dir
//! (`server.crt`, `server.key`, mode 0600, owned by the server's user as
//! postgres demands) and starts with `ssl=on`; pg_hba's `host` lines take TLS
//! and plain connections alike, so the client's `sslmode` decides.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use super::scratch::Scratch;

pub use super::process::log_tail;
use super::process::{port_clash, signal, wait_exit};
use super::{POLL_INTERVAL, free_port};

/// Where Debian's PostgreSQL 15 binaries live. (/usr/local/bin/postgres,
/// initdb and pg_ctl on the dev machine are symlinks into this dir; /usr/bin/psql
/// is Debian's pg_wrapper. We use this dir directly.)
pub const PG_BIN: &str = "/usr/lib/postgresql/15/bin";
/// How long `start`/`restart` wait for the server to accept connections.
pub const READY_TIMEOUT: Duration = Duration::from_secs(15);
/// Grace period for a requested shutdown before the server is SIGKILLed.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(10);
/// The database the tests use.
pub const DATABASE: &str = "electop";
/// The password-protected login role the tests use over TCP.
pub const USER: &str = "tester";
pub const PASSWORD: &str = "s3cret-pw";
/// The bootstrap superuser; trusted on the unix socket only.
pub const SUPERUSER: &str = "postgres";
const START_MARKER: &str = "--- electop test harness: starting postgres";

const PG_HBA: &str = "\
# electop test harness: trust on the unix socket (harness psql as superuser),
# passwords (SCRAM) over TCP.
local   all   all                   trust
host    all   all   127.0.0.1/32    scram-sha-256
host    all   all   ::1/128         scram-sha-256
";

const SETUP_SQL: &str = "\
CREATE ROLE tester LOGIN PASSWORD 's3cret-pw';
CREATE DATABASE electop;
GRANT ALL PRIVILEGES ON DATABASE electop TO tester;
\\connect electop
GRANT ALL ON SCHEMA public TO tester;
ALTER DEFAULT PRIVILEGES FOR ROLE postgres IN SCHEMA public GRANT ALL ON TABLES TO tester;
ALTER DEFAULT PRIVILEGES FOR ROLE postgres IN SCHEMA public GRANT ALL ON SEQUENCES TO tester;
";

/// A running PostgreSQL 15 on 127.0.0.1 with a temporary cluster.
pub struct Postgres {
    child: Option<Child>,
    dir: Scratch,
    port: u16,
    time_zone: Option<String>,
    /// Serve TLS with DIR/server.crt and DIR/server.key.
    tls: bool,
    /// uid/gid the server binaries run as: `postgres` when we are root.
    owner: Option<(u32, u32)>,
}

enum NotReady {
    /// The process exited.
    Exited(ExitStatus),
    TimedOut,
}

impl Postgres {
    /// initdb + start + create role `tester` and database `electop`; waits (up
    /// to 15 s) until the server accepts connections. Panics with the tail of
    /// the server log if it does not. Takes about a second, mostly initdb.
    pub fn start() -> Postgres {
        Self::start_inner(None, None)
    }

    /// Like `start`, serving TLS (`ssl=on`) with the certificate and key in
    /// these PEM files. Kept across `restart`.
    pub fn start_with_tls(cert: &Path, key: &Path) -> Postgres {
        Self::start_inner(None, Some((cert, key)))
    }

    /// Like `start`, with the server's `TimeZone` setting (the default for
    /// sessions, what `now()` is shown in) set to `tz`, e.g.
    /// "America/New_York" or "Asia/Kolkata" (IANA names; note POSIX-style
    /// "UTC+5" means 5 h *west* of UTC). Kept across `restart`.
    pub fn start_with_time_zone(tz: &str) -> Postgres {
        Self::start_inner(Some(tz.to_string()), None)
    }

    fn start_inner(time_zone: Option<String>, tls: Option<(&Path, &Path)>) -> Postgres {
        let owner = server_owner();
        let dir = super::scratch::with_prefix("electop-pg-");
        if let Some((uid, gid)) = owner {
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid))
                .unwrap_or_else(|e| panic!("chown {} to postgres: {e}", dir.path().display()));
        }
        init_cluster(dir.path(), owner);
        if let Some((cert, key)) = tls {
            install_tls_files(dir.path(), cert, key, owner);
        }
        let mut pg = Postgres {
            child: None,
            dir,
            port: 0,
            time_zone,
            tls: tls.is_some(),
            owner,
        };
        // The port is picked only now, right before the bind, to keep the
        // window in which another test could take it small. If one did,
        // postgres exits with "Address already in use": pick again.
        const ATTEMPTS: u32 = 3;
        let mut attempt = 1;
        loop {
            pg.port = free_port();
            let mut child = pg.spawn();
            match wait_ready(&mut child, pg.port, READY_TIMEOUT) {
                Ok(()) => {
                    pg.child = Some(child);
                    break;
                }
                Err(NotReady::Exited(_))
                    if attempt < ATTEMPTS && port_clash(&pg.log_path(), START_MARKER) =>
                {
                    attempt += 1;
                }
                Err(err) => {
                    crash(&mut child);
                    panic!("{}", pg.not_ready_message(&err));
                }
            }
        }
        if let Err(e) = pg.try_psql_db(SUPERUSER, SETUP_SQL) {
            panic!("postgres setup SQL failed: {e}");
        }
        pg
    }

    /// `postgres://tester:s3cret-pw@127.0.0.1:PORT/electop`
    pub fn url(&self) -> String {
        format!(
            "postgres://{USER}:{PASSWORD}@127.0.0.1:{}/{DATABASE}",
            self.port
        )
    }

    /// `postgres://tester@127.0.0.1:PORT/electop` (for a password supplied
    /// some other way, e.g. PGPASSWORD or a config file).
    pub fn url_without_password(&self) -> String {
        format!("postgres://{USER}@127.0.0.1:{}/{DATABASE}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The `TimeZone` given to `start_with_time_zone`, if any.
    pub fn time_zone(&self) -> Option<&str> {
        self.time_zone.as_deref()
    }

    /// The temp dir; also the unix socket dir (`psql -h DIR -p PORT`).
    pub fn socket_dir(&self) -> &Path {
        self.dir.path()
    }

    /// The cluster's data dir (kept across `restart`).
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The server's stdout+stderr, appended to across restarts.
    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("postgres.log")
    }

    /// The last `lines` lines of the server log.
    pub fn log_tail(&self, lines: usize) -> String {
        log_tail(&self.log_path(), lines)
    }

    /// The server process id (the postmaster for postgres), while running.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    pub fn is_running(&mut self) -> bool {
        match &mut self.child {
            Some(child) => matches!(child.try_wait(), Ok(None)),
            None => false,
        }
    }

    /// Runs `sql` (one or more statements, each in its own transaction unless
    /// you write BEGIN/COMMIT; psql meta-commands work too) with psql as the
    /// superuser over the unix socket, in database `electop`, with
    /// `-X -q -v ON_ERROR_STOP=1 -At`: rows come back one per line, columns
    /// separated by `|`, without headers or command tags; the trailing newline
    /// is trimmed. Panics with psql's stderr on failure.
    pub fn psql(&self, sql: &str) -> String {
        self.try_psql(sql)
            .unwrap_or_else(|e| panic!("psql failed on {sql:?}: {e}"))
    }

    /// `psql`, returning the error (exit status, stderr) instead of panicking.
    pub fn try_psql(&self, sql: &str) -> Result<String, String> {
        self.try_psql_db(DATABASE, sql)
    }

    /// `try_psql` in another database (e.g. "postgres").
    pub fn try_psql_db(&self, db: &str, sql: &str) -> Result<String, String> {
        let mut cmd = psql_command();
        cmd.arg("-h").arg(self.dir.path()).args([
            "-p",
            &self.port.to_string(),
            "-U",
            SUPERUSER,
            "-d",
            db,
        ]);
        run_with_stdin(cmd, sql)
    }

    /// Runs `sql` like `try_psql`, but as `user` with `password`, over TCP to
    /// 127.0.0.1 (PGPASSWORD, `-w`: never prompt), i.e. through the
    /// password check a real client goes through.
    pub fn try_psql_tcp(&self, user: &str, password: &str, sql: &str) -> Result<String, String> {
        let mut cmd = psql_command();
        cmd.env("PGPASSWORD", password).args([
            "-w",
            "-h",
            "127.0.0.1",
            "-p",
            &self.port.to_string(),
            "-U",
            user,
            "-d",
            DATABASE,
        ]);
        run_with_stdin(cmd, sql)
    }

    /// Fast shutdown (SIGINT: disconnect clients, checkpoint, exit); SIGKILL
    /// after 10 s. No-op if stopped.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            shut_down(&mut child, "-INT", STOP_TIMEOUT);
        }
    }

    /// Crash: SIGKILL the postmaster and all its backends at once (no
    /// checkpoint, clients see the connection drop; the next start runs crash
    /// recovery). No-op if stopped.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            crash(&mut child);
        }
    }

    /// Stops (if running) and starts again with the same data dir, port and
    /// time zone, then waits until it accepts connections (after `kill`, that
    /// includes crash recovery). Panics with the log tail on failure.
    pub fn restart(&mut self) {
        self.stop();
        let mut child = self.spawn();
        if let Err(err) = wait_ready(&mut child, self.port, READY_TIMEOUT) {
            crash(&mut child);
            panic!("restart: {}", self.not_ready_message(&err));
        }
        self.child = Some(child);
    }

    fn spawn(&self) -> Child {
        let dir = self.dir.path();
        let log_path = self.log_path();
        let mut log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .unwrap_or_else(|e| panic!("open {}: {e}", log_path.display()));
        let _ = writeln!(
            log,
            "{START_MARKER} (port {}, TimeZone {}) ---",
            self.port,
            self.time_zone.as_deref().unwrap_or("from postgresql.conf")
        );
        let stderr = log.try_clone().expect("clone log file handle");
        let mut cmd = Command::new(pg_bin("postgres"));
        cmd.arg("-D")
            .arg(dir.join("data"))
            .args(["-p", &self.port.to_string()])
            .arg("-k")
            .arg(dir)
            // No synchronous_commit=off: with it a commit may still sit in
            // shared WAL buffers when `kill` SIGKILLs the server, and be lost.
            // With fsync=off a synchronous commit is just a write(2) anyway.
            .args([
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                "fsync=off",
                "-c",
                "full_page_writes=off",
            ]);
        if let Some(tz) = &self.time_zone {
            cmd.arg("-c").arg(format!("TimeZone={tz}"));
        }
        if self.tls {
            cmd.args(["-c", "ssl=on", "-c"])
                .arg(format!(
                    "ssl_cert_file={}",
                    dir.join("server.crt").display()
                ))
                .arg("-c")
                .arg(format!("ssl_key_file={}", dir.join("server.key").display()));
        }
        remove_pg_env(&mut cmd);
        run_as(&mut cmd, self.owner);
        cmd.current_dir(dir)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(stderr)
            .spawn()
            .expect("spawn postgres (is postgresql-15 installed? run scripts/install-deps.sh)")
    }

    fn not_ready_message(&self, err: &NotReady) -> String {
        let what = match err {
            NotReady::Exited(status) => format!("postgres exited early ({status})"),
            NotReady::TimedOut => format!("postgres not ready after {READY_TIMEOUT:?}"),
        };
        format!(
            "{what} on 127.0.0.1:{}; tail of {}:\n{}",
            self.port,
            self.log_path().display(),
            self.log_tail(40)
        )
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        // Immediate shutdown (SIGQUIT): no checkpoint, the data is thrown away.
        if let Some(mut child) = self.child.take() {
            shut_down(&mut child, "-QUIT", STOP_TIMEOUT);
        }
    }
}

fn pg_bin(name: &str) -> PathBuf {
    Path::new(PG_BIN).join(name)
}

/// `psql -X -q -v ON_ERROR_STOP=1 -At`, reading the SQL from stdin.
fn psql_command() -> Command {
    let mut cmd = Command::new(pg_bin("psql"));
    remove_pg_env(&mut cmd);
    cmd.env("PGCONNECT_TIMEOUT", "10").args([
        "-X",
        "-q",
        "-v",
        "ON_ERROR_STOP=1",
        "-At",
        "-f",
        "-",
    ]);
    cmd
}

/// Keeps PGHOST, PGTZ, PGPASSWORD, PGDATA, ... from the environment out of
/// the harness's servers and clients.
fn remove_pg_env(cmd: &mut Command) {
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("PG") {
            cmd.env_remove(key);
        }
    }
}

/// Runs `cmd` with `input` on stdin; Ok(stdout without the trailing newline)
/// if it exits 0, else Err(status, stderr and stdout).
fn run_with_stdin(mut cmd: Command, input: &str) -> Result<String, String> {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("spawn {:?}: {e}", cmd.get_program()))?;
    let mut stdin = child.stdin.take().expect("piped stdin");
    let input = input.to_string();
    // A thread, so a big script cannot deadlock against a full stdout pipe.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let out = child
        .wait_with_output()
        .map_err(|e| format!("wait for {:?}: {e}", cmd.get_program()))?;
    let _ = writer.join();
    let stdout = String::from_utf8_lossy(&out.stdout);
    if out.status.success() {
        Ok(stdout.strip_suffix('\n').unwrap_or(&stdout).to_string())
    } else {
        Err(format!(
            "{}: {}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim_end(),
            if stdout.is_empty() {
                String::new()
            } else {
                format!("\nstdout: {stdout}")
            }
        ))
    }
}

/// Some((uid, gid)) of the `postgres` system user when we run as root (the
/// server refuses root), None otherwise (run as ourselves).
pub fn server_owner() -> Option<(u32, u32)> {
    let euid = std::fs::metadata("/proc/self")
        .expect("stat /proc/self")
        .uid();
    if euid != 0 {
        return None;
    }
    let passwd = std::fs::read_to_string("/etc/passwd").expect("read /etc/passwd");
    for line in passwd.lines() {
        let fields: Vec<&str> = line.split(':').collect();
        if let [name, _, uid, gid, ..] = fields.as_slice()
            && *name == "postgres"
        {
            let uid = uid.parse().expect("numeric uid in /etc/passwd");
            let gid = gid.parse().expect("numeric gid in /etc/passwd");
            return Some((uid, gid));
        }
    }
    panic!(
        "running as root but there is no `postgres` user (postgres refuses to run as root); \
         install postgresql-15: scripts/install-deps.sh"
    );
}

pub fn run_as(cmd: &mut Command, owner: Option<(u32, u32)>) {
    if let Some((uid, gid)) = owner {
        // std drops supplementary groups (setgroups(0)) when root sets a uid.
        cmd.uid(uid).gid(gid).env("HOME", "/var/lib/postgresql");
    }
}

/// initdb into DIR/data (trust auth, superuser `postgres`, no fsync), then our
/// pg_hba.conf. Panics with initdb's output on failure.
fn init_cluster(dir: &Path, owner: Option<(u32, u32)>) {
    let log_path = dir.join("initdb.log");
    let log =
        File::create(&log_path).unwrap_or_else(|e| panic!("create {}: {e}", log_path.display()));
    let stderr = log.try_clone().expect("clone log file handle");
    let mut cmd = Command::new(pg_bin("initdb"));
    cmd.arg("-D")
        .arg(dir.join("data"))
        .args([
            "-A",
            "trust",
            "-U",
            SUPERUSER,
            "-E",
            "UTF8",
            "--locale=C.UTF-8",
            "--no-sync",
            "--no-instructions",
        ])
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(stderr);
    remove_pg_env(&mut cmd);
    run_as(&mut cmd, owner);
    let status = cmd
        .status()
        .expect("run initdb (is postgresql-15 installed? run scripts/install-deps.sh)");
    if !status.success() {
        panic!(
            "initdb failed ({status}); tail of {}:\n{}",
            log_path.display(),
            log_tail(&log_path, 40)
        );
    }
    let hba = dir.join("data").join("pg_hba.conf");
    std::fs::write(&hba, PG_HBA).unwrap_or_else(|e| panic!("write {}: {e}", hba.display()));
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::chown(&hba, Some(uid), Some(gid))
            .unwrap_or_else(|e| panic!("chown {}: {e}", hba.display()));
    }
}

/// Copies the server's certificate and key to DIR/server.crt and DIR/server.key,
/// readable by the server's user only (postgres refuses a key others can read).
fn install_tls_files(dir: &Path, cert: &Path, key: &Path, owner: Option<(u32, u32)>) {
    use std::os::unix::fs::PermissionsExt;
    for (from, name) in [(cert, "server.crt"), (key, "server.key")] {
        let to = dir.join(name);
        std::fs::copy(from, &to)
            .unwrap_or_else(|e| panic!("copy {} to {}: {e}", from.display(), to.display()));
        std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o600))
            .unwrap_or_else(|e| panic!("chmod {}: {e}", to.display()));
        if let Some((uid, gid)) = owner {
            std::os::unix::fs::chown(&to, Some(uid), Some(gid))
                .unwrap_or_else(|e| panic!("chown {}: {e}", to.display()));
        }
    }
}

/// Polls every 20 ms: TCP connect to the port, then `pg_isready` over TCP
/// (which fails while the server starts up or runs crash recovery).
fn wait_ready(child: &mut Child, port: u16, timeout: Duration) -> Result<(), NotReady> {
    let deadline = Instant::now() + timeout;
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(NotReady::Exited(status));
        }
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            let mut cmd = Command::new(pg_bin("pg_isready"));
            remove_pg_env(&mut cmd);
            let ready = cmd
                .args(["-q", "-t", "2", "-h", "127.0.0.1", "-p", &port.to_string()])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .map(|s| s.success())
                .unwrap_or(false);
            if ready {
                return Ok(());
            }
        }
        if Instant::now() >= deadline {
            return Err(NotReady::TimedOut);
        }
        std::thread::sleep(POLL_INTERVAL);
    }
}

/// Sends `sig` ("-INT" fast, "-QUIT" immediate shutdown) to the postmaster,
/// waits up to `grace` for it to exit (it waits for its backends first), then
/// crashes it.
fn shut_down(child: &mut Child, sig: &str, grace: Duration) -> ExitStatus {
    if let Ok(Some(status)) = child.try_wait() {
        return status;
    }
    signal(sig, &[child.id()]);
    match wait_exit(child, grace) {
        Some(status) => status,
        None => crash(child),
    }
}

/// SIGKILLs the postmaster and its children (backends, checkpointer, ...):
/// SIGSTOP first so it cannot fork meanwhile. Waits until they are all gone,
/// so their shared memory is released before a restart.
fn crash(child: &mut Child) -> ExitStatus {
    if let Ok(Some(status)) = child.try_wait() {
        return status;
    }
    let pid = child.id();
    signal("-STOP", &[pid]);
    let mut pids = children_of(pid);
    let kids = pids.clone();
    pids.push(pid);
    signal("-KILL", &pids);
    let status = child.wait().expect("wait for postmaster");
    let deadline = Instant::now() + STOP_TIMEOUT;
    while kids.iter().any(|&kid| is_alive(kid)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    status
}

/// (state, ppid) from /proc/PID/stat.
fn proc_stat(pid: u32) -> Option<(char, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "PID (COMM) STATE PPID ...", COMM may contain spaces and parentheses.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some((state, ppid))
}

fn is_alive(pid: u32) -> bool {
    matches!(proc_stat(pid), Some((state, _)) if state != 'Z' && state != 'X')
}

fn children_of(parent: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| matches!(proc_stat(pid), Some((_, ppid)) if ppid == parent))
        .collect()
}
