//! Admin actions on ZooKeeper elections against one real ZooKeeper and the real clients
//! (Curator `LeaderLatch`, Curator `LeaderSelector`, kazoo `Election`): `electop reelect`,
//! `resign` and `force-leader` (the real binary) make the next in line (or X) lead as the
//! clients themselves report; the deposed client still believes it leads (measured, and
//! asserted); `status --json` shows it deposed with its session alive until that session
//! is gone; a node changed since it was seen makes the action refuse and write nothing;
//! `--read-only` and `--expect-leader` refuse; every action is in the audit log.
//!
//! Lines starting `MEASURE` (with `--nocapture`) are the figures in docs/stores/zookeeper.md and in
//! tests/campaigners/MEASUREMENTS.md.

mod common;

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use common::T;
use common::campaigners::now_ms;
use common::electop::{command, election, status_json};
use common::zk_campaigners::{ZkClient, ZkParticipant};
use common::zookeeper::ZkServer;
use electop::admin::{ActionKind, AdminRequest, Outcome};
use electop::config::SourceConfig;
use serde_json::Value;
use zookeeper_client::{Acls, Client, CreateMode};

/// The campaigners' sessions: short, so a killed one's session expires within the test.
const SESSION_MS: u32 = 3000;
/// How long the deposed client is watched for noticing, after the next one leads.
const BELIEF_WINDOW: Duration = Duration::from_secs(3);

#[derive(Clone, Copy, Debug)]
enum Action {
    Reelect,
    Resign,
    /// Force the third in line: both ahead of it go.
    ForceThird,
}

