//! Layout detection against a real etcd: election keys as the Node `etcd3` package writes
//! them (the lease id in decimal) are read as etcd's election API without `--scheme`, both
//! written by the test and by real `etcd3` campaigners (the Node campaigner's package); a
//! prefix with a typo says where the elections are; a prefix holding both layouts says so
//! and names the flag that settles it.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::electop::{command, election, status};
use common::etcd::EtcdServer;
use etcd_client::{Compare, CompareOp, PutOptions, Txn, TxnOp};
use serde_json::Value;

/// One campaigner as the Node `etcd3` package's `Election.campaign` writes it: a lease of
/// its own, then `election/<name>/<lease id in decimal>` = its proposal on that lease, only
/// if the key is new. Returns the lease.
async fn node_etcd3_campaign(client: &mut etcd_client::Client, name: &str, id: &str) -> i64 {
    let lease = client.lease_grant(30, None).await.expect("grant").id();
    let key = format!("election/{name}/{lease}");
    let txn = Txn::new()
        .when([Compare::create_revision(key.as_str(), CompareOp::Equal, 0)])
        .and_then([TxnOp::put(
            key.as_str(),
            id,
            Some(PutOptions::new().with_lease(lease)),
        )]);
    assert!(client.txn(txn).await.expect("txn").succeeded(), "{key}");
    lease
}

/// `status --json`: the JSON and what went to stderr; it must succeed.
fn status_and_stderr(home: &std::path::Path, args: &[&str]) -> (Value, String) {
    let out = status(home, args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "status failed: {}\n{err}", out.status);
    let json = serde_json::from_slice(&out.stdout).expect("status prints JSON");
    (json, err)
}

