//! SQL admin actions compare on the leader id, not on the deadline (the contract,
//! `election-models.md`): an action confirmed after the leader renewed its row still applies,
//! and one confirmed after another participant took the row over is refused as changed.
//! Every action on both SQL schemes, with the articles' column names and with configured
//! ones, on SQLite, PostgreSQL and MariaDB; one server serves every case.

mod common;

use std::time::Duration;

use common::sqlstore::Store;
use electop::admin::{ActionKind, AdminRequest, Outcome};
use electop::backend::BackendOptions;
use electop::backend::sql::{DEADLINE, Statement};
use electop::config::{DbUrl, SourceConfig, SqlColumns, SqlSource, SqlSpec};
use electop::model::{Election, Scheme};

use common::T;
/// The heartbeat timeout the heartbeat tables are read with.
const TIMEOUT: Duration = Duration::from_secs(20);

/// An election table: the scheme, its name and its columns as the participants write them.
struct Table {
    scheme: Scheme,
    name: &'static str,
    key: &'static str,
    who: &'static str,
    stamp: &'static str,
    /// Named as configured (`columns`) rather than as in the articles.
    custom: bool,
}

const TABLES: [Table; 4] = [
    Table {
        scheme: Scheme::SqlLease,
        name: "leaderlock",
        key: "key",
        who: "leader_id",
        stamp: "valid_until",
        custom: false,
    },
    Table {
        scheme: Scheme::SqlLease,
        name: "lease_custom",
        key: "lock_name",
        who: "owner",
        stamp: "expires_at",
        custom: true,
    },
    Table {
        scheme: Scheme::SqlHeartbeat,
        name: "service_election",
        key: "anchor",
        who: "service_id",
        stamp: "last_seen_active",
        custom: false,
    },
    Table {
        scheme: Scheme::SqlHeartbeat,
        name: "hb_custom",
        key: "slot",
        who: "member",
        stamp: "beat_at",
        custom: true,
    },
];

/// The three actions; each gets its own election (row) per case.
fn actions() -> [ActionKind; 3] {
    [
        ActionKind::Reelect,
        ActionKind::Resign,
        ActionKind::ForceLeader {
            target: "node-b".into(),
        },
    ]
}

/// The election acted on by action `i`: renewed first (`renewed`) or taken over first.
/// Heartbeat anchors are numbers (the MySQL election article's `tinyint`).
fn election_name(t: &Table, i: usize, renewed: bool) -> String {
    let n = i + if renewed { 1 } else { 4 };
    match t.scheme {
        Scheme::SqlHeartbeat => n.to_string(),
        _ => format!("{}-{n}", if renewed { "renewed" } else { "moved" }),
    }
}

fn quote(store: &Store, ident: &str) -> String {
    match store {
        Store::My(_) => format!("`{ident}`"),
        _ => format!("\"{ident}\""),
    }
}

/// The key as an SQL literal.
fn literal(t: &Table, name: &str) -> String {
    match t.scheme {
        Scheme::SqlHeartbeat => name.to_string(),
        _ => format!("'{name}'"),
    }
}

/// A fresh deadline as a participant writes it: the end of a 30 s term (sql-lease), or now
/// (sql-heartbeat), in the table's column type.
fn fresh_stamp(store: &Store, t: &Table) -> &'static str {
    match (store, t.scheme) {
        (Store::Pg(_), Scheme::SqlLease) => "NOW() at time zone 'utc' + interval '30 seconds'",
        (Store::Pg(_), _) => "now()",
        (Store::My(_), Scheme::SqlLease) => "NOW(3) + INTERVAL 30 SECOND",
        (Store::My(_), _) => "now()",
        (_, Scheme::SqlLease) => "strftime('%Y-%m-%d %H:%M:%f', 'now', '+30 seconds')",
        _ => "strftime('%Y-%m-%d %H:%M:%f', 'now')",
    }
}

/// The custom tables, with the same column types as the articles' tables.
fn create_custom(store: &Store, t: &Table) {
    let (key, stamp) = match (store, t.scheme) {
        (Store::Pg(_), Scheme::SqlLease) => ("text", "timestamp"),
        (Store::Pg(_), _) => ("int", "timestamptz"),
        (Store::My(_), Scheme::SqlLease) => ("varchar(128)", "datetime(3)"),
        (Store::My(_), _) => ("tinyint(3) unsigned", "timestamp"),
        (_, Scheme::SqlLease) => ("TEXT", "TIMESTAMP"),
        _ => ("INTEGER", "TIMESTAMP"),
    };
    store.exec(&format!(
        "CREATE TABLE {} ({} {key} PRIMARY KEY, {} varchar(128) NOT NULL, {} {stamp} NOT NULL)",
        t.name,
        quote(store, t.key),
        quote(store, t.who),
        quote(store, t.stamp)
    ));
    store.grant(t.name);
}

