//! An idle SQL table costs a poll next to nothing: SQLite's `data_version`, PostgreSQL's
//! digest of the rows and MariaDB's sum of their hashes say the table is as last read, and
//! the rows are not sent or read.
//! What the dashboard shows stays true all the same: a write is seen within a poll, a lease
//! that runs out with no write is seen run out at its deadline, a deleted row goes. Counted
//! on electop's own debug log, one line per poll saying which it was.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::electop::Watch;
use common::sqlstore::Store;

use common::T;

const POLL: Duration = Duration::from_millis(100);
/// The short lease's term: long enough for the polls counted before it runs out.
const TERM_S: u32 = 8;
/// Room for a loaded machine between the database seeing a change and the test reading it.
const SLACK: Duration = Duration::from_millis(700);

/// (table read, table unchanged) polls so far, from the debug log.
fn polls(home: &Path) -> (usize, usize) {
    let log = std::fs::read_to_string(home.join("data/electop/electop.log")).unwrap_or_default();
    let count = |what: &str| log.lines().filter(|l| l.contains(what)).count();
    (
        count("sql poll: table read"),
        count("sql poll: table unchanged"),
    )
}

/// Waits until `n` more unchanged polls than `from` are logged; returns the counts then.
fn unchanged_polls(home: &Path, from: (usize, usize), n: usize) -> (usize, usize) {
    common::wait_for("unchanged polls", T, || {
        let now = polls(home);
        if now.1 >= from.1 + n {
            Ok(now)
        } else {
            Err(format!("{now:?}"))
        }
    })
}

fn idle_scenario(store: Store) {
    store.create_lease_table("leaderlock");
    assert!(store.lease_attempt("leaderlock", "steady", "node-a", 3_600));
    let before = Instant::now();
    assert!(store.lease_attempt("leaderlock", "short", "node-s", TERM_S));
    let written = Instant::now();
    let term = Duration::from_secs(TERM_S.into());
    let deadline = (before + term, written + term);

    let home = common::scratch::tempdir();
    let url = store.url();
    let args = [
        "--sql",
        &url,
        "--scheme",
        "sql-lease",
        "--table",
        "leaderlock",
        "--poll",
        "100ms",
    ];
    let env = [("ELECTOP_LOG", "electop::backend::sql=debug")];
    let mut w = Watch::start_env(home.path(), &args, &env);
    w.wait_synced(1);

    // (a) Unchanged: polled, not read.
    let first = unchanged_polls(home.path(), (0, 0), 5);
    assert!(
        Instant::now() < deadline.0,
        "checked before the short lease ran out"
    );
    assert_eq!(first.0, 1, "the first poll alone read the rows: {first:?}");

    // (c) A lease that runs out with no write: seen at its deadline, within about a poll.
    let ev = w.wait_for("short expired", T, |v| {
        v["kind"] == "leader_lost" && v["election"] == "short"
    });
    let seen = Instant::now();
    assert_eq!(ev["cause"], "expired", "{ev}");
    assert!(seen >= deadline.0, "not before its deadline");
    let late = seen.saturating_duration_since(deadline.1);
    assert!(late < POLL + SLACK, "seen {late:?} after its deadline");
    // Read once for it; then no leader runs out for an hour: unchanged polls again.
    let after = unchanged_polls(home.path(), polls(home.path()), 3);
    // (Two when the first came within the database's rounding of the deadline.)
    let reads = after.0 - first.0;
    assert!(
        (1..=2).contains(&reads),
        "a read at the deadline: {after:?}"
    );

    // (b) A write is seen within a poll.
    let key = match store {
        Store::My(_) => "`key`",
        _ => "key",
    };
    store.exec(&format!(
        "UPDATE leaderlock SET leader_id = 'node-x' WHERE {key} = 'steady'"
    ));
    let ev = w.wait_for("steady taken over", POLL + SLACK, |v| {
        v["kind"] == "leader_changed" && v["election"] == "steady"
    });
    assert_eq!(
        (&ev["from"], &ev["to"]),
        (&"node-a".into(), &"node-x".into())
    );

    // (d) So is a delete.
    store.exec(&format!("DELETE FROM leaderlock WHERE {key} = 'steady'"));
    let ev = w.wait_for("steady deleted", POLL + SLACK, |v| {
        v["kind"] == "leader_lost" && v["election"] == "steady"
    });
    assert_eq!(ev["cause"], "deleted", "{ev}");
    // Nothing left to run out: unchanged polls again, and no read among them.
    let end = unchanged_polls(home.path(), polls(home.path()), 1);
    let later = unchanged_polls(home.path(), end, 3);
    assert_eq!(later.0, end.0, "{later:?}");
}

#[test]
fn sqlite_unchanged_table_is_not_read() {
    idle_scenario(Store::sqlite());
}

#[test]
fn postgres_unchanged_table_is_not_read() {
    idle_scenario(Store::postgres());
}

#[test]
fn mariadb_unchanged_table_is_not_read() {
    idle_scenario(Store::mariadb());
}
