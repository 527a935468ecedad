//! `--scheme mysql-lock` against a real MariaDB (one server for the whole binary) with real
//! sessions taking `GET_LOCK`: the holder and the line as the server itself lists them, a
//! killed holder's successor shown as leader within a poll, re-election by `KILL` compared
//! on the holder still holding, and what electop says when the server lists no locks.
//! `electop node --scheme mysql-lock`: three nodes in line, deposed by `reelect`, released
//! on SIGTERM, and an unreachable server said in words.

mod common;

use std::sync::{LazyLock, Mutex, RwLock};
use std::time::{Duration, Instant};

use common::T;
use common::electop::{Watch, command, election, status_json};
use common::mariadb::MariaDb;
use common::mysql_lock::{LockSession, TryLoop};
use common::node::{Node, dump_all};
use serde_json::Value;

/// The server, with the `metadata_lock_info` plugin loaded (tests that need it gone take
/// the write side of [`PLUGIN`]).
static DB: LazyLock<Mutex<MariaDb>> = LazyLock::new(|| {
    let db = MariaDb::start();
    db.sql("INSTALL SONAME 'metadata_lock_info';");
    // Accounts with the privileges docs/stores/sql-session-locks.md names: none beyond the database, PROCESS
    // only, and PROCESS with CONNECTION ADMIN.
    for (user, grant) in [
        ("plain", None),
        ("peek", Some("PROCESS")),
        ("ops", Some("PROCESS, CONNECTION ADMIN")),
    ] {
        db.sql(&format!(
            "CREATE USER '{user}'@'127.0.0.1' IDENTIFIED BY 'pw-{user}'; \
             GRANT ALL ON electop.* TO '{user}'@'127.0.0.1';"
        ));
        if let Some(g) = grant {
            db.sql(&format!("GRANT {g} ON *.* TO '{user}'@'127.0.0.1';"));
        }
    }
    Mutex::new(db)
});
static PLUGIN: RwLock<()> = RwLock::new(());

/// The server, stopped when the binary exits (a `static` is never dropped).
fn db() -> &'static Mutex<MariaDb> {
    let db: &'static Mutex<MariaDb> = &DB;
    MariaDb::stop_at_exit(db);
    db
}

fn url() -> String {
    db().lock().unwrap_or_else(|e| e.into_inner()).url()
}

/// The URL as one of the accounts made above.
fn url_as(user: &str) -> String {
    let port = db().lock().unwrap_or_else(|e| e.into_inner()).port();
    format!("mysql://{user}:pw-{user}@127.0.0.1:{port}/electop")
}

fn with_db<R>(f: impl FnOnce(&MariaDb) -> R) -> R {
    f(&db().lock().unwrap_or_else(|e| e.into_inner()))
}

