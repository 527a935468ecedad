//! A throwaway MariaDB 10.11 server (Debian's `mariadb-server`: `mariadbd`,
//! `mariadb-install-db` and the `mariadb` client from PATH) for integration
//! tests.
//!
//! Every server gets its own temp dir and its own free loopback port, so tests
//! can run in parallel. The temp dir holds `data/`, `install.log`
//! (mariadb-install-db output), `mariadbd.log` (server stdout+stderr, which is
//! also its error log; appended to across restarts), the unix socket `sock`
//! and `mariadbd.pid`. Dropping the server kills it and removes the dir.
//!
//! Everything runs with `--no-defaults`, so /etc/mysql is ignored; the flags
//! below are all there is. Notably `--character-set-server=utf8mb4` (the
//! compiled-in default is latin1; Debian's config file is what normally sets
//! utf8mb4) and `--skip-name-resolve` (accounts are matched by IP, so the
//! TCP account is `tester@127.0.0.1`).
//!
//! Accounts: `root@localhost` without a password (install-db's
//! `--auth-root-authentication-method=normal`; its password-less root@127.0.0.1
//! and root@::1 are dropped), so root is reachable over the unix socket only
//! (the harness's `sql`); `tester@127.0.0.1` (TCP) and
//! `tester@localhost` (socket), password `s3cret-pw`, with ALL on `electop.*`.
//!
//! Time zone: `@@global.time_zone` is `SYSTEM`, i.e. the zone of the mariadbd
//! process (`@@system_time_zone`, from its TZ variable, else /etc/localtime:
//! UTC on this machine). `start_with_time_zone` changes it at start. Sessions
//! may override it (`SET time_zone = ...`); sqlx does by default: it runs
//! `SET time_zone='+00:00'` on connect unless the URL has `?timezone=...` or
//! the options say `.timezone(None)`. Named zones in `SET time_zone` need the
//! mysql.time_zone* tables, which install-db leaves empty; offsets like
//! '+05:30' always work.
//!
//! TLS: `start_with_tls` copies a certificate and key into the temp dir
//! (`server.crt`, `server.key`) and starts with `--ssl-cert`/`--ssl-key`; the
//! accounts do not require TLS, so the client's `ssl-mode` decides.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use super::scratch::Scratch;

use super::process::{kill_and_reap, log_tail, port_clash, terminate};
use super::{POLL_INTERVAL, free_port};

/// How long `start`/`restart` wait for the server to answer on its socket.
pub const READY_TIMEOUT: Duration = Duration::from_secs(15);
/// Grace period for a requested shutdown before the server is SIGKILLed.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(10);
/// The database the tests use.
pub const DATABASE: &str = "electop";
/// The password-protected account the tests use.
pub const USER: &str = "tester";
pub const PASSWORD: &str = "s3cret-pw";
const START_MARKER: &str = "--- electop test harness: starting mariadbd";

/// Server options shared by mariadb-install-db (it passes unknown options on
/// to the bootstrap mariadbd) and mariadbd: small and fast, durability off.
const SERVER_ARGS: &[&str] = &[
    "--skip-name-resolve",
    "--skip-log-bin",
    "--character-set-server=utf8mb4",
    "--collation-server=utf8mb4_general_ci",
    // The default redo log is 96 MiB, written out in full at install time.
    "--innodb-log-file-size=8M",
    "--innodb-buffer-pool-size=32M",
    "--innodb-doublewrite=0",
    "--innodb-flush-method=nosync",
    // 2 = write the redo log to the OS at each commit (no fsync), so a
    // SIGKILL (`kill`) loses nothing; 0 would lose up to a second of commits.
    "--innodb-flush-log-at-trx-commit=2",
    // Plain threads instead of io_uring/libaio: no io_uring/aio-max-nr limits
    // when many servers run at once.
    "--innodb-use-native-aio=0",
    "--innodb-buffer-pool-load-at-startup=0",
    "--innodb-buffer-pool-dump-at-shutdown=0",
    "--performance-schema=0",
];

