//! electop against a real three-member etcd cluster: a member down is not the source down,
//! no leader change is lost while it is, quorum lost shows STALE within 3 s, and a frozen
//! store does too. One cluster serves the whole sequence to keep the suite fast.

mod common;

use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::electop::{Watch, status_json};
use common::etcd_cluster::EtcdCluster;
use common::tmux::Tmux;
use common::{EtcdServer, electop};
use serde_json::Value;

use common::T;

fn args(endpoints: &[String], prefix: &str) -> Vec<String> {
    vec![
        "--etcd".into(),
        endpoints.join(","),
        "--prefix".into(),
        prefix.into(),
        "--scheme".into(),
        "etcd-lease-key".into(),
    ]
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// `etcdctl watch` on the live members, its lines collected: the independent record.
fn etcdctl_watch(
    c: &EtcdCluster,
    via: &[usize],
    prefix: &str,
) -> (std::process::Child, mpsc::Receiver<String>) {
    let urls: Vec<String> = via
        .iter()
        .map(|i| format!("http://{}", c.endpoint(*i)))
        .collect();
    let mut child = Command::new("etcdctl")
        .env("ETCDCTL_API", "3")
        .arg(format!("--endpoints={}", urls.join(",")))
        // From the first revision: a watch that connects after a put still reports it.
        .args(["watch", "--prefix", "--rev=1", prefix])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("etcdctl watch");
    let out = child.stdout.take().expect("stdout");
    (child, common::lines::text_lines(out))
}

fn members(status: &Value) -> &Vec<Value> {
    status["sources"][0]["members"]
        .as_array()
        .unwrap_or_else(|| panic!("no members in {status:#}"))
}

#[test]
fn a_member_down_then_quorum_lost_then_restored() {
    let mut c = EtcdCluster::start(3);
    let eps = c.endpoints();
    let lease = c.etcdctl(&[0, 1, 2], &["lease", "grant", "600"]);
    let lease = lease
        .split_whitespace()
        .nth(1)
        .expect("lease id")
        .to_string();
    c.etcdctl(
        &[0],
        &["put", "/c/jobs", "node-0", &format!("--lease={lease}")],
    );
    c.kill(0);
    // If it led the raft, the others elect a new leader first.
    c.wait_healthy(&[1, 2]);

    // The first endpoint is dead: every status still works and says which member is down.
    let home = common::scratch::tempdir();
    let a = args(&eps, "/c/");
    for _ in 0..20 {
        let s = status_json(home.path(), &strs(&a));
        assert_eq!(
            common::electop::election(&s, "jobs")["leader"]["id"],
            "node-0"
        );
        let m = members(&s);
        assert_eq!(m.len(), 3);
        assert_eq!(m[0]["up"], false, "{m:#?}");
        assert!(
            m[0]["error"]
                .as_str()
                .is_some_and(|e| e.contains("refused")),
            "{m:#?}"
        );
        assert!(m[1]["up"] == true && m[2]["up"] == true, "{m:#?}");
        let leaders = m.iter().filter(|x| x["is_leader"] == true).count();
        assert_eq!(leaders, 1, "one raft leader: {m:#?}");
        assert_eq!(s["sources"][0]["stale"], false);
    }

    // Leader changes while the member is down: the watch, the TUI and etcdctl all see each.
    let mut watch = Watch::start(home.path(), &strs(&a));
    watch.wait_synced(1);
    let tui_home = common::scratch::tempdir();
    let tmux = Tmux::start(
        120,
        30,
        &format!(
            "env XDG_CONFIG_HOME={h}/config XDG_DATA_HOME={h}/data {bin} {args}; echo ELECTOP-EXITED $?; sleep 60",
            h = tui_home.path().display(),
            bin = electop::bin(),
            args = a.join(" "),
        ),
    );
    tmux.wait_screen("the election", T, |s| s.contains("node-0"));
    let (mut ctl, ctl_lines) = etcdctl_watch(&c, &[1, 2], "/c/");
    for k in 1..=6 {
        let id = format!("node-{k}");
        c.etcdctl(
            &[1, 2],
            &["put", "/c/jobs", &id, &format!("--lease={lease}")],
        );
        let what = format!("etcdctl watch sees {id}");
        common::wait_until(&what, T, || ctl_lines.try_iter().any(|l| l == id));
        watch.wait_for("the change", T, |v| {
            v["kind"] == "leader_changed" && v["to"] == id.as_str()
        });
        tmux.wait_screen("the new leader", T, |s| s.contains(&id));
    }
    let _ = ctl.kill();
    let _ = ctl.wait();
    assert!(
        !watch
            .seen
            .iter()
            .any(|v| v["kind"] == "disconnected" || v["kind"] == "stale"),
        "a member down is not the source down: {:#?}",
        watch.seen
    );

    // Quorum lost: STALE within 3 s, on the screen and in the watch.
    // The member serving electop: status asks the members beside its read, and on a loaded
    // machine their answers can miss its deadline (every member then unknown): ask again.
    let mut serving = None;
    common::wait_until("status names the member serving", T, || {
        let s = status_json(home.path(), &strs(&a));
        serving = members(&s).iter().position(|m| m["serving"] == true);
        serving.is_some()
    });
    let serving = serving.expect("waited for above");
    let victim = if serving == 1 { 2 } else { 1 };
    let killed = Instant::now();
    c.kill(victim);
    watch.wait_for("stale", Duration::from_secs(5), |v| v["kind"] == "stale");
    let took = killed.elapsed();
    eprintln!("stale after {took:?}");
    assert!(took < Duration::from_secs(3), "stale after {took:?}");
    tmux.wait_screen("STALE", Duration::from_secs(4), |s| {
        s.contains("STALE") && s.contains("last seen")
    });

    // Both back: live again and converged to the truth, including a change made meanwhile.
    c.restart(0);
    c.restart(victim);
    c.wait_healthy(&[0, 1, 2]);
    c.etcdctl(
        &[0, 1, 2],
        &["put", "/c/jobs", "node-back", &format!("--lease={lease}")],
    );
    watch.wait_for("fresh", Duration::from_secs(30), |v| v["kind"] == "fresh");
    watch.wait_for("the change made while stale", T, |v| v["to"] == "node-back");
    tmux.wait_screen("live again", T, |s| {
        s.contains("node-back") && !s.contains("STALE")
    });
    let s = status_json(home.path(), &strs(&a));
    assert_eq!(
        common::electop::election(&s, "jobs")["leader"]["id"],
        "node-back"
    );
    assert!(members(&s).iter().all(|m| m["up"] == true), "{s:#}");
    tmux.send(&["q"]);
    tmux.wait_screen("exit", T, |s| s.contains("ELECTOP-EXITED 0"));
}

#[test]
fn a_frozen_etcd_is_stale_within_3s_and_live_after() {
    let etcd = EtcdServer::start();
    etcd.etcdctl(&["put", "/f/jobs", "node-a"]);
    let home = common::scratch::tempdir();
    let a = args(&[etcd.endpoint()], "/f/");
    let mut watch = Watch::start(home.path(), &strs(&a));
    watch.wait_synced(1);
    watch.wait_for("contact", T, |_| true);
    let pid = etcd.server_pid().to_string();
    let frozen = Instant::now();
    Command::new("kill")
        .args(["-STOP", &pid])
        .status()
        .expect("kill -STOP");
    watch.wait_for("stale", Duration::from_secs(5), |v| v["kind"] == "stale");
    let took = frozen.elapsed();
    Command::new("kill")
        .args(["-CONT", &pid])
        .status()
        .expect("kill -CONT");
    eprintln!("stale after {took:?}");
    assert!(took < Duration::from_secs(3), "stale after {took:?}");
    let stale = watch
        .seen
        .iter()
        .find(|v| v["kind"] == "stale")
        .cloned()
        .unwrap_or_default();
    assert!(
        stale["detail"]
            .as_str()
            .is_some_and(|d| d.contains("as of")),
        "{stale}"
    );
    watch.wait_for("fresh", Duration::from_secs(20), |v| v["kind"] == "fresh");
    etcd.etcdctl(&["put", "/f/jobs", "node-b"]);
    watch.wait_for("live changes", T, |v| v["to"] == "node-b");
}

/// The member id in `etcdctl endpoint status -w json` of one member.
fn member_id(json: &str) -> Value {
    let v: Value = serde_json::from_str(json).expect("endpoint status JSON");
    v[0]["Status"]["header"]["member_id"].clone()
}

/// The first endpoint frozen (it takes the connection and never answers): a `status` whose
/// timeout is no longer than one member's dial still reads through the others, rather than
/// spending all of it on the frozen one and printing nothing.
#[test]
fn status_reads_through_the_others_when_the_first_member_is_frozen() {
    let c = EtcdCluster::start(3);
    let eps = c.endpoints();
    c.etcdctl(&[0, 1, 2], &["put", "/s/jobs", "node-0"]);
    let frozen = member_id(&c.etcdctl(&[0], &["endpoint", "status", "-w", "json"]));
    c.freeze(0, true);
    // The other two have elected a leader of their own before electop asks: until then
    // etcd holds a linearizable read for the frozen leader (up to its 5 s request
    // timeout), and what is tested is how electop shares its timeout among the members.
    common::wait_for("a leader other than the frozen member", T, || {
        let out = c.etcdctl(&[1, 2], &["endpoint", "status", "-w", "json"]);
        let v: Value = serde_json::from_str(&out).map_err(|e| e.to_string())?;
        let leaders: Vec<&Value> = v
            .as_array()
            .into_iter()
            .flatten()
            .map(|m| &m["Status"]["leader"])
            .collect();
        let agreed = !leaders.is_empty()
            && leaders
                .iter()
                .all(|l| **l != frozen && **l != 0 && *l == leaders[0]);
        match agreed {
            true => Ok(()),
            false => Err(format!("leaders {leaders:?}, frozen {frozen}")),
        }
    });
    let home = common::scratch::tempdir();
    let a = args(&eps, "/s/");
    let out = electop::command(home.path())
        .args(strs(&a))
        .args(["status", "--json", "--timeout", "2s"])
        .stdin(Stdio::null())
        .output()
        .expect("run electop status");
    c.freeze(0, false);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let jobs = v["elections"]
        .as_array()
        .and_then(|a| a.iter().find(|e| e["name"] == "jobs"))
        .unwrap_or_else(|| panic!("no jobs in {v:#}"));
    assert_eq!(jobs["leader"]["id"], "node-0", "{jobs:#}");
}
