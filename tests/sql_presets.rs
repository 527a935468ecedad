//! The SQL presets against real PostgreSQL and MariaDB: each project's table created with
//! its published DDL and written with the statements that project runs (ShedLock's lock
//! and unlock with database time, Oban's peer upsert, orchestrator's `AttemptElection`),
//! then read by `electop --preset` with nothing else said about the table. One server per
//! database serves all three presets.

mod common;

use common::electop::{command, election, status_json};
use common::sqlstore::Store;
use serde_json::Value;

fn my(store: &Store) -> bool {
    matches!(store, Store::My(_))
}

fn ttl(e: &Value) -> i64 {
    e["ttl_ms"]
        .as_i64()
        .unwrap_or_else(|| panic!("no ttl: {e:#}"))
}

// ---- ShedLock (https://github.com/lukas-krecan/ShedLock, README "JdbcTemplate") ----

fn shedlock_table(store: &Store) {
    store.exec(if my(store) {
        "CREATE TABLE shedlock(name VARCHAR(64) NOT NULL, lock_until TIMESTAMP(3) NOT NULL, \
         locked_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3), locked_by VARCHAR(255) NOT NULL, PRIMARY KEY (name))"
    } else {
        "CREATE TABLE shedlock(name VARCHAR(64) NOT NULL, lock_until TIMESTAMP NOT NULL, \
         locked_at TIMESTAMP NOT NULL, locked_by VARCHAR(255) NOT NULL, PRIMARY KEY (name))"
    });
    store.grant("shedlock");
}

/// ShedLock's lock with `usingDbTime()` (its PostgreSQL and MySQL server-time statements):
/// insert, or take over a lock whose `lock_until` has passed. True when `by` holds it.
fn shedlock_lock(store: &Store, name: &str, by: &str, at_most_s: u32) -> bool {
    if my(store) {
        let until = format!(
            "UTC_TIMESTAMP(3) + INTERVAL {} MICROSECOND",
            at_most_s * 1_000_000
        );
        store.exec(&format!(
            "INSERT IGNORE INTO shedlock(name, lock_until, locked_at, locked_by) VALUES('{name}', {until}, UTC_TIMESTAMP(3), '{by}')"
        ));
        store.exec(&format!(
            "UPDATE shedlock SET lock_until = {until}, locked_at = UTC_TIMESTAMP(3), locked_by = '{by}' \
             WHERE name = '{name}' AND lock_until <= UTC_TIMESTAMP(3)"
        ));
    } else {
        let now = "timezone('utc', CURRENT_TIMESTAMP)";
        let until = format!("{now} + cast('{at_most_s} seconds' as interval)");
        store.exec(&format!(
            "INSERT INTO shedlock(name, lock_until, locked_at, locked_by) VALUES('{name}', {until}, {now}, '{by}') \
             ON CONFLICT (name) DO UPDATE SET lock_until = {until}, locked_at = {now}, locked_by = '{by}' \
             WHERE shedlock.lock_until <= {now}"
        ));
    }
    store.exec(&format!(
        "SELECT locked_by FROM shedlock WHERE name = '{name}'"
    )) == by
}

/// ShedLock's unlock when the task is done (`lockAtLeastFor` 0): `lock_until` becomes now.
fn shedlock_unlock(store: &Store, name: &str, by: &str) {
    store.exec(&if my(store) {
        format!(
            "UPDATE shedlock SET lock_until = IF(locked_at + INTERVAL 0 MICROSECOND > UTC_TIMESTAMP(3), \
             locked_at + INTERVAL 0 MICROSECOND, UTC_TIMESTAMP(3)) WHERE name = '{name}' AND locked_by = '{by}'"
        )
    } else {
        format!(
            "UPDATE shedlock SET lock_until = CASE WHEN locked_at + cast('0 seconds' as interval) > timezone('utc', CURRENT_TIMESTAMP) \
             THEN locked_at + cast('0 seconds' as interval) ELSE timezone('utc', CURRENT_TIMESTAMP) END \
             WHERE name = '{name}' AND locked_by = '{by}'"
        )
    });
}

/// Through the config file (`preset = "shedlock"`): a running task's lock shows its holder
/// and deadline; between runs the lock is idle, which is no alarm.
fn shedlock(store: &Store, home: &std::path::Path) {
    shedlock_table(store);
    assert!(shedlock_lock(store, "reportJob", "host-a", 30));
    assert!(!shedlock_lock(store, "reportJob", "host-b", 30), "held");
    assert!(shedlock_lock(store, "cleanupJob", "host-b", 30));
    shedlock_unlock(store, "cleanupJob", "host-b");
    let config = home.join("shedlock.toml");
    std::fs::write(
        &config,
        format!(
            "[[source]]\nkind = \"sql\"\nurl = \"{}\"\npreset = \"shedlock\"\npoll = \"100ms\"\n",
            store.url()
        ),
    )
    .expect("config");
    let args = ["--config", config.to_str().expect("utf-8 path")];
    let s = status_json(home, &args);
    assert_eq!(s["sources"][0]["idle_is_normal"], true, "{s:#}");
    let running = election(&s, "reportJob");
    assert_eq!(running["scheme"], "sql-lease");
    assert_eq!(running["leader"]["id"], "host-a");
    let left = ttl(running);
    assert!(
        left > 25_000 && left <= 30_000,
        "lock_until - db now: {left}"
    );
    assert_eq!(running["idle"], false);
    let done = election(&s, "cleanupJob");
    assert_eq!(done["leader"], Value::Null, "{done:#}");
    assert_eq!(done["idle"], true, "between runs: idle, no alarm: {done:#}");

    shedlock_unlock(store, "reportJob", "host-a");
    let s = status_json(home, &args);
    let e = election(&s, "reportJob");
    assert_eq!(
        (e["leader"].clone(), e["idle"].clone()),
        (Value::Null, true.into())
    );
}