fn args(ep: &str) -> Vec<String> {
    ["--zk", ep, "--prefix", "/election"]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

fn electop(home: &Path, ep: &str, action: &[&str]) -> Output {
    command(home)
        .args(args(ep))
        .args(action)
        .args(["--yes", "--timeout", "10s"])
        .output()
        .expect("run electop")
}

fn status(home: &Path, ep: &str) -> Value {
    let a = args(ep);
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    status_json(home, &a)
}

fn ids(e: &Value) -> Vec<String> {
    e["candidates"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|c| c["id"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Polls `status --json` until `pred` holds for election `name`; the last one seen if not.
fn wait_status(
    home: &Path,
    ep: &str,
    name: &str,
    timeout: Duration,
    pred: impl Fn(&Value) -> bool,
) -> Result<Value, Value> {
    let deadline = Instant::now() + timeout;
    loop {
        let s = status(home, ep);
        let e = s["elections"]
            .as_array()
            .and_then(|a| a.iter().find(|e| e["name"] == name))
            .cloned()
            .unwrap_or(Value::Null);
        if pred(&e) {
            return Ok(e);
        }
        if Instant::now() >= deadline {
            return Err(e);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn audit(home: &Path) -> Vec<Value> {
    std::fs::read_to_string(home.join("data/electop/audit.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("audit line is JSON"))
        .collect()
}

fn short(client: ZkClient) -> &'static str {
    match client {
        ZkClient::CuratorLatch => "latch",
        ZkClient::CuratorSelector => "selector",
        ZkClient::Kazoo => "kazoo",
    }
}

/// Three participants of `client` in line, a leading: each joins once the one before is
/// in the line electop reads, so the order is theirs.
fn line_of(home: &Path, ep: &str, client: ZkClient) -> Vec<ZkParticipant> {
    let name = short(client);
    let path = format!("/election/{name}");
    let mut line: Vec<ZkParticipant> = Vec::new();
    for (i, who) in ["a", "b", "c"].iter().enumerate() {
        let id = format!("{name}-{who}");
        line.push(ZkParticipant::start(client, ep, &path, &id, SESSION_MS));
        let n = i + 1;
        if let Err(e) = wait_status(home, ep, name, T, |e| ids(e).len() == n) {
            panic!("{}: {n} in line expected: {e:#}", client.name());
        }
    }
    assert!(
        line[0].wait_belief("leader", T),
        "{}: the first leads",
        client.name()
    );
    line
}

/// One action on a line of real clients, from the CLI to the deposed session's end.
fn deposing(ep: &str, client: ZkClient, action: Action) {
    let home = common::scratch::tempdir();
    let home = home.path();
    let name = short(client);
    let mut line = line_of(home, ep, client);
    let before = status(home, ep);
    let seen = election(&before, name).clone();
    assert_eq!(
        ids(&seen),
        [
            format!("{name}-a"),
            format!("{name}-b"),
            format!("{name}-c")
        ]
    );
    let (verb, next): (Vec<String>, usize) = match action {
        Action::Reelect => (vec!["reelect".into(), name.into()], 1),
        Action::Resign => (vec!["resign".into(), name.into()], 1),
        Action::ForceThird => (
            vec!["force-leader".into(), name.into(), format!("{name}-c")],
            2,
        ),
    };
    let mut cli: Vec<String> = verb;
    cli.extend(["--expect-leader".into(), format!("{name}-a")]);
    let cli: Vec<&str> = cli.iter().map(String::as_str).collect();
    let t0 = now_ms();
    let out = electop(home, ep, &cli);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{} {action:?}: {}",
        client.name(),
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains(&format!("leader now {name}-")), "{said}");

    // The next in line (or X) leads, as its client says.
    let new_id = line[next].id.clone();
    assert!(
        line[next].wait_belief("leader", T),
        "{}: {new_id} never led after {action:?}: {:?}",
        client.name(),
        line[next].beliefs()
    );
    let elected = line[next].first("leader").expect("led") - t0;
    // The deposed client does not notice: it believes it leads, beside the new leader.
    std::thread::sleep(BELIEF_WINDOW);
    assert_eq!(
        line[0].belief().as_deref(),
        Some("leader"),
        "{}: the deposed client noticed after all: {:?}",
        client.name(),
        line[0].beliefs()
    );
    let told: Vec<_> = line[0]
        .beliefs()
        .iter()
        .filter(|b| b.t_ms >= t0)
        .map(|b| b.belief.clone())
        .collect();
    assert!(told.is_empty(), "{}: {told:?}", client.name());

    // Every view of a fresh electop (from the audit log): deposed, its session alive.
    let deposed_session = seen["candidates"][0]["deadline"]
        .as_str()
        .map(str::to_string);
    let e = wait_status(home, ep, name, T, |e| {
        e["deposed_session"]["state"] == "alive"
    })
    .unwrap_or_else(|e| panic!("{}: no deposed holder shown: {e:#}", client.name()));
    assert_eq!(e["deposed"]["id"], format!("{name}-a"));
    assert_eq!(e["leader"]["id"], new_id.as_str());
    let session = e["deposed_session"]["id"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(session.starts_with("0x"), "{e:#}");
    if let Some(s) = &deposed_session {
        assert_eq!(&session, s, "the session of the node that was deleted");
    }
    assert!(
        e["alarms"]
            .as_array()
            .is_some_and(|a| a.iter().any(|x| x == "deposed"))
    );
    let text = command(home)
        .args(args(ep))
        .arg("status")
        .output()
        .expect("status");
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains(&format!("⚠ deposed {name}-a, session {session} alive")),
        "{text}"
    );

    // The audit log has the attempt and the outcome, with the session removed.
    let lines = audit(home);
    let done = lines
        .iter()
        .find(|l| l["outcome"] == "done")
        .unwrap_or_else(|| panic!("no done line: {lines:?}"));
    assert!(lines.iter().any(|l| l["outcome"] == "attempt"));
    assert_eq!(done["before"], format!("{name}-a"));
    assert_eq!(done["before_session"], session.as_str());

    // Killed, its session expires, and the mark goes. Up to then it believed it led.
    assert_eq!(line[0].belief().as_deref(), Some("leader"));
    let killed = now_ms();
    line[0].kill();
    let gone = wait_status(home, ep, name, T, |e| e["deposed"].is_null());
    assert!(gone.is_ok(), "{}: still deposed: {gone:?}", client.name());
    println!(
        "MEASURE client={:?} action={action:?} elected_ms={elected} deposed_believed_leader_ms>={} \
         deposed_mark_gone_after_kill_ms<={}",
        client,
        killed - t0,
        now_ms() - killed
    );
}

/// A line of kazoo-style nodes written directly (no client needed to be seen, only to hold
/// them): `(client, node path)`, in line order.
async fn nodes(ep: &str, election: &str, ids: &[&str]) -> Vec<(Client, String)> {
    let mut out = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        let c = Client::connector()
            .with_session_timeout(Duration::from_secs(10))
            .connect(ep)
            .await
            .expect("connect");
        let dir = CreateMode::Persistent.with_acls(Acls::anyone_all());
        c.mkdir(election, &dir).await.expect("mkdir");
        let node = format!("{election}/{i:032x}__lock__");
        let mode = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
        let (_, seq) = c.create(&node, id.as_bytes(), &mode).await.expect("create");
        out.push((c, format!("{node}{seq}")));
    }
    out
}

fn sources(ep: &str, read_only: bool) -> Vec<SourceConfig> {
    use clap::Parser;
    let mut a = vec!["electop".to_string()];
    a.extend(args(ep));
    if read_only {
        a.push("--read-only".into());
    }
    let cli = electop::cli::Cli::parse_from(a);
    cli.sources
        .resolve(&electop::config::Config::default())
        .expect("sources")
}

/// The election as the CLI reads it, to act on after the store changed.
async fn seen(sources: &[SourceConfig], name: &str) -> AdminRequest {
    let opts = electop::backend::BackendOptions::default();
    let s = electop::runtime::Sources::spawn(sources, &opts).expect("sources");
    let app = electop::runtime::collect_status(s, T)
        .await
        .expect("status");
    let (_, e) = app
        .elections
        .iter()
        .find(|((_, n), _)| n == name)
        .expect("election");
    AdminRequest {
        source: e.source,
        source_name: app.sources[e.source].info.name.clone(),
        kind: ActionKind::Reelect,
        seen: e.clone(),
        target: electop::backend::target(&sources[e.source]),
    }
}

async fn children(c: &Client, path: &str) -> Vec<String> {
    let mut names = c.list_children(path).await.expect("ls");
    names.sort();
    names
}

/// Changed since seen (data rewritten, a node gone, the target gone): refused, nothing
/// written. `--read-only` and a wrong `--expect-leader`: refused before the store is asked.
async fn refusals(ep: &str) {
    let src = sources(ep, false);
    let line = nodes(ep, "/election/cas", &["n1", "n2", "n3"]).await;
    let reader = &line[2].0;
    let all = children(reader, "/election/cas").await;

    // The leader's data rewritten after it was seen: its mzxid moved.
    let req = seen(&src, "cas").await;
    line[0]
        .0
        .set_data(&line[0].1, b"n1", None)
        .await
        .expect("set");
    let out = electop::backend::execute(&src[0], &req, T).await;
    assert!(
        matches!(&out, Outcome::Changed { detail } if detail.contains("written since")),
        "{out:?}"
    );
    assert_eq!(
        children(reader, "/election/cas").await,
        all,
        "nothing written"
    );

    // Force n3 while n2 (ahead of it) was replaced by a node made under its very name.
    let mut req = seen(&src, "cas").await;
    req.kind = ActionKind::ForceLeader {
        target: "n3".into(),
    };
    line[1].0.delete(&line[1].1, None).await.expect("delete n2");
    let mode = CreateMode::Ephemeral.with_acls(Acls::anyone_all());
    line[1]
        .0
        .create(&line[1].1, b"n2", &mode)
        .await
        .expect("re-create n2");
    let out = electop::backend::execute(&src[0], &req, T).await;
    assert!(
        matches!(&out, Outcome::Changed { detail } if detail.contains("another node")),
        "{out:?}"
    );
    assert_eq!(
        children(reader, "/election/cas").await,
        all,
        "nothing written"
    );

    // Read-only and --expect-leader: refused by the CLI, audited, nothing written.
    let home = common::scratch::tempdir();
    let ro = command(home.path())
        .args(args(ep))
        .args(["--read-only", "reelect", "cas", "--yes"])
        .output()
        .expect("electop");
    assert_eq!(ro.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&ro.stderr).contains("read-only"));
    let wrong = electop(
        home.path(),
        ep,
        &["reelect", "cas", "--expect-leader", "n2"],
    );
    assert_eq!(wrong.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("changed since you looked"));
    assert_eq!(
        children(reader, "/election/cas").await,
        all,
        "nothing written"
    );
    let outcomes: Vec<String> = audit(home.path())
        .iter()
        .map(|l| l["outcome"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(outcomes, ["refused", "changed"]);
    // The library refuses a read-only source too.
    let ro_src = sources(ep, true);
    let out = electop::backend::execute(&ro_src[0], &seen(&ro_src, "cas").await, T).await;
    assert!(matches!(out, Outcome::Refused { .. }), "{out:?}");

    // As seen: done, and the leader's node alone is gone.
    let req = seen(&src, "cas").await;
    let out = electop::backend::execute(&src[0], &req, T).await;
    assert!(
        matches!(&out, Outcome::Done { detail } if detail.contains("leader now n2")),
        "{out:?}"
    );
    let left = children(reader, "/election/cas").await;
    assert_eq!(left.len(), 2);
    assert!(!left.iter().any(|n| line[0].1.ends_with(n.as_str())));
}

/// ZooKeeper as it ships answers only `srvr`: no member lists its sessions (`cons`, `dump`
/// refused), so whether a deposed holder's session lives cannot be told. A fresh electop
/// reading the audit log showed no deposed holder at all, where the one that acted shows it
/// (its session untold): every view must say the same, and raise the alarm.
#[test]
fn a_holder_deposed_by_the_cli_is_shown_by_a_fresh_electop_where_sessions_are_not_listed() {
    let zk = ZkServer::start_with_words("srvr,ruok");
    let ep = zk.endpoint();
    let home = common::scratch::tempdir();
    let home = home.path();
    let mut line = line_of(home, &ep, ZkClient::Kazoo);
    let out = electop(
        home,
        &ep,
        &["reelect", "kazoo", "--expect-leader", "kazoo-a"],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(line[1].wait_belief("leader", T), "{:?}", line[1].beliefs());
    // Its session lives: the kazoo client still believes it leads.
    assert_eq!(line[0].belief().as_deref(), Some("leader"));
    let e = wait_status(home, &ep, "kazoo", T, |e| e["leader"]["id"] == "kazoo-b")
        .unwrap_or_else(|e| panic!("kazoo-b never shown leading: {e:#}"));
    assert_eq!(e["deposed"]["id"], "kazoo-a", "{e:#}");
    assert_eq!(e["deposed_session"]["state"], "cannot-tell", "{e:#}");
    assert!(
        e["alarms"]
            .as_array()
            .is_some_and(|a| a.iter().any(|x| x == "deposed")),
        "{e:#}"
    );
    drop(line);
}

#[test]
fn zookeeper_admin_actions_with_real_clients() {
    let zk = ZkServer::start();
    let ep = zk.endpoint();
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(refusals(&ep));
    // The three clients at once, each its own election: their waits overlap.
    std::thread::scope(|s| {
        let runs = [
            (ZkClient::CuratorLatch, Action::Reelect),
            (ZkClient::CuratorSelector, Action::Resign),
            (ZkClient::Kazoo, Action::ForceThird),
        ]
        .map(|(client, action)| {
            let ep = ep.clone();
            s.spawn(move || deposing(&ep, client, action))
        });
        for r in runs {
            if let Err(p) = r.join() {
                std::panic::resume_unwind(p);
            }
        }
    });
}
