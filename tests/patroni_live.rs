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
use common::T;

/// Patroni acts on its own loop (a 10 s TTL, a few seconds a loop): twice the usual wait.
const PATRONI: u32 = 2;

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
    common::wait_for("electop agrees with patronictl list", T * PATRONI, || {
        let list = cluster.list();
        let status = status_json(home, args);
        let e = election(&status, SCOPE).clone();
        match mismatch(&e, &list) {
            None => Ok(status),
            Some(why) => Err(format!(
                "electop disagrees with patronictl list: {why}\n{status:#}"
            )),
        }
    })
}

/// An RFC 3339 time, however many digits its fraction has.
fn moment(v: &Value) -> time::OffsetDateTime {
    let text = v.as_str().unwrap_or_else(|| panic!("not a time: {v}"));
    time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn is(v: &Value, kind: &str, from: Option<&str>, to: Option<&str>) -> bool {
    v["kind"] == kind
        && v["election"] == SCOPE
        && v["from"].as_str() == from
        && v["to"].as_str() == to
}

struct Setup<'a> {
    etcd: &'a EtcdServer,
    cluster: PatroniCluster,
    home: &'a Path,
    args: Vec<String>,
    watch: Option<Watch>,
}

impl Setup<'_> {
    fn args(&self) -> Vec<&str> {
        self.args.iter().map(String::as_str).collect()
    }

    /// With the replay of etcd's history, so the changes electop can see in it are there.
    fn status(&self) -> Value {
        common::electop::status_history_json(self.home, &self.args())
    }

    fn agrees(&self) -> Value {
        agrees(self.home, &self.args(), &self.cluster)
    }

    /// Waits for a leader change of the scope in this phase.
    fn wait_change(
        &mut self,
        what: &str,
        kind: &str,
        from: Option<&str>,
        to: Option<&str>,
    ) -> Value {
        let watch = self.watch.as_mut().expect("watch");
        watch.wait_for(what, T * PATRONI, |v| is(v, kind, from, to))
    }

    /// Drops the events seen so far: each phase waits for its own.
    fn next_phase(&mut self) {
        self.watch.as_mut().expect("watch").seen.clear();
    }
}

#[test]
fn a_patroni_cluster_is_read_natively_and_switched_over_through_patroni() {
    let etcd = EtcdServer::start();
    let cluster = PatroniCluster::start(
        &etcd.endpoint(),
        SCOPE,
        &[("n1", false), ("n2", false), ("n3", true)],
    );
    let home = common::scratch::tempdir();
    let args = ["--etcd", &etcd.endpoint(), "--preset", "patroni"].map(String::from);
    let mut s = Setup {
        etcd: &etcd,
        cluster,
        home: home.path(),
        args: args.to_vec(),
        watch: None,
    };
    read_as_patronictl_lists(&s);
    s.watch = Some(Watch::start(s.home, &s.args()));
    s.watch.as_mut().expect("watch").wait_synced(1);
    let before = read_now(&s.args());
    switchover_by_patronictl(&mut s);
    stale_and_impossible_actions_write_nothing(&s, &before);
    switchover_by_electop(&mut s);
    primary_crash(&mut s);
}

fn read_as_patronictl_lists(s: &Setup) {
    let status = s.agrees();
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
    // Without --preset, Patroni's keys are recognised as Patroni's.
    let endpoint = s.etcd.endpoint();
    let guessed = status_json(s.home, &["--etcd", &endpoint, "--prefix", "/service/"]);
    assert_eq!(guessed["sources"][0]["scheme"], "patroni", "{guessed:#}");
    assert_eq!(
        election(&guessed, SCOPE)["leader"]["id"],
        status_leader(&status)
    );
}

fn status_leader(status: &Value) -> Value {
    election(status, SCOPE)["leader"]["id"].clone()
}

