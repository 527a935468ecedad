//! `--sql URL` alone, against a real SQLite file, PostgreSQL and MariaDB: electop looks in
//! the database's catalog for the election tables it knows and reads what it finds, saying
//! which; with none there it says what it looked for and which flags choose a table.

mod common;

use common::electop::{election, status};
use common::sqlstore::Store;
use serde_json::Value;

fn my(store: &Store) -> bool {
    matches!(store, Store::My(_))
}

/// A `shedlock` table as ShedLock's README creates it, holding one lock for 30 s.
fn shedlock_with_a_lock(store: &Store) {
    store.exec(if my(store) {
        "CREATE TABLE shedlock(name VARCHAR(64) NOT NULL, lock_until TIMESTAMP(3) NOT NULL, \
         locked_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3), locked_by VARCHAR(255) NOT NULL, PRIMARY KEY (name))"
    } else {
        "CREATE TABLE shedlock(name VARCHAR(64) NOT NULL, lock_until TIMESTAMP NOT NULL, \
         locked_at TIMESTAMP NOT NULL, locked_by VARCHAR(255) NOT NULL, PRIMARY KEY (name))"
    });
    store.grant("shedlock");
    store.exec(match store {
        Store::My(_) => {
            "INSERT INTO shedlock VALUES('reportJob', UTC_TIMESTAMP(3) + INTERVAL 30 SECOND, UTC_TIMESTAMP(3), 'host-a')"
        }
        Store::Pg(_) => {
            "INSERT INTO shedlock VALUES('reportJob', timezone('utc', now()) + interval '30 seconds', timezone('utc', now()), 'host-a')"
        }
        Store::Sqlite { .. } => {
            "INSERT INTO shedlock VALUES('reportJob', datetime('now', '+30 seconds'), datetime('now'), 'host-a')"
        }
    });
}

