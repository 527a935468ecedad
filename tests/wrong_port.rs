//! A store's flag pointed at a port another kind of server holds, through the real binary:
//! the error names the server that answered and the flag that reads it, at once (not after
//! `--timeout`), never the client library's "connection was lost" or a bare "no answer".
//! etcd's own case is in `store_errors.rs`.

mod common;

use std::time::{Duration, Instant};

use common::electop::command;
use common::{EtcdServer, postgres::Postgres, redis::RedisServer};

/// `electop ARGS status`: its exit code and first line of stderr, and how long it took.
fn status(args: &[&str]) -> (Option<i32>, String, Duration) {
    let home = common::scratch::tempdir();
    let started = Instant::now();
    let out = command(home.path())
        .args(args)
        .args(["status", "--timeout", "20s"])
        .output()
        .expect("electop status");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let first = stderr.lines().next().unwrap_or_default().to_string();
    (out.status.code(), first, started.elapsed())
}

#[test]
fn redis_pointed_at_an_etcd_port_says_it_is_etcd() {
    let etcd = EtcdServer::start();
    let ep = etcd.endpoint();
    let url = format!("redis://{ep}");
    let (code, said, took) = status(&["--redis", &url]);
    assert_eq!(code, Some(1), "{said}");
    assert_eq!(
        said,
        format!(
            "electop: redis {ep}/0: the server there is not Redis: it speaks HTTP/2 (gRPC), as \
             etcd's client port does (for etcd: --etcd HOST:PORT); is this Redis's port (6379)?"
        )
    );
    assert!(
        took < Duration::from_secs(10),
        "final at once, took {took:?}"
    );
}

#[test]
fn postgres_pointed_at_a_redis_port_says_it_is_redis_and_keeps_the_password() {
    let redis = RedisServer::start("", None);
    let port = redis.port();
    let url = format!("postgres://u:s3cret-pw@127.0.0.1:{port}/db");
    let (code, said, took) = status(&["--sql", &url, "--scheme", "sql-lease"]);
    assert_eq!(code, Some(1), "{said}");
    let start = format!(
        "electop: cannot connect to postgres://u@127.0.0.1:{port}/db: the server there is not \
         PostgreSQL: it answered `-ERR unknown command"
    );
    assert!(said.starts_with(&start), "{said}");
    assert!(
        said.ends_with(
            "as Redis does (for Redis: --redis redis://HOST:PORT); is this PostgreSQL's port \
             (5432)?"
        ),
        "{said}"
    );
    assert!(!said.contains("s3cret"), "{said}");
    assert!(
        took < Duration::from_secs(10),
        "not waited out, took {took:?}"
    );
}

#[test]
fn mysql_pointed_at_a_postgres_port_says_it_is_postgres() {
    let pg = Postgres::start();
    let port = pg.port();
    let url = format!("mysql://u@127.0.0.1:{port}/db");
    let (code, said, took) = status(&["--sql", &url, "--scheme", "sql-lease"]);
    assert_eq!(code, Some(1), "{said}");
    assert_eq!(
        said,
        format!(
            "electop: cannot connect to {url}: the server there is not MySQL or MariaDB: it \
             answered as PostgreSQL does (for PostgreSQL: --sql postgres://USER@HOST:PORT/DB); \
             is this MySQL or MariaDB's port (3306)?"
        )
    );
    assert!(
        took < Duration::from_secs(10),
        "not waited out, took {took:?}"
    );
}

/// A real database of the URL's kind is never taken for another: its own error stands.
#[test]
fn postgres_at_its_own_port_keeps_its_own_error() {
    let pg = Postgres::start();
    let url = pg.url();
    let (code, said, _) = status(&["--sql", &url, "--scheme", "sql-lease"]);
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("table leaderlock does not exist"), "{said}");
    assert!(!said.contains("is not"), "{said}");
}
