//! Patroni read natively, against a real Patroni cluster (Debian's patroni 3.0.2, PostgreSQL
//! 15) on the test's etcd: what electop shows agrees with `patronictl list`; a switchover made
//! by patronictl shows as the old leader's resignation, with the time from Patroni's own
//! history; electop's switchover is carried out by Patroni; a crashed primary's leader key
//! expires and a replica takes over within Patroni's TTL. One cluster for the whole
//! sequence: starting one is most of the time.

mod common;

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use common::electop::{Watch, command, election, status_json};
use common::etcd::EtcdServer;
use common::patroni::{Listed, PatroniCluster, TTL_S};
use electop::admin::{ActionKind, AdminRequest, Outcome};
use electop::backend::{self, BackendOptions};
use electop::config::SourceConfig;
use electop::model::Election;
use serde_json::Value;

const SCOPE: &str = "pgdemo";
const T: Duration = Duration::from_secs(30);

fn run(home: &Path, source: &[&str], action: &[&str]) -> Output {
    command(home)
        .args(source)
        .args(action)
        .output()
        .expect("electop")
}

/// Where electop's view of the cluster differs from `patronictl list`, if anywhere.
fn mismatch(e: &Value, list: &[Listed]) -> Option<String> {
    let leader = list
        .iter()
        .find(|m| m.role == "Leader")
        .map(|m| m.name.as_str());
    if e["leader"]["id"].as_str() != leader {
        return Some(format!("leader {} vs {leader:?}", e["leader"]["id"]));
    }
    let mut ids: Vec<&str> = e["candidates"]
        .as_array()?
        .iter()
        .filter_map(|c| c["id"].as_str())
        .collect();
    ids.sort_unstable();
    let mut names: Vec<&str> = list.iter().map(|m| m.name.as_str()).collect();
    names.sort_unstable();
    if ids != names {
        return Some(format!("members {ids:?} vs {names:?}"));
    }
    for m in list {
        let Some(info) = e["members"]
            .as_array()?
            .iter()
            .find(|i| i["id"] == m.name.as_str())
        else {
            return Some(format!("no member info for {}", m.name));
        };
        let lag_mb = info["lag_bytes"]
            .as_i64()
            .map(|b| Value::from((b as f64 / 1_048_576.0).round() as i64));
        let want_lag = m.lag_mb.clone().filter(|v| v.is_number());
        if info["state"] != m.state.as_str()
            || info["timeline"].as_i64() != m.timeline
            || (m.role != "Leader" && lag_mb != want_lag)
        {
            return Some(format!("{}: electop {info} vs patronictl {m:?}", m.name));
        }
    }
    None
}

fn agrees(home: &Path, args: &[&str], cluster: &PatroniCluster) -> Value {
    let deadline = Instant::now() + T;
    loop {
        let list = cluster.list();
        let status = status_json(home, args);
        let e = election(&status, SCOPE).clone();
        match mismatch(&e, &list) {
            None => return status,
            Some(why) if Instant::now() >= deadline => {
                panic!("electop disagrees with patronictl list: {why}\n{status:#}")
            }
            Some(_) => std::thread::sleep(Duration::from_millis(200)),
        }
    }
}

fn is(v: &Value, kind: &str, from: Option<&str>, to: Option<&str>) -> bool {
    v["kind"] == kind
        && v["election"] == SCOPE
        && v["from"].as_str() == from
        && v["to"].as_str() == to
}

