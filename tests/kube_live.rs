//! Kubernetes Leases as electop reads them, on a real kube-apiserver (built from Debian's
//! source package by scripts/build-kube.sh) with client-go's own leader-election candidates:
//! the holder leads, counted down as client-go counts it; a release (SIGTERM) and the next
//! candidate's take-over are told in the order the server wrote them; a holder that stops
//! renewing expires on electop's countdown; node heartbeats are left out; the mistakes a
//! user makes with a kubeconfig are said.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::T;
use common::electop::{Watch, command, election, status_json};
use common::kube::{ClientGoCandidate, KubeServer, micro_time_now};
use serde_json::{Value, json};

fn args(kubeconfig: &Path) -> Vec<String> {
    vec![
        "--kube".into(),
        "--kubeconfig".into(),
        kubeconfig.display().to_string(),
    ]
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// The note named `name` of an election in `status --json`.
fn note<'a>(e: &'a Value, name: &str) -> Option<&'a str> {
    e["notes"]
        .as_array()?
        .iter()
        .find(|n| n["name"] == name)
        .and_then(|n| n["text"].as_str())
}

/// A Lease written by hand, as a client-go holder of `duration_s` writes one.
fn hand_lease(server: &KubeServer, ns: &str, name: &str, holder: &str, duration_s: i64) {
    let now = micro_time_now();
    let lease = json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "holderIdentity": holder,
            "leaseDurationSeconds": duration_s,
            "acquireTime": now,
            "renewTime": now,
            "leaseTransitions": 0
        }
    });
    let path = format!("/apis/coordination.k8s.io/v1/namespaces/{ns}/leases");
    let (code, body) = server
        .request("POST", &path, Some(&lease.to_string()))
        .expect("POST a Lease");
    assert_eq!(code, 201, "create {ns}/{name}: {body}");
}

/// Two client-go candidates: the first leads, shown with client-go's countdown (the
/// example's 60 s lease) and the Lease's transitions; SIGTERM makes it release (an empty
/// holder, as client-go writes), told `resigned`, and the second takes over at its next
/// retry, elected, with one more transition.
#[test]
fn a_client_go_election_is_counted_down_and_followed_through_a_release() {
    let server = KubeServer::start();
    let dir = common::scratch::tempdir();
    let cfg = server.kubeconfig(dir.path());
    let a = ClientGoCandidate::start(&cfg, "default", "jobs", "cand-a");
    a.wait_leading(T);
    let b = ClientGoCandidate::start(&cfg, "default", "jobs", "cand-b");
    b.wait_log("new leader elected: cand-a", T);
    let home = common::scratch::tempdir();
    let a_args = args(&cfg);
    let mut w = Watch::start(home.path(), &strs(&a_args));
    w.wait_synced(1);
    let s = status_json(home.path(), &strs(&a_args));
    assert_eq!(s["sources"][0]["scheme"], "k8s-lease", "{s:#}");
    let e = election(&s, "default/jobs");
    assert_eq!(e["leader"]["id"], "cand-a", "{e:#}");
    let ttl = e["ttl_ms"].as_i64().expect("a countdown");
    assert!((1..=60_000).contains(&ttl), "within the 60 s lease: {e:#}");
    assert_eq!(
        note(e, "transitions"),
        Some("0 transitions (leaseTransitions)"),
        "{e:#}"
    );
    assert!(note(e, "acquired").is_some(), "{e:#}");
    let term = Command::new("kill")
        .args(["-TERM", &a.pid().to_string()])
        .status();
    assert!(term.is_ok_and(|s| s.success()));
    let lost = w.wait_for("cand-a's release", T, |v| {
        v["election"] == "default/jobs" && v["from"] == "cand-a"
    });
    assert_eq!(lost["cause"], "resigned", "an empty holder: {lost:#}");
    assert!(lost["to"].is_null(), "released to nobody first: {lost:#}");
    let took = w.wait_for("cand-b elected", Duration::from_secs(30), |v| {
        v["election"] == "default/jobs" && v["to"] == "cand-b"
    });
    assert_eq!(took["cause"], "elected", "{took:#}");
    b.wait_leading(T);
    let s = status_json(home.path(), &strs(&a_args));
    let e = election(&s, "default/jobs");
    assert_eq!(e["leader"]["id"], "cand-b", "{e:#}");
    assert_eq!(
        note(e, "transitions"),
        Some("1 transitions (leaseTransitions)"),
        "{e:#}"
    );
    assert!(note(e, "renewed").is_some(), "{e:#}");
    // A fresh status saw no write: it does not guess how far the writer's clock is.
    assert!(note(e, "renew skew").is_none(), "{e:#}");
}

