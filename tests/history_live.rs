//! `electop history` after the fact, on real stores with real participants (`electop
//! node`): a `watch` records a failover in the journal; a fresh `history --json` (same
//! HOME, the watch gone) shows the deposed leader's gap and the new leader's tenure, at the
//! times the nodes and the kill say, and `serve`'s `/api/v1/history` answers the same.
//! SQLite (sql-lease) and Redis (lock keys).

mod common;

use std::process::{Child, Stdio};
use std::time::{Duration, SystemTime};

use common::T;
use common::electop::{Watch, command};
use common::node::Node;
use common::redis::RedisServer;
use common::scratch::Scratch;
use common::sqlstore::Store;
use serde_json::Value;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// The nodes' term / lock TTL, renewal and retry.
const TTL: Duration = Duration::from_secs(2);
const RENEW: Duration = Duration::from_millis(500);
const RETRY: Duration = Duration::from_millis(300);
/// How often the watch reads a SQL table (`--poll`); Redis is told by keyspace events, which
/// this bounds too.
const POLL: Duration = Duration::from_millis(100);
/// A process starting, a busy machine: on top of every bound.
const SLACK: Duration = Duration::from_millis(1500);

struct Run {
    home: Scratch,
    /// Source flags, as status and watch take them.
    source: Vec<String>,
    election: String,
    node_flags: Vec<String>,
}

impl Run {
    fn src(&self) -> Vec<&str> {
        self.source.iter().map(String::as_str).collect()
    }

    fn node(&self, id: &str) -> Node {
        let stderr = self.home.path().join(format!("{id}.stderr"));
        let mut cmd = command(self.home.path());
        cmd.args(&self.source)
            .args(["node", "--election", &self.election, "--id", id, "--json"])
            .args(["--ttl", &format!("{}ms", TTL.as_millis())])
            .args(["--renew", &format!("{}ms", RENEW.as_millis())])
            .args(["--retry", &format!("{}ms", RETRY.as_millis())])
            .args(&self.node_flags);
        Node::spawn(&mut cmd, id, &self.election, stderr)
    }

