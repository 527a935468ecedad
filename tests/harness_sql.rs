//! Proves the throwaway PostgreSQL and MariaDB harnesses in tests/common work:
//! SQL through the CLI helpers, password auth over TCP, restarts and crashes
//! keep committed data, time zones, parallel servers, cleanup on drop.

mod common;

use std::path::PathBuf;
use std::time::Instant;

use common::mariadb::MariaDb;
use common::postgres::Postgres;

fn gone(pid: u32) -> bool {
    // Reaped (no /proc entry) or at least dead (zombie of someone else).
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with(['Z', 'X'])),
    }
}

#[test]
fn postgres_sql_and_password_auth() {
    let started = Instant::now();
    let pg = Postgres::start();
    eprintln!("postgres ready in {:?} at {}", started.elapsed(), pg.url());

    assert_eq!(
        pg.url(),
        format!(
            "postgres://tester:s3cret-pw@127.0.0.1:{}/electop",
            pg.port()
        )
    );
    assert_eq!(
        pg.url_without_password(),
        format!("postgres://tester@127.0.0.1:{}/electop", pg.port())
    );

    // Superuser over the socket: several statements, only rows come back.
    pg.psql(
        "CREATE TABLE leases (name text PRIMARY KEY, holder text, at timestamptz DEFAULT now());
         INSERT INTO leases (name, holder) VALUES ('db', 'node-1'), ('cache', 'node-2');",
    );
    assert_eq!(
        pg.psql("SELECT name, holder FROM leases ORDER BY name"),
        "cache|node-2\ndb|node-1"
    );
    assert!(!pg.psql("SELECT now()").is_empty());
    assert_eq!(
        pg.psql("SELECT current_database(), current_user"),
        "electop|postgres"
    );

    // Errors come back with psql's message (and `psql` would panic).
    let err = pg
        .try_psql("SELECT * FROM no_such_table")
        .expect_err("query on a missing table fails");
    assert!(err.contains("does not exist"), "{err}");

    // tester over TCP with the password: sees and may change the superuser's
    // table (default privileges), and may create its own.
    assert_eq!(
        pg.try_psql_tcp(
            "tester",
            "s3cret-pw",
            "SELECT current_user, holder FROM leases WHERE name = 'db'"
        ),
        Ok("tester|node-1".to_string())
    );
    pg.try_psql_tcp(
        "tester",
        "s3cret-pw",
        "UPDATE leases SET holder = 'node-3' WHERE name = 'db';
         CREATE TABLE mine (id int); INSERT INTO mine VALUES (7);",
    )
    .expect("tester writes over TCP");
    assert_eq!(
        pg.psql("SELECT holder FROM leases WHERE name = 'db'"),
        "node-3"
    );
    assert_eq!(pg.psql("SELECT id FROM mine"), "7");

    // Wrong or missing passwords are refused over TCP; so is the superuser,
    // who has no password.
    for (user, password) in [("tester", "wrong"), ("tester", ""), ("postgres", "")] {
        let err = pg
            .try_psql_tcp(user, password, "SELECT 1")
            .expect_err("login without the right password fails");
        assert!(
            err.contains("password authentication failed") || err.contains("no password supplied"),
            "{user}/{password:?}: {err}"
        );
    }
}

#[test]
fn postgres_stop_kill_restart_keep_data() {
    let mut pg = Postgres::start();
    let port = pg.port();
    pg.psql("CREATE TABLE t (v int); INSERT INTO t VALUES (1);");

    pg.stop();
    assert!(!pg.is_running());
    assert!(pg.try_psql("SELECT 1").is_err(), "stopped server answers");
    let started = Instant::now();
    pg.restart();
    eprintln!("postgres restart after stop: {:?}", started.elapsed());
    assert_eq!(pg.port(), port);
    pg.psql("INSERT INTO t VALUES (2)");

    // A crash right after a commit keeps it.
    pg.kill();
    assert!(!pg.is_running());
    let started = Instant::now();
    pg.restart();
    eprintln!("postgres restart after kill: {:?}", started.elapsed());
    assert_eq!(pg.psql("SELECT v FROM t ORDER BY v"), "1\n2");
    assert_eq!(
        pg.try_psql_tcp("tester", "s3cret-pw", "SELECT count(*) FROM t"),
        Ok("2".to_string())
    );

    let pid = pg.pid().expect("running");
    let dir = pg.data_dir();
    drop(pg);
    assert!(gone(pid), "postmaster {pid} still alive after drop");
    assert!(!dir.exists(), "{} left behind", dir.display());
}