#[test]
fn a_patroni_cluster_is_read_natively_and_switched_over_through_patroni() {
    let etcd = EtcdServer::start();
    let mut cluster = PatroniCluster::start(
        &etcd.endpoint(),
        SCOPE,
        &[("n1", false), ("n2", false), ("n3", true)],
    );
    let home = tempfile::tempdir().expect("tempdir");
    let home = home.path();
    let endpoint = etcd.endpoint();
    let args = ["--etcd", endpoint.as_str(), "--preset", "patroni"];

    let status = agrees(home, &args, &cluster);
    let names: Vec<&str> = status["elections"]
        .as_array()
        .expect("elections")
        .iter()
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert_eq!(
        names,
        [SCOPE],
        "config, initialize and status are no elections"
    );
    let e = election(&status, SCOPE);
    assert_eq!(e["scheme"], "patroni");
    let ttl = e["ttl_ms"].as_i64().expect("the leader's lease TTL");
    assert!(ttl > 0 && ttl <= TTL_S as i64 * 1000, "{ttl}");
    let n3 = e["members"]
        .as_array()
        .expect("members")
        .iter()
        .find(|m| m["id"] == "n3");
    assert_eq!(n3.map(|m| m["nofailover"].clone()), Some(Value::Bool(true)));

    let mut watch = Watch::start(home, &args);
    watch.wait_synced(1);
    let before = read_now(&args);

    // A switchover by patronictl: n1 deletes the leader key itself, its lease alive.
    // (Each phase waits for its own events: the earlier ones are dropped first.)
    watch.seen.clear();
    cluster.switchover("n1", "n2");
    let lost = watch.wait_for("n1's resignation", T, |v| {
        is(v, "leader_lost", Some("n1"), None)
    });
    assert_eq!(lost["cause"], "resigned", "{lost}");
    watch.wait_for("n2 elected", T, |v| {
        is(v, "leader_elected", None, Some("n2"))
    });
    let status = agrees(home, &args, &cluster);
    // Patroni's history key gives the promotion its time.
    let history = election(&status, SCOPE)["history"]
        .as_array()
        .expect("history")
        .clone();
    let promoted = history
        .iter()
        .rev()
        .find(|h| h["to"] == "n2")
        .expect("n2 in history");
    assert!(promoted["at"].is_string(), "{history:#?}");

    // What was seen before the switchover is out of date: nothing is written.
    let outcome = act(
        &before.0,
        &before.1,
        ActionKind::ForceLeader {
            target: "n3".into(),
        },
    );
    assert!(
        matches!(outcome, Outcome::Refused { .. }),
        "nofailover: {outcome:?}"
    );
    let outcome = act(
        &before.0,
        &before.1,
        ActionKind::ForceLeader {
            target: "n2".into(),
        },
    );
    assert!(matches!(outcome, Outcome::Changed { .. }), "{outcome:?}");

    // Actions Patroni has no protocol for are refused with the reason.
    for action in [
        &["reelect", SCOPE, "--yes"][..],
        &["resign", SCOPE, "--yes"],
    ] {
        let out = run(home, &args, action);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{err}");
        assert!(err.contains("switchover"), "{err}");
    }

    // electop's own switchover, carried out by Patroni.
    watch.seen.clear();
    let out = run(home, &args, &["force-leader", SCOPE, "n1", "--yes"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        said.contains("failover") && said.contains("switchover"),
        "{said}"
    );
    cluster.wait_list("n1 leading again", T, |l| {
        l.iter()
            .any(|m| m.name == "n1" && m.role == "Leader" && m.state == "running")
    });
    watch.wait_for("n1 elected", T, |v| {
        is(v, "leader_elected", None, Some("n1"))
    });
    agrees(home, &args, &cluster);

    // The primary crashes: its leader key expires with its lease, n2 takes over.
    watch.seen.clear();
    let killed = Instant::now();
    cluster.kill("n1");
    let lost = watch.wait_for("n1's lease to expire", T, |v| {
        is(v, "leader_lost", Some("n1"), None)
    });
    assert_eq!(lost["cause"], "lease_expired", "{lost}");
    watch.wait_for("n2 taking over", T, |v| {
        is(v, "leader_elected", None, Some("n2"))
    });
    let took = killed.elapsed();
    assert!(
        took <= Duration::from_secs(TTL_S + 3),
        "failover took {took:?}, Patroni's ttl is {TTL_S}s\n{}",
        cluster.logs()
    );
    let status = status_json(home, &args);
    assert_eq!(election(&status, SCOPE)["leader"]["id"], "n2");
}

/// The election and its source, as read now, to act on later.
fn read_now(args: &[&str]) -> (Election, SourceConfig) {
    let cli = <electop::cli::Cli as clap::Parser>::parse_from(
        std::iter::once("electop").chain(args.iter().copied()),
    );
    let sources = cli
        .sources
        .resolve(&electop::config::Config::default())
        .expect("sources");
    let opts = BackendOptions {
        all_leases: true,
        ..BackendOptions::default()
    };
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let app = rt.block_on(async {
        let s = electop::runtime::Sources::spawn(&sources, &opts).expect("spawn");
        electop::runtime::collect_status(s, T)
            .await
            .expect("status")
    });
    let (_, e) = app
        .elections
        .iter()
        .find(|((_, n), _)| n == SCOPE)
        .expect("the election");
    (e.clone(), sources[e.source].clone())
}

fn act(seen: &Election, source: &SourceConfig, kind: ActionKind) -> Outcome {
    let req = AdminRequest {
        source: seen.source,
        source_name: "patroni".into(),
        kind,
        seen: seen.clone(),
    };
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(backend::execute(source, &req, T))
}