// install-db's `normal` root method also creates password-less root@127.0.0.1,
// root@::1 and root@HOSTNAME: drop them, root is for the unix socket only.
const SETUP_SQL: &str = "\
DELETE FROM mysql.global_priv WHERE User = 'root' AND Host <> 'localhost';
DELETE FROM mysql.proxies_priv WHERE Host <> 'localhost';
FLUSH PRIVILEGES;
CREATE DATABASE electop;
CREATE USER 'tester'@'127.0.0.1' IDENTIFIED BY 's3cret-pw';
CREATE USER 'tester'@'localhost' IDENTIFIED BY 's3cret-pw';
GRANT ALL PRIVILEGES ON electop.* TO 'tester'@'127.0.0.1', 'tester'@'localhost';
";

/// A running MariaDB on 127.0.0.1 with a temporary data dir.
pub struct MariaDb {
    child: Option<Child>,
    dir: Scratch,
    port: u16,
    time_zone: Option<String>,
    /// Serve TLS with DIR/server.crt and DIR/server.key.
    tls: bool,
}

enum NotReady {
    /// The process exited.
    Exited(ExitStatus),
    TimedOut,
}

impl MariaDb {
    /// mariadb-install-db + start + create database `electop` and the
    /// `tester` accounts; waits (up to 15 s) until the server answers. Panics
    /// with the tail of the server log if it does not. Takes about a second,
    /// mostly install-db.
    pub fn start() -> MariaDb {
        Self::start_inner(None, None)
    }

    /// Like `start`, serving TLS with the certificate and key in these PEM
    /// files. Kept across `restart`.
    pub fn start_with_tls(cert: &Path, key: &Path) -> MariaDb {
        Self::start_inner(None, Some((cert, key)))
    }

    /// Like `start`, with the server's zone set to `tz`: an IANA name such as
    /// "America/New_York" becomes the mariadbd process's TZ (so
    /// `@@system_time_zone` is e.g. EST/EDT, `@@time_zone` stays SYSTEM and
    /// follows DST); an offset such as "+05:30" or "-03:00" is passed as
    /// `--default-time-zone` (then `@@time_zone` is that offset). Kept across
    /// `restart`.
    pub fn start_with_time_zone(tz: &str) -> MariaDb {
        Self::start_inner(Some(tz.to_string()), None)
    }

    fn start_inner(time_zone: Option<String>, tls: Option<(&Path, &Path)>) -> MariaDb {
        let dir = super::scratch::with_prefix("electop-mariadb-");
        install_db(dir.path());
        if let Some((cert, key)) = tls {
            for (from, name) in [(cert, "server.crt"), (key, "server.key")] {
                let to = dir.path().join(name);
                std::fs::copy(from, &to)
                    .unwrap_or_else(|e| panic!("copy {} to {}: {e}", from.display(), to.display()));
            }
        }
        let mut db = MariaDb {
            child: None,
            dir,
            port: 0,
            time_zone,
            tls: tls.is_some(),
        };
        // The port is picked only now, right before the bind. If another test
        // took it meanwhile, mariadbd exits with "Address already in use":
        // pick again.
        const ATTEMPTS: u32 = 3;
        let mut attempt = 1;
        loop {
            db.port = free_port();
            let mut child = db.spawn();
            match db.wait_ready(&mut child, READY_TIMEOUT) {
                Ok(()) => {
                    db.child = Some(child);
                    break;
                }
                Err(NotReady::Exited(_))
                    if attempt < ATTEMPTS && port_clash(&db.log_path(), START_MARKER) =>
                {
                    attempt += 1;
                }
                Err(err) => {
                    kill_and_reap(&mut child);
                    panic!("{}", db.not_ready_message(&err));
                }
            }
        }
        if let Err(e) = db.try_sql_db("mysql", SETUP_SQL) {
            panic!("mariadb setup SQL failed: {e}");
        }
        db
    }

    /// `mysql://tester:s3cret-pw@127.0.0.1:PORT/electop`
    pub fn url(&self) -> String {
        format!(
            "mysql://{USER}:{PASSWORD}@127.0.0.1:{}/{DATABASE}",
            self.port
        )
    }