    /// `electop history ELECTION --json ARGS`, which must exit 0.
    fn history(&self, args: &[&str]) -> Value {
        let out = command(self.home.path())
            .args(&self.source)
            .args(["history", &self.election, "--json"])
            .args(args)
            .output()
            .expect("run electop history");
        assert!(
            out.status.success(),
            "history failed: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("history prints JSON")
    }
}

fn wall(v: &Value) -> SystemTime {
    let text = v.as_str().unwrap_or_else(|| panic!("a time: {v}"));
    OffsetDateTime::parse(text, &Rfc3339)
        .unwrap_or_else(|e| panic!("{text}: {e}"))
        .into()
}

fn rfc3339(t: SystemTime) -> String {
    OffsetDateTime::from(t).format(&Rfc3339).expect("format")
}

/// `a` within `[lo, hi]`, said with how far off it is.
fn within(what: &str, a: SystemTime, lo: SystemTime, hi: SystemTime) {
    assert!(
        lo <= a && a <= hi,
        "{what}: {} not in [{}, {}]",
        rfc3339(a),
        rfc3339(lo),
        rfc3339(hi)
    );
}

/// When node-a was killed, when node-b said it leads (its own clock: the same machine's),
/// and when the watch that saw it had stopped.
type Times = (SystemTime, SystemTime, SystemTime);

/// node-a leads; a watch records; node-a is killed; once the watch saw the election without
/// a leader, node-b starts and takes over; the watch stops (cleanly: its stop is in the
/// journal). Returns node-b (leading on) and the times.
fn failover(run: &Run, watch_flags: &[&str]) -> (Node, Times) {
    let mut a = run.node("node-a");
    a.wait_belief("leader", Some("node-a"), T);
    let mut args = run.src();
    args.extend(watch_flags);
    let mut watch = Watch::start(run.home.path(), &args);
    watch.wait_synced(1);
    let name = run.election.as_str();
    let killed = SystemTime::now();
    a.sigkill();
    watch.wait_for("node-a's loss", T, |v| {
        v["election"] == name && v["from"] == "node-a" && v["to"].is_null()
    });
    let mut b = run.node("node-b");
    b.wait_belief("leader", Some("node-b"), T);
    let led = wall(&b.current().expect("a belief").1["at"]);
    watch.wait_for("node-b leading", T, |v| {
        v["election"] == name && v["to"] == "node-b"
    });
    // The watch is gone before history runs: what it shows is read back from the journal.
    assert!(watch.terminate().success());
    (b, (killed, led, SystemTime::now()))
}

/// What `history --json` shows after `failover`: node-a's gap, then node-b's tenure, at
/// the times the kill and node-b say, within the poll interval and the term, until the
/// watch stopped; from then to now no electop watched: not claimed as node-b's.
fn check_history(run: &Run, (killed, led, stopped): Times) {
    let doc = run.history(&["--since", "10m"]);
    let [e] = doc["elections"].as_array().expect("elections").as_slice() else {
        panic!("one election: {doc:#}")
    };
    assert_eq!(e["name"], run.election.as_str());
    assert_eq!(e["leader"], "node-b");
    let segs = e["segments"].as_array().expect("segments");
    let gap_at = segs
        .iter()
        .position(|s| s["kind"] == "gap" && s["after"] == "node-a")
        .unwrap_or_else(|| panic!("no gap after node-a: {e:#}"));
    let (gap, next) = (&segs[gap_at], &segs[gap_at + 1..]);
    let [tenure, unwatched] = next else {
        panic!("node-b's tenure then the time nobody watched, after the gap: {e:#}")
    };
    assert_eq!(
        (&tenure["kind"], &tenure["holder"], &tenure["ongoing"]),
        (&"tenure".into(), &"node-b".into(), &false.into()),
        "{e:#}"
    );
    assert!(
        tenure["cause_out"].is_null(),
        "how it ended is not known: {e:#}"
    );
    let stop = wall(&tenure["end"]);
    within("the watch's stop", stop, led, stopped);
    assert_eq!(
        (&unwatched["kind"], &unwatched["stop_recorded"]),
        (&"unwatched".into(), &true.into()),
        "{e:#}"
    );
    assert_eq!(wall(&unwatched["start"]), stop);
    assert_eq!(wall(&unwatched["end"]), wall(&e["until"]));
    let (start, end) = (wall(&gap["start"]), wall(&gap["end"]));
    // node-a's term ran out after the kill, at most a term after it; seen within a poll.
    within("gap start", start, killed, killed + TTL + POLL + SLACK);
    // node-b's first write is seen at the next poll (or event).
    within("gap end", end, led - POLL, led + POLL + SLACK);
    assert_eq!(
        wall(&tenure["start"]),
        end,
        "node-b's tenure begins where the gap ends"
    );
    let length = end.duration_since(start).expect("in order").as_millis() as i64;
    assert_eq!(gap["duration_ms"].as_i64(), Some(length), "{gap:#}");
    assert!(gap["ongoing"] == false, "{gap:#}");
    let s = &e["summary"];
    assert!(s["failovers"].as_u64() >= Some(1), "{s:#}");
    assert!(s["no_leader_ms"].as_i64() >= Some(length), "{s:#}");
    assert!(s["longest_gap_ms"].as_i64() >= Some(length), "{s:#}");
    assert_eq!(s["forced"], 0, "{s:#}");
}

/// `electop serve` on the same HOME: `/api/v1/history` for the election over a fixed window
/// equals what `history --json` prints for it; a parameter it cannot read is a 400, an
/// election no source holds a 404.
fn serve_answers_the_same(run: &Run) {
    let addr = format!("127.0.0.1:{}", common::free_port());
    let mut child: Child = command(run.home.path())
        .args(&run.source)
        .args(["serve", "--listen", &addr])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn electop serve");
    common::wait_until("serve ready", T, || {
        std::net::TcpStream::connect(&addr).is_ok()
            && common::http::request(&addr, "/readyz", &[]).0 == 200
    });
    let now = SystemTime::now();
    let (since, until) = (rfc3339(now - Duration::from_secs(600)), rfc3339(now));
    let q = common::http::query_escape;
    let path = format!(
        "/api/v1/history?election={}&since={}&until={}",
        q(&run.election),
        q(&since),
        q(&until)
    );
    let (code, body) = common::http::request(&addr, &path, &[]);
    let (bad, why) = common::http::request(&addr, "/api/v1/history?since=yesterday", &[]);
    let (unknown, missing) = common::http::request(&addr, "/api/v1/history?election=nope", &[]);
    // A clean stop, after the window: what serve watched in it is not left unrecorded.
    terminate(&mut child);
    assert_eq!(code, 200, "{body}");
    assert!(bad == 400 && why.contains("`yesterday`"), "{bad}: {why}");
    assert!(
        unknown == 404 && missing.contains("`nope`"),
        "{unknown}: {missing}"
    );
    let served: Value = serde_json::from_str(&body).expect("JSON");
    let printed = run.history(&["--since", &since, "--until", &until]);
    assert_eq!(served, printed);
    assert!(
        served["elections"][0]["segments"]
            .as_array()
            .is_some_and(|s| !s.is_empty())
    );
}

/// SIGTERM, and its exit.
fn terminate(child: &mut Child) {
    let pid = child.id().to_string();
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status();
    assert!(sent.is_ok_and(|s| s.success()), "kill -TERM {pid}");
    assert!(child.wait().expect("wait").success());
}

#[test]
fn sqlite_failover_is_a_gap_of_its_real_length_after_a_restart() {
    let store = Store::sqlite();
    let run = Run {
        home: common::scratch::tempdir(),
        source: ["--sql", &store.url(), "--scheme", "sql-lease"]
            .map(String::from)
            .into(),
        election: "jobs".into(),
        node_flags: vec!["--create-table".into()],
    };
    let poll = format!("{}ms", POLL.as_millis());
    let (_leader, times) = failover(&run, &["--poll", &poll]);
    check_history(&run, times);
    serve_answers_the_same(&run);
}

#[test]
fn redis_failover_is_a_gap_of_its_real_length_after_a_restart() {
    let server = RedisServer::start("KEA", None);
    let run = Run {
        home: common::scratch::tempdir(),
        source: ["--redis", &server.url(), "--prefix", "locks:*"]
            .map(String::from)
            .into(),
        election: "locks:jobs".into(),
        node_flags: Vec::new(),
    };
    let (_leader, times) = failover(&run, &[]);
    check_history(&run, times);
    serve_answers_the_same(&run);
}

/// An election no source holds is a usage error naming it (exit 2), every source read.
#[test]
fn an_unknown_election_is_named_and_exits_2() {
    let store = Store::sqlite();
    store.create_lease_table("leaderlock");
    assert!(store.lease_attempt("leaderlock", "jobs", "node-a", 600));
    let home = common::scratch::tempdir();
    let out = command(home.path())
        .args([
            "--sql",
            &store.url(),
            "--scheme",
            "sql-lease",
            "--table",
            "leaderlock",
        ])
        .args(["history", "nope"])
        .output()
        .expect("run electop history");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("`nope`") && err.contains("jobs"), "{err}");
}