fn ids(e: &Value) -> Vec<&str> {
    e["candidates"]
        .as_array()
        .expect("candidates")
        .iter()
        .map(|c| c["id"].as_str().unwrap_or("?"))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn node_etcd3_elections_are_detected_and_a_wrong_prefix_says_where_they_are() {
    let etcd = EtcdServer::start();
    let mut client = etcd.client().await;
    let first = node_etcd3_campaign(&mut client, "jobs", "node-a").await;
    assert_ne!(
        format!("{first}"),
        format!("{first:x}"),
        "the decimal id must not also read as hex"
    );
    for id in ["node-b", "node-c"] {
        node_etcd3_campaign(&mut client, "jobs", id).await;
    }
    node_etcd3_campaign(&mut client, "web", "web-1").await;
    let h = common::scratch::tempdir();
    let ep = etcd.endpoint();

    let (s, err) = status_and_stderr(h.path(), &["--etcd", &ep, "--prefix", "election/"]);
    let e = election(&s, "jobs");
    assert_eq!(e["scheme"], "etcd-election", "detected: {e:#}");
    assert_eq!(e["leader"]["id"], "node-a");
    assert_eq!(e["leader"]["lease"], first);
    assert_eq!(ids(e), ["node-a", "node-b", "node-c"]);
    assert!(e["ttl_ms"].as_i64().is_some_and(|t| t > 20_000), "{e:#}");
    assert_eq!(election(&s, "web")["leader"]["id"], "web-1");
    assert!(err.is_empty(), "a sure layout needs no notice: {err}");
    assert_eq!(s["sources"][0].get("layout_notice"), None, "{s:#}");

    // A leading slash too many: nothing there, and the hint says where to look.
    let (s, err) = status_and_stderr(h.path(), &["--etcd", &ep, "--prefix", "/election/"]);
    assert_eq!(s["elections"], Value::Array(Vec::new()));
    let hint = "no keys under /election/; 2 elections under election/";
    assert!(err.contains(hint), "stderr: {err}");
    assert!(
        s["sources"][0]["layout_notice"]
            .as_str()
            .is_some_and(|n| n.contains(hint)),
        "{s:#}"
    );

    // A lease key beside the election keys: each read for itself, nothing to settle.
    let lease = client.lease_grant(30, None).await.expect("grant").id();
    client
        .put(
            "election/leader",
            "node-x",
            Some(PutOptions::new().with_lease(lease)),
        )
        .await
        .expect("put");
    let (s, err) = status_and_stderr(h.path(), &["--etcd", &ep, "--prefix", "election/"]);
    assert!(err.is_empty(), "read key by key: {err}");
    assert_eq!(election(&s, "jobs")["leader"]["id"], "node-a", "{s:#}");
    assert_eq!(ids(election(&s, "jobs")), ["node-a", "node-b", "node-c"]);
    let leader = election(&s, "leader");
    assert_eq!(leader["scheme"], "etcd-lease-key", "{leader:#}");
    assert_eq!(leader["leader"]["id"], "node-x");
}

/// The prefix of the issue that found an invented leader change: an election of `etcdctl
/// elect` campaigners beside two independent locks on leases. They are three elections,
/// each with its own scheme, and when the locks' leases end each lock loses its holder:
/// no change from one lock's holder to the other's is ever reported.
#[tokio::test(flavor = "multi_thread")]
async fn an_election_beside_two_locks_is_three_elections_and_no_change_is_invented() {
    use common::campaigners::{Client, Participant};
    let etcd = EtcdServer::start();
    let mut client = etcd.client().await;
    let mut jobs = vec![Participant::start(
        Client::Etcdctl,
        &etcd,
        "/svc/jobs",
        "jobs-1",
        60,
    )];
    assert!(
        jobs[0].wait_belief("leader", Duration::from_secs(15)),
        "jobs-1 leads: {}",
        jobs[0].stderr()
    );
    jobs.push(Participant::start(
        Client::Etcdctl,
        &etcd,
        "/svc/jobs",
        "jobs-2",
        60,
    ));
    let in_line = || {
        let mut c = client.clone();
        async move {
            let opts = etcd_client::GetOptions::new()
                .with_prefix()
                .with_count_only();
            c.get("/svc/jobs/", Some(opts))
                .await
                .is_ok_and(|r| r.count() == 2)
        }
    };
    common::wait_until_async("jobs-2 in line", common::T, in_line).await;
    for (lock, holder) in [("billing", "billing-a"), ("reports", "reports-a")] {
        let lease = client.lease_grant(10, None).await.expect("grant").id();
        client
            .put(
                format!("/svc/lock/{lock}"),
                holder,
                Some(PutOptions::new().with_lease(lease)),
            )
            .await
            .expect("put");
    }
    let h = common::scratch::tempdir();
    let ep = etcd.endpoint();
    let args = ["--etcd", ep.as_str(), "--prefix", "/svc/"];
    let mut watch = common::electop::Watch::start(h.path(), &args);
    watch.wait_synced(1);
    let (s, err) = status_and_stderr(h.path(), &args);
    assert!(err.is_empty(), "nothing to settle: {err}");
    let names: Vec<&str> = s["elections"]
        .as_array()
        .expect("elections")
        .iter()
        .map(|e| e["name"].as_str().unwrap_or("?"))
        .collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, ["jobs", "lock/billing", "lock/reports"], "{s:#}");
    assert_eq!(election(&s, "jobs")["scheme"], "etcd-election");
    assert_eq!(ids(election(&s, "jobs")), ["jobs-1", "jobs-2"]);
    for (lock, holder) in [("lock/billing", "billing-a"), ("lock/reports", "reports-a")] {
        let e = election(&s, lock);
        assert_eq!(e["scheme"], "etcd-lease-key", "{e:#}");
        assert_eq!(e["leader"]["id"], holder);
        assert_eq!(ids(e), [holder], "nobody in line behind a lock's holder");
    }
    // The dashboard shows the same three, at 80x24 and 120x35.
    for (w, hgt) in [(80, 24), (120, 35)] {
        let shell = format!(
            "env XDG_CONFIG_HOME={d}/config XDG_DATA_HOME={d}/data {bin} --etcd {ep} --prefix /svc/; sleep 60",
            d = h.path().display(),
            bin = common::electop::bin(),
        );
        let tmux = common::tmux::Tmux::start(w, hgt, &shell);
        let screen = tmux.wait_screen("three elections", Duration::from_secs(10), |s| {
            s.contains("lock/billing") && s.contains("lock/reports") && s.contains("jobs-1")
        });
        assert!(screen.contains("3 elections"), "{w}x{hgt}:\n{screen}");
        assert!(!screen.contains("layout unsure"), "{screen}");
    }
    // The locks' leases run out (nobody keeps them alive): each lock is left without a holder.
    for (lock, holder) in [("lock/billing", "billing-a"), ("lock/reports", "reports-a")] {
        watch.wait_for(
            &format!("{lock} losing {holder}"),
            Duration::from_secs(15),
            |v| {
                v["election"] == lock
                    && v["from"] == holder
                    && v.get("to").is_none_or(Value::is_null)
            },
        );
    }
    let invented: Vec<&Value> = watch
        .seen
        .iter()
        .filter(|v| v["kind"] == "leader_changed" || v["kind"] == "leader_elected")
        .filter(|v| v["election"] != "jobs")
        .collect();
    assert!(
        invented.is_empty(),
        "no change between locks: {invented:#?}"
    );
    let crossed = |v: &&Value| {
        (v["to"] == "reports-a" && v["election"] != "lock/reports")
            || (v["to"] == "billing-a" && v["election"] != "lock/billing")
    };
    let crossed: Vec<&Value> = watch.seen.iter().filter(crossed).collect();
    assert!(
        crossed.is_empty(),
        "a holder in another's lock: {crossed:#?}"
    );
    for p in jobs.iter_mut() {
        p.kill();
    }
}