    /// `mysql://tester@127.0.0.1:PORT/electop`
    pub fn url_without_password(&self) -> String {
        format!("mysql://{USER}@127.0.0.1:{}/{DATABASE}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The zone given to `start_with_time_zone`, if any.
    pub fn time_zone(&self) -> Option<&str> {
        self.time_zone.as_deref()
    }

    /// The server's unix socket.
    pub fn socket_path(&self) -> PathBuf {
        self.dir.path().join("sock")
    }

    /// The data dir (kept across `restart`).
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The server's stdout+stderr (its error log), appended to across
    /// restarts.
    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("mariadbd.log")
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

    /// Runs `sql` (one or more `;`-terminated statements, autocommit) with the
    /// `mariadb` client as root over the unix socket, in database `electop`,
    /// with `--batch --skip-column-names`: rows one per line, columns
    /// tab-separated, NULL as `NULL`, tabs/newlines/backslashes in values
    /// escaped as \t, \n, \\; the trailing newline is trimmed. Panics with the
    /// client's stderr on failure (it stops at the first failing statement).
    pub fn sql(&self, sql: &str) -> String {
        self.try_sql(sql)
            .unwrap_or_else(|e| panic!("mariadb failed on {sql:?}: {e}"))
    }

    /// `sql`, returning the error (exit status, stderr) instead of panicking.
    pub fn try_sql(&self, sql: &str) -> Result<String, String> {
        self.try_sql_db(DATABASE, sql)
    }

    /// `try_sql` in another database (e.g. "mysql").
    pub fn try_sql_db(&self, db: &str, sql: &str) -> Result<String, String> {
        let mut cmd = client_command();
        cmd.arg(format!("--socket={}", self.socket_path().display()))
            .args(["--protocol=SOCKET", "--user=root", db]);
        run_with_stdin(cmd, sql)
    }

    /// Runs `sql` like `try_sql`, but as `user` with `password`, over TCP to
    /// 127.0.0.1, i.e. through the password check a real client goes through.
    pub fn try_sql_tcp(&self, user: &str, password: &str, sql: &str) -> Result<String, String> {
        let mut cmd = client_command();
        cmd.args([
            "--protocol=TCP",
            "--host=127.0.0.1",
            &format!("--port={}", self.port),
            &format!("--user={user}"),
            &format!("--password={password}"),
            DATABASE,
        ]);
        run_with_stdin(cmd, sql)
    }

    /// Normal shutdown (SIGTERM); SIGKILL after 10 s. No-op if stopped.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            terminate(&mut child, "-TERM", STOP_TIMEOUT);
        }
    }

    /// For a server kept in a `static`, which is never dropped: killed and its
    /// data dir removed when the test binary exits, as dropping it would.
    pub fn stop_at_exit(db: &'static std::sync::Mutex<MariaDb>) {
        static KEPT: std::sync::OnceLock<&'static std::sync::Mutex<MariaDb>> =
            std::sync::OnceLock::new();
        extern "C" fn at_exit() {
            if let Some(db) = KEPT.get() {
                // Held by a thread still running at exit: left as it was.
                let mut db = match db.try_lock() {
                    Ok(db) => db,
                    Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
                    Err(std::sync::TryLockError::WouldBlock) => return,
                };
                db.kill();
                let _ = std::fs::remove_dir_all(db.dir.path());
            }
        }
        if KEPT.set(db).is_ok() {
            // SAFETY: registers a plain function with no arguments; libtest ends the
            // process with `exit`, which runs it once.
            unsafe { libc::atexit(at_exit) };
        }
    }