/// The instant before which a holder is deposed: its term's end (sql-lease) or its last
/// beat (sql-heartbeat), against the table's column type.
fn deposed_before(store: &Store, t: &Table) -> &'static str {
    match (store, t.scheme) {
        (Store::Pg(_), Scheme::SqlLease) => "NOW() at time zone 'utc'",
        (Store::Pg(_), _) => "now() - interval '20 seconds'",
        (Store::My(_), Scheme::SqlLease) => "NOW(3)",
        (Store::My(_), _) => "now() - interval 20 second",
        (_, Scheme::SqlLease) => "strftime('%Y-%m-%d %H:%M:%f', 'now')",
        _ => "strftime('%Y-%m-%d %H:%M:%f', 'now', '-20 seconds')",
    }
}

/// One attempt of a participant: the articles' own statement for the articles' tables, the
/// same algorithm (take a free or deposed row, or renew one's own) for the configured ones.
fn participant(store: &Store, t: &Table, name: &str, id: &str) -> bool {
    if !t.custom {
        return match t.scheme {
            Scheme::SqlLease => store.lease_attempt(t.name, name, id, 30),
            _ => store.heartbeat(t.name, name.parse().expect("anchor"), id, 20),
        };
    }
    let (k, w, s) = (
        quote(store, t.key),
        quote(store, t.who),
        quote(store, t.stamp),
    );
    let row = format!("{k} = {}", literal(t, name));
    let fresh = fresh_stamp(store, t);
    if store.exec(&format!("SELECT count(*) FROM {} WHERE {row}", t.name)) == "0" {
        store.exec(&format!(
            "INSERT INTO {} ({k}, {w}, {s}) VALUES ({}, '{id}', {fresh})",
            t.name,
            literal(t, name)
        ));
    } else {
        store.exec(&format!(
            "UPDATE {} SET {w} = '{id}', {s} = {fresh} WHERE {row} AND ({w} = '{id}' OR {s} < {})",
            t.name,
            deposed_before(store, t)
        ));
    }
    holder(store, t, name) == id
}

fn holder(store: &Store, t: &Table, name: &str) -> String {
    store.exec(&format!(
        "SELECT {} FROM {} WHERE {} = {}",
        quote(store, t.who),
        t.name,
        quote(store, t.key),
        literal(t, name)
    ))
}

fn stamp(store: &Store, t: &Table, name: &str) -> String {
    store.exec(&format!(
        "SELECT {} FROM {} WHERE {} = {}",
        quote(store, t.stamp),
        t.name,
        quote(store, t.key),
        literal(t, name)
    ))
}

/// The leader renews until its deadline reads differently (MariaDB's `timestamp` has whole
/// seconds, so a renewal within the same second would change nothing).
fn renew(store: &Store, t: &Table, name: &str) {
    let before = stamp(store, t, name);
    common::wait_until(&format!("a renewal moves {} {name}", t.name), T, || {
        assert!(
            participant(store, t, name, "node-a"),
            "node-a renews {name}"
        );
        stamp(store, t, name) != before
    });
}

fn source(store: &Store, t: &Table) -> SourceConfig {
    SourceConfig::Sql(
        SqlSource::new(SqlSpec {
            name: None,
            url: DbUrl(store.url()),
            password_env: None,
            password_file: None,
            scheme: t.scheme,
            preset: None,
            table: Some(t.name.to_string()),
            columns: if t.custom {
                SqlColumns {
                    key: Some(t.key.into()),
                    leader_id: Some(t.who.into()),
                    valid_until: Some(t.stamp.into()),
                }
            } else {
                SqlColumns::default()
            },
            timeout: (t.scheme == Scheme::SqlHeartbeat).then_some(TIMEOUT),
            poll: Some(Duration::from_millis(100)),
            read_only: false,
        })
        .expect("valid settings"),
    )
}

/// Every election of a source, read the way the CLI reads them before acting.
async fn look(src: &SourceConfig) -> (Vec<Election>, String) {
    let sources =
        electop::runtime::Sources::spawn(std::slice::from_ref(src), &BackendOptions::default())
            .expect("sources");
    let app = electop::runtime::collect_status(sources, T)
        .await
        .expect("status");
    let name = app.sources[0].info.name.clone();
    (app.elections.into_values().collect(), name)
}

fn find<'a>(elections: &'a [Election], name: &str) -> &'a Election {
    elections
        .iter()
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("no election {name} in {elections:#?}"))
}

fn leader(e: Option<&Election>) -> Option<&str> {
    e.and_then(|e| e.leader.as_ref()).map(|l| l.id.as_str())
}

