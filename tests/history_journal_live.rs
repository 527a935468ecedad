//! The history across electops on one source (SQLite): each records what it sees, a reader
//! tells each change once, and when the older is gone the younger's records carry on, so
//! nothing seen live is missing after a restart.

mod common;

use common::T;
use common::electop::{Watch, election, status_json};
use common::sqlstore::Store;
use serde_json::Value;

/// Two `watch`es on one source both record the first change; the first killed, the second
/// alone sees the next. A later `status` reads back both changes, each once.
#[test]
fn the_next_electop_carries_the_history_on_when_the_first_is_gone() {
    let store = Store::sqlite();
    store.create_lease_table("leaderlock");
    assert!(store.lease_attempt("leaderlock", "jobs", "node-a", 600));
    let home = common::scratch::tempdir();
    let url = store.url();
    let args = [
        "--sql",
        url.as_str(),
        "--scheme",
        "sql-lease",
        "--table",
        "leaderlock",
        "--poll",
        "100ms",
    ];
    let mut first = Watch::start(home.path(), &args);
    first.wait_synced(1);
    let mut second = Watch::start(home.path(), &args);
    second.wait_synced(1);
    let to = |w: &mut Watch, id: &str| {
        w.wait_for(id, T, |v| v["kind"] == "leader_changed" && v["to"] == id);
    };
    store.exec("UPDATE leaderlock SET leader_id = 'node-x' WHERE key = 'jobs'");
    to(&mut first, "node-x");
    to(&mut second, "node-x");
    drop(first);
    store.exec("UPDATE leaderlock SET leader_id = 'node-y' WHERE key = 'jobs'");
    to(&mut second, "node-y");
    drop(second);

    let s = status_json(home.path(), &args);
    let e = election(&s, "jobs");
    let hist: Vec<(Value, Value)> = e["history"]
        .as_array()
        .expect("history")
        .iter()
        .map(|h| (h["from"].clone(), h["to"].clone()))
        .collect();
    assert_eq!(
        hist,
        [
            ("node-a".into(), "node-x".into()),
            ("node-x".into(), "node-y".into()),
        ],
        "{e:#}"
    );
}