#[test]
fn mariadb_sql_and_password_auth() {
    let started = Instant::now();
    let db = MariaDb::start();
    eprintln!("mariadb ready in {:?} at {}", started.elapsed(), db.url());

    assert_eq!(
        db.url(),
        format!("mysql://tester:s3cret-pw@127.0.0.1:{}/electop", db.port())
    );

    db.sql(
        "CREATE TABLE leases (name VARCHAR(64) PRIMARY KEY, holder VARCHAR(64), at TIMESTAMP(6) DEFAULT CURRENT_TIMESTAMP(6));
         INSERT INTO leases (name, holder) VALUES ('db', 'node-1'), ('cache', 'nöde-2');",
    );
    assert_eq!(
        db.sql("SELECT name, holder FROM leases ORDER BY name"),
        "cache\tnöde-2\ndb\tnode-1"
    );
    assert!(!db.sql("SELECT NOW()").is_empty());
    assert_eq!(
        db.sql("SELECT DATABASE(), CURRENT_USER(), @@character_set_server"),
        "electop\troot@localhost\tutf8mb4"
    );

    let err = db
        .try_sql("SELECT * FROM no_such_table")
        .expect_err("query on a missing table fails");
    assert!(err.contains("doesn't exist"), "{err}");

    assert_eq!(
        db.try_sql_tcp(
            "tester",
            "s3cret-pw",
            "SELECT CURRENT_USER(), holder FROM leases WHERE name = 'db'"
        ),
        Ok("tester@127.0.0.1\tnode-1".to_string())
    );
    db.try_sql_tcp(
        "tester",
        "s3cret-pw",
        "UPDATE leases SET holder = 'node-3' WHERE name = 'db';
         CREATE TABLE mine (id INT); INSERT INTO mine VALUES (7);",
    )
    .expect("tester writes over TCP");
    assert_eq!(
        db.sql("SELECT holder FROM leases WHERE name = 'db'"),
        "node-3"
    );
    assert_eq!(db.sql("SELECT id FROM mine"), "7");

    // tester has no business outside electop.
    let err = db
        .try_sql_tcp("tester", "s3cret-pw", "SELECT COUNT(*) FROM mysql.user")
        .expect_err("tester cannot read mysql.user");
    assert!(err.contains("denied"), "{err}");

    for (user, password) in [("tester", "wrong"), ("tester", ""), ("root", "")] {
        let err = db
            .try_sql_tcp(user, password, "SELECT 1")
            .expect_err("login without the right password fails");
        assert!(err.contains("Access denied"), "{user}/{password:?}: {err}");
    }
}

#[test]
fn mariadb_stop_kill_restart_keep_data() {
    let mut db = MariaDb::start();
    let port = db.port();
    db.sql("CREATE TABLE t (v INT) ENGINE=InnoDB; INSERT INTO t VALUES (1);");

    db.stop();
    assert!(!db.is_running());
    assert!(db.try_sql("SELECT 1").is_err(), "stopped server answers");
    let started = Instant::now();
    db.restart();
    eprintln!("mariadb restart after stop: {:?}", started.elapsed());
    assert_eq!(db.port(), port);
    db.sql("INSERT INTO t VALUES (2)");

    // A crash right after a commit keeps it.
    db.kill();
    assert!(!db.is_running());
    let started = Instant::now();
    db.restart();
    eprintln!("mariadb restart after kill: {:?}", started.elapsed());
    assert_eq!(db.sql("SELECT v FROM t ORDER BY v"), "1\n2");
    assert_eq!(
        db.try_sql_tcp("tester", "s3cret-pw", "SELECT COUNT(*) FROM t"),
        Ok("2".to_string())
    );

    let pid = db.pid().expect("running");
    let dir = db.data_dir();
    drop(db);
    assert!(gone(pid), "mariadbd {pid} still alive after drop");
    assert!(!dir.exists(), "{} left behind", dir.display());
}

