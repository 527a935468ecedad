//! ZooKeeper end to end on one real ZooKeeper, with the real clients (kazoo `Election`,
//! Curator `LeaderLatch`) and the real binary:
//! - history across runs: a failover seen by one electop is shown by the next, with its
//!   time and cause, history since the first run, and the time no electop watched said;
//!   a change made while none watched is seen in the re-read (cause `unknown`), not as live;
//! - the dashboard under tmux at 80x24: a SIGKILLed leader's node goes after its session
//!   timeout and the next leads on screen; at 120x35 the detail shows session and czxid;
//! - `electop serve`: has_leader, leader_info, leader_changes_total, and after `reelect`
//!   the deposed holder until its session is gone.
//!
//! The three run side by side (each on its own prefix and home) against one server.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::T;
use common::electop::{Watch, command, election, status_history_json};
use common::http;
use common::tmux::Tmux;
use common::zk_campaigners::{ZkClient, ZkParticipant};
use common::zookeeper::ZkServer;
use serde_json::Value;

/// The campaigners' sessions: short, so a killed one's node goes within the test.
const SESSION_MS: u32 = 3000;
/// A killed client's session ends after its timeout; a loaded machine adds to it.
const SESSION_GONE: Duration = Duration::from_secs(20);

#[test]
fn zookeeper_history_dashboard_and_metrics() {
    let zk = ZkServer::start();
    let ep = zk.endpoint();
    std::thread::scope(|s| {
        s.spawn(|| history_across_runs(&ep));
        s.spawn(|| dashboard_follows_a_killed_leader(&ep));
        s.spawn(|| serve_exports_the_election_and_the_deposed_holder(&ep));
    });
}

fn zk_args<'a>(ep: &'a str, prefix: &'a str) -> [&'a str; 4] {
    ["--zk", ep, "--prefix", prefix]
}

/// `status --json --history` on `home`.
fn status(home: &Path, ep: &str, prefix: &str) -> Value {
    status_history_json(home, &zk_args(ep, prefix))
}