/// One table: six rows held by node-a, looked at; three renewed and three taken over by
/// node-q; then every action with what was seen before.
async fn table_case(store: &Store, t: &Table) {
    if t.custom {
        create_custom(store, t);
    } else if t.scheme == Scheme::SqlLease {
        store.create_lease_table(t.name);
    } else {
        store.create_heartbeat_table(t.name);
    }
    let names = |renewed| (0..3).map(move |i| election_name(t, i, renewed));
    for name in names(true).chain(names(false)) {
        assert!(
            participant(store, t, &name, "node-a"),
            "node-a takes {name}"
        );
    }
    let src = source(store, t);
    let (seen, source_name) = look(&src).await;
    for name in names(true).chain(names(false)) {
        assert_eq!(
            leader(Some(find(&seen, &name))),
            Some("node-a"),
            "{}",
            t.name
        );
    }
    for (renewed, moved) in names(true).zip(names(false)) {
        renew(store, t, &renewed);
        let takeover = format!(
            "UPDATE {} SET {} = 'node-q' WHERE {} = {}",
            t.name,
            quote(store, t.who),
            quote(store, t.key),
            literal(t, &moved)
        );
        store.exec(&takeover);
    }
    for (i, kind) in actions().into_iter().enumerate() {
        for renewed in [true, false] {
            let name = election_name(t, i, renewed);
            let req = AdminRequest {
                source: 0,
                source_name: source_name.clone(),
                kind: kind.clone(),
                seen: find(&seen, &name).clone(),
                target: electop::backend::target(&src),
            };
            let planned = plan_names_the_columns(t, &req);
            let SourceConfig::Sql(cfg) = &src else {
                unreachable!("a SQL source")
            };
            let (out, sent) = electop::backend::sql::admin::execute_traced(cfg, &req, T).await;
            assert_sent_as_planned(&planned, &sent);
            let what = format!(
                "{} {name} {kind:?} (renewed first: {renewed}): {out:?}",
                t.name
            );
            if renewed {
                assert!(matches!(out, Outcome::Done { .. }), "{what}");
            } else {
                assert!(matches!(out, Outcome::Changed { .. }), "{what}");
                assert!(
                    out.message().contains("changed since you looked")
                        && out.message().contains("node-q"),
                    "{what}"
                );
            }
        }
    }
    check_effects(store, t, &src).await;
}

/// The confirmation names the table's own columns, never the scheme's defaults when they
/// differ; returns the planned statement.
fn plan_names_the_columns(t: &Table, req: &AdminRequest) -> Statement {
    let plan = electop::backend::plan(req).expect("a plan");
    let text = plan.writes().join("\n");
    // Every statement's WHERE names the key and holder; only updates name the deadline.
    let mut cols = vec![t.name, t.key, t.who];
    if req.kind != ActionKind::Reelect {
        cols.push(t.stamp);
    }
    for col in cols {
        assert!(text.contains(col), "{col} in {text}");
    }
    if t.custom {
        for default in ["leader_id", "valid_until", "service_id", "last_seen_active"] {
            assert!(!text.contains(default), "{default} in {text}");
        }
    }
    match plan.steps_of::<Statement>().as_deref() {
        Ok([st]) => (*st).clone(),
        other => panic!("one statement, got {other:?}"),
    }
}

/// What was sent is the planned statement, its deadline written for the column's type.
fn assert_sent_as_planned(planned: &Statement, sent: &[String]) {
    assert_eq!(sent.len(), 1, "{sent:?}");
    match planned.sql.split_once(DEADLINE) {
        Some((before, after)) => assert!(
            sent[0].starts_with(before) && sent[0].ends_with(after) && !sent[0].contains(DEADLINE),
            "planned {}, sent {}",
            planned.sql,
            sent[0]
        ),
        None => assert_eq!(sent[0], planned.sql),
    }
}

/// What the store holds after the actions: done where renewed, untouched where moved.
async fn check_effects(store: &Store, t: &Table, src: &SourceConfig) {
    let (now, _) = look(src).await;
    let get = |i, renewed| now.iter().find(|e| e.name == election_name(t, i, renewed));
    assert_eq!(
        leader(get(0, true)),
        None,
        "{}: re-elected, no leader",
        t.name
    );
    assert_eq!(
        leader(get(1, true)),
        None,
        "{}: resigned, term over",
        t.name
    );
    assert_eq!(leader(get(2, true)), Some("node-b"), "{}: forced", t.name);
    for i in 0..3 {
        let name = election_name(t, i, false);
        assert_eq!(
            holder(store, t, &name),
            "node-q",
            "{} {name} untouched",
            t.name
        );
    }
    assert_eq!(
        store.exec(&format!(
            "SELECT count(*) FROM {} WHERE {} = {}",
            t.name,
            quote(store, t.key),
            literal(t, &election_name(t, 0, true))
        )),
        "0",
        "{}: re-election deletes the row",
        t.name
    );
    // A participant other than the deposed leader takes the resigned row at its next attempt.
    let resigned = election_name(t, 1, true);
    assert!(
        participant(store, t, &resigned, "node-c"),
        "{}: node-c takes the resigned {resigned}",
        t.name
    );
}

async fn every_table(mut store: Store) {
    for t in &TABLES {
        table_case(&store, t).await;
    }
    store.stop();
}

#[tokio::test(flavor = "multi_thread")]
async fn sqlite_actions_after_a_renewal_and_after_a_takeover() {
    every_table(Store::sqlite()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn postgres_actions_after_a_renewal_and_after_a_takeover() {
    every_table(Store::postgres()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn mariadb_actions_after_a_renewal_and_after_a_takeover() {
    every_table(Store::mariadb()).await;
}
