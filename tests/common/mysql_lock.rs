//! MariaDB sessions taking `GET_LOCK` the way applications elect a leader with it: each is
//! the `mariadb` client kept open on a pipe (one server connection, so its connection id is
//! the holder `IS_USED_LOCK` names). A session can take a lock and wait in line for it
//! (`GET_LOCK(name, 30)`), try once (`GET_LOCK(name, 0)`), or run a try-loop that retries
//! every interval until it gets it (the other common pattern; such a session never waits
//! in the server's line).
//!
//! Dropping a session kills its client, so the server sees the connection go and frees its
//! locks, as when an application dies.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use super::T;
use super::mariadb::{DATABASE, MariaDb, PASSWORD, USER};
use super::process::kill_and_reap;

/// One `mariadb` client on a pipe: one server connection.
pub struct LockSession {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    /// The server's connection id (`CONNECTION_ID()`).
    pub id: u64,
}

impl LockSession {
    /// A session of the tests' account (`tester`, over TCP).
    pub fn open(db: &MariaDb) -> LockSession {
        Self::open_as(db, USER, PASSWORD)
    }

    pub fn open_as(db: &MariaDb, user: &str, password: &str) -> LockSession {
        let mut cmd = Command::new("mariadb");
        for (key, _) in std::env::vars_os() {
            let k = key.to_string_lossy();
            if k.starts_with("MYSQL") || k.starts_with("MARIADB") {
                cmd.env_remove(key);
            }
        }
        let mut child = cmd
            .args([
                "--no-defaults",
                "--batch",
                "--skip-column-names",
                // Each result is written as soon as it is read, not when the client exits.
                "--unbuffered",
                // A failing statement (a killed connection) must not end the client quietly
                // mid-test: it prints the error and goes on reading.
                "--force",
                "--protocol=TCP",
                "--host=127.0.0.1",
                &format!("--port={}", db.port()),
                &format!("--user={user}"),
                &format!("--password={password}"),
                DATABASE,
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn mariadb client");
        let stdin = child.stdin.take().expect("piped stdin");
        let (tx, lines) = channel();
        for out in [
            Box::new(child.stdout.take().expect("stdout")) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().expect("stderr")),
        ] {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(out).lines() {
                    let Ok(line) = line else { break };
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        let mut s = LockSession {
            child,
            stdin,
            lines,
            id: 0,
        };
        s.id = s
            .query("SELECT CONNECTION_ID();")
            .parse()
            .expect("connection id");
        s
    }

    /// Sends one statement without waiting for its answer (e.g. a `GET_LOCK` that waits).
    pub fn send(&mut self, sql: &str) {
        writeln!(self.stdin, "{sql}").expect("write to mariadb client");
        self.stdin.flush().expect("flush mariadb client");
    }

    /// The next line the client prints (a result or an error), within `timeout`.
    pub fn answer(&mut self, timeout: Duration) -> Option<String> {
        self.lines.recv_timeout(timeout).ok()
    }

    /// Sends one statement returning one value and waits for it.
    pub fn query(&mut self, sql: &str) -> String {
        self.send(sql);
        self.answer(T)
            .unwrap_or_else(|| panic!("no answer to {sql:?} within {T:?}"))
    }

    /// `GET_LOCK(name, timeout_s)`, waiting for its answer: true when granted.
    pub fn get_lock(&mut self, name: &str, timeout_s: u32) -> bool {
        self.query(&format!("SELECT GET_LOCK({}, {timeout_s});", quote(name))) == "1"
    }

    /// `GET_LOCK(name, timeout_s)` sent, not waited for: the session waits in line.
    /// [`LockSession::granted`] reads the answer.
    pub fn queue(&mut self, name: &str, timeout_s: u32) {
        self.send(&format!("SELECT GET_LOCK({}, {timeout_s});", quote(name)));
    }

    /// The answer to a queued `GET_LOCK` within `timeout`: Some(true) when granted.
    pub fn granted(&mut self, timeout: Duration) -> Option<bool> {
        self.answer(timeout).map(|l| l == "1")
    }

    /// `RELEASE_LOCK(name)`: true when this session held it.
    pub fn release(&mut self, name: &str) -> bool {
        self.query(&format!("SELECT RELEASE_LOCK({});", quote(name))) == "1"
    }

    /// The client process is gone (e.g. its connection was killed and it was told to quit).
    pub fn is_open(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for LockSession {
    fn drop(&mut self) {
        kill_and_reap(&mut self.child);
    }
}

/// A MySQL string literal for a lock name (the tests' names have no quotes or backslashes).
pub fn quote(name: &str) -> String {
    assert!(
        !name.contains(['\'', '\\']),
        "test lock names are plain: {name:?}"
    );
    format!("'{name}'")
}

/// A session retrying `GET_LOCK(name, 0)` every `every` until it gets the lock, then
/// holding it: the try-loop pattern, never in the server's line.
pub struct TryLoop {
    stop: Arc<AtomicBool>,
    holding: Arc<AtomicBool>,
    id: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<LockSession>>,
}

impl TryLoop {
    pub fn start(db: &MariaDb, name: &str, every: Duration) -> TryLoop {
        let mut s = LockSession::open(db);
        let stop = Arc::new(AtomicBool::new(false));
        let holding = Arc::new(AtomicBool::new(false));
        let id = Arc::new(AtomicU64::new(s.id));
        let (stop2, holding2, name) = (stop.clone(), holding.clone(), name.to_string());
        let thread = std::thread::spawn(move || {
            while !stop2.load(Ordering::SeqCst) && !holding2.load(Ordering::SeqCst) {
                if s.get_lock(&name, 0) {
                    holding2.store(true, Ordering::SeqCst);
                } else {
                    std::thread::sleep(every);
                }
            }
            s
        });
        TryLoop {
            stop,
            holding,
            id,
            thread: Some(thread),
        }
    }

    pub fn id(&self) -> u64 {
        self.id.load(Ordering::SeqCst)
    }

    pub fn holding(&self) -> bool {
        self.holding.load(Ordering::SeqCst)
    }

    /// Stops trying; the session (and any lock it got) is returned.
    pub fn stop(mut self) -> LockSession {
        self.stop.store(true, Ordering::SeqCst);
        self.thread
            .take()
            .expect("thread")
            .join()
            .expect("try-loop thread")
    }
}

impl Drop for TryLoop {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