/// A holder that stops renewing (a Lease written by hand with a 3 s duration, then left)
/// leads until electop's countdown runs out, then is lost `lease_expired`, still named in
/// the note and on serve's `/metrics` (its namespace a label); node heartbeats in
/// kube-node-lease are not elections and are left out.
#[test]
fn a_holder_that_stops_renewing_expires_and_node_heartbeats_are_left_out() {
    let server = KubeServer::start();
    let dir = common::scratch::tempdir();
    let cfg = server.kubeconfig(dir.path());
    hand_lease(&server, "kube-node-lease", "node-1", "node-1", 40);
    let home = common::scratch::tempdir();
    let a = args(&cfg);
    let mut w = Watch::start(home.path(), &strs(&a));
    w.wait_synced(1);
    let addr = format!("127.0.0.1:{}", common::free_port());
    let mut serve = command(home.path())
        .args(&a)
        .args(["serve", "--listen", &addr])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn electop serve");
    common::wait_until("serve ready", T, || {
        std::net::TcpStream::connect(&addr).is_ok()
            && common::http::request(&addr, "/readyz", &[]).0 == 200
    });
    let written = Instant::now();
    hand_lease(&server, "default", "paused", "worker-7", 3);
    w.wait_for("worker-7 elected", T, |v| {
        v["election"] == "default/paused" && v["to"] == "worker-7"
    });
    let lost = w.wait_for("worker-7's lease expired", T, |v| {
        v["election"] == "default/paused" && v["from"] == "worker-7"
    });
    assert_eq!(lost["cause"], "lease_expired", "{lost:#}");
    assert!(
        written.elapsed() >= Duration::from_millis(2500),
        "not before its 3 s ran out: {:?}",
        written.elapsed()
    );
    // serve says so, with the namespace as a label: the shipped ElectopLeaseNotRenewed.
    let series = "electop_election_holder_expired{source=\"kube1\",election=\"default/paused\",\
                  scheme=\"k8s-lease\",namespace=\"default\"} 1";
    common::wait_until("the expired holder on /metrics", T, || {
        common::http::request(&addr, "/metrics", &[])
            .1
            .contains(series)
    });
    let _ = serve.kill();
    let _ = serve.wait();
    let s = status_json(home.path(), &strs(&a));
    let e = election(&s, "default/paused");
    assert!(e["leader"].is_null(), "{e:#}");
    assert!(
        note(e, "expired").is_some_and(|n| n.contains("worker-7")),
        "{e:#}"
    );
    let names: Vec<&str> = (s["elections"].as_array().expect("elections").iter())
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert!(!names.contains(&"kube-node-lease/node-1"), "{names:?}");
    let mut asked = a.clone();
    asked.extend(["--namespace".into(), "kube-node-lease".into()]);
    let s = status_json(home.path(), &strs(&asked));
    let e = election(&s, "kube-node-lease/node-1");
    assert_eq!(e["leader"]["id"], "node-1", "asked for, read: {e:#}");
}