/// One campaigner: `client.election(name, 30).campaign(id)`, printing `elected` when it is.
const CAMPAIGN_JS: &str = r#"
const { Etcd3 } = require('etcd3');
const [host, name, id] = process.argv.slice(2);
const client = new Etcd3({ hosts: host });
const campaign = client.election(name, 30).campaign(id);
campaign.on('elected', () => console.log('elected'));
campaign.on('error', (e) => { console.log('error ' + e); process.exit(1); });
"#;

/// A directory with the campaign script; the `etcd3` package is the Node campaigner's
/// (tests/campaigners/node, installed by scripts/install-node-deps.sh), found via NODE_PATH.
fn node_etcd3() -> PathBuf {
    let modules = node_modules();
    assert!(
        modules.join("etcd3/package.json").exists(),
        "the Node campaigner's etcd3 package is missing: run scripts/install-node-deps.sh"
    );
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("node-etcd3");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join("campaign.js"), CAMPAIGN_JS).expect("write campaign.js");
    dir
}

fn node_modules() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/campaigners/node/node_modules")
}

/// A running Node campaigner and the lines it printed.
struct NodeCampaigner {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl NodeCampaigner {
    fn start(dir: &Path, endpoint: &str, name: &str, id: &str) -> NodeCampaigner {
        let mut child = Command::new("node")
            .current_dir(dir)
            .env("NODE_PATH", node_modules())
            .args(["campaign.js", endpoint, name, id])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn node");
        let out = child.stdout.take().expect("stdout");
        let lines = common::lines::text_lines(out);
        NodeCampaigner { child, lines }
    }

    fn wait_elected(&self, timeout: Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line == "elected" => return true,
                Ok(_) => {}
                Err(_) => return false,
            }
        }
    }
}

impl Drop for NodeCampaigner {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn real_node_etcd3_campaigners_are_detected_and_notice_a_reelection() {
    let dir = node_etcd3();
    let etcd = EtcdServer::start();
    let ep = etcd.endpoint();
    let mut line = Vec::new();
    for (n, id) in ["node-a", "node-b", "node-c"].into_iter().enumerate() {
        line.push(NodeCampaigner::start(&dir, &ep, "jobs", id));
        // One at a time, so the line's order is the order they started in.
        common::wait_until(
            "the campaigner's key exists",
            Duration::from_secs(15),
            || etcd.get_prefix("election/jobs/").len() == n + 1,
        );
    }
    assert!(
        line[0].wait_elected(Duration::from_secs(10)),
        "node-a leads"
    );
    let keys = etcd.get_prefix("election/jobs/");
    assert!(
        keys.iter().all(|(k, _)| k
            .rsplit('/')
            .next()
            .is_some_and(|s| s.bytes().all(|b| b.is_ascii_digit()))),
        "the package names keys after the lease in decimal: {keys:?}"
    );

    let h = common::scratch::tempdir();
    let src = ["--etcd", ep.as_str(), "--prefix", "election/"];
    let (s, err) = status_and_stderr(h.path(), &src);
    let e = election(&s, "jobs");
    assert_eq!(e["scheme"], "etcd-election", "no --scheme needed: {e:#}");
    assert_eq!(e["leader"]["id"], "node-a");
    assert_eq!(ids(e), ["node-a", "node-b", "node-c"]);
    assert!(err.is_empty(), "{err}");

    // A re-election ends node-a's session: the next in line, a real client, takes over.
    let out = command(h.path())
        .args(src)
        .args(["reelect", "jobs", "--yes"])
        .output()
        .expect("electop reelect");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        line[1].wait_elected(Duration::from_secs(15)),
        "node-b noticed and leads"
    );
    let s = common::electop::status_json(h.path(), &src);
    assert_eq!(election(&s, "jobs")["leader"]["id"], "node-b", "{s:#}");
}