#[test]
fn server_time_zones() {
    // Default: the server zone is the local one (the test process's TZ, else
    // /etc/localtime).
    let pg = Postgres::start();
    let db = MariaDb::start();
    eprintln!(
        "defaults: postgres TimeZone={} log_timezone={}; mariadb time_zone/system_time_zone={}",
        pg.psql("SHOW TimeZone"),
        pg.psql("SHOW log_timezone"),
        db.sql("SELECT CONCAT(@@global.time_zone, '/', @@system_time_zone)")
    );
    drop((pg, db));

    // A zone with no DST that never matches UTC or most local zones.
    let pg = Postgres::start_with_time_zone("Asia/Kolkata");
    assert_eq!(pg.psql("SHOW TimeZone"), "Asia/Kolkata");
    assert_eq!(pg.psql("SELECT extract(timezone FROM now())::int"), "19800");
    assert_eq!(pg.psql("SELECT to_char(now(), 'OF')"), "+05:30");
    // sqlx would still see UTC: it sends TimeZone=UTC at connect.
    assert_eq!(
        pg.try_psql_tcp(
            "tester",
            "s3cret-pw",
            "SET TimeZone = 'UTC'; SELECT to_char(now(), 'OF')"
        ),
        Ok("+00".to_string())
    );

    let mut db = MariaDb::start_with_time_zone("Asia/Kolkata");
    assert_eq!(
        db.sql("SELECT @@global.time_zone, @@system_time_zone, TIMESTAMPDIFF(MINUTE, UTC_TIMESTAMP(), NOW())"),
        "SYSTEM\tIST\t330"
    );
    db.restart();
    assert_eq!(
        db.sql("SELECT TIMESTAMPDIFF(MINUTE, UTC_TIMESTAMP(), NOW())"),
        "330"
    );
    let db2 = MariaDb::start_with_time_zone("-03:00");
    assert_eq!(
        db2.sql("SELECT @@global.time_zone, TIMESTAMPDIFF(MINUTE, UTC_TIMESTAMP(), NOW())"),
        "-03:00\t-180"
    );
}

#[test]
fn parallel_servers_do_not_collide() {
    let started = Instant::now();
    let pgs: Vec<std::thread::JoinHandle<Postgres>> = (0..3)
        .map(|_| std::thread::spawn(Postgres::start))
        .collect();
    let dbs: Vec<std::thread::JoinHandle<MariaDb>> =
        (0..3).map(|_| std::thread::spawn(MariaDb::start)).collect();
    let pgs: Vec<Postgres> = pgs
        .into_iter()
        .map(|h| h.join().expect("postgres start"))
        .collect();
    let dbs: Vec<MariaDb> = dbs
        .into_iter()
        .map(|h| h.join().expect("mariadb start"))
        .collect();
    eprintln!("3 postgres + 3 mariadb ready in {:?}", started.elapsed());

    let mut ports: Vec<u16> = pgs.iter().map(Postgres::port).collect();
    ports.extend(dbs.iter().map(MariaDb::port));
    let mut dirs: Vec<PathBuf> = pgs.iter().map(Postgres::data_dir).collect();
    dirs.extend(dbs.iter().map(MariaDb::data_dir));
    ports.sort_unstable();
    ports.dedup();
    dirs.sort();
    dirs.dedup();
    assert_eq!((ports.len(), dirs.len()), (6, 6));

    // Each one is its own server: write a marker, read it back over TCP.
    for (i, pg) in pgs.iter().enumerate() {
        pg.psql(&format!("CREATE TABLE marker AS SELECT {i} AS i"));
    }
    for (i, db) in dbs.iter().enumerate() {
        db.sql(&format!("CREATE TABLE marker AS SELECT {i} AS i"));
    }
    for (i, pg) in pgs.iter().enumerate() {
        assert_eq!(
            pg.try_psql_tcp("tester", "s3cret-pw", "SELECT i FROM marker"),
            Ok(i.to_string())
        );
    }
    for (i, db) in dbs.iter().enumerate() {
        assert_eq!(
            db.try_sql_tcp("tester", "s3cret-pw", "SELECT i FROM marker"),
            Ok(i.to_string())
        );
    }
}