/// n1 deletes the leader key itself with its lease alive: a resignation. Patroni's history
/// key records the promotion with its time, which electop takes.
fn switchover_by_patronictl(s: &mut Setup) {
    s.next_phase();
    s.cluster.switchover("n1", "n2");
    let lost = s.wait_change("n1's resignation", "leader_lost", Some("n1"), None);
    assert_eq!(lost["cause"], "resigned", "{lost}");
    s.wait_change("n2 elected", "leader_elected", None, Some("n2"));
    s.agrees();
    let key = format!("/service/{SCOPE}/history");
    // n2 writes its history record once promoted, shortly after it took the leader key.
    let mut recorded = Value::Null;
    common::wait_until("Patroni records n2's promotion", T * PATRONI, || {
        let text = s.etcd.etcdctl_stdout(&["get", &key, "--print-value-only"]);
        recorded = serde_json::from_str(text.trim()).unwrap_or(Value::Null);
        recorded[0][4] == "n2"
    });
    let when = moment(&recorded[0][3]);
    let status = s.status();
    let history = &election(&status, SCOPE)["history"];
    let to_n2: Vec<&Value> = history
        .as_array()
        .expect("history")
        .iter()
        .filter(|h| h["to"] == "n2")
        .collect();
    assert_eq!(to_n2.len(), 1, "one change, not two: {history:#}");
    let change = to_n2[0];
    assert_eq!(moment(&change["at"]), when, "{history:#}");
    assert!(
        change["revision"].is_i64(),
        "the change electop saw, with Patroni's time: {history:#}"
    );
    // Without etcd's history, the promotion is still known from Patroni's own record.
    let mut args = s.args();
    args.extend(["--history-limit", "0"]);
    let status = status_json(s.home, &args);
    let history = &election(&status, SCOPE)["history"];
    assert_eq!(history[0]["cause"], "promoted", "{history:#}");
    assert_eq!(moment(&history[0]["at"]), when, "{history:#}");
}

/// What was seen before the switchover is out of date: nothing is written. Actions Patroni
/// has no protocol for are refused with the reason.
fn stale_and_impossible_actions_write_nothing(s: &Setup, before: &(Election, SourceConfig)) {
    let to = |t: &str| ActionKind::ForceLeader { target: t.into() };
    let outcome = act(&before.0, &before.1, to("n3"));
    assert!(
        matches!(outcome, Outcome::Refused { .. }),
        "nofailover: {outcome:?}"
    );
    let outcome = act(&before.0, &before.1, to("n2"));
    assert!(matches!(outcome, Outcome::Changed { .. }), "{outcome:?}");
    let failover = format!("/service/{SCOPE}/failover");
    let value = s
        .etcd
        .etcdctl_stdout(&["get", &failover, "--print-value-only"]);
    assert_eq!(
        value.trim(),
        "{}",
        "reset by Patroni, not written by electop"
    );
    for action in [
        &["reelect", SCOPE, "--yes"][..],
        &["resign", SCOPE, "--yes"],
    ] {
        let out = run(s.home, &s.args(), action);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{err}");
        assert!(err.contains("switchover"), "{err}");
    }
}

fn switchover_by_electop(s: &mut Setup) {
    s.next_phase();
    let out = run(s.home, &s.args(), &["force-leader", SCOPE, "n1", "--yes"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let request = format!(r#"/service/{SCOPE}/failover = {{"leader":"n2","member":"n1"}}"#);
    assert!(said.contains(&request), "{said}");
    s.cluster.wait_list("n1 leading again", T * PATRONI, |l| {
        l.iter()
            .any(|m| m.name == "n1" && m.role == "Leader" && m.state == "running")
    });
    s.wait_change("n2 handing over", "leader_lost", Some("n2"), None);
    s.wait_change("n1 elected", "leader_elected", None, Some("n1"));
    s.agrees();
}

/// The primary crashes: its leader key expires with its lease, n2 takes over.
fn primary_crash(s: &mut Setup) {
    s.next_phase();
    let killed = Instant::now();
    s.cluster.kill("n1");
    let lost = s.wait_change("n1's lease to expire", "leader_lost", Some("n1"), None);
    assert_eq!(lost["cause"], "lease_expired", "{lost}");
    s.wait_change("n2 taking over", "leader_elected", None, Some("n2"));
    let took = killed.elapsed();
    assert!(
        took <= Duration::from_secs(TTL_S + 3),
        "failover took {took:?}, Patroni's ttl is {TTL_S}s\n{}",
        s.cluster.logs()
    );
    assert_eq!(election(&s.status(), SCOPE)["leader"]["id"], "n2");
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
        electop::runtime::collect_status(s, T * PATRONI)
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
        target: electop::backend::target(source),
    };
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(backend::execute(source, &req, T * PATRONI))
}