/// Where no election is found, the source's notice says why, each message on its own line
/// before the error.
#[test]
fn an_empty_store_says_why_before_no_election_is_found() {
    let etcd = common::etcd::EtcdServer::start();
    let home = common::scratch::tempdir();
    let out = command(home.path())
        .args(["--etcd", &etcd.endpoint(), "history", "billing"])
        .output()
        .expect("run electop history");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(
        lines,
        [
            "electop: etcd1: etcd holds no keys at all",
            "electop: no election `billing`: no election was found at all"
        ],
        "{err}"
    );
}

/// A watch sees its PostgreSQL source go down (the server stopped, SIGSTOP, past the
/// request timeout) and come back (SIGCONT), and stops; a `history` started after it shows that outage (read
/// from the journal), at the times the stop and the resume say.
#[test]
fn an_outage_an_earlier_watch_saw_is_in_a_later_history() {
    let store = Store::postgres();
    store.create_lease_table("leaderlock");
    assert!(store.lease_attempt("leaderlock", "jobs", "node-a", 600));
    let home = common::scratch::tempdir();
    let source = [
        "--sql",
        &store.url(),
        "--scheme",
        "sql-lease",
        "--table",
        "leaderlock",
    ];
    let mut args = source.to_vec();
    args.extend(["--poll", "100ms"]);
    let mut watch = Watch::start(home.path(), &args);
    watch.wait_synced(1);
    let locked_at = SystemTime::now();
    store.freeze(true);
    // Its poll times out (the request timeout, 5 s): the source is down.
    watch.wait_for("the source down", T, |v| v["kind"] == "disconnected");
    store.freeze(false);
    let freed = SystemTime::now();
    watch.wait_for("the source connected again", T, |v| {
        v["kind"] == "connected"
    });
    assert!(watch.terminate().success());
    // From the last answer before the lock (a poll before it) to the first poll after the
    // reconnect (its first retry is half a second after).
    let retry = Duration::from_millis(500);
    let o = common::outage::in_a_later_history(
        home.path(),
        &source,
        (locked_at, POLL),
        (freed, retry + POLL),
    );
    assert_eq!(o["down"], true, "{o:#}");
}