fn args(url: &str) -> Vec<String> {
    ["--sql", url, "--scheme", "mysql-lock", "--poll", "100ms"]
        .map(String::from)
        .to_vec()
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// How a connection shows as a leader or in the line.
fn shown(id: u64) -> String {
    format!("conn:{id}")
}

/// The ids of an election's line, in order (the candidates after the leader).
fn line(e: &Value) -> Vec<String> {
    let skip = usize::from(!e["leader"].is_null());
    e["candidates"]
        .as_array()
        .map(|c| {
            c.iter()
                .skip(skip)
                .filter_map(|c| c["id"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// The holder and the line electop shows match what the server says: `IS_USED_LOCK` for
/// the holder, PROCESSLIST for who waits (longest first); a try-loop session is in no line.
#[test]
fn the_holder_and_the_line_are_the_servers() {
    let _p = PLUGIN.read().unwrap_or_else(|e| e.into_inner());
    let (a, mut b, mut c, try_loop) = with_db(|db| {
        let mut a = LockSession::open(db);
        assert!(a.get_lock("line.jobs", 0));
        let mut b = LockSession::open(db);
        b.queue("line.jobs", 30);
        in_line(db, "line.jobs", &[b.id]);
        let mut c = LockSession::open(db);
        c.queue("line.jobs", 30);
        in_line(db, "line.jobs", &[b.id, c.id]);
        let t = TryLoop::start(db, "line.jobs", Duration::from_millis(100));
        (a, b, c, t)
    });
    let home = common::scratch::tempdir();
    let a_args = args(&url());
    let s = status_json(home.path(), &strs(&a_args));
    let e = election(&s, "line.jobs");
    assert_eq!(e["scheme"], "mysql-lock", "{e:#}");
    let server_holder = with_db(|db| db.sql("SELECT IS_USED_LOCK('line.jobs');"));
    assert_eq!(server_holder, a.id.to_string());
    assert_eq!(e["leader"]["id"], shown(a.id), "{e:#}");
    assert_eq!(with_db(|db| waiting(db, "line.jobs")), [b.id, c.id]);
    assert_eq!(line(e), [shown(b.id), shown(c.id)], "{e:#}");
    assert!(
        !line(e).contains(&shown(try_loop.id())),
        "a try-loop never waits"
    );
    assert!(
        e["leader"]["session_start"].is_null(),
        "no start exists: {e:#}"
    );
    assert!(
        e["leader"]["deadline"].is_null(),
        "no deadline either: {e:#}"
    );
    let text = serde_json::to_string(e).expect("json");
    assert!(text.contains("tester"), "the holder's account: {e:#}");
    assert!(text.contains("127.0.0.1"), "the holder's address: {e:#}");

    // The holder's client dies: the server frees its lock and grants the first in line,
    // which is shown as leader within a poll (100 ms, with room for a loaded machine).
    let mut w = Watch::start(home.path(), &strs(&a_args));
    w.wait_synced(1);
    let a_id = a.id;
    let died = Instant::now();
    drop(a);
    let v = w.wait_for("b leads", T, |v| {
        v["election"] == "line.jobs" && v["to"] == shown(b.id).as_str()
    });
    let shown_after = died.elapsed();
    assert_eq!(b.granted(T), Some(true), "the server granted b");
    assert_eq!(v["from"], shown(a_id), "{v:#}");
    assert_eq!(v["cause"], "session_ended", "{v:#}");
    assert!(
        shown_after < Duration::from_millis(100 + 1500),
        "shown {shown_after:?} after"
    );
    // b releases and lives on: resigned; c is granted next.
    assert!(b.release("line.jobs"));
    assert_eq!(c.granted(T), Some(true));
    let v = w.wait_for("c leads", T, |v| {
        v["election"] == "line.jobs" && v["to"] == shown(c.id).as_str()
    });
    assert_eq!(v["cause"], "resigned", "{v:#}");
    assert!(c.release("line.jobs"));
    let deadline = Instant::now() + T;
    while !try_loop.holding() {
        assert!(Instant::now() < deadline, "the try-loop never got the lock");
        std::thread::sleep(Duration::from_millis(20));
    }
    w.wait_for("the try-loop leads", T, |v| {
        v["election"] == "line.jobs" && v["to"] == shown(try_loop.id()).as_str()
    });
}

/// The connections waiting in `GET_LOCK(name, …)` as the server lists them, longest first
/// (the order it grants them).
fn waiting(db: &MariaDb, name: &str) -> Vec<u64> {
    let out = db.sql(&format!(
        "SELECT ID FROM information_schema.PROCESSLIST WHERE STATE = 'User lock' \
         AND INFO LIKE '%GET_LOCK(''{name}''%' ORDER BY TIME_MS DESC;"
    ));
    out.lines().filter_map(|l| l.parse().ok()).collect()
}

/// Waits until the server lists `ids` waiting for `name`, in that order.
fn in_line(db: &MariaDb, name: &str, ids: &[u64]) {
    let deadline = Instant::now() + T;
    while waiting(db, name) != ids {
        assert!(
            Instant::now() < deadline,
            "{ids:?} never waited for {name}: {:?}",
            waiting(db, name)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether the server still lists connection `id`.
fn connected(db: &MariaDb, id: u64) -> bool {
    db.sql(&format!(
        "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = {id};"
    )) == "1"
}

fn run(home: &std::path::Path, args: &[&str]) -> (bool, String) {
    let out = command(home).args(args).output().expect("run electop");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// `reelect -y` kills the holder's connection, compared on its still holding the lock; the
/// session waiting first takes over.
#[test]
fn reelect_kills_the_holder_compared_on_the_lock() {
    let _p = PLUGIN.read().unwrap_or_else(|e| e.into_inner());
    let (a, mut b) = with_db(|db| {
        let mut a = LockSession::open(db);
        assert!(a.get_lock("adm.jobs", 0));
        let mut b = LockSession::open(db);
        b.queue("adm.jobs", 30);
        (a, b)
    });
    let home = common::scratch::tempdir();
    let a_args = args(&url());
    let mut w = Watch::start(home.path(), &strs(&a_args));
    w.wait_for("a leads", T, |v| {
        v["election"] == "adm.jobs" && v["to"] == shown(a.id).as_str()
    });
    let mut cmd = strs(&a_args);
    cmd.extend(["reelect", "adm.jobs", "-y"]);
    let (ok, text) = run(home.path(), &cmd);
    assert!(ok, "{text}");
    assert!(
        text.contains(&format!("KILL CONNECTION {}", a.id)),
        "{text}"
    );
    assert_eq!(b.granted(T), Some(true), "the line moved on");
    let v = w.wait_for("b leads", T, |v| {
        v["election"] == "adm.jobs" && v["to"] == shown(b.id).as_str()
    });
    assert_eq!(v["from"], shown(a.id), "{v:#}");
    // This watch is another electop: it sees the session end, then learns from the audit
    // log that it was forced.
    let v = w.wait_for("the change attributed", T, |v| {
        v["election"] == "adm.jobs" && v["cause"] == "forced_reelection"
    });
    assert_eq!(v["to"], shown(b.id), "{v:#}");
    assert!(
        !with_db(|db| connected(db, a.id)),
        "a's connection was killed"
    );
    drop(a);
}

/// Without the plugin (and no names configured) the error names both fixes; with a name
/// configured, `IS_USED_LOCK` finds its holder.
#[test]
fn a_server_without_the_plugin_says_what_to_do() {
    let _p = PLUGIN.write().unwrap_or_else(|e| e.into_inner());
    with_db(|db| db.sql("UNINSTALL SONAME 'metadata_lock_info';"));
    let home = common::scratch::tempdir();
    let a_args = args(&url());
    let out = command(home.path())
        .args(strs(&a_args))
        .args(["status", "--json", "--timeout", "8s"])
        .output()
        .expect("run electop");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("INSTALL SONAME 'metadata_lock_info'"),
        "names the plugin: {err}"
    );
    assert!(!err.contains("s3cret-pw"), "{err}");

    // The names given in the config: IS_USED_LOCK finds the holder, PROCESSLIST the line;
    // a lock not named is not seen.
    let (mut a, mut b, mut other) = with_db(|db| {
        let mut a = LockSession::open(db);
        assert!(a.get_lock("named.jobs", 0));
        let mut b = LockSession::open(db);
        b.queue("named.jobs", 30);
        in_line(db, "named.jobs", &[b.id]);
        let mut other = LockSession::open(db);
        assert!(other.get_lock("unnamed.jobs", 0));
        (a, b, other)
    });
    let config = home.path().join("electop.toml");
    std::fs::write(
        &config,
        format!(
            "[[source]]\nkind = \"sql\"\nurl = \"{}\"\nscheme = \"mysql-lock\"\n\
             poll = \"100ms\"\n\n[source.locks]\nnames = [\"named.jobs\"]\n",
            url()
        ),
    )
    .expect("write config");
    let c = ["--config", config.to_str().expect("utf-8")];
    let s = status_json(home.path(), &c);
    with_db(|db| db.sql("INSTALL SONAME 'metadata_lock_info';"));
    let e = election(&s, "named.jobs");
    assert_eq!(e["leader"]["id"], shown(a.id), "{e:#}");
    assert_eq!(line(e), [shown(b.id)], "{e:#}");
    let names: Vec<&str> = s["elections"]
        .as_array()
        .map(|a| a.iter().filter_map(|e| e["name"].as_str()).collect())
        .unwrap_or_default();
    assert!(!names.contains(&"unnamed.jobs"), "{names:?}");
    assert!(a.release("named.jobs"));
    assert_eq!(b.granted(T), Some(true));
    assert!(b.release("named.jobs"));
    assert!(other.release("unnamed.jobs"));
}

/// What each privilege allows: an account without PROCESS sees another account's holder
/// without details (a note says the grant) and will not end it; with PROCESS it sees it
/// but the server refuses the KILL (said with CONNECTION ADMIN); with both it ends it.
/// `force-leader` ends everyone ahead of the chosen session, each compared.
#[test]
fn privileges_decide_what_is_seen_and_ended() {
    let _p = PLUGIN.read().unwrap_or_else(|e| e.into_inner());
    let (mut a, mut b, mut c) = with_db(|db| {
        let mut a = LockSession::open(db);
        assert!(a.get_lock("priv.jobs", 0));
        let mut b = LockSession::open(db);
        b.queue("priv.jobs", 30);
        in_line(db, "priv.jobs", &[b.id]);
        let mut c = LockSession::open(db);
        c.queue("priv.jobs", 30);
        in_line(db, "priv.jobs", &[b.id, c.id]);
        (a, b, c)
    });
    let home = common::scratch::tempdir();

    let plain = args(&url_as("plain"));
    let s = status_json(home.path(), &strs(&plain));
    let e = election(&s, "priv.jobs");
    assert_eq!(
        e["leader"]["id"],
        shown(a.id),
        "the holder, from the plugin: {e:#}"
    );
    assert_eq!(
        line(e),
        Vec::<String>::new(),
        "PROCESSLIST hides the line: {e:#}"
    );
    let note = e["notes"][0]["text"].as_str().unwrap_or_default();
    assert!(note.contains("GRANT PROCESS"), "{e:#}");
    let mut cmd = strs(&plain);
    cmd.extend(["reelect", "priv.jobs", "-y"]);
    let (ok, text) = run(home.path(), &cmd);
    assert!(!ok && text.contains("GRANT PROCESS"), "{text}");
    assert!(with_db(|db| connected(db, a.id)), "nothing ended");

    let peek = args(&url_as("peek"));
    let s = status_json(home.path(), &strs(&peek));
    let e = election(&s, "priv.jobs");
    assert_eq!(line(e), [shown(b.id), shown(c.id)], "{e:#}");
    let mut cmd = strs(&peek);
    cmd.extend(["reelect", "priv.jobs", "-y"]);
    let (ok, text) = run(home.path(), &cmd);
    assert!(!ok && text.contains("GRANT CONNECTION ADMIN"), "{text}");
    assert!(!text.contains("pw-peek"), "{text}");
    assert!(with_db(|db| connected(db, a.id)), "nothing ended");

    let ops = args(&url_as("ops"));
    let mut cmd = strs(&ops);
    let target = shown(c.id);
    cmd.extend(["force-leader", "priv.jobs", &target, "-y"]);
    let (ok, text) = run(home.path(), &cmd);
    assert!(ok, "{text}");
    assert_eq!(c.granted(T), Some(true), "c holds it: {text}");
    with_db(|db| {
        assert!(
            !connected(db, a.id) && !connected(db, b.id),
            "a and b ended"
        );
        assert_eq!(
            db.sql("SELECT IS_USED_LOCK('priv.jobs');"),
            c.id.to_string()
        );
    });
    assert!(c.release("priv.jobs"));
    drop((a.answer(Duration::ZERO), b.answer(Duration::ZERO)));
}

/// A waiter using a server-side prepared statement (sqlx, like Go's driver by default)
/// shows `GET_LOCK(?, …)` in PROCESSLIST: its lock cannot be named, so it is in no line.
/// (A fact of the server, checked here because docs/stores/sql-session-locks.md says it.)
#[test]
fn a_prepared_waiter_shows_a_placeholder() {
    use sqlx::Connection as _;
    let _p = PLUGIN.read().unwrap_or_else(|e| e.into_inner());
    let mut a = with_db(LockSession::open);
    assert!(a.get_lock("prep.jobs", 0));
    let url = url();
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let waiter = rt.spawn(async move {
        let mut c = sqlx::MySqlConnection::connect(&url).await.expect("connect");
        let r: Option<i64> = sqlx::query_scalar("SELECT GET_LOCK(?, 5)")
            .bind("prep.jobs")
            .fetch_one(&mut c)
            .await
            .expect("get_lock");
        r
    });
    let deadline = Instant::now() + T;
    let info = loop {
        let info = with_db(|db| {
            db.sql("SELECT INFO FROM information_schema.PROCESSLIST WHERE STATE = 'User lock';")
        });
        // Other tests' sessions may wait on this server at the same time: look for ours.
        if info.lines().any(|l| l == "SELECT GET_LOCK(?, 5)") {
            break info;
        }
        assert!(
            Instant::now() < deadline,
            "the prepared GET_LOCK never waited: {info:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(
        !info.contains("prep.jobs"),
        "the prepared waiter's lock name is not in PROCESSLIST: {info:?}"
    );
    assert!(a.release("prep.jobs"));
    assert_eq!(rt.block_on(waiter).expect("waiter"), Some(1));
}

/// `electop serve` on `args`, stopped when dropped.
struct Serve {
    child: std::process::Child,
    addr: String,
}

impl Serve {
    fn start(home: &std::path::Path, args: &[&str]) -> Serve {
        let addr = format!("127.0.0.1:{}", common::free_port());
        let child = command(home)
            .args(args)
            .args(["serve", "--listen", &addr])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn electop serve");
        let s = Serve { child, addr };
        common::wait_until("serve ready", T, || {
            std::net::TcpStream::connect(&s.addr).is_ok()
                && common::http::request(&s.addr, "/readyz", &[]).0 == 200
        });
        s
    }

    /// Waits until a `/metrics` line starting with `prefix` contains `has`; the body.
    fn wait_line(&self, prefix: &str, has: &str) -> String {
        let deadline = Instant::now() + T;
        loop {
            let (code, body) = common::http::request(&self.addr, "/metrics", &[]);
            assert_eq!(code, 200, "{body}");
            if body
                .lines()
                .any(|l| l.starts_with(prefix) && l.contains(has))
            {
                return body;
            }
            assert!(
                Instant::now() < deadline,
                "no {prefix}…{has} within {T:?}:\n{body}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The status table, the dashboard (the real binary under tmux) and `serve`'s metrics
/// show the same holder, and all follow a killed holder to its successor; a lock released
/// with nobody waiting is an election without a leader in the metrics.
#[test]
fn every_view_shows_the_holder_and_follows_it() {
    let _p = PLUGIN.read().unwrap_or_else(|e| e.into_inner());
    let (a, mut b) = with_db(|db| {
        let mut a = LockSession::open(db);
        assert!(a.get_lock("views.jobs", 0));
        let mut b = LockSession::open(db);
        b.queue("views.jobs", 30);
        in_line(db, "views.jobs", &[b.id]);
        (a, b)
    });
    let home = common::scratch::tempdir();
    let a_args = args(&url());
    let out = command(home.path())
        .args(strs(&a_args))
        .arg("status")
        .output()
        .expect("run electop status");
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{table}");
    let row = table
        .lines()
        .find(|l| l.contains("views.jobs"))
        .unwrap_or_else(|| panic!("no row for views.jobs:\n{table}"));
    assert!(row.contains(&shown(a.id)), "{table}");

    let serve = Serve::start(home.path(), &strs(&a_args));
    serve.wait_line("electop_election_leader_info{", &shown(a.id));
    let shell = format!(
        "env RUST_BACKTRACE=0 XDG_CONFIG_HOME={h}/config XDG_DATA_HOME={h}/data {bin} {args}; \
         echo ELECTOP-EXITED $?; sleep 60",
        h = home.path().display(),
        bin = common::electop::bin(),
        args = a_args.join(" "),
    );
    let tmux = common::tmux::Tmux::start(100, 24, &shell);
    tmux.wait_screen("the holder", T, |s| {
        s.contains("views.jobs") && s.contains(&shown(a.id))
    });

    drop(a);
    assert_eq!(b.granted(T), Some(true));
    tmux.wait_screen("the successor", T, |s| {
        s.lines()
            .any(|l| l.contains("views.jobs") && l.contains(&shown(b.id)))
    });
    serve.wait_line("electop_election_leader_info{", &shown(b.id));
    serve.wait_line(
        "electop_election_leader_changes_total{",
        "election=\"views.jobs\",scheme=\"mysql-lock\",cause=\"session_ended\"} 1",
    );
    assert!(b.release("views.jobs"));
    let m = serve.wait_line(
        "electop_election_has_leader{",
        "election=\"views.jobs\",scheme=\"mysql-lock\"} 0",
    );
    assert!(
        m.contains("election=\"views.jobs\",scheme=\"mysql-lock\",cause=\"resigned\"} 1"),
        "{m}"
    );
    assert!(!m.contains("s3cret-pw"), "{m}");
}

/// `electop node --scheme mysql-lock --json` as `id` on lock `name`.
fn node(home: &std::path::Path, name: &str, id: &str) -> Node {
    let mut cmd = command(home);
    cmd.args(args(&url()))
        .args(["node", "--election", name, "--id", id, "--json"])
        .args(["--renew", "300ms"]);
    Node::spawn(&mut cmd, id, name, home.join(format!("{id}.stderr")))
}

/// The connection a node says it holds or waits on (`conn:N`), once it said `nth` (from 1).
fn conn_of(n: &mut Node, nth: usize) -> String {
    let deadline = Instant::now() + T;
    loop {
        n.pump();
        let said = n
            .events()
            .filter_map(|e| e.strip_prefix("my connection is "))
            .nth(nth - 1)
            .map(String::from);
        if let Some(c) = said {
            return c;
        }
        assert!(
            Instant::now() < deadline,
            "no connection said; {}",
            n.dump()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn holder(name: &str) -> String {
    shown(
        with_db(|db| db.sql(&format!("SELECT IS_USED_LOCK('{name}');")))
            .parse()
            .unwrap_or(0),
    )
}

fn status_of(home: &std::path::Path, name: &str) -> Value {
    let a = args(&url());
    election(&status_json(home, &strs(&a)), name).clone()
}

/// Three nodes on one lock: the first leads (IS_USED_LOCK is its connection), the others
/// wait in GET_LOCK, in the line electop shows. `reelect -y` kills the leader's connection:
/// it says `deposed:`, the next in line leads, and status agrees; SIGTERM releases the lock
/// at once to the last.
#[test]
fn nodes_stand_in_line_and_notice_a_reelection() {
    let _p = PLUGIN.read().unwrap_or_else(|e| e.into_inner());
    let home = common::scratch::tempdir();
    let name = "node.jobs";
    let mut nodes = vec![node(home.path(), name, "n1")];
    nodes[0].wait_belief("leader", None, T);
    for id in ["n2", "n3"] {
        nodes.push(node(home.path(), name, id));
        let n = nodes.last_mut().expect("just pushed");
        n.wait_belief("follower", None, T);
        let c = conn_of(n, 1);
        let id: u64 = c.trim_start_matches("conn:").parse().expect("an id");
        let waits = |db: &MariaDb| waiting(db, name).contains(&id);
        common::wait_until("the node waits in GET_LOCK", T, || with_db(waits));
    }
    let conns: Vec<String> = nodes.iter_mut().map(|n| conn_of(n, 1)).collect();
    assert_eq!(holder(name), conns[0], "{}", dump_all(&nodes));
    common::wait_until("status shows the three", T, || {
        let e = status_of(home.path(), name);
        e["leader"]["id"] == conns[0].as_str() && line(&e) == conns[1..]
    });

    let mut cmd = args(&url());
    cmd.extend(["reelect", name, "-y"].map(String::from));
    let (ok, text) = run(home.path(), &strs(&cmd));
    assert!(ok, "{text}");
    assert!(
        text.contains(&format!("KILL CONNECTION {}", &conns[0][5..])),
        "{text}"
    );
    nodes[0].wait_said("deposed", T);
    nodes[1].wait_belief("leader", None, T);
    let deposed = nodes[0]
        .beliefs()
        .find(|v| v["belief"] == "deposed")
        .cloned();
    let reason = deposed.map(|v| v["reason"].to_string()).unwrap_or_default();
    assert!(reason.contains("connection"), "{reason}");
    assert_eq!(holder(name), conns[1], "{}", dump_all(&nodes));
    // The deposed node connects again and waits behind the third.
    let again = conn_of(&mut nodes[0], 2);
    assert_ne!(again, conns[0]);
    common::wait_until("status agrees with the nodes", T, || {
        let e = status_of(home.path(), name);
        e["leader"]["id"] == conns[1].as_str() && line(&e) == [conns[2].clone(), again.clone()]
    });

    let (status, _) = nodes[1].sigterm(Duration::from_secs(3));
    assert!(status.success(), "{}", nodes[1].dump());
    nodes[1].wait_belief("stopped", None, T);
    nodes[2].wait_belief("leader", None, T);
    assert_eq!(holder(name), conns[2], "{}", dump_all(&nodes));
}

/// A node whose server is not there says so, and what to check.
#[test]
fn a_node_says_when_the_server_is_unreachable() {
    let home = common::scratch::tempdir();
    let port = common::free_port();
    let url = format!("mysql://u:pw@127.0.0.1:{port}/electop");
    let mut cmd = command(home.path());
    cmd.args(args(&url))
        .args(["node", "--election", "x", "--id", "lost", "--json"]);
    let mut n = Node::spawn(&mut cmd, "lost", "x", home.path().join("lost.stderr"));
    n.wait_belief("no-contact", None, T);
    let (_, v) = n.current().expect("a belief");
    let error = v["error"].as_str().unwrap_or_default().to_string();
    assert!(
        error.contains("connection refused") && error.contains("is the server running"),
        "{error}"
    );
    assert!(!error.contains("pw"), "no password: {error}");
}