/// `--sql URL status --json`: stdout parsed when it succeeded, and stderr.
fn find(store: &Store, home: &std::path::Path) -> (Option<Value>, String) {
    let out = status(home, &["--sql", &store.url()]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let json = out
        .status
        .success()
        .then(|| serde_json::from_slice(&out.stdout).expect("status prints JSON"));
    (json, err)
}

fn tables_are_found(store: Store) {
    let home = common::scratch::tempdir();
    let home = home.path();

    // Nothing there: the error says what was looked for and how to choose.
    let (json, err) = find(&store, home);
    assert!(json.is_none(), "no table, no status: {err}");
    for part in [
        "no election table electop knows is there",
        "leaderlock(key, leader_id, valid_until) for sql-lease",
        "service_election(anchor, service_id, last_seen_active) for sql-heartbeat",
        "shedlock(name, locked_by, lock_until) for preset shedlock",
        "oban_peers(name, node, expires_at) for preset oban",
        "active_node(anchor, hostname, last_seen_active) for preset orchestrator",
        "--scheme sql-lease",
        "--table NAME",
        "--preset (shedlock, oban, orchestrator)",
    ] {
        assert!(err.contains(part), "{part} missing from: {err}");
    }

    // A preset's table: read as that preset, and said so.
    shedlock_with_a_lock(&store);
    let (json, err) = find(&store, home);
    let s = json.unwrap_or_else(|| panic!("shedlock found: {err}"));
    assert!(
        err.contains("sql1: found shedlock (preset shedlock) in"),
        "{err}"
    );
    assert_eq!(election(&s, "reportJob")["leader"]["id"], "host-a", "{s:#}");
    assert_eq!(s["sources"][0]["idle_is_normal"], true, "the preset's idle");

    // One scheme's own table.
    store.exec("DROP TABLE shedlock");
    store.create_lease_table("leaderlock");
    assert!(store.lease_attempt("leaderlock", "jobs", "node-1", 30));
    let (json, err) = find(&store, home);
    let s = json.unwrap_or_else(|| panic!("leaderlock found: {err}"));
    assert!(
        err.contains("sql1: found leaderlock (sql-lease) in"),
        "{err}"
    );
    assert!(!err.contains("one source per table"), "{err}");
    let jobs = election(&s, "jobs");
    assert_eq!(
        (jobs["scheme"].as_str(), jobs["leader"]["id"].as_str()),
        (Some("sql-lease"), Some("node-1"))
    );

    // Both: one source each, each naming the other.
    shedlock_with_a_lock(&store);
    let (json, err) = find(&store, home);
    let s = json.unwrap_or_else(|| panic!("both found: {err}"));
    for part in [
        "sql1: found leaderlock (sql-lease) in",
        "sql2: found shedlock (preset shedlock) in",
        "one source per table found there (leaderlock, shedlock)",
    ] {
        assert!(err.contains(part), "{part} missing from: {err}");
    }
    election(&s, "jobs");
    election(&s, "reportJob");
}

#[test]
fn found_in_sqlite() {
    tables_are_found(Store::sqlite());
}

#[test]
fn found_in_postgres() {
    tables_are_found(Store::postgres());
}

#[test]
fn found_in_mariadb() {
    tables_are_found(Store::mariadb());
}

/// A table of another name is looked for under `--table`, with either scheme's columns.
#[test]
fn table_names_the_table_to_look_for() {
    let store = Store::sqlite();
    let home = common::scratch::tempdir();
    store.create_lease_table("locks");
    assert!(store.lease_attempt("locks", "jobs", "node-1", 30));
    let out = status(home.path(), &["--sql", &store.url(), "--table", "locks"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("found locks (sql-lease)"), "{err}");
}

/// A database that is not there is said to be missing, not refused for a missing flag.
#[test]
fn a_missing_file_is_named_as_missing() {
    let home = common::scratch::tempdir();
    let path = home.path().join("nowhere.db");
    let url = format!("sqlite://{}", path.display());
    let out = status(home.path(), &["--sql", &url]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("nowhere.db does not exist"), "{err}");
    assert!(!err.contains("--scheme"), "{err}");
}

/// One database refusing its connection does not hide the others (the README's quick start,
/// without `--scheme`): the SQLite file's elections are printed, the refused one named down
/// beside them, exit 3, as with `--scheme`.
#[test]
fn a_refused_database_does_not_hide_the_others() {
    let store = Store::sqlite();
    let home = common::scratch::tempdir();
    store.create_lease_table("leaderlock");
    assert!(store.lease_attempt("leaderlock", "jobs", "node-1", 30));
    let closed = format!("postgres://127.0.0.1:{}/x", common::free_port());
    let out = status(home.path(), &["--sql", &store.url(), "--sql", &closed]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "partial: {err}");
    let s: Value = serde_json::from_slice(&out.stdout).expect("status prints JSON");
    assert_eq!(election(&s, "jobs")["leader"]["id"], "node-1", "{s:#}");
    assert!(err.contains("connection refused"), "{err}");
    let down = &s["sources"][1];
    assert_eq!(
        down["name"].as_str().map(|n| n.contains("127.0.0.1")),
        Some(true),
        "{s:#}"
    );
    assert!(
        down["error"]
            .as_str()
            .is_some_and(|e| e.contains("connection refused")),
        "{s:#}"
    );
}

/// A database down when a watch starts is looked at once it answers: its table is found
/// then and read as it would have been at start, while the other source was read all along.
#[test]
fn a_database_down_at_start_is_read_once_it_answers() {
    let sqlite = Store::sqlite();
    sqlite.create_lease_table("leaderlock");
    assert!(sqlite.lease_attempt("leaderlock", "jobs", "node-1", 60));
    let mut pg = Store::postgres();
    pg.create_lease_table("leaderlock");
    assert!(pg.lease_attempt("leaderlock", "billing", "node-2", 60));
    let Store::Pg(server) = &mut pg else {
        unreachable!("a postgres store")
    };
    server.stop();
    let home = common::scratch::tempdir();
    let (lite, url) = (sqlite.url(), pg.url());
    let args = ["--sql", &lite, "--sql", &url, "--poll", "200ms"];
    let mut w = common::electop::Watch::start(home.path(), &args);
    let current =
        |name: &'static str| move |v: &Value| v["kind"] == "current" && v["election"] == name;
    w.wait_for("the SQLite election", common::T, current("jobs"));
    let Store::Pg(server) = &mut pg else {
        unreachable!("a postgres store")
    };
    server.restart();
    let ev = w.wait_for("the PostgreSQL election", common::T, current("billing"));
    assert_eq!(ev["to"], "node-2", "{ev}");
    assert_eq!(ev["source_id"], "sql2", "{ev}");
}

/// `psql` holding advisory lock 42 until it is killed (dropped).
struct AdvisoryHolder(std::process::Child);

impl AdvisoryHolder {
    fn start(pg: &common::postgres::Postgres) -> AdvisoryHolder {
        use common::postgres::{DATABASE, PASSWORD, PG_BIN, USER};
        let mut child = std::process::Command::new(format!("{PG_BIN}/psql"))
            .env("PGPASSWORD", PASSWORD)
            .args(["-X", "-At", "-h", "127.0.0.1", "-p", &pg.port().to_string()])
            .args(["-U", USER, "-d", DATABASE])
            .args(["-c", "SELECT pg_advisory_lock(42)", "-c", "SELECT 'held'"])
            .args(["-c", "SELECT pg_sleep(600)"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn psql");
        let lines = common::lines::text_lines(child.stdout.take().expect("stdout"));
        let holder = AdvisoryHolder(child);
        while lines.recv_timeout(common::T).expect("psql takes the lock") != "held" {}
        holder
    }
}

impl Drop for AdvisoryHolder {
    fn drop(&mut self) {
        common::process::kill_and_reap(&mut self.0);
    }
}

/// No election table, but advisory locks held: the error leads with them and the scheme
/// that reads them; without any held, the scheme is still offered.
#[test]
fn a_postgres_with_advisory_locks_held_is_told_pg_advisory() {
    let store = Store::postgres();
    let home = common::scratch::tempdir();
    let (_, err) = find(&store, home.path());
    assert!(
        err.contains(
            "; or, for an election by advisory locks (pg_advisory_lock), --scheme pg-advisory"
        ),
        "{err}"
    );
    assert!(!err.contains("are held"), "{err}");
    let Store::Pg(pg) = &store else {
        unreachable!("a PostgreSQL store")
    };
    let _holder = AdvisoryHolder::start(pg);
    let (json, err) = find(&store, home.path());
    assert!(json.is_none(), "no table, no status: {err}");
    assert!(
        err.contains(
            "; advisory locks (pg_advisory_lock) are held in it (1 now): to read them as \
             elections, --scheme pg-advisory. Say which table to read"
        ),
        "{err}"
    );
}

/// MariaDB without the plugin that lists user locks: GET_LOCK's scheme is offered.
#[test]
fn a_mariadb_without_an_election_table_is_told_mysql_lock() {
    let store = Store::mariadb();
    let Store::My(db) = &store else {
        unreachable!("a MariaDB store")
    };
    let mut session = common::mysql_lock::LockSession::open(db);
    assert!(session.get_lock("jobs", 0), "the lock is free");
    let home = common::scratch::tempdir();
    let (json, err) = find(&store, home.path());
    assert!(json.is_none(), "no table, no status: {err}");
    assert!(
        err.contains("; or, for an election by GET_LOCK locks, --scheme mysql-lock"),
        "{err}"
    );
}

/// A `[[source]]` of kind sql without `scheme` or `preset`: its tables are looked up as for
/// `--sql URL` alone, not refused for the missing scheme.
#[test]
fn a_config_sql_source_without_a_scheme_is_looked_up() {
    let store = Store::sqlite();
    store.create_lease_table("leaderlock");
    assert!(store.lease_attempt("leaderlock", "jobs", "node-1", 30));
    let home = common::scratch::tempdir();
    let cfg = home.path().join("electop.toml");
    let text = format!("[[source]]\nkind = \"sql\"\nurl = \"{}\"\n", store.url());
    std::fs::write(&cfg, text).expect("write the config");
    let cfg = cfg.to_string_lossy().into_owned();
    let out = status(home.path(), &["--config", &cfg]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let s: Value = serde_json::from_slice(&out.stdout).expect("status prints JSON");
    let jobs = election(&s, "jobs");
    assert_eq!(
        (jobs["scheme"].as_str(), jobs["leader"]["id"].as_str()),
        (Some("sql-lease"), Some("node-1")),
        "{s:#}"
    );
}
