//! `electop serve` scraped by a real Prometheus with the shipped rules (their `for:` cut to
//! 1 s) and a real Alertmanager: a real etcd with Go `concurrency` campaigners and a SQLite
//! table led by an `electop node`. A killed leader's failover is seen in Prometheus (the
//! change count, the time without a leader, the new holder); an election that loses its last
//! candidate fires `ElectopNoLeader` into Alertmanager, which resolves when one returns; an
//! operator's resign, whose deposed holder lives on, fires `ElectopPossibleSplitBrain`. The
//! `--on-change` hook and a `--webhook` receiver get every change, in order.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::alert_rules::rules_with_for;
use common::campaigners::{Client, Participant};
use common::electop::command;
use common::etcd::EtcdServer;
use common::prometheus::{Alertmanager, Prometheus};
use common::sqlstore::Store;
use serde_json::Value;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// Long enough for a lease to run out (3 s sessions), a scrape and a rule evaluation (1 s
/// each), on a loaded machine.
const WAIT: Duration = Duration::from_secs(45);

/// A loopback HTTP receiver for the webhook: the bodies it was posted, in order.
fn receiver() -> (String, Arc<Mutex<Vec<Value>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let got = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&got);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let mut r = BufReader::new(stream);
            let mut len = 0;
            let mut line = String::new();
            while r.read_line(&mut line).is_ok_and(|n| n > 2) {
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap_or(0);
                }
                line.clear();
            }
            let mut body = vec![0; len];
            if r.read_exact(&mut body).is_ok()
                && let Ok(v) = serde_json::from_slice(&body)
            {
                sink.lock().expect("lock").push(v);
            }
            let _ = r
                .get_mut()
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        }
    });
    (addr, got)
}