// ---- Oban (https://github.com/oban-bg/oban: migration V11, Oban.Peers.Postgres) ----

fn oban_table(store: &Store) {
    if my(store) {
        // Oban's MySQL migration: the same columns as :string and :utc_datetime_usec.
        store.exec(
            "CREATE TABLE oban_peers (name varchar(255) NOT NULL, node varchar(255) NOT NULL, \
             started_at datetime(6) NOT NULL, expires_at datetime(6) NOT NULL, PRIMARY KEY (name))",
        );
    } else {
        store.exec(
            "CREATE TABLE oban_peers (name text NOT NULL, node text NOT NULL, \
             started_at timestamp without time zone NOT NULL, expires_at timestamp without time zone NOT NULL, \
             PRIMARY KEY (name)); ALTER TABLE oban_peers SET UNLOGGED",
        );
    }
    store.grant("oban_peers");
}

/// One round of an Oban peer: drop an expired leader, then insert itself (a follower's
/// insert does nothing on conflict; the leader's refreshes `expires_at`). True when `node`
/// leads afterwards.
fn oban_peer(store: &Store, name: &str, node: &str, ttl_s: i32) -> bool {
    let leads = store.exec(&format!(
        "SELECT node FROM oban_peers WHERE name = '{name}'"
    )) == node;
    let (now, later, delete) = if my(store) {
        (
            "UTC_TIMESTAMP(6)".to_string(),
            format!("UTC_TIMESTAMP(6) + INTERVAL {ttl_s} SECOND"),
            "UTC_TIMESTAMP(6)",
        )
    } else {
        (
            "timezone('utc', now())".to_string(),
            format!("timezone('utc', now()) + interval '{ttl_s} seconds'"),
            "timezone('utc', now())",
        )
    };
    store.exec(&format!(
        "DELETE FROM oban_peers WHERE name = '{name}' AND expires_at < {delete}"
    ));
    let values = format!("('{name}', '{node}', {now}, {later})");
    let columns = "oban_peers (name, node, started_at, expires_at)";
    store.exec(&match (my(store), leads) {
        (true, true) => format!(
            "INSERT INTO {columns} VALUES {values} ON DUPLICATE KEY UPDATE expires_at = VALUES(expires_at)"
        ),
        (true, false) => format!("INSERT IGNORE INTO {columns} VALUES {values}"),
        (false, true) => format!(
            "INSERT INTO {columns} VALUES {values} ON CONFLICT (name) DO UPDATE SET expires_at = EXCLUDED.expires_at"
        ),
        (false, false) => format!("INSERT INTO {columns} VALUES {values} ON CONFLICT (name) DO NOTHING"),
    });
    store.exec(&format!(
        "SELECT node FROM oban_peers WHERE name = '{name}'"
    )) == node
}

/// `--preset oban`: the leader node and its expiry; a leader that stopped refreshing is a
/// lost leader, not an idle lock.
fn oban(store: &Store, home: &std::path::Path) {
    oban_table(store);
    assert!(oban_peer(store, "Oban", "web-1@10.0.0.1", 30));
    assert!(!oban_peer(store, "Oban", "web-2@10.0.0.2", 30), "follower");
    assert!(oban_peer(store, "Oban", "web-1@10.0.0.1", 30), "renewed");
    // A second instance whose only node stopped 5 s ago (a negative TTL writes the past).
    assert!(oban_peer(store, "Reports", "worker-1@10.0.0.3", -5));
    let url = store.url();
    let s = status_json(
        home,
        &["--sql", &url, "--preset", "oban", "--poll", "100ms"],
    );
    assert_eq!(s["sources"][0]["idle_is_normal"], false, "{s:#}");
    let e = election(&s, "Oban");
    assert_eq!(e["scheme"], "sql-lease");
    assert_eq!(e["leader"]["id"], "web-1@10.0.0.1");
    let left = ttl(e);
    assert!(
        left > 25_000 && left <= 30_000,
        "expires_at - db now: {left}"
    );
    let gone = election(&s, "Reports");
    assert_eq!(gone["leader"], Value::Null, "{gone:#}");
    assert_eq!(gone["idle"], false, "a lost leader stays an alarm");
}

// ---- orchestrator (https://github.com/openark/orchestrator: go/db/generate_base.go,
// generate_patches.go, go/process/election_dao.go) ----