/// The kubeconfig mistakes a user makes, each said with what to do, the token never: a
/// file that does not parse, an unknown context, a token the server refuses (401).
#[test]
fn kubeconfig_mistakes_are_said_without_the_token() {
    let server = KubeServer::start();
    let dir = common::scratch::tempdir();
    let home = common::scratch::tempdir();
    let good = server.kubeconfig(dir.path());
    let text = std::fs::read_to_string(&good).expect("kubeconfig");
    let bad = dir.path().join("bad");
    std::fs::write(&bad, "clusters: [ {").expect("write");
    let wrong = dir.path().join("wrong-token");
    let secret = "not-the-admin-token-0123456789";
    std::fs::write(&wrong, text.replace(common::kube::ADMIN_TOKEN, secret)).expect("write");
    let run = |extra: &[&str]| {
        let out = command(home.path())
            .args(extra)
            .args(["status", "--json"])
            .output()
            .expect("run electop status");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!text.contains(secret), "the token was shown: {text}");
        text
    };
    let bad_s = bad.display().to_string();
    let said = run(&["--kube", "--kubeconfig", &bad_s]);
    assert!(
        said.contains("cannot be read") && said.contains(&bad_s),
        "{said}"
    );
    let good_s = good.display().to_string();
    let said = run(&["--kube=prod", "--kubeconfig", &good_s]);
    assert!(
        said.contains("no context `prod`") && said.contains("local"),
        "{said}"
    );
    let wrong_s = wrong.display().to_string();
    let said = run(&["--kube", "--kubeconfig", &wrong_s]);
    assert!(said.contains("401"), "{said}");
}