/// Polls a status of a throwaway home until `pred` holds for election `name`.
fn wait_election(ep: &str, prefix: &str, name: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let peek = common::scratch::tempdir();
    let deadline = Instant::now() + SESSION_GONE;
    loop {
        let s = status(peek.path(), ep, prefix);
        let e = s["elections"]
            .as_array()
            .and_then(|a| a.iter().find(|e| e["name"] == name))
            .cloned()
            .unwrap_or(Value::Null);
        if pred(&e) {
            return e;
        }
        assert!(Instant::now() < deadline, "{name} never got there: {e:#}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// `n` campaigners of `client` on `path`, in order; the first leads.
fn line(client: ZkClient, ep: &str, prefix: &str, name: &str, ids: &[&str]) -> Vec<ZkParticipant> {
    let path = format!("{prefix}/{name}");
    let mut out: Vec<ZkParticipant> = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        out.push(ZkParticipant::start(client, ep, &path, id, SESSION_MS));
        wait_election(ep, prefix, name, |e| {
            e["candidates"].as_array().map_or(0, Vec::len) == i + 1
        });
    }
    assert!(out[0].wait_belief("leader", T), "{} leads", ids[0]);
    out
}

fn history(e: &Value) -> Vec<Value> {
    e["history"].as_array().cloned().unwrap_or_default()
}

fn time(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_string()
}

fn history_across_runs(ep: &str) {
    let (prefix, name) = ("/hist", "jobs");
    let home = common::scratch::tempdir();
    let args = zk_args(ep, prefix);
    // The first run: `watch` sees the election start and a failover.
    let mut w = Watch::start(home.path(), &args);
    w.wait_synced(1);
    let mut line = line(ZkClient::Kazoo, ep, prefix, name, &["hist-a", "hist-b"]);
    line[0].kill();
    let changed = w.wait_for("the failover", SESSION_GONE, |v| {
        v["kind"] == "leader_changed" && v["election"] == name
    });
    assert_eq!(changed["cause"], "node_gone", "{changed:#}");
    // Killed: it leaves no stop line.
    drop(w);

    // The next run shows what the first saw, with its time and cause.
    let s = status(home.path(), ep, prefix);
    let e = election(&s, name);
    let h = history(e);
    let seen = h
        .iter()
        .find(|x| x["from"] == "hist-a" && x["to"] == "hist-b")
        .unwrap_or_else(|| panic!("the earlier run's failover: {e:#}"));
    assert_eq!(seen["cause"], "node_gone", "{seen:#}");
    assert_eq!(time(&seen["at"]), time(&changed["at"]), "{seen:#}");
    assert!(
        h.iter()
            .any(|x| x["to"] == "hist-a" && x["cause"] == "elected"),
        "{e:#}"
    );
    let src = &s["sources"][0];
    let since = time(&src["history_since"]);
    assert!(!since.is_empty() && since < time(&seen["at"]), "{src:#}");
    let gaps = src["history_gaps"].as_array().expect("a gap").clone();
    assert_eq!(gaps.len(), 1, "{src:#}");
    assert_eq!(gaps[0]["stop_recorded"], false, "watch was killed: {src:#}");
    assert_eq!(time(&gaps[0]["from"]), time(&changed["at"]), "{src:#}");

    // The leader goes while no electop watches: the next run sees it in its first read,
    // at its own connect, cause unknown, not as if watched; and `status` stopped cleanly.
    line[1].kill();
    wait_election(ep, prefix, name, |e| e["leader"].is_null());
    let s = status(home.path(), ep, prefix);
    let src = &s["sources"][0];
    assert_eq!(time(&src["history_since"]), since, "{src:#}");
    let gaps = src["history_gaps"].as_array().expect("gaps").clone();
    assert_eq!(gaps.len(), 2, "{src:#}");
    assert_eq!(
        gaps[1]["stop_recorded"], true,
        "status stopped cleanly: {src:#}"
    );
    let e = election(&s, name);
    let last = history(e).last().cloned().expect("history");
    assert_eq!(last["from"], "hist-b", "{e:#}");
    assert!(last["to"].is_null(), "{e:#}");
    assert_eq!(last["cause"], "unknown", "{e:#}");
    // Seen at the first read, just after the connect the gap ends at.
    let (at, to) = (time(&last["at"]), time(&gaps[1]["to"]));
    assert!(at.get(..19) >= to.get(..19), "seen at connect {to}: {e:#}");

    // The text says the same to a person.
    let out = command(home.path())
        .args(args)
        .arg("status")
        .output()
        .expect("status");
    // Beside the table, on stderr (stdout is the table alone, for scripts).
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("history since") && text.contains("from electop's own record"),
        "{text}"
    );
    assert!(text.contains("history no record from"), "{text}");
    assert!(text.contains("history not watched from"), "{text}");
    let mut journals: Vec<String> =
        common::electop::history_records(home.path(), "zookeeper-history-")
            .into_iter()
            .map(|(journal, _, _)| journal)
            .collect();
    journals.dedup();
    assert_eq!(journals.len(), 1, "one record for the source: {journals:?}");
}

/// tmux running the dashboard on `args`, with a private home.
fn dashboard(home: &Path, size: (u16, u16), args: &str) -> Tmux {
    let shell = format!(
        "env RUST_BACKTRACE=0 XDG_CONFIG_HOME={h}/config XDG_DATA_HOME={h}/data {bin} {args}; \
         echo ELECTOP-EXITED $?; sleep 60",
        h = home.display(),
        bin = common::electop::bin(),
    );
    Tmux::start(size.0, size.1, &shell)
}

fn dashboard_follows_a_killed_leader(ep: &str) {
    let (prefix, name) = ("/tui", "jobs");
    let mut line = line(
        ZkClient::Kazoo,
        ep,
        prefix,
        name,
        &["tui-a", "tui-b", "tui-c"],
    );
    let home = common::scratch::tempdir();
    let args = format!("--zk {ep} --prefix {prefix}");
    let tmux = dashboard(home.path(), (80, 24), &args);
    let screen = tmux.wait_screen("the election", T, |s| {
        s.contains("jobs") && s.contains("tui-a")
    });
    eprintln!("80x24 before:\n{screen}");

    let killed = Instant::now();
    line[0].kill();
    assert!(line[1].wait_belief("leader", SESSION_GONE), "tui-b leads");
    let screen = tmux.wait_screen("the failover", SESSION_GONE, |s| {
        s.contains("node_gone") || s.contains("node gone")
    });
    eprintln!("80x24 after {:?}:\n{screen}", killed.elapsed());
    let row = screen
        .lines()
        .find(|l| l.contains("jobs") && !l.contains("node"))
        .unwrap_or("");
    assert!(row.contains("tui-b"), "the new leader: {row:?}\n{screen}");
    assert!(
        screen.contains("tui-a → tui-b node_gone"),
        "the history line: {screen}"
    );
    assert!(screen.contains("1 change since"), "since when: {screen}");
    assert!(
        killed.elapsed() >= Duration::from_millis(u64::from(SESSION_MS) / 2),
        "the node goes only after the session timeout"
    );
    tmux.send(&["q"]);
    tmux.wait_screen("exit", T, |s| s.contains("ELECTOP-EXITED 0"));

    // Larger, the next run: the detail shows the holder's session, czxid and node; the
    // change the first run saw, and the time between the runs that none watched.
    let big = dashboard(home.path(), (120, 35), &args);
    // The leader's row in the line too: a capture can land while a frame is half written
    // (the panel's header drawn, its rows not yet).
    let screen = big.wait_screen("the detail", T, |s| {
        s.contains("czxid")
            && s.contains("not watched from")
            && s.lines().any(|l| l.contains("★1") && l.contains("0x"))
    });
    eprintln!("120x35 detail:\n{screen}");
    let session = format!("session {}", line_session(&screen));
    assert!(screen.contains(&session), "the session: {screen}");
    assert!(screen.contains("node /tui/jobs/"), "the node: {screen}");
    assert!(
        screen.contains("tui-a → tui-b node_gone"),
        "the first run's change: {screen}"
    );
    big.send(&["q"]);
    big.wait_screen("exit", T, |s| s.contains("ELECTOP-EXITED 0"));
}

/// The leader's session in the line (`★1   tui-b   0x…`).
fn line_session(screen: &str) -> String {
    screen
        .lines()
        .find(|l| l.contains("★1"))
        .and_then(|l| l.split_whitespace().find(|w| w.starts_with("0x")))
        .unwrap_or_else(|| panic!("no leader's session in the line: {screen}"))
        .to_string()
}

/// `electop serve` on `args`, stopped when dropped.
struct Serve {
    child: std::process::Child,
    addr: String,
}

impl Serve {
    fn start(home: &Path, args: &[&str]) -> Serve {
        let addr = format!("127.0.0.1:{}", common::free_port());
        let child = command(home)
            .args(args)
            .args(["serve", "--listen", &addr])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn electop serve");
        let s = Serve { child, addr };
        common::wait_until("serve ready", T, || {
            std::net::TcpStream::connect(&s.addr).is_ok()
                && http::request(&s.addr, "/readyz", &[]).0 == 200
        });
        s
    }

    /// Waits until `/metrics` has `series` (name and labels, as a prefix) at `value`.
    fn wait_metric(&self, series: &str, value: f64, timeout: Duration) -> String {
        let mut last = String::new();
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            let (code, body) = http::request(&self.addr, "/metrics", &[]);
            assert_eq!(code, 200, "{body}");
            if sample(&body, series).or(alarm_off(&body, series)) == Some(value) {
                return body;
            }
            last = body;
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("{series} never {value}:\n{last}");
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An alarm gauge (`deposed_holders`, `zombie`, `flapping`) has no sample while not raised,
/// as the shipped rules read it: 0 then.
fn alarm_off(metrics: &str, series: &str) -> Option<f64> {
    let family = series.trim_end_matches('{');
    let alarm = ["deposed_holders", "zombie", "flapping"]
        .iter()
        .any(|a| family.ends_with(a));
    (alarm && metrics.contains(&format!("# TYPE {family} gauge"))).then_some(0.0)
}

/// The sample of the first series starting with `series`.
fn sample(metrics: &str, series: &str) -> Option<f64> {
    metrics
        .lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| l.strip_prefix(series)?.rsplit(' ').next()?.parse().ok())
}

fn serve_exports_the_election_and_the_deposed_holder(ep: &str) {
    let (prefix, name) = ("/srv", "jobs");
    let mut line = line(
        ZkClient::CuratorLatch,
        ep,
        prefix,
        name,
        &["srv-a", "srv-b"],
    );
    let home = common::scratch::tempdir();
    let args = zk_args(ep, prefix);
    let serve = Serve::start(home.path(), &args);
    let m = serve.wait_metric("electop_election_has_leader{", 1.0, T);
    let info = m
        .lines()
        .find(|l| l.starts_with("electop_election_leader_info{"))
        .unwrap_or_else(|| panic!("no leader_info:\n{m}"));
    assert!(
        info.contains("srv-a") && info.contains("election=\"jobs\""),
        "{info}"
    );
    assert!(
        sample(&m, "electop_election_deposed_holders{")
            .or(alarm_off(&m, "electop_election_deposed_holders{"))
            == Some(0.0),
        "none deposed yet:\n{m}"
    );
    // Every cause's count: the re-election made by another process (the CLI) is counted as
    // the change serve saw (its cause learnt from the audit log afterwards).
    let changes = |m: &str| -> f64 {
        m.lines()
            .filter(|l| l.starts_with("electop_election_leader_changes_total{"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    };
    let before = changes(&m);

    let out = command(home.path())
        .args(args)
        .args(["reelect", name, "--yes", "--timeout", "10s"])
        .output()
        .expect("reelect");
    assert!(
        out.status.success(),
        "reelect: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(line[1].wait_belief("leader", T), "srv-b leads");
    // Curator's deposed LeaderLatch does not notice; serve says it may still lead.
    let m = serve.wait_metric("electop_election_deposed_holders{", 1.0, T);
    assert_eq!(
        line[0].belief().as_deref(),
        Some("leader"),
        "deposed, unaware"
    );
    let info = m
        .lines()
        .find(|l| l.starts_with("electop_election_leader_info{"))
        .unwrap_or_default();
    assert!(info.contains("srv-b"), "{info}");
    assert_eq!(changes(&m), before + 1.0, "the re-election counted:\n{m}");

    line[0].kill();
    serve.wait_metric("electop_election_deposed_holders{", 0.0, SESSION_GONE);
}
