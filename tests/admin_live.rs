//! Admin actions against real stores: every action on every scheme, the compare-and-swap
//! refusal when the store changed since it was read, the read-only refusal, the audit log,
//! and interop with participants electop did not write (`etcdctl elect`, the articles' SQL).

mod common;

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use common::electop::{command, election, status_json};
use common::etcd::{EtcdServer, campaign_in_order};
use common::sqlstore::Store;
use electop::admin::{ActionKind, AdminRequest, Outcome};
use electop::backend::{self, BackendOptions};
use electop::config::SourceConfig;
use etcd_client::PutOptions;
use serde_json::Value;

use common::T;
/// etcd-election actions hold the deposed keys for a third of the lease TTL (60 s for
/// etcdctl elect) plus 2 s, so the deposed are told before anyone else is elected.
const HELD: Duration = Duration::from_secs(35);

fn admin(home: &Path, source: &[&str], action: &[&str]) -> Output {
    command(home)
        .args(source)
        .args(action)
        .arg("--yes")
        .output()
        .expect("electop")
}

fn code(out: &Output) -> i32 {
    out.status.code().unwrap_or(-1)
}

fn audit(home: &Path) -> Vec<Value> {
    std::fs::read_to_string(home.join("data/electop/audit.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("audit line is JSON"))
        .collect()
}

/// Reads an election the way the CLI does, to act on it later (after the store changed).
async fn seen(sources: &[SourceConfig], name: &str) -> AdminRequestParts {
    let opts = BackendOptions {
        all_leases: true,
        ..BackendOptions::default()
    };
    let s = electop::runtime::Sources::spawn(sources, &opts).expect("sources");
    let app = electop::runtime::collect_status(s, T)
        .await
        .expect("status");
    let (_, e) = app
        .elections
        .iter()
        .find(|((_, n), _)| n == name)
        .expect("election");
    AdminRequestParts {
        seen: e.clone(),
        source_name: app.sources[e.source].info.name.clone(),
        target: electop::backend::target(&sources[e.source]),
    }
}

struct AdminRequestParts {
    seen: electop::model::Election,
    source_name: String,
    target: electop::admin::Target,
}

impl AdminRequestParts {
    fn request(&self, kind: ActionKind) -> AdminRequest {
        AdminRequest {
            source: self.seen.source,
            source_name: self.source_name.clone(),
            kind,
            seen: self.seen.clone(),
            target: self.target.clone(),
        }
    }
}

fn sources(args: &[&str]) -> Vec<SourceConfig> {
    use clap::Parser;
    let cli = electop::cli::Cli::parse_from(std::iter::once("electop").chain(args.iter().copied()));
    cli.sources
        .resolve(&electop::config::Config::default())
        .expect("sources")
}

#[test]
fn etcd_election_resign_hands_over_to_the_next_etcdctl_campaigner() {
    let etcd = EtcdServer::start();
    let [mut a, mut b] = campaign_in_order(&etcd, "/adm/jobs", ["node-a", "node-b"]);
    let h = common::scratch::tempdir();
    let src = ["--etcd", &etcd.endpoint(), "--prefix", "/adm/"];
    let out = admin(
        h.path(),
        &src,
        &["resign", "jobs", "--expect-leader", "node-a"],
    );
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    assert!(b.wait_elected(T), "the next campaigner takes over");
    // etcd issue #11777: etcdctl elect does not notice it was deposed; its session lives on.
    assert!(
        a.is_running(),
        "etcdctl keeps running: it does not notice a resign"
    );
    // electop says so, in plain `status` too (from the audit log: the holder it removed,
    // whose lease lives on), and history names the change as the admin's resign.
    let plain = common::electop::status_json(h.path(), &src);
    let e = election(&plain, "jobs");
    assert_eq!(e["leader"]["id"], "node-b");
    assert_eq!(e["deposed"]["id"], "node-a", "plain status: {e:#}");
    assert!(
        e["deposed"]["ttl_ms"].as_i64().is_some_and(|t| t > 0),
        "{e:#}"
    );
    assert!(
        e["alarms"].to_string().contains("deposed"),
        "the alarm, as the dashboard shows it: {e:#}"
    );
    let s = common::electop::status_history_json(h.path(), &src);
    let e = election(&s, "jobs");
    assert_eq!(e["deposed"]["id"], "node-a", "{e:#}");
    assert!(e["resigned"].is_null(), "{e:#}");
    let last = e["history"].as_array().and_then(|h| h.last()).cloned();
    assert_eq!(
        last.map(|l| l["cause"].clone()),
        Some("forced_resign".into()),
        "{e:#}"
    );
    // Its session ends (its lease revoked): no longer deposed.
    let lease = e["deposed"]["lease"].as_i64().expect("lease");
    etcd.etcdctl(&["lease", "revoke", &format!("{lease:x}")]);
    common::wait_until("the deposed lease is gone", T, || {
        election(&common::electop::status_json(h.path(), &src), "jobs")["deposed"].is_null()
    });
    let log = audit(h.path());
    assert_eq!(log.len(), 2, "the attempt, then the outcome: {log:?}");
    for (line, outcome) in log.iter().zip(["attempt", "done"]) {
        assert_eq!(
            (
                line["action"].as_str(),
                line["outcome"].as_str(),
                line["before"].as_str()
            ),
            (Some("resign"), Some(outcome), Some("node-a"))
        );
        assert!(
            line["by"].as_str().is_some_and(|b| b.contains('@')),
            "{line}"
        );
    }
    assert!(log[0]["after"].is_null(), "an attempt has no outcome yet");
    assert_eq!(log[0]["id"], log[1]["id"], "one action's two lines");
    assert!(log[0]["at"].as_str() <= log[1]["at"].as_str());
}

#[test]
fn etcd_election_reelect_ends_the_session_so_etcdctl_notices() {
    let etcd = EtcdServer::start();
    let [mut a, mut b] = campaign_in_order(&etcd, "/adm/jobs", ["node-a", "node-b"]);
    let h = common::scratch::tempdir();
    let src = ["--etcd", &etcd.endpoint(), "--prefix", "/adm/"];
    let out = admin(h.path(), &src, &["reelect", "jobs"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    // Its key is held until it must have noticed: a third of etcdctl's 60 s lease, plus 2 s.
    assert!(b.wait_elected(HELD), "next in line leads");
    common::wait_until(
        "etcdctl elect notices its session ended",
        Duration::from_secs(30),
        || !a.is_running(),
    );
    assert!(a.stderr().contains("session expired"), "{}", a.stderr());
}

/// A `status` started during a re-election's hold sees what the audit log says: the
/// deposed holder (its session ended, its key held on electop's lease until it must have
/// noticed) and the alarm, as the dashboard that acted shows the hold, not the deposed
/// holder as an unremarkable leader.
#[test]
fn status_during_a_reelect_hold_shows_the_holder_deposed() {
    let etcd = EtcdServer::start();
    let [_a, _b] = campaign_in_order(&etcd, "/hold/jobs", ["node-a", "node-b"]);
    let h = common::scratch::tempdir();
    let src = ["--etcd", &etcd.endpoint(), "--prefix", "/hold/"];
    let out = admin(h.path(), &src, &["reelect", "jobs"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    // The hold lasts a third of etcdctl's 60 s lease plus 2 s: this status is inside it.
    let s = status_json(h.path(), &src);
    let e = election(&s, "jobs");
    assert_eq!(e["deposed"]["id"], "node-a", "during the hold: {e:#}");
    assert!(
        e["deposed"]["ttl_ms"].as_i64().is_some_and(|t| t > 0),
        "held until the hold ends: {e:#}"
    );
    assert!(e["alarms"].to_string().contains("deposed"), "{e:#}");
    // Nobody leads while the key is held: the held key, who is next and what holds it.
    assert!(e["leader"].is_null(), "{e:#}");
    let held = &e["held"];
    assert_eq!(
        (&held["id"], &held["next"], &held["action"]),
        (&"node-a".into(), &"node-b".into(), &"re-election".into()),
        "{e:#}"
    );
    assert!(held["lease_hex"].is_string() && held["ttl_ms"].as_i64().is_some_and(|t| t > 0));
    let table = common::electop::status_table(h.path(), &src);
    assert!(table.contains("node-b next"), "{table}");
}

/// `watch`es beside the electop that forces a leader (the same audit log): one watching
/// before the action says node-a's tenure ended by it (learnt from the log as it is
/// written); one started during the hold says at once that nobody leads, the key held and
/// node-b next; both then see node-b elected when the hold ends, and nothing else.
#[test]
fn watches_tell_a_force_leader_whenever_they_started() {
    let etcd = EtcdServer::start();
    let [_a, mut b] = campaign_in_order(&etcd, "/fw/jobs", ["node-a", "node-b"]);
    let h = common::scratch::tempdir();
    let src = ["--etcd", &etcd.endpoint(), "--prefix", "/fw/"];
    let mut before = common::electop::Watch::start(h.path(), &src);
    before.wait_synced(1);
    let out = admin(h.path(), &src, &["force-leader", "jobs", "node-b"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let mut during = common::electop::Watch::start(h.path(), &src);
    during.wait_synced(1);
    let current = during.wait_for("its start line", T, |v| v["kind"] == "current");
    assert!(
        current["to"].is_null(),
        "nobody leads in the hold: {current}"
    );
    let held = current["detail"].as_str().unwrap_or_default();
    assert!(
        held.contains("held") && held.contains("node-b next"),
        "{current}"
    );
    let ended = before.wait_for("the tenure's end", T, |v| {
        v["election"] == "jobs" && v["kind"] == "leader_lost"
    });
    assert_eq!(ended["from"], "node-a", "{ended}");
    // The change is this process's at first, then relabelled from the audit log.
    let relabelled = before.wait_for("the action named", T, |v| {
        v["election"] == "jobs" && v["cause"] == "forced_leader"
    });
    assert!(
        relabelled["detail"]
            .as_str()
            .is_some_and(|d| d.contains("another electop")),
        "{relabelled}"
    );
    assert!(b.wait_elected(HELD), "node-b leads once the hold ends");
    for (which, w) in [("before", &mut before), ("during", &mut during)] {
        let ev = w.wait_for("the election", T, |v| {
            v["election"] == "jobs" && v["kind"] == "leader_elected"
        });
        assert_eq!(
            (&ev["to"], &ev["cause"]),
            (&"node-b".into(), &"elected".into()),
            "{which}: {ev}"
        );
        let to_a = w
            .seen
            .iter()
            .any(|v| v["to"] == "node-a" && v["kind"] != "current");
        assert!(
            !to_a,
            "watch started {which}: no change back: {:#?}",
            w.seen
        );
    }
    // The hold is time without a leader in the history the watches recorded.
    assert!(before.terminate().success() && during.terminate().success());
    let out = command(h.path())
        .args(src)
        .args(["history", "--json", "--since", "10m"])
        .output()
        .expect("run history");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).expect("history JSON");
    let segs = doc["elections"][0]["segments"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let gap = segs
        .iter()
        .position(|s| s["kind"] == "gap" && s["after"] == "node-a")
        .unwrap_or_else(|| panic!("no gap after node-a: {doc:#}"));
    // A third of etcdctl's 60 s lease plus 2 s, less the time the watch took to start.
    let ms = segs[gap]["duration_ms"].as_i64().unwrap_or_default();
    assert!(ms >= 15_000, "the hold's length: {doc:#}");
    assert_eq!(
        segs.get(gap + 1).map(|s| &s["holder"]),
        Some(&"node-b".into()),
        "{doc:#}"
    );
}

#[test]
fn etcd_election_force_leader_removes_those_ahead() {
    let etcd = EtcdServer::start();
    let [mut a, mut b, mut c] =
        campaign_in_order(&etcd, "/adm/jobs", ["node-a", "node-b", "node-c"]);
    let h = common::scratch::tempdir();
    let src = ["--etcd", &etcd.endpoint(), "--prefix", "/adm/"];
    let out = admin(h.path(), &src, &["force-leader", "jobs", "node-c"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    assert!(c.wait_elected(HELD), "node-c leads");
    common::wait_until(
        "the removed notice at their next keep-alive",
        Duration::from_secs(30),
        || !a.is_running() && !b.is_running(),
    );
    let s = status_json(h.path(), &src);
    assert_eq!(election(&s, "jobs")["leader"]["id"], "node-c");
    // Not in the line: a usage error (the README's exit 2), nothing written.
    let out = admin(h.path(), &src, &["force-leader", "jobs", "node-zz"]);
    assert_eq!(code(&out), 2, "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn refusals_write_nothing() {
    let etcd = EtcdServer::start();
    let [_a, _b] = campaign_in_order(&etcd, "/adm/jobs", ["node-a", "node-b"]);
    let h = common::scratch::tempdir();
    let src = ["--etcd", &etcd.endpoint(), "--prefix", "/adm/"];
    let before = etcd.candidates("/adm/jobs");
    let out = admin(
        h.path(),
        &src,
        &["resign", "jobs", "--expect-leader", "node-b"],
    );
    assert_eq!(code(&out), 3);
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("changed since you looked: the leader is node-a, not node-b")
    );
    let ro = [
        "--etcd",
        &etcd.endpoint(),
        "--prefix",
        "/adm/",
        "--read-only",
    ];
    let out = admin(h.path(), &ro, &["reelect", "jobs"]);
    assert_eq!(code(&out), 3);
    assert!(String::from_utf8_lossy(&out.stderr).contains("read-only"));
    let out = command(h.path())
        .args(src)
        .args(["resign", "jobs"])
        .output()
        .expect("electop");
    assert_eq!(code(&out), 2, "no terminal and no --yes: refused");
    let out = admin(h.path(), &src, &["resign", "nosuch"]);
    assert_eq!(code(&out), 2, "unknown election is a usage error");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("etcd1/jobs"),
        "lists the known ones"
    );
    // An id never seen is a usage error, as the README's table says (it exited 3, refused).
    for allow in [&[][..], &["--allow-unseen"]] {
        let force: Vec<&str> = ["force-leader", "jobs", "nosuch"]
            .into_iter()
            .chain(allow.iter().copied())
            .collect();
        let out = admin(h.path(), &src, &force);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(code(&out), 2, "{force:?}: {err}");
        assert!(
            err.contains("nosuch is not in the line of jobs; seen in jobs: node-a, node-b"),
            "{err}"
        );
    }
    assert_eq!(etcd.candidates("/adm/jobs"), before, "nothing was written");
    let outcomes: Vec<_> = audit(h.path())
        .iter()
        .map(|l| l["outcome"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(
        outcomes,
        ["changed", "refused", "usage", "usage", "usage", "usage"],
        "refusals and usage errors are audited; nothing reached the store"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn etcd_actions_compare_against_what_was_seen() {
    let etcd = EtcdServer::start();
    let _line = campaign_in_order(&etcd, "/cas/jobs", ["node-a", "node-b"]);
    let mut client = etcd.client().await;
    let l = client.lease_grant(60, None).await.expect("grant").id();
    client
        .put(
            "/casl/billing",
            "node-a",
            Some(PutOptions::new().with_lease(l)),
        )
        .await
        .expect("put");
    let el = sources(&["--etcd", &etcd.endpoint(), "--prefix", "/cas/"]);
    let lk = sources(&[
        "--etcd",
        &etcd.endpoint(),
        "--prefix",
        "/casl/",
        "--scheme",
        "etcd-lease-key",
    ]);
    let jobs = seen(&el, "jobs").await;
    let billing = seen(&lk, "billing").await;
    // The store moves on: a new leader for jobs, a new value for billing.
    etcd.etcdctl(&["del", "--prefix", "/cas/jobs/"]);
    client
        .put("/cas/jobs/1", "node-x", None)
        .await
        .expect("put");
    client
        .put(
            "/casl/billing",
            "node-y",
            Some(PutOptions::new().with_lease(l)),
        )
        .await
        .expect("put");
    for (src, parts, kind) in [
        (&el, &jobs, ActionKind::Resign),
        (&el, &jobs, ActionKind::Reelect),
        (&lk, &billing, ActionKind::Resign),
        (&lk, &billing, ActionKind::Reelect),
    ] {
        let out = backend::execute(&src[0], &parts.request(kind.clone()), T).await;
        assert!(matches!(out, Outcome::Changed { .. }), "{kind:?}: {out:?}");
        assert!(
            out.message().contains("changed since you looked"),
            "{}",
            out.message()
        );
    }
    assert_eq!(
        etcd.etcdctl_stdout(&["get", "/casl/billing", "--print-value-only"])
            .trim(),
        "node-y"
    );
    assert_eq!(
        etcd.etcdctl_stdout(&["get", "/cas/jobs/1", "--print-value-only"])
            .trim(),
        "node-x"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn etcd_lease_key_actions_with_a_registry() {
    let etcd = EtcdServer::start();
    let mut client = etcd.client().await;
    let mut leases = std::collections::HashMap::new();
    for id in ["node-a", "node-b"] {
        let l = client.lease_grant(60, None).await.expect("grant").id();
        client
            .put(
                format!("/reg/billing/{id}"),
                "up",
                Some(PutOptions::new().with_lease(l)),
            )
            .await
            .expect("put");
        leases.insert(id, l);
    }
    client
        .put(
            "/lead/billing",
            "node-a",
            Some(PutOptions::new().with_lease(leases["node-a"])),
        )
        .await
        .expect("put");
    let h = common::scratch::tempdir();
    let src = [
        "--etcd",
        &etcd.endpoint(),
        "--prefix",
        "/lead/",
        "--scheme",
        "etcd-lease-key",
        "--registry",
        "/reg/",
    ];
    let out = admin(h.path(), &src, &["force-leader", "billing", "node-b"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let kv = client.get("/lead/billing", None).await.expect("get");
    assert_eq!(kv.kvs()[0].value(), b"node-b");
    assert_eq!(
        kv.kvs()[0].lease(),
        leases["node-b"],
        "attached to node-b's registry lease"
    );
    let out = admin(h.path(), &src, &["force-leader", "billing", "node-q"]);
    assert_eq!(code(&out), 2, "an id never seen is a usage error");
    // Said plainly: what is missing and why the key needs it.
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("node-q has no registry entry")
            && err.contains("the leader key needs the lease from node-q's entry"),
        "{err}"
    );
    let out = admin(
        h.path(),
        &src,
        &["resign", "billing", "--expect-leader", "node-b"],
    );
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        client
            .get("/lead/billing", None)
            .await
            .expect("get")
            .kvs()
            .is_empty(),
        "resign deletes the key"
    );
    client
        .put(
            "/lead/billing",
            "node-a",
            Some(PutOptions::new().with_lease(leases["node-a"])),
        )
        .await
        .expect("put");
    let out = admin(h.path(), &src, &["reelect", "billing"]);
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        client
            .get("/lead/billing", None)
            .await
            .expect("get")
            .kvs()
            .is_empty(),
        "reelect deletes the key"
    );
}

/// Every action on a SQL scheme, with participants running the articles' statements.
async fn sql_actions(store: Store) {
    store.create_lease_table("leaderlock");
    store.create_heartbeat_table("service_election");
    let url = store.url();
    let h = common::scratch::tempdir();
    let lease = ["--sql", &url, "--scheme", "sql-lease"];
    let hb = [
        "--sql",
        &url,
        "--scheme",
        "sql-heartbeat",
        "--heartbeat-timeout",
        "20s",
    ];
    let run = |src: &[&str], action: &[&str]| {
        let out = admin(h.path(), src, action);
        assert_eq!(
            code(&out),
            0,
            "{action:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };

    // sql-lease: force a leader; its next renewal keeps it, the old one stays follower.
    assert!(store.lease_attempt("leaderlock", "jobs", "node-a", 30));
    // A SQL table has no line: node-b was never seen, so it takes --allow-unseen, and
    // without it nothing is written (exit 2, saying why).
    let out = admin(h.path(), &lease, &["force-leader", "jobs", "node-b"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 2, "{err}");
    assert!(
        err.contains("node-b was never seen in jobs") && err.contains("--allow-unseen"),
        "{err}"
    );
    assert!(
        store.lease_attempt("leaderlock", "jobs", "node-a", 30),
        "nothing written: node-a still holds it"
    );
    run(
        &lease,
        &[
            "force-leader",
            "jobs",
            "node-b",
            "--expect-leader",
            "node-a",
            "--allow-unseen",
        ],
    );
    assert!(
        store.lease_attempt("leaderlock", "jobs", "node-b", 30),
        "the forced id renews"
    );
    assert!(
        !store.lease_attempt("leaderlock", "jobs", "node-a", 30),
        "the old leader is a follower"
    );
    // resign: the term is over, anyone's next attempt wins.
    run(&lease, &["resign", "jobs"]);
    assert!(
        store.lease_attempt("leaderlock", "jobs", "node-c", 30),
        "free after resign"
    );
    // reelect: the row is gone.
    run(&lease, &["reelect", "jobs"]);
    let s = status_json(h.path(), &lease);
    assert!(s["elections"].as_array().is_some_and(|a| {
        a.iter()
            .all(|e| e["name"] != "jobs" || e["leader"].is_null())
    }));
    assert!(
        store.lease_attempt("leaderlock", "jobs", "node-a", 30),
        "free after reelect"
    );
    leaderless_is_refused(&store, &lease, h.path());

    // sql-heartbeat, with the MySQL election article's statement.
    assert!(store.heartbeat("service_election", 1, "svc-7", 20));
    run(&hb, &["force-leader", "1", "svc-12", "--allow-unseen"]);
    assert!(
        store.heartbeat("service_election", 1, "svc-12", 20),
        "the forced id keeps it"
    );
    assert!(
        !store.heartbeat("service_election", 1, "svc-7", 20),
        "the old one is a follower"
    );
    run(&hb, &["resign", "1"]);
    assert!(
        store.heartbeat("service_election", 1, "svc-7", 20),
        "free after resign"
    );
    run(&hb, &["reelect", "1"]);
    assert!(
        store.heartbeat("service_election", 1, "svc-9", 20),
        "free after reelect"
    );

    // Changed since seen: nothing written.
    let lease_src = sources(&lease);
    let hb_src = sources(&hb);
    let jobs = seen(&lease_src, "jobs").await;
    let one = seen(&hb_src, "1").await;
    let key = if matches!(store, Store::My(_)) {
        "`key`"
    } else {
        "key"
    };
    store.exec(&format!(
        "UPDATE leaderlock SET leader_id = 'node-q' WHERE {key} = 'jobs'"
    ));
    store.exec("UPDATE service_election SET service_id = 'svc-q' WHERE anchor = 1");
    for (src, parts, kind) in [
        (&lease_src, &jobs, ActionKind::Reelect),
        (&lease_src, &jobs, ActionKind::Resign),
        (
            &lease_src,
            &jobs,
            ActionKind::ForceLeader {
                target: "node-z".into(),
            },
        ),
        (&hb_src, &one, ActionKind::Reelect),
        (&hb_src, &one, ActionKind::Resign),
        (
            &hb_src,
            &one,
            ActionKind::ForceLeader {
                target: "svc-z".into(),
            },
        ),
    ] {
        let out = backend::execute(&src[0], &parts.request(kind.clone()), T).await;
        assert!(matches!(out, Outcome::Changed { .. }), "{kind:?}: {out:?}");
        assert!(
            out.message().contains("node-q") || out.message().contains("svc-q"),
            "says what changed: {}",
            out.message()
        );
    }
    assert_eq!(
        store.exec(&format!(
            "SELECT leader_id FROM leaderlock WHERE {key} = 'jobs'"
        )),
        "node-q"
    );
    assert_eq!(
        store.exec("SELECT service_id FROM service_election WHERE anchor = 1"),
        "svc-q"
    );

    let ro: Vec<&str> = lease.iter().copied().chain(["--read-only"]).collect();
    let out = admin(h.path(), &ro, &["reelect", "jobs"]);
    assert_eq!(code(&out), 3);
    assert_eq!(
        store.exec(&format!(
            "SELECT leader_id FROM leaderlock WHERE {key} = 'jobs'"
        )),
        "node-q"
    );
    let log = audit(h.path());
    let outcomes: Vec<&Value> = log.iter().filter(|l| l["outcome"] != "attempt").collect();
    // Nine actions, and the force-leader refused for an unseen id (a usage error).
    assert_eq!(
        outcomes.len(),
        10,
        "every action through the CLI is audited"
    );
    for attempt in log.iter().filter(|l| l["outcome"] == "attempt") {
        assert!(
            outcomes.iter().any(|o| o["id"] == attempt["id"]),
            "an attempt without its outcome: {attempt}"
        );
    }
}

/// A row whose term is over has no leader: resign and reelect say so (exit 3) and write
/// nothing. (Resign moved the row's deadline to now and said `row nightly now has
/// leader_id = node-2`, exit 0, as if it had written a leader.)
fn leaderless_is_refused(store: &Store, lease: &[&str], home: &Path) {
    let (key, past) = match store {
        Store::Pg(_) => ("key", "NOW() at time zone 'utc' - interval '10 seconds'"),
        Store::My(_) => ("`key`", "NOW(3) - INTERVAL 10 SECOND"),
        Store::Sqlite { .. } => ("key", "strftime('%Y-%m-%d %H:%M:%f', 'now', '-10 seconds')"),
    };
    assert!(store.lease_attempt("leaderlock", "nightly", "node-2", 30));
    store.exec(&format!(
        "UPDATE leaderlock SET valid_until = {past} WHERE {key} = 'nightly'"
    ));
    let row = || {
        store.exec(&format!(
            "SELECT leader_id, valid_until FROM leaderlock WHERE {key} = 'nightly'"
        ))
    };
    let before = row();
    for action in ["resign", "reelect"] {
        let out = admin(home, lease, &[action, "nightly"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(code(&out), 3, "{action}: {err}");
        assert!(
            err.contains("nightly has no leader (node-2's term is over)"),
            "{action}: {err}"
        );
        assert_eq!(row(), before, "{action} wrote nothing");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn sqlite_actions() {
    sql_actions(Store::sqlite()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn postgres_actions() {
    sql_actions(Store::postgres()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn mariadb_actions() {
    sql_actions(Store::mariadb()).await;
}

#[test]
fn several_sources_name_elections_source_slash_name() {
    let etcd = EtcdServer::start();
    let _one = campaign_in_order(&etcd, "/s1/jobs", ["node-a", "node-b"]);
    let _two = campaign_in_order(&etcd, "/s2/jobs", ["node-c", "node-d"]);
    let h = common::scratch::tempdir();
    let src = [
        "--etcd",
        &etcd.endpoint(),
        "--prefix",
        "/s1/",
        "--prefix",
        "/s2/",
    ];
    let out = admin(h.path(), &src, &["resign", "jobs"]);
    assert_eq!(code(&out), 2, "ambiguous");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("etcd1/jobs") && err.contains("etcd2/jobs"),
        "{err}"
    );
    let out = admin(
        h.path(),
        &src,
        &["resign", "etcd2/jobs", "--expect-leader", "node-c"],
    );
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    common::wait_until("node-d leads /s2/jobs", T, || {
        etcd.candidates("/s2/jobs").first().map(String::as_str) == Some("node-d")
    });
    assert_eq!(
        etcd.candidates("/s1/jobs").first().map(String::as_str),
        Some("node-a"),
        "the other source is untouched"
    );
}

#[test]
fn on_a_terminal_the_cli_asks_first() {
    let etcd = EtcdServer::start();
    let _line = campaign_in_order(&etcd, "/tty/jobs", ["node-a", "node-b"]);
    let h = common::scratch::tempdir();
    let home = h.path().display();
    let cmd = format!(
        "env XDG_CONFIG_HOME={home}/config XDG_DATA_HOME={home}/data {} --etcd {} --prefix /tty/ resign jobs; echo ELECTOP-EXITED $?; sleep 60",
        common::electop::bin(),
        etcd.endpoint()
    );
    let tmux = common::tmux::Tmux::start(120, 30, &cmd);
    let screen = tmux.wait_screen("the prompt", T, |s| s.contains("Proceed? [y/N]"));
    assert!(
        screen.contains("does not") && screen.contains("notice"),
        "the resign caveat is shown:\n{screen}"
    );
    tmux.send(&["n", "Enter"]);
    tmux.wait_screen("refused", T, |s| s.contains("ELECTOP-EXITED 3"));
    assert_eq!(
        etcd.candidates("/tty/jobs").first().map(String::as_str),
        Some("node-a"),
        "not confirmed: nothing written"
    );
}

/// A command line the admin CLI does not understand exits 2 and is audited, without the
/// values typed (a URL may hold a password).
#[test]
fn usage_errors_are_audited_without_values() {
    let h = common::scratch::tempdir();
    let src = [
        "--sql",
        "postgres://u:hunter2@127.0.0.1:1/db",
        "--scheme",
        "sql-lease",
    ];
    let out = command(h.path())
        .args(src)
        .args(["reelect"])
        .output()
        .expect("electop");
    assert_eq!(code(&out), 2, "no election named");
    let out = command(h.path())
        .args(src)
        .args(["resign", "jobs", "--timeout", "soon-hunter2"])
        .output()
        .expect("electop");
    assert_eq!(code(&out), 2, "a bad --timeout");
    let log = audit(h.path());
    let got: Vec<(&str, &str)> = log
        .iter()
        .map(|l| {
            (
                l["action"].as_str().unwrap_or(""),
                l["outcome"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(got, [("reelect", "usage"), ("resign", "usage")], "{log:?}");
    assert!(
        log[1]["after"]
            .as_str()
            .is_some_and(|a| a.contains("--timeout")),
        "says what was wrong: {}",
        log[1]
    );
    let text = std::fs::read_to_string(h.path().join("data/electop/audit.jsonl")).expect("log");
    assert!(
        !text.contains("hunter2"),
        "no values in the audit log: {text}"
    );
}

/// A sql-lease election `jobs` led by node-a in PostgreSQL, reached through a proxy that
/// delays each direction by `delay` (connecting takes a dozen round trips); `reelect jobs
/// --yes` started on it and waited for until its attempt is audited.
fn reelect_through_a_slow_proxy(
    timeout: &str,
    delay: Duration,
) -> (
    Store,
    common::proxy::Proxy,
    common::scratch::Scratch,
    std::process::Child,
) {
    let store = Store::postgres();
    store.create_lease_table("leaderlock");
    assert!(store.lease_attempt("leaderlock", "jobs", "node-a", 60));
    let port = match &store {
        Store::Pg(p) => p.port(),
        _ => unreachable!("postgres"),
    };
    let proxy = common::proxy::Proxy::start(port, Duration::from_secs(60));
    proxy.delay_both(delay, delay);
    let url = store
        .url()
        .replace(&format!(":{port}/"), &format!(":{}/", proxy.port()));
    assert_ne!(url, store.url());
    let h = common::scratch::tempdir();
    let child = command(h.path())
        .args(["--sql", &url, "--scheme", "sql-lease"])
        .args(["reelect", "jobs", "--yes", "--timeout", timeout])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("electop");
    common::wait_until("the attempt is audited", Duration::from_secs(30), || {
        audit(h.path()).iter().any(|l| l["outcome"] == "attempt")
    });
    (store, proxy, h, child)
}

/// The attempt is on record before the store is touched: an admin CLI killed while its
/// action waits on a slow store leaves the attempt, no outcome, and the store unchanged.
#[test]
fn a_crash_mid_action_leaves_the_attempt_on_record() {
    let (store, proxy, h, mut child) =
        reelect_through_a_slow_proxy("30s", Duration::from_millis(150));
    proxy.freeze();
    child.kill().expect("kill the CLI");
    let status = child.wait().expect("wait");
    assert!(!status.success(), "killed mid-action");
    let log = audit(h.path());
    let outcomes: Vec<&str> = log.iter().filter_map(|l| l["outcome"].as_str()).collect();
    assert_eq!(
        outcomes,
        ["attempt"],
        "the attempt, and no outcome: {log:?}"
    );
    assert_eq!(log[0]["action"], "reelect");
    assert_eq!(log[0]["before"], "node-a");
    assert_eq!(
        store.exec("SELECT leader_id FROM leaderlock WHERE key = 'jobs'"),
        "node-a",
        "the action never reached the store"
    );
}

/// A store that freezes mid-action does not hold the CLI forever: the action fails within
/// three request timeouts, saying it may or may not have been applied, and is audited.
#[test]
fn a_store_frozen_mid_action_fails_it_in_bounded_time() {
    let (_store, proxy, h, mut child) =
        reelect_through_a_slow_proxy("3s", Duration::from_millis(50));
    proxy.freeze();
    let frozen = std::time::Instant::now();
    let bound = 3 * Duration::from_secs(3) + Duration::from_secs(3);
    let mut status = None;
    common::wait_until("the CLI gives up", bound, || {
        status = child.try_wait().expect("try_wait");
        status.is_some()
    });
    println!(
        "gave up {} ms after the freeze",
        frozen.elapsed().as_millis()
    );
    assert_eq!(status.and_then(|s| s.code()), Some(1), "a store error");
    let log = audit(h.path());
    let outcomes: Vec<&str> = log.iter().filter_map(|l| l["outcome"].as_str()).collect();
    assert_eq!(outcomes, ["attempt", "failed"], "{log:?}");
    assert_eq!(log[0]["id"], log[1]["id"]);
}

/// A second electop watching the same store learns from the shared audit log who forced a
/// change: the CLI's re-election on etcd and resign on SQL are recorded as such there.
#[test]
fn another_electops_actions_are_recorded_as_forced_by_it() {
    let etcd = EtcdServer::start();
    let lease = etcd.etcdctl_stdout(&["lease", "grant", "60"]);
    let lease = lease
        .split_whitespace()
        .nth(1)
        .expect("lease id")
        .to_string();
    etcd.etcdctl(&["put", "/who/jobs", "node-a", &format!("--lease={lease}")]);
    let h = common::scratch::tempdir();
    let src = [
        "--etcd",
        &etcd.endpoint(),
        "--prefix",
        "/who/",
        "--scheme",
        "etcd-lease-key",
    ];
    let mut watch = common::electop::Watch::start(h.path(), &src);
    watch.wait_synced(1);
    let out = admin(
        h.path(),
        &src,
        &["reelect", "jobs", "--expect-leader", "node-a"],
    );
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    let forced = |v: &Value, cause: &str| {
        v["election"] == "jobs"
            && v["cause"] == cause
            && v["detail"]
                .as_str()
                .is_some_and(|d| d.contains("another electop"))
    };
    let ev = watch.wait_for("the re-election attributed", T, |v| {
        forced(v, "forced_reelection")
    });
    assert_eq!(ev["from"], "node-a");

    let store = Store::sqlite();
    store.create_lease_table("leaderlock");
    assert!(store.lease_attempt("leaderlock", "jobs", "node-a", 60));
    let url = store.url();
    let sql = [
        "--sql",
        url.as_str(),
        "--scheme",
        "sql-lease",
        "--poll",
        "100ms",
    ];
    let mut watch = common::electop::Watch::start(h.path(), &sql);
    watch.wait_synced(1);
    let out = admin(
        h.path(),
        &sql,
        &["resign", "jobs", "--expect-leader", "node-a"],
    );
    assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
    watch.wait_for("the resign attributed", T, |v| forced(v, "forced_resign"));
}