fn orchestrator_table(store: &Store) {
    if my(store) {
        store.exec(
            "CREATE TABLE IF NOT EXISTS active_node (anchor tinyint unsigned NOT NULL, \
             hostname varchar(128) CHARACTER SET ascii NOT NULL, token varchar(128) NOT NULL, \
             last_seen_active timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP, \
             PRIMARY KEY (anchor)) ENGINE=InnoDB DEFAULT CHARSET=ascii; \
             ALTER TABLE active_node ADD COLUMN first_seen_active timestamp NOT NULL DEFAULT '1971-01-01 00:00:00' AFTER last_seen_active",
        );
    } else {
        // orchestrator keeps its backend in MySQL or SQLite only; this is the same table in
        // PostgreSQL's types.
        store.exec(
            "CREATE TABLE active_node (anchor smallint NOT NULL, hostname varchar(128) NOT NULL, \
             token varchar(128) NOT NULL, last_seen_active timestamptz NOT NULL DEFAULT now(), \
             first_seen_active timestamptz NOT NULL DEFAULT '1971-01-01 00:00:00', PRIMARY KEY (anchor))",
        );
    }
    store.grant("active_node");
}

/// orchestrator's `AttemptElection`: claim an empty anchor, take over one not seen for
/// `ActiveNodeExpireSeconds` (5), or refresh its own. True when `host` is active after.
fn orchestrator_attempt(store: &Store, host: &str, token: &str) -> bool {
    let (insert, conflict, expired) = if my(store) {
        ("insert ignore into", "", "now() - interval 5 second")
    } else {
        (
            "insert into",
            " on conflict do nothing",
            "now() - interval '5 second'",
        )
    };
    store.exec(&format!(
        "{insert} active_node (anchor, hostname, token, first_seen_active, last_seen_active) \
         values (1, '{host}', '{token}', now(), now()){conflict}"
    ));
    store.exec(&format!(
        "update active_node set hostname = '{host}', token = '{token}', first_seen_active = now(), last_seen_active = now() \
         where anchor = 1 and last_seen_active < ({expired})"
    ));
    store.exec(&format!(
        "update active_node set last_seen_active = now() where anchor = 1 and hostname = '{host}' and token = '{token}'"
    ));
    store.exec("select hostname from active_node where anchor = 1") == host
}

/// `--preset orchestrator`: the active node, deposed 5 s after its last heartbeat unless
/// `--heartbeat-timeout` says otherwise; then the takeover.
fn orchestrator(store: &Store, home: &std::path::Path) {
    orchestrator_table(store);
    assert!(orchestrator_attempt(store, "orc-1", "t1"));
    assert!(
        !orchestrator_attempt(store, "orc-2", "t2"),
        "orc-1 is active"
    );
    let url = store.url();
    let args = ["--sql", &url, "--preset", "orchestrator", "--poll", "100ms"];
    let s = status_json(home, &args);
    let e = election(&s, "1");
    assert_eq!(e["scheme"], "sql-heartbeat");
    assert_eq!(e["leader"]["id"], "orc-1");
    let left = ttl(e);
    assert!(left > 0 && left <= 5_000, "the preset's 5 s: {left}");
    let mut longer = args.to_vec();
    longer.extend(["--heartbeat-timeout", "20s"]);
    let left = ttl(election(&status_json(home, &longer), "1"));
    assert!(
        left > 15_000 && left <= 20_000,
        "--heartbeat-timeout wins: {left}"
    );

    let stale = if my(store) {
        "update active_node set last_seen_active = now() - interval 6 second"
    } else {
        "update active_node set last_seen_active = now() - interval '6 second'"
    };
    store.exec(stale);
    let e = election(&status_json(home, &args), "1").clone();
    assert_eq!(
        (e["leader"].clone(), e["idle"].clone()),
        (Value::Null, false.into())
    );
    assert!(orchestrator_attempt(store, "orc-2", "t2"), "takeover");
    let e = election(&status_json(home, &args), "1").clone();
    assert_eq!(e["leader"]["id"], "orc-2");
}

fn all_presets(store: Store) {
    let home = common::scratch::tempdir();
    shedlock(&store, home.path());
    oban(&store, home.path());
    orchestrator(&store, home.path());
}

#[test]
fn presets_on_postgres() {
    all_presets(Store::postgres());
}

#[test]
fn presets_on_mariadb() {
    all_presets(Store::mariadb());
}

#[test]
fn presets_are_listed_with_their_layout() {
    let home = common::scratch::tempdir();
    let out = command(home.path())
        .arg("presets")
        .output()
        .expect("run electop presets");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for want in [
        "shedlock      sql-lease      ShedLock",
        "table shedlock: election name, leader locked_by, term ends at lock_until",
        "oban          sql-lease",
        "table oban_peers: election name, leader node, term ends at expires_at",
        "orchestrator  sql-heartbeat  orchestrator:",
        "table active_node: election anchor, leader hostname, last heartbeat last_seen_active (deposed 5s",
        "shown as idle",
    ] {
        assert!(text.contains(want), "`{want}` missing from:\n{text}");
    }
}