    /// Crash: SIGKILL (the next start runs InnoDB crash recovery). No-op if
    /// stopped.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            kill_and_reap(&mut child);
        }
    }

    /// Stops (if running) and starts again with the same data dir, port and
    /// time zone, then waits until it answers. Panics with the log tail on
    /// failure.
    pub fn restart(&mut self) {
        self.stop();
        let mut child = self.spawn();
        if let Err(err) = self.wait_ready(&mut child, READY_TIMEOUT) {
            kill_and_reap(&mut child);
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
            "{START_MARKER} (port {}, time zone {}) ---",
            self.port,
            self.time_zone.as_deref().unwrap_or("inherited")
        );
        let stderr = log.try_clone().expect("clone log file handle");
        let mut cmd = Command::new("mariadbd");
        // --no-defaults must come first.
        cmd.arg("--no-defaults");
        if is_root() {
            cmd.arg("--user=root");
        }
        cmd.arg(format!("--datadir={}", dir.join("data").display()))
            .arg(format!("--socket={}", self.socket_path().display()))
            .arg(format!("--pid-file={}", dir.join("mariadbd.pid").display()))
            .arg(format!("--tmpdir={}", dir.display()))
            .arg(format!("--port={}", self.port))
            .arg("--bind-address=127.0.0.1")
            .args(SERVER_ARGS);
        match self.time_zone.as_deref() {
            Some(tz) if tz.starts_with(['+', '-']) => {
                cmd.arg(format!("--default-time-zone={tz}"));
            }
            Some(tz) => {
                cmd.env("TZ", tz);
            }
            None => {}
        }
        if self.tls {
            cmd.arg(format!("--ssl-cert={}", dir.join("server.crt").display()))
                .arg(format!("--ssl-key={}", dir.join("server.key").display()));
        }
        cmd.current_dir(dir)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(stderr)
            .spawn()
            .expect("spawn mariadbd (is mariadb-server installed? run scripts/install-deps.sh)")
    }

    /// Polls every 20 ms: the socket exists, then `SELECT 1` as root over it.
    fn wait_ready(&self, child: &mut Child, timeout: Duration) -> Result<(), NotReady> {
        let deadline = Instant::now() + timeout;
        let socket = self.socket_path();
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(NotReady::Exited(status));
            }
            // A socket left behind by `kill` exists before mariadbd replaces
            // it; the query below simply fails until then.
            if socket.exists() && self.try_sql_db("mysql", "SELECT 1").is_ok() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(NotReady::TimedOut);
            }
            std::thread::sleep(POLL_INTERVAL);
        }
    }

    fn not_ready_message(&self, err: &NotReady) -> String {
        let what = match err {
            NotReady::Exited(status) => format!("mariadbd exited early ({status})"),
            NotReady::TimedOut => format!("mariadbd not ready after {READY_TIMEOUT:?}"),
        };
        format!(
            "{what} on 127.0.0.1:{}; tail of {}:\n{}",
            self.port,
            self.log_path().display(),
            self.log_tail(40)
        )
    }
}

impl Drop for MariaDb {
    fn drop(&mut self) {
        // The data dir is deleted right after, so no need for a clean shutdown.
        self.kill();
    }
}

fn is_root() -> bool {
    std::fs::metadata("/proc/self")
        .map(|m| m.uid() == 0)
        .unwrap_or(false)
}

/// `mariadb --no-defaults --batch --skip-column-names`, reading SQL from stdin.
fn client_command() -> Command {
    let mut cmd = Command::new("mariadb");
    // Keep MYSQL_HOST, MYSQL_PWD, MYSQL_TCP_PORT, ... out of the client.
    for (key, _) in std::env::vars_os() {
        let key_str = key.to_string_lossy();
        if key_str.starts_with("MYSQL") || key_str.starts_with("MARIADB") {
            cmd.env_remove(key);
        }
    }
    cmd.args([
        "--no-defaults",
        "--batch",
        "--skip-column-names",
        "--default-character-set=utf8mb4",
        "--connect-timeout=10",
    ]);
    cmd
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

/// mariadb-install-db into DIR/data: system tables, root@localhost without a
/// password, no test db. Panics with its output on failure.
fn install_db(dir: &Path) {
    let log_path = dir.join("install.log");
    let log =
        File::create(&log_path).unwrap_or_else(|e| panic!("create {}: {e}", log_path.display()));
    let stderr = log.try_clone().expect("clone log file handle");
    let mut cmd = Command::new("mariadb-install-db");
    cmd.arg("--no-defaults");
    if is_root() {
        cmd.arg("--user=root");
    }
    cmd.arg(format!("--datadir={}", dir.join("data").display()))
        .arg(format!("--tmpdir={}", dir.display()))
        .args(["--auth-root-authentication-method=normal", "--skip-test-db"])
        .args(SERVER_ARGS)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(stderr);
    let status = cmd.status().expect(
        "run mariadb-install-db (is mariadb-server installed? run scripts/install-deps.sh)",
    );
    if !status.success() {
        panic!(
            "mariadb-install-db failed ({status}); tail of {}:\n{}",
            log_path.display(),
            log_tail(&log_path, 40)
        );
    }
}