/// In the dashboard: a prefix with a typo names where the elections are in the status bar,
/// and the notice goes once elections appear under the prefix after all.
#[tokio::test(flavor = "multi_thread")]
async fn the_dashboard_shows_the_hint_until_elections_appear() {
    let etcd = EtcdServer::start();
    let mut client = etcd.client().await;
    node_etcd3_campaign(&mut client, "jobs", "node-a").await;
    let home = common::scratch::tempdir();
    let shell = format!(
        "env XDG_CONFIG_HOME={h}/config XDG_DATA_HOME={h}/data {bin} --etcd {ep} --prefix /election/; sleep 60",
        h = home.path().display(),
        bin = common::electop::bin(),
        ep = etcd.endpoint(),
    );
    let tmux = common::tmux::Tmux::start(200, 30, &shell);
    let t = Duration::from_secs(10);
    tmux.wait_screen("the hint", t, |s| {
        s.contains("no keys under /election/; 1 election under election/")
    });

    let lease = client.lease_grant(30, None).await.expect("grant").id();
    client
        .put(
            format!("/election/jobs/{lease:x}"),
            "node-z",
            Some(PutOptions::new().with_lease(lease)),
        )
        .await
        .expect("put");
    let screen = tmux.wait_screen("the new election", t, |s| s.contains("node-z"));
    assert!(!screen.contains("no keys under"), "hint gone:\n{screen}");
}

/// A warning shows whole in the events view (the status bar cuts it at the screen's edge)
/// and leaves when its cause does: keys on no lease, then one on a lease.
#[tokio::test(flavor = "multi_thread")]
async fn a_layout_warning_shows_whole_and_leaves_with_its_cause() {
    let etcd = EtcdServer::start();
    let mut client = etcd.client().await;
    for k in ["/cfg/a", "/cfg/b"] {
        client.put(k, "x", None).await.expect("put");
    }
    let home = common::scratch::tempdir();
    let shell = format!(
        "env XDG_CONFIG_HOME={h}/config XDG_DATA_HOME={h}/data {bin} --etcd {ep} --prefix /cfg/; sleep 60",
        h = home.path().display(),
        bin = common::electop::bin(),
        ep = etcd.endpoint(),
    );
    let tmux = common::tmux::Tmux::start(80, 24, &shell);
    let t = Duration::from_secs(10);
    tmux.wait_screen("the warning", t, |s| s.contains("layout unsure"));
    tmux.send(&["v"]);
    // The events view wraps it: read its lines as one text.
    let joined = |s: &str| {
        s.lines()
            .map(|l| l.trim_matches(|c| c == '│' || c == ' '))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let whole = "etcd1: layout unsure: none of the 2 key(s) under /cfg/ is on a lease, so none \
                 is a leader or candidate of etcd-election or etcd-lease-key";
    tmux.wait_screen("the warning whole", t, |s| {
        s.contains("Events") && joined(s).contains(whole) && joined(s).contains("another --prefix")
    });
    let lease = client.lease_grant(30, None).await.expect("grant").id();
    client
        .put(
            "/cfg/leader",
            "node-a",
            Some(PutOptions::new().with_lease(lease)),
        )
        .await
        .expect("put");
    let screen = tmux.wait_screen("the warning gone", t, |s| !s.contains("layout unsure"));
    assert!(!screen.contains("none of the"), "{screen}");
}

/// `--prefix /sv` where the keys are `/svc/...` stops inside a path segment: `status` still
/// answers, and says which prefix was likely meant (stderr and `layout_notice`).
#[tokio::test(flavor = "multi_thread")]
async fn a_prefix_that_is_not_a_path_boundary_is_warned_with_the_one_meant() {
    let etcd = EtcdServer::start();
    let mut client = etcd.client().await;
    node_etcd3_campaign(&mut client, "cron", "node-a").await;
    let h = common::scratch::tempdir();
    let (json, err) =
        status_and_stderr(h.path(), &["--etcd", &etcd.endpoint(), "--prefix", "elect"]);
    assert!(
        err.contains("--prefix elect is not a path boundary")
            && err.contains("did you mean --prefix election/?"),
        "{err}"
    );
    let notice = json["sources"][0]["layout_notice"].as_str().unwrap_or("");
    assert!(
        notice.contains("did you mean --prefix election/?"),
        "{json:#}"
    );
    let (_, err) = status_and_stderr(
        h.path(),
        &["--etcd", &etcd.endpoint(), "--prefix", "election/"],
    );
    assert!(!err.contains("path boundary"), "{err}");
}
