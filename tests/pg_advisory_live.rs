//! PostgreSQL advisory locks as electop shows them (`--scheme pg-advisory`), against a real
//! PostgreSQL 15 (one server for the binary's scenarios, each on its own lock keys) and the
//! clients services take them with: Python (psycopg2) `pg_advisory_lock`, blocking in line,
//! and `pg_try_advisory_lock` in a loop; `psql` sessions on the two-key form. The leader,
//! the line and each session's details are checked against what pg_locks and
//! pg_stat_activity say and what the clients believe; a terminated holder's successor is
//! shown within a poll; reelect and force-leader through the real binary, checked against
//! pg_locks after; resign and --read-only refused; hidden sessions and a dead server said
//! with the fix.

mod common;

use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use common::T;
use common::electop::{Watch, command, election, status_json};
use common::postgres::{DATABASE, PG_BIN, Postgres};
use serde_json::Value;

const WORKER: &str = "worker";
const WORKER_PW: &str = "w0rker-pw";
/// electop's poll in these tests.
const POLL: &str = "200ms";
const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/campaigners/pg/advisory.py"
);

/// A session holding or waiting for an advisory lock, as an application does.
struct Client {
    child: Child,
    lines: Receiver<String>,
    pid: i64,
    app: String,
}

impl Client {
    /// Python (psycopg2): `block` waits with pg_advisory_lock, `try` polls
    /// pg_try_advisory_lock.
    fn python(pg: &Postgres, app: &str, key: &str, mode: &str) -> Client {
        let dsn = format!(
            "host=127.0.0.1 port={} dbname={DATABASE} user={WORKER} password={WORKER_PW}",
            pg.port()
        );
        let mut cmd = Command::new("/usr/bin/python3");
        cmd.args([SCRIPT, &dsn, app, key, mode]);
        Self::spawn(cmd, app, pg)
    }

    /// `psql` taking the lock (blocking) then sleeping on it: a session as an operator or a
    /// shell script holds one.
    fn psql(pg: &Postgres, app: &str, key: &str) -> Client {
        let args = key.replace(':', ", ");
        let mut cmd = Command::new(format!("{PG_BIN}/psql"));
        cmd.env("PGAPPNAME", app)
            .env("PGPASSWORD", WORKER_PW)
            .args(["-X", "-At", "-h", "127.0.0.1", "-p", &pg.port().to_string()])
            .args(["-U", WORKER, "-d", DATABASE])
            .args(["-c", "SELECT 'pid ' || pg_backend_pid()"])
            .args(["-c", &format!("SELECT pg_advisory_lock({args})")])
            .args(["-c", "SELECT 'leader'"])
            .args(["-c", "SELECT pg_sleep(600)"]);
        Self::spawn(cmd, app, pg)
    }

    fn spawn(mut cmd: Command, app: &str, _pg: &Postgres) -> Client {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn a lock client");
        let lines = common::lines::text_lines(child.stdout.take().expect("stdout"));
        let first = lines.recv_timeout(T).expect("the client says its pid");
        let pid = first
            .strip_prefix("pid ")
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or_else(|| panic!("not a pid line: {first:?}"));
        Client {
            child,
            lines,
            pid,
            app: app.to_string(),
        }
    }

    /// What electop shows it as.
    fn id(&self) -> String {
        format!("{}:{}", self.app, self.pid)
    }