/// The changes the `--on-change` command wrote, one JSON object a line.
fn hook_lines(log: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn holder(p: &Prometheus, election: &str) -> Option<String> {
    let r = p.query(&format!(
        "electop_election_leader_info{{election=\"{election}\"}}"
    ));
    r.as_array()?.first()?["metric"]["holder"]
        .as_str()
        .map(str::to_string)
}

fn value(p: &Prometheus, promql: &str) -> f64 {
    let r = p.query(promql);
    r.as_array()
        .and_then(|a| a.first())
        .and_then(|v| v["value"][1].as_str())
        .and_then(|v| v.parse().ok())
        .unwrap_or(f64::NAN)
}

/// A child killed when dropped, however the test ends.
struct Serve(Child);

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn prometheus_sees_failover_no_leader_and_a_deposed_holder_and_hooks_hear_every_change() {
    let etcd = EtcdServer::start();
    let mut a = Participant::start(Client::Go, &etcd, "/svc/jobs", "node-a", 3);
    assert!(
        a.wait_belief("leader", WAIT),
        "node-a leads: {}",
        a.stderr()
    );
    let mut b = Participant::start(Client::Go, &etcd, "/svc/jobs", "node-b", 3);
    assert!(b.wait_belief("follower", WAIT));

    let store = Store::sqlite();
    store.create_lease_table("leaderlock");
    let home = common::scratch::tempdir();
    let sql = store.url();
    let _node = Serve(
        command(home.path())
            .args(["--sql", &sql, "--scheme", "sql-lease"])
            .args([
                "node",
                "--election",
                "billing",
                "--id",
                "billing-1",
                "--json",
            ])
            .args(["--ttl", "3000ms", "--renew", "1000ms", "--retry", "500ms"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("electop node"),
    );

    let (hook_addr, posted) = receiver();
    let hook_log = home.path().join("hook.log");
    let on_change = format!(
        "cat >> {}; echo >> {}",
        hook_log.display(),
        hook_log.display()
    );
    let listen = format!("127.0.0.1:{}", common::free_port());
    let ep = etcd.endpoint();
    // serve logs to stderr: kept in the test's home, which a failure keeps.
    let serve_log = std::fs::File::create(home.path().join("serve.log")).expect("serve.log");
    let serve = Serve(
        command(home.path())
            .args(["--etcd", &ep, "--prefix", "/svc/"])
            .args(["--sql", &sql, "--scheme", "sql-lease"])
            .args(["serve", "--listen", &listen, "--on-change", &on_change])
            .args(["--webhook", &format!("http://{hook_addr}/hook")])
            .env("ELECTOP_LOG", "debug")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(serve_log)
            .spawn()
            .expect("electop serve"),
    );
    let rules_dir = common::scratch::tempdir();
    let rules = rules_with_for(rules_dir.path(), "1s");
    let alertmanager = Alertmanager::start();
    let prometheus =
        Prometheus::start(std::slice::from_ref(&listen), &[rules], Some(&alertmanager));

    common::wait_until("Prometheus sees both leaders", WAIT, || {
        holder(&prometheus, "jobs").as_deref() == Some("node-a")
            && holder(&prometheus, "billing").as_deref() == Some("billing-1")
    });

    // The leader is killed: its session ends with its lease, node-b takes over.
    a.kill();
    common::wait_until("Prometheus sees node-b lead", WAIT, || {
        holder(&prometheus, "jobs").as_deref() == Some("node-b")
    });
    let changes = value(
        &prometheus,
        "sum(electop_election_leader_changes_total{election=\"jobs\"})",
    );
    assert!(changes >= 1.0, "the change is counted: {changes}");
    // The election API hands over in one revision: the killed leader's key lives until its
    // lease ends, and goes in the same revision its successor leads. No time without one.
    let lost = value(
        &prometheus,
        "electop_election_leaderless_seconds_total{election=\"jobs\"}",
    );
    assert_eq!(lost, 0.0, "a hand-over without a gap");

    // The last candidate goes: no leader, and the alert reaches Alertmanager.
    b.kill();
    common::wait_until("ElectopNoLeader in Alertmanager", WAIT, || {
        alertmanager.alerts().iter().any(|al| {
            al["labels"]["alertname"] == "ElectopNoLeader" && al["labels"]["election"] == "jobs"
        })
    });
    // One returns: the alert resolves.
    let mut c = Participant::start(Client::Go, &etcd, "/svc/jobs", "node-c", 30);
    assert!(c.wait_belief("leader", WAIT), "{}", c.stderr());
    common::wait_until("ElectopNoLeader resolved", WAIT, || {
        !prometheus.alerts().iter().any(|al| {
            al["labels"]["alertname"] == "ElectopNoLeader" && al["labels"]["election"] == "jobs"
        })
    });

    // The time without a leader is the stretch from the change that lost node-b to the one
    // that elected node-c, as the hooks were told them: however short (the alert can
    // reach Alertmanager within about a second), and however the ticks fall.
    let stretch = common::wait_for(
        "the hooks heard node-b lost and node-c elected",
        WAIT,
        || {
            let ran = hook_lines(&hook_log);
            let at = |kind: &str| {
                ran.iter()
                    .find(|v| v["election"] == "jobs" && v["kind"] == kind)
                    .and_then(|v| v["at"].as_str())
                    .and_then(|t| OffsetDateTime::parse(t, &Rfc3339).ok())
            };
            match (at("leader_lost"), at("leader_elected")) {
                (Some(lost), Some(elected)) => Ok((elected - lost).as_seconds_f64()),
                _ => Err(format!("hooks heard {ran:?}")),
            }
        },
    );
    common::wait_for("the time without a leader counted", WAIT, || {
        let total = value(
            &prometheus,
            "electop_election_leaderless_seconds_total{election=\"jobs\"}",
        );
        if (total - stretch).abs() < 0.25 {
            return Ok(());
        }
        let told = common::http::get(&listen, "/metrics").map_or_else(
            |e| e,
            |r| {
                let lines = r.body.lines();
                lines
                    .filter(|l| l.contains("leaderless_seconds_total"))
                    .collect()
            },
        );
        Err(format!(
            "the stretch was {stretch:.3} s; Prometheus has {total}, serve says now:\n{told}"
        ))
    });
    // An operator resigns node-c: Go's campaigner does not notice and keeps its session, so
    // it may still believe it leads: the split-brain rule fires.
    let out = command(home.path())
        .args(["--etcd", &ep, "--prefix", "/svc/"])
        .args(["resign", "jobs", "--expect-leader", "node-c", "--yes"])
        .output()
        .expect("electop resign");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    common::wait_until("ElectopPossibleSplitBrain firing", WAIT, || {
        prometheus
            .alert_names("firing")
            .iter()
            .any(|n| n == "ElectopPossibleSplitBrain")
    });
    assert_eq!(
        value(
            &prometheus,
            "electop_election_deposed_holders{election=\"jobs\"}"
        ),
        1.0
    );

    // Every change the hooks heard, in order, the same for the command and the webhook.
    let changes_of = |lines: &[Value]| -> Vec<(String, String)> {
        lines
            .iter()
            .filter(|v| {
                v["election"] == "jobs"
                    && v["kind"].as_str().is_some_and(|k| k.starts_with("leader_"))
            })
            .map(|v| {
                let who = |k: &str| v[k].as_str().unwrap_or("-").to_string();
                (who("from"), who("to"))
            })
            .collect()
    };
    let want = vec![
        ("node-a".to_string(), "node-b".to_string()),
        ("node-b".to_string(), "-".to_string()),
        ("-".to_string(), "node-c".to_string()),
        ("node-c".to_string(), "-".to_string()),
    ];
    common::wait_until("the hooks heard every change", WAIT, || {
        let ran = hook_lines(&hook_log);
        changes_of(&ran) == want && changes_of(&posted.lock().expect("lock")) == want
    });
    c.kill();
    drop(serve);
}