fn run(home: &Path, args: &[&str]) -> (bool, String) {
    let out = command(home).args(args).output().expect("run electop");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

/// The admin verbs on a Lease: `--read-only` refuses and writes nothing; there is no resign
/// (said why); force-leader of an id the store never showed needs `--allow-unseen`, then
/// writes the chosen holder with one more transition on the
/// resourceVersion read, is attributed by another electop from the audit log, and the
/// chosen client-go candidate leads at its next retry; reelect writes client-go's release,
/// and a candidate takes the Lease again.
#[test]
fn force_leader_and_reelect_write_the_lease_compared_on_its_version() {
    let server = KubeServer::start();
    let dir = common::scratch::tempdir();
    let cfg = server.kubeconfig(dir.path());
    let a = ClientGoCandidate::start(&cfg, "default", "adm", "cand-a");
    a.wait_leading(T);
    let b = ClientGoCandidate::start(&cfg, "default", "adm", "cand-b");
    b.wait_log("new leader elected: cand-a", T);
    let home = common::scratch::tempdir();
    let a_args = args(&cfg);
    let mut w = Watch::start(home.path(), &strs(&a_args));
    w.wait_synced(1);
    let holder = || server.lease("default", "adm").expect("the Lease")["spec"].clone();

    let mut cmd = strs(&a_args);
    cmd.extend(["--read-only", "force-leader", "default/adm", "cand-b", "-y"]);
    let (ok, text) = run(home.path(), &cmd);
    assert!(!ok && text.contains("read-only"), "{text}");
    assert_eq!(holder()["holderIdentity"], "cand-a", "nothing written");

    let mut cmd = strs(&a_args);
    cmd.extend(["resign", "default/adm", "-y"]);
    let (ok, text) = run(home.path(), &cmd);
    assert!(!ok && text.contains("no resign on a Lease"), "{text}");

    // client-go keeps no line: a waiting candidate is nowhere in the store, and an id
    // never seen there is written only when the operator says so.
    let mut cmd = strs(&a_args);
    cmd.extend(["force-leader", "default/adm", "cand-b", "-y"]);
    let (ok, text) = run(home.path(), &cmd);
    assert!(!ok && text.contains("never seen"), "{text}");
    cmd.push("--allow-unseen");
    let (ok, text) = run(home.path(), &cmd);
    assert!(ok && text.contains("PUT holderIdentity=cand-b"), "{text}");
    let spec = holder();
    assert_eq!(
        (&spec["holderIdentity"], &spec["leaseTransitions"]),
        (&"cand-b".into(), &1.into()),
        "{spec:#}"
    );
    let forced = w.wait_for("the forced leader attributed", T, |v| {
        v["to"] == "cand-b" && v["cause"] == "forced_leader"
    });
    assert_eq!(forced["from"], "cand-a", "{forced:#}");
    let by = forced["detail"].as_str().unwrap_or_default();
    assert!(by.contains("another electop"), "{forced:#}");
    b.wait_leading(Duration::from_secs(20));

    let mut cmd = strs(&a_args);
    cmd.extend(["reelect", "default/adm", "-y"]);
    let (ok, text) = run(home.path(), &cmd);
    assert!(ok && text.contains("leaseDurationSeconds=1"), "{text}");
    let released = w.wait_for("the re-election attributed", T, |v| {
        v["from"] == "cand-b" && v["cause"] == "forced_reelection"
    });
    assert!(released["to"].is_null(), "{released:#}");
    let again = w.wait_for("a candidate takes it again", Duration::from_secs(30), |v| {
        v["election"] == "default/adm" && v["cause"] == "elected" && v["to"].is_string()
    });
    assert!(
        again["to"] == "cand-b" || again["to"] == "cand-a",
        "{again:#}"
    );
}

/// The dashboard at 80x24 on a Lease: its row led by the holder with client-go's countdown,
/// the detail's notes (transitions, acquired), and the source named by its context.
#[test]
fn the_dashboard_shows_a_lease_at_80x24() {
    let server = KubeServer::start();
    let dir = common::scratch::tempdir();
    let cfg = server.kubeconfig(dir.path());
    hand_lease(
        &server,
        "kube-system",
        "kube-scheduler",
        "master-1_0af3",
        40,
    );
    let home = common::scratch::tempdir();
    let shell = format!(
        "env XDG_CONFIG_HOME={h}/config XDG_DATA_HOME={h}/data {bin} --kube --kubeconfig {cfg}; \
         echo ELECTOP-EXITED $?; sleep 60",
        h = home.path().display(),
        bin = common::electop::bin(),
        cfg = cfg.display(),
    );
    let tmux = common::tmux::Tmux::start(80, 24, &shell);
    let screen = tmux.wait_screen("the Lease's row", T, |s| {
        s.contains("kube-scheduler") && s.contains("master-1_0af3")
    });
    assert!(
        screen.contains("0 transitions") && screen.contains("key kube-system/kube-scheduler"),
        "the detail's notes and key:\n{screen}"
    );
    assert!(!screen.contains("ELECTOP-EXITED"), "{screen}");
}

/// `electop node --store kubernetes` in the same election as client-go's own candidates:
/// it follows a client-go leader, takes the Lease at its next retry after that leader's
/// release, is followed by a client-go candidate started then, and its own release on
/// SIGTERM hands the Lease to that candidate.
#[test]
fn electop_node_and_client_go_candidates_share_one_election() {
    let server = KubeServer::start();
    let dir = common::scratch::tempdir();
    let cfg = server.kubeconfig(dir.path());
    let a = ClientGoCandidate::start(&cfg, "default", "mixed", "cand-a");
    a.wait_leading(T);
    let home = common::scratch::tempdir();
    let mut cmd = command(home.path());
    cmd.args(args(&cfg))
        .args([
            "node",
            "--store",
            "kubernetes",
            "--election",
            "default/mixed",
        ])
        .args(["--id", "node-x", "--json"]);
    let stderr = home.path().join("node-x.stderr");
    let mut x = common::node::Node::spawn(&mut cmd, "node-x", "default/mixed", stderr);
    x.wait_belief("follower", Some("cand-a"), T);
    let term = Command::new("kill")
        .args(["-TERM", &a.pid().to_string()])
        .status();
    assert!(term.is_ok_and(|s| s.success()));
    x.wait_belief("leader", None, T);
    let spec = server.lease("default", "mixed").expect("the Lease")["spec"].clone();
    assert_eq!(
        (&spec["holderIdentity"], &spec["leaseTransitions"]),
        (&"node-x".into(), &1.into()),
        "{spec:#}"
    );
    let b = ClientGoCandidate::start(&cfg, "default", "mixed", "cand-b");
    b.wait_log("new leader elected: node-x", T);
    x.sigterm(Duration::from_secs(5));
    assert!(x.events().any(|e| e == "resigned"), "{}", x.dump());
    b.wait_leading(Duration::from_secs(20));
}

/// `electop demo --store kubernetes` on the cluster the kubeconfig names: three nodes take
/// one Lease, one leads and the other two follow it, at 80x24; `q`, `y` quits.
#[test]
fn the_demo_runs_on_the_cluster_the_kubeconfig_names() {
    let server = KubeServer::start();
    let dir = common::scratch::tempdir();
    let cfg = server.kubeconfig(dir.path());
    let home = common::scratch::tempdir();
    let mut flags = vec!["--store".to_string(), "kubernetes".to_string()];
    flags.extend(args(&cfg));
    let leader = common::tmux::demo_elects_and_quits(home.path(), &flags);
    let spec = server
        .lease("default", "electop-demo")
        .expect("the demo's Lease")["spec"]
        .clone();
    assert!(spec["holderIdentity"].is_string(), "{leader}: {spec:#}");
}

/// Under RBAC, a user who may not list Leases at the cluster scope is told which verb on
/// which resource is missing and that --namespace reads fewer; granted list and watch in one
/// namespace, `--namespace` reads it; an admin action it may not write says `update`.
/// Then the mistakes of the kubeconfig's server: not a Kubernetes API server, and a CA that
/// does not sign the server's certificate.
#[test]
fn permissions_and_servers_that_are_not_right_are_said() {
    let server = KubeServer::start_rbac();
    let dir = common::scratch::tempdir();
    let home = common::scratch::tempdir();
    let viewer = server.kubeconfig_for(dir.path(), "viewer", common::kube::VIEWER_TOKEN);
    let v = args(&viewer);
    let (ok, said) = run(home.path(), &[strs(&v), vec!["status"]].concat());
    assert!(!ok, "{said}");
    assert!(
        said.contains("may not list leases.coordination.k8s.io at the cluster scope")
            && said.contains("403"),
        "{said}"
    );
    let rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces/default";
    let role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "lease-reader", "namespace": "default"},
        "rules": [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                   "verbs": ["get", "list", "watch"]}]
    });
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "viewer-reads-leases", "namespace": "default"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "lease-reader"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "viewer"}]
    });
    for (path, body) in [("roles", role), ("rolebindings", binding)] {
        let (code, text) = server
            .request("POST", &format!("{rbac}/{path}"), Some(&body.to_string()))
            .expect("POST");
        assert_eq!(code, 201, "{path}: {text}");
    }
    hand_lease(&server, "default", "jobs", "worker-1", 60);
    let mut one = v.clone();
    one.extend(["--namespace".into(), "default".into()]);
    common::wait_until("the Role applies", T, || {
        run(
            home.path(),
            &[strs(&one), vec!["status", "--json"]].concat(),
        )
        .0
    });
    let s = status_json(home.path(), &strs(&one));
    assert_eq!(
        election(&s, "default/jobs")["leader"]["id"],
        "worker-1",
        "{s:#}"
    );
    let force = [
        strs(&one),
        vec![
            "force-leader",
            "default/jobs",
            "worker-2",
            "-y",
            "--allow-unseen",
        ],
    ]
    .concat();
    let (ok, said) = run(home.path(), &force);
    assert!(
        !ok && said.contains("may not update leases.coordination.k8s.io in namespace default"),
        "{said}"
    );

    let not_kube = common::http::serve_static("hello, I am a web server".into());
    let text = std::fs::read_to_string(server.kubeconfig(dir.path())).expect("kubeconfig");
    let elsewhere = dir.path().join("elsewhere");
    std::fs::write(
        &elsewhere,
        text.replace(&server.url(), &format!("http://{not_kube}")),
    )
    .expect("write");
    let (ok, said) = run(
        home.path(),
        &[strs(&args(&elsewhere)), vec!["status"]].concat(),
    );
    assert!(!ok && said.contains("is this an API server"), "{said}");
    let ca_line = format!("    certificate-authority: {}\n", server.ca().display());
    assert!(text.contains(&ca_line), "{text}");
    let untrusted = dir.path().join("untrusted");
    std::fs::write(&untrusted, text.replace(&ca_line, "")).expect("write");
    let (ok, said) = run(
        home.path(),
        &[strs(&args(&untrusted)), vec!["status"]].concat(),
    );
    assert!(
        !ok && said.contains("not trusted") && said.contains("certificate-authority"),
        "{said}"
    );
}