    /// Waits for the client to print `what` (a prefix); returns the line.
    fn expect(&self, what: &str, within: Duration) -> String {
        let until = Instant::now() + within;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) if l.starts_with(what) => return l,
                Ok(_) => {}
                Err(_) => panic!("{} never said {what:?} within {within:?}", self.id()),
            }
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn args(pg: &Postgres) -> Vec<String> {
    vec![
        "--sql".into(),
        pg.url(),
        "--scheme".into(),
        "pg-advisory".into(),
        "--poll".into(),
        POLL.into(),
    ]
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// pg_locks for one advisory key (one-key form): (pid, granted) in the order PostgreSQL
/// will grant, the holder first.
fn pg_locks(pg: &Postgres, key: i64) -> Vec<(i64, bool)> {
    let out = pg.psql(&format!(
        "SELECT pid || ' ' || granted FROM pg_locks WHERE locktype = 'advisory' \
         AND objsubid = 1 AND ((classid::bigint << 32) | objid::bigint) = {key} \
         ORDER BY granted DESC, waitstart NULLS LAST, pid"
    ));
    out.lines()
        .filter_map(|l| {
            let (p, g) = l.split_once(' ')?;
            Some((p.parse().ok()?, g == "true"))
        })
        .collect()
}

/// Waits until `pid` is in pg_locks for `key` (granted or waiting).
fn in_pg_locks(pg: &Postgres, key: i64, pid: i64) {
    common::wait_until("the session in pg_locks", T, || {
        pg_locks(pg, key).iter().any(|(p, _)| *p == pid)
    });
}

/// The ids of the line electop shows for `name`, leader first.
fn line(e: &Value) -> Vec<String> {
    e["candidates"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|c| c["id"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Waits until `status` shows `name` with this line (leader first).
fn wait_line(home: &std::path::Path, a: &[String], name: &str, want: &[String]) -> Value {
    let mut last = Value::Null;
    let until = Instant::now() + T;
    while Instant::now() < until {
        let s = status_json(home, &strs(a));
        let found = s["elections"]
            .as_array()
            .and_then(|es| es.iter().find(|e| e["name"] == name))
            .cloned();
        if let Some(e) = found {
            if line(&e) == want {
                return e;
            }
            last = e;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("{name}: never the line {want:?}; last seen {last:#}")
}

fn setup(pg: &Postgres) {
    pg.psql(&format!(
        "CREATE ROLE {WORKER} LOGIN PASSWORD '{WORKER_PW}'; \
         CREATE ROLE peeker LOGIN PASSWORD 'peek-pw'; \
         GRANT pg_read_all_stats, pg_signal_backend TO tester;"
    ));
}

/// Three Python services on one key, in line as they came; the leader, the line and each
/// session's details as pg_locks and pg_stat_activity say; a psql session on the two-key
/// form; names from the config (a key given, a name hashed with hashtext).
fn leader_line_and_details(pg: &Postgres) {
    let home = common::scratch::tempdir();
    let a = args(pg);
    let key = 101;
    let first = Client::python(pg, "svc-a", "101", "block");
    first.expect("leader", T);
    let second = Client::python(pg, "svc-b", "101", "block");
    in_pg_locks(pg, key, second.pid);
    let third = Client::python(pg, "svc-c", "101", "try");
    let two_key = Client::psql(pg, "psql-2k", "3:4");
    two_key.expect("leader", T);
    let want = vec![first.id(), second.id()];
    let e = wait_line(home.path(), &a, "101", &want);
    // The try-lock loop is not in line: PostgreSQL never queues a try.
    assert_eq!(
        pg_locks(pg, key),
        [(first.pid, true), (second.pid, false)],
        "pg_locks agrees"
    );
    assert_eq!(e["leader"]["id"], first.id().as_str(), "{e:#}");
    let port = pg
        .psql(&format!(
            "SELECT client_port FROM pg_stat_activity WHERE pid = {}",
            first.pid
        ))
        .trim()
        .to_string();
    let holder = e["members"][0]["state"].as_str().unwrap_or_default();
    for part in [
        "held since ".to_string(),
        " or earlier".to_string(),
        format!("user {WORKER}"),
        format!("from 127.0.0.1:{port}"),
        "session started ".to_string(),
        format!("pid {}", first.pid),
    ] {
        assert!(holder.contains(&part), "{part:?} not in {holder:?}");
    }
    assert_eq!(e["members"][1]["role"], "waiting #1");
    let waiter = e["members"][1]["state"].as_str().unwrap_or_default();
    assert!(waiter.starts_with("waiting since "), "{waiter}");
    assert!(e["notes"].is_null(), "tester sees every session: {e:#}");
    let start = pg.psql(&format!(
        "SELECT (extract(epoch from backend_start) * 1000000)::bigint FROM pg_stat_activity \
         WHERE pid = {}",
        first.pid
    ));
    assert_eq!(e["leader"]["session_start"], start.trim(), "{e:#}");
    assert!(e["leader"]["deadline"].is_null(), "no deadline: {e:#}");
    let s = status_json(home.path(), &strs(&a));
    let two = election(&s, "3:4");
    assert_eq!(two["leader"]["id"], two_key.id().as_str(), "{two:#}");
    assert_eq!(s["sources"][0]["scheme"], "pg-advisory");

    // Names: a key given outright, and a name as pg_advisory_lock(hashtext(name)) takes it.
    let hashed: i64 = pg
        .psql("SELECT hashtext('nightly-report')")
        .trim()
        .parse()
        .expect("hashtext");
    let named = Client::python(pg, "svc-n", &hashed.to_string(), "block");
    named.expect("leader", T);
    let config = home.path().join("electop.toml");
    let mut f = std::fs::File::create(&config).expect("config");
    writeln!(
        f,
        "[[source]]\nkind = \"sql\"\nurl = \"{}\"\nscheme = \"pg-advisory\"\npoll = \"200ms\"\n\n\
         [source.locks]\nnames = [\"nightly-report\"]\nhash = \"hashtext\"\n\n\
         [source.locks.keys]\n\"101\" = \"billing\"\n",
        pg.url()
    )
    .expect("write config");
    let c = ["--config", config.to_str().expect("utf-8")];
    let s = status_json(home.path(), &c);
    assert_eq!(
        election(&s, "nightly-report")["leader"]["id"],
        named.id().as_str()
    );
    assert_eq!(election(&s, "billing")["leader"]["id"], first.id().as_str());
    drop(third);
}

/// The holder's session terminated (as an operator would with psql): the first in line is
/// shown as leader within a poll, as it believes too; the ended holder learns it only when
/// it next uses its connection.
fn terminated_holder_is_followed_within_a_poll(pg: &Postgres) {
    let home = common::scratch::tempdir();
    let a = args(pg);
    let holder = Client::python(pg, "job-a", "202", "block");
    holder.expect("leader", T);
    let next = Client::python(pg, "job-b", "202", "block");
    in_pg_locks(pg, 202, next.pid);
    let mut w = Watch::start(home.path(), &strs(&a));
    w.wait_synced(1);
    let ended = Instant::now();
    pg.psql(&format!("SELECT pg_terminate_backend({})", holder.pid));
    let ev = w.wait_for("the next in line elected", T, |v| {
        v["election"] == "202" && v["to"] == next.id().as_str()
    });
    let shown_after = ended.elapsed();
    next.expect("leader", T);
    holder.expect("deposed:", T);
    assert_eq!(ev["from"], holder.id().as_str(), "{ev:#}");
    assert_eq!(ev["cause"], "session_ended", "{ev:#}");
    // One poll (200 ms) and the time to run one, with room for a loaded machine.
    assert!(
        shown_after < Duration::from_millis(200 + 1500),
        "shown {shown_after:?} after"
    );
    assert_eq!(pg_locks(pg, 202), [(next.pid, true)]);
}

/// `electop reelect -y` ends the holder's session (the next in line holds it after, per
/// pg_locks); `force-leader X -y` ends everyone ahead of X; resign is refused with why;
/// --read-only refuses all.
fn admin_through_the_binary(pg: &Postgres) {
    let home = common::scratch::tempdir();
    let a = args(pg);
    let key = 303;
    let clients: Vec<Client> = ["w-a", "w-b", "w-c", "w-d", "w-e"]
        .iter()
        .map(|app| {
            let c = Client::python(pg, app, "303", "block");
            in_pg_locks(pg, key, c.pid);
            c
        })
        .collect();
    clients[0].expect("leader", T);
    let ids: Vec<String> = clients.iter().map(Client::id).collect();
    wait_line(home.path(), &a, "303", &ids);
    let run = |extra: &[&str]| {
        let out = command(home.path())
            .args(strs(&a))
            .args(extra)
            .output()
            .expect("run electop");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    };
    let (ok, text) = run(&["reelect", "303", "-y"]);
    assert!(ok, "{text}");
    assert!(text.contains("pg_terminate_backend"), "{text}");
    assert_eq!(pg_locks(pg, key)[0], (clients[1].pid, true), "{text}");
    clients[1].expect("leader", T);
    clients[0].expect("deposed:", T);

    wait_line(home.path(), &a, "303", &ids[1..]);
    let (ok, text) = run(&["force-leader", "303", &ids[3], "-y"]);
    assert!(ok, "{text}");
    let locks = pg_locks(pg, key);
    assert_eq!(
        locks,
        [(clients[3].pid, true), (clients[4].pid, false)],
        "{text}"
    );
    clients[3].expect("leader", T);
    clients[1].expect("deposed:", T);
    clients[2].expect("deposed:", T);

    let (ok, text) = run(&["resign", "303", "-y"]);
    assert!(!ok, "resign is unavailable: {text}");
    assert!(
        text.contains("resign is unavailable") && text.contains("pg_advisory_unlock"),
        "{text}"
    );
    let (ok, text) = run(&["--read-only", "reelect", "303", "-y"]);
    assert!(!ok && text.contains("read-only"), "{text}");
    assert_eq!(
        pg_locks(pg, key)[0],
        (clients[3].pid, true),
        "nothing ended"
    );
}

/// A user without pg_read_all_stats sees other users' sessions without their details: said
/// with the GRANT that fixes it, and electop will not end a session it cannot compare.
fn hidden_sessions_are_said_with_the_fix(pg: &Postgres) {
    let home = common::scratch::tempdir();
    let holder = Client::python(pg, "hidden-a", "404", "block");
    holder.expect("leader", T);
    let url = format!(
        "postgres://peeker:peek-pw@127.0.0.1:{}/{DATABASE}",
        pg.port()
    );
    let a: Vec<String> = vec!["--sql".into(), url, "--scheme".into(), "pg-advisory".into()];
    let s = status_json(home.path(), &strs(&a));
    let e = election(&s, "404");
    assert_eq!(e["leader"]["id"], holder.id().as_str(), "{e:#}");
    let note = e["notes"][0]["text"].as_str().unwrap_or_default();
    assert!(note.contains("GRANT pg_read_all_stats TO peeker"), "{e:#}");
    let out = command(home.path())
        .args(strs(&a))
        .args(["reelect", "404", "-y"])
        .output()
        .expect("run electop");
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && text.contains("GRANT pg_read_all_stats"),
        "{text}"
    );
    assert_eq!(pg_locks(pg, 404), [(holder.pid, true)]);
}

/// `electop serve` against the same server.
struct Serve {
    child: Child,
    addr: String,
}

impl Serve {
    fn start(home: &std::path::Path, a: &[String]) -> Serve {
        let addr = format!("127.0.0.1:{}", common::free_port());
        let child = command(home)
            .args(strs(a))
            .args(["serve", "--listen", &addr])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn electop serve");
        Serve { child, addr }
    }

    fn sample(&self, series: &str) -> Option<f64> {
        std::net::TcpStream::connect(&self.addr).ok()?;
        let (code, body) = common::http::request(&self.addr, "/metrics", &[]);
        if code != 200 {
            return None;
        }
        body.lines()
            .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
    }

    /// Waits until `series` reads `want`.
    fn wait(&self, series: &str, want: f64) {
        common::wait_until(&format!("{series} = {want}"), T, || {
            self.sample(series) == Some(want)
        });
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Thaw<'a>(&'a Postgres);

impl Drop for Thaw<'_> {
    fn drop(&mut self) {
        freeze(self.0, false);
    }
}

/// SIGSTOP (`true`) or SIGCONT the server: the postmaster and every backend it forked.
fn freeze(pg: &Postgres, stop: bool) {
    let Some(pid) = pg.pid() else { return };
    let children = Command::new("pgrep")
        .args(["-P", &pid.to_string()])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let mut pids: Vec<String> = children.split_whitespace().map(str::to_string).collect();
    pids.push(pid.to_string());
    let sig = if stop { "-STOP" } else { "-CONT" };
    let ok = Command::new("kill")
        .arg(sig)
        .args(&pids)
        .status()
        .expect("kill");
    assert!(ok.success(), "kill {sig} {pids:?}");
}

/// The same lock in `status`'s table, in serve's metrics, with the same alarms: the leader's
/// session ended with nobody in line is no leader; a frozen server makes the source stale
/// (not its last leader shown as live), said in words.
fn every_view_and_its_alarms(pg: &Postgres) {
    let home = common::scratch::tempdir();
    let a = args(pg);
    let holder = Client::psql(pg, "report", "505");
    holder.expect("leader", T);
    wait_line(home.path(), &a, "505", &[holder.id()]);
    let out = command(home.path())
        .args(strs(&a))
        .arg("status")
        .output()
        .expect("status");
    let table = String::from_utf8_lossy(&out.stdout);
    let row = table
        .lines()
        .find(|l| l.contains("505"))
        .unwrap_or_else(|| panic!("no row for 505 in\n{table}"));
    assert!(row.contains(&holder.id()), "{table}");

    let serve = Serve::start(home.path(), &a);
    let labels = r#"{source="sql1",election="505",scheme="pg-advisory"}"#;
    serve.wait(&format!("electop_election_has_leader{labels}"), 1.0);
    let info = format!(
        r#"electop_election_leader_info{{source="sql1",election="505",scheme="pg-advisory",holder="{}"}}"#,
        holder.id()
    );
    assert_eq!(serve.sample(&info), Some(1.0));
    pg.psql(&format!("SELECT pg_terminate_backend({})", holder.pid));
    serve.wait(&format!("electop_election_has_leader{labels}"), 0.0);
    // A lock nobody holds or waits for is gone from pg_locks: a fresh `status` no longer
    // lists it, but a dashboard that saw it held says it has no leader, with the alarm.
    common::wait_for("the no-leader alarm", T, || {
        let (_, body) = common::http::request(&serve.addr, "/api/v1/elections", &[]);
        let s: Value = serde_json::from_str(&body).map_err(|e| e.to_string())?;
        let alarms = election(&s, "505")["alarms"].clone();
        match alarms.as_array() {
            Some(a) if a.iter().any(|x| x == "no-leader") => Ok(()),
            _ => Err(format!("{s:#}")),
        }
    });

    freeze(pg, true);
    {
        // Thawed however the wait ends, so a failure leaves no frozen server behind.
        let _thaw = Thaw(pg);
        common::wait_until("the source down and stale", T, || {
            serve.sample(r#"electop_source_up{source="sql1",store="sql"}"#) == Some(0.0)
        });
    }
    let out = command(home.path())
        .args(strs(&a))
        .args(["status", "--timeout", "10s"])
        .output()
        .expect("status");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `electop node --scheme pg-advisory`: two nodes in line on one lock; the first leads,
/// shown as `id:pid`; `reelect` ends its session: it says `deposed:` when it next checks
/// its session, and the second leads, as electop and pg_locks say.
fn nodes_hold_the_lock_and_notice_a_reelection(pg: &Postgres) {
    let home = common::scratch::tempdir();
    let a = args(pg);
    let node = |id: &str| {
        let mut cmd = command(home.path());
        cmd.args(strs(&a))
            .args(["node", "--election", "606", "--id", id, "--renew", "300ms"]);
        common::electop::spawn_lines(&mut cmd)
    };
    let wait_line = |rx: &Receiver<String>, what: &str| {
        let until = Instant::now() + T;
        let mut seen = Vec::new();
        loop {
            let left = until.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(l) if l.contains(what) => return l,
                Ok(l) => seen.push(l),
                Err(_) => panic!("no {what:?} within {T:?}; saw {seen:?}"),
            }
        }
    };
    let (mut n1, l1) = node("node-1");
    wait_line(&l1, "leader");
    let (mut n2, l2) = node("node-2");
    wait_line(&l2, "follower");
    let s = status_json(home.path(), &strs(&a));
    let e = election(&s, "606");
    let leader = e["leader"]["id"].as_str().unwrap_or_default().to_string();
    assert!(leader.starts_with("node-1:"), "{e:#}");
    common::wait_until("node-2 in line", T, || {
        line(election(&status_json(home.path(), &strs(&a)), "606")).len() == 2
    });
    let out = command(home.path())
        .args(strs(&a))
        .args(["reelect", "606", "-y"])
        .output()
        .expect("reelect");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let deposed = wait_line(&l1, "deposed");
    wait_line(&l2, "leader");
    assert!(deposed.contains("session"), "{deposed}");
    let s = status_json(home.path(), &strs(&a));
    let now = election(&s, "606")["leader"]["id"].clone();
    assert!(
        now.as_str().is_some_and(|l| l.starts_with("node-2:")),
        "{now}"
    );
    for n in [&mut n1, &mut n2] {
        let _ = n.kill();
        let _ = n.wait();
    }
}

#[test]
fn pg_advisory_locks_on_a_real_postgres() {
    let pg = Postgres::start();
    setup(&pg);
    leader_line_and_details(&pg);
    terminated_holder_is_followed_within_a_poll(&pg);
    admin_through_the_binary(&pg);
    hidden_sessions_are_said_with_the_fix(&pg);
    every_view_and_its_alarms(&pg);
    nodes_hold_the_lock_and_notice_a_reelection(&pg);
    demo_on_advisory_locks_fails_over(&pg);
}

/// The leader's node name in the demo's panes.
fn pane_leader(s: &str) -> Option<String> {
    s.lines()
        .find(|l| l.trim_end().ends_with(" LEADER") && !l.contains("KILLED"))
        .and_then(|l| l.split_whitespace().find(|w| w.starts_with("node-")))
        .map(str::to_string)
}

/// `electop demo --store postgres --scheme pg-advisory` at 80x24: three nodes, one leads,
/// the dashboard's row names the same node; killing it (`x`) puts another in the lead.
fn demo_on_advisory_locks_fails_over(pg: &Postgres) {
    let home = common::scratch::tempdir();
    let h = home.path().display();
    let shell = format!(
        "env RUST_BACKTRACE=0 XDG_CONFIG_HOME={h}/config XDG_DATA_HOME={h}/data {bin} \
         demo --store postgres --sql '{url}' --scheme pg-advisory; echo ELECTOP-EXITED $?; \
         sleep 60",
        bin = common::electop::bin(),
        url = pg.url(),
    );
    let tmux = common::tmux::Tmux::start(80, 24, &shell);
    let screen = tmux.wait_screen("a leader and two in line", T, |s| {
        s.contains(" LEADER\n") && s.matches("follower").count() >= 2
    });
    let leader = pane_leader(&screen).expect("the leader's pane");
    assert_eq!(screen.matches(" LEADER\n").count(), 1, "{screen}");
    // The dashboard's row: the key, then the leader as `id:pid`.
    tmux.wait_screen("the dashboard names the same leader", T, |s| {
        s.lines()
            .any(|l| l.contains(" 42 ") && l.contains(&format!("{leader}:")))
    });

    let digit = leader.trim_start_matches("node-").to_string();
    tmux.send(&[&digit, "x"]);
    let screen = tmux.wait_screen("the failover", T, |s| {
        s.contains("KILLED") && pane_leader(s).is_some_and(|l| l != leader)
    });
    let next = pane_leader(&screen).expect("checked above");
    tmux.wait_screen("the dashboard follows", T, |s| {
        s.lines()
            .any(|l| l.contains(" 42 ") && l.contains(&format!("{next}:")))
    });
    tmux.send(&["q"]);
    tmux.wait_screen("the question", T, |s| s.contains("Quit?"));
    tmux.send(&["y"]);
    tmux.wait_screen("exit", T, |s| s.contains("ELECTOP-EXITED 0"));
}

#[test]
fn a_dead_server_is_said_in_words() {
    let home = common::scratch::tempdir();
    let port = common::free_port();
    let url = format!("postgres://tester:x@127.0.0.1:{port}/{DATABASE}");
    let out = command(home.path())
        .args(["--sql", &url, "--scheme", "pg-advisory", "status"])
        .output()
        .expect("run electop");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("connection refused") && text.contains("is the server running"),
        "{text}"
    );
    let out = command(home.path())
        .args([
            "--sql",
            "mysql://u@127.0.0.1/x",
            "--scheme",
            "pg-advisory",
            "status",
        ])
        .output()
        .expect("run electop");
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("pg-advisory needs a postgres:// URL"),
        "{text}"
    );
}
