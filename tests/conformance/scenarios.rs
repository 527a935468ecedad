//! The scenarios (the matrix's rows), each run on one cell. Every step ends with the views
//! read until they agree (`settle`), then what they agree on is checked against what the
//! participants did. Where a store cannot show something by design, `expect` says so and
//! the scenario asserts the documented limit instead (that nothing false is shown).

use std::time::{Duration, Instant};

use serde_json::Value;

pub use crate::admin::{force_leader, reelect, reelect_early_serve, reelect_later};
use crate::common::proxy::Proxy;
use crate::common::{T, electop::command};
pub use crate::frozen::member_frozen;
use crate::participants::Participant;
use crate::stores::{Cell, Kind, TTL, names};
pub use crate::twice::two_changes;
use crate::views::{
    Agreement, Change, Observers, View, agree, changes_by_cause, dump, find_election,
    markers_alternate,
};

/// Slack on every timing bound: process start, a poll, a busy two-core machine.
pub const SLACK: Duration = Duration::from_millis(2500);
/// How long the store stays out of reach in `store_down`.
const OUTAGE: Duration = Duration::from_secs(10);

/// What a cell is expected to show: everything, or a documented limit of its store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    Pass,
    Limit(&'static str),
}

/// Reads every view until they agree and the leader is `leader` (a participant's id, or
/// none); returns the readings.
pub fn settle(obs: &mut Observers, cell: &Cell, leader: Option<&str>) -> Vec<View> {
    let how = match cell.kind.polls() {
        true => Agreement::PerProcess,
        false => Agreement::Exact,
    };
    settle_as(obs, cell, leader, how)
}

/// How closely the views must agree on a departure's cause: etcd's is each process's own
/// reading (documented limit L7).
pub fn departure_agreement(kind: Kind) -> Agreement {
    match kind {
        Kind::etcd_election | Kind::etcd_lease_key => Agreement::CauseMayDiffer,
        k if k.polls() => Agreement::PerProcess,
        _ => Agreement::Exact,
    }
}

pub fn settle_as(
    obs: &mut Observers,
    cell: &Cell,
    leader: Option<&str>,
    how: Agreement,
) -> Vec<View> {
    let deadline = Instant::now() + T;
    loop {
        let views = obs.read(cell);
        let counts = changes_by_cause(&obs.metrics(), &cell.election);
        let shown = views[0].leader.as_deref();
        let right = match (shown, leader) {
            (Some(s), Some(id)) => names(s, id),
            (None, None) => true,
            _ => false,
        };
        let last = match agree(&views, &counts, how) {
            Ok(()) if right => return views,
            Ok(()) => format!("they agree on {shown:?}, not {leader:?}"),
            Err(why) => why,
        };
        if Instant::now() >= deadline {
            panic!(
                "{:?}: the views did not agree on leader {leader:?} within {T:?}: {last}\n{}\n\
                 watch saw:\n{:#?}",
                cell.kind,
                dump(&views),
                obs.watch.seen
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Each view's list of changes (for a polled store they may differ; see `agree`).
pub fn lists(views: &[View]) -> Vec<(&'static str, Vec<Change>)> {
    views
        .iter()
        .filter_map(|v| Some((v.name, v.changes.clone()?)))
        .collect()
}

/// The changes the views agreed on (serve's list).
pub fn changes(views: &[View]) -> Vec<Change> {
    lists(views)
        .into_iter()
        .find(|(name, _)| name.starts_with('/'))
        .map(|(_, c)| c)
        .expect("a view lists changes")
}

/// One change from `a` to `b`, or two: `a` lost, then `b` elected.
pub fn handover(a: &str, b: &str, after: &[Change]) -> bool {
    after.len() == 1 && change(Some(a), Some(b), &after[0])
}

pub fn gap(a: &str, b: &str, after: &[Change]) -> bool {
    after.len() == 2 && change(Some(a), None, &after[0]) && change(None, Some(b), &after[1])
}

/// Asserts `ok` of every view's changes after the first (the first leader's election).
pub fn each_list(kind: Kind, views: &[View], what: &str, ok: impl Fn(&[Change]) -> bool) {
    for (name, list) in lists(views) {
        assert!(
            list.len() > 1 && ok(&list[1..]),
            "{kind:?}: {name}: {what}: {list:?}"
        );
    }
}

pub fn change(from: Option<&str>, to: Option<&str>, c: &Change) -> bool {
    let is = |shown: &Option<String>, id: Option<&str>| match (shown, id) {
        (Some(s), Some(id)) => names(s, id),
        (None, None) => true,
        _ => false,
    };
    is(&c.from, from) && is(&c.to, to)
}

/// Two participants, `node-a` leading and `node-b` following, and every view agreeing;
/// with how the views name each.
pub fn two_nodes(cell: &Cell, obs: &mut Observers) -> (Participant, Participant, String, String) {
    let mut a = cell.participant("node-a");
    a.wait_leader(T);
    let mut b = cell.participant("node-b");
    b.wait_follower(T);
    let (ia, ib) = (cell.shown(&mut a), cell.shown(&mut b));
    settle(obs, cell, Some(&ia));
    (a, b, ia, ib)
}

/// (1) One participant leads; the views agree on it and list it as the one election.
pub fn elected(kind: Kind) {
    let cell = Cell::new(kind, "elected", 1);
    let mut obs = Observers::start(&cell, &cell.source, true);
    let (_a, _b, ia, _) = two_nodes(&cell, &mut obs);
    let views = settle(&mut obs, &cell, Some(&ia));
    let list = changes(&views);
    assert!(
        list.len() == 1 && change(None, Some(&ia), &list[0]),
        "{kind:?}: one change, none to node-a: {list:?}"
    );
}

/// (2) SIGKILL of the leader: the other leads, once the TTL ran out where there is one.
pub fn failover(kind: Kind) {
    let cell = Cell::new(kind, "failover", 2);
    let mut obs = Observers::start(&cell, &cell.source, true);
    let (mut a, mut b, ia, ib) = two_nodes(&cell, &mut obs);
    let killed = Instant::now();
    a.crash();
    let at = b.wait_leader(TTL + SLACK + T);
    let took = at.saturating_duration_since(killed);
    assert!(
        took <= TTL + SLACK,
        "{kind:?}: failover took {took:?}, more than {:?}",
        TTL + SLACK
    );
    let views = settle(&mut obs, &cell, Some(&ib));
    let ended = crash_cause(kind);
    each_list(
        kind,
        &views,
        &format!("node-a ends ({ended}), node-b leads"),
        |after| {
            (handover(&ia, &ib, after) || gap(&ia, &ib, after))
                && after[0].cause.as_deref() == Some(ended)
        },
    );
    let after = &changes(&views)[1..];
    println!("{kind:?}: failover {took:?}, changes {after:?}");
}

/// How a crashed holder's tenure ends in each store: its lease or term runs out, its
/// ephemeral node goes with its session, its session lock with its connection.
pub fn crash_cause(kind: Kind) -> &'static str {
    match kind {
        Kind::etcd_election | Kind::etcd_lease_key => "lease_expired",
        Kind::redis_events | Kind::redis_poll | Kind::kubernetes => "lease_expired",
        Kind::sql_lease_sqlite | Kind::sql_lease_postgres | Kind::sql_heartbeat_sqlite => "expired",
        Kind::zookeeper | Kind::zookeeper_kazoo => "node_gone",
        Kind::pg_advisory | Kind::mysql_lock => "session_ended",
    }
}

/// What a clean resign can show in each store, and the causes it may be told with.
pub fn resign_expect(kind: Kind) -> (Expect, &'static [&'static str]) {
    match kind {
        Kind::etcd_election | Kind::etcd_lease_key => (
            Expect::Limit(
                "etcd's watch tells a key's delete the same whether its holder deleted it or \
                 its lease ended; a resign is a delete then the lease's revoke, and each \
                 process asks the lease after the fact: resigned while it lives, else by the \
                 countdown (lease_expired near its end, lease_revoked before, lease_ended \
                 unknown). The same changes in the same order in every view",
            ),
            &["resigned", "lease_revoked", "lease_expired", "lease_ended"],
        ),
        Kind::redis_events => (Expect::Pass, &["resigned", "deleted"]),
        // client-go's release (an empty holder) is a write of its own.
        Kind::kubernetes => (Expect::Pass, &["resigned"]),
        Kind::sql_lease_sqlite | Kind::sql_lease_postgres | Kind::sql_heartbeat_sqlite => (
            Expect::Limit(
                "a resign ends the term in the row (moved to the database's now): a poll sees \
                 the term over (expired), or, when the next acquire came first, another \
                 holder before the term it saw ran out, told unknown (a poll cannot tell it \
                 from a write over the term); the change is still quick",
            ),
            &["expired", "unknown"],
        ),
        Kind::zookeeper | Kind::zookeeper_kazoo => (
            Expect::Limit(
                "ZooKeeper's watch says the node went, not whether it was deleted or its \
                 session closed: cause node_gone",
            ),
            &["node_gone"],
        ),
        Kind::redis_poll => (
            Expect::Limit(
                "polling cannot see the delete between two polls: the release and the next \
                 acquire read as one change, told unknown (not taken_over: a poll cannot \
                 tell it from a write over the key)",
            ),
            &["unknown", "resigned", "deleted"],
        ),
        Kind::pg_advisory | Kind::mysql_lock => (
            Expect::Limit(
                "a session lock has no release record: the unlock is seen as the lock's \
                 session letting go",
            ),
            &["session_ended", "resigned"],
        ),
    }
}

/// (3) SIGTERM of the leader: it resigns and the other leads well before a TTL would
/// have run out; the cause is the release, where the store tells one.
pub fn resign(kind: Kind) {
    let cell = Cell::new(kind, "resign", 3);
    let mut obs = Observers::start(&cell, &cell.source, true);
    let (mut a, mut b, ia, ib) = two_nodes(&cell, &mut obs);
    let sent = Instant::now();
    let status = a.resign(Duration::from_secs(3));
    assert!(status.success(), "{kind:?}: SIGTERM exits 0: {}", a.dump());
    let at = b.wait_leader(T);
    let took = at.saturating_duration_since(sent);
    assert!(
        took < TTL,
        "{kind:?}: takeover after a resign took {took:?}, not quicker than the TTL {TTL:?}"
    );
    let views = settle_as(&mut obs, &cell, Some(&ib), departure_agreement(kind));
    let (_, allowed) = resign_expect(kind);
    let what = format!("node-a's tenure ends first, as one of {allowed:?}");
    each_list(kind, &views, &what, |after| {
        (change(Some(&ia), None, &after[0]) || change(Some(&ia), Some(&ib), &after[0]))
            && after[0]
                .cause
                .as_deref()
                .is_some_and(|c| allowed.contains(&c))
    });
    let after = &changes(&views)[1..];
    println!("{kind:?}: resign took over in {took:?}, changes {after:?}");
    // A later process's history names the change as one of the running views did (etcd's
    // replay takes the cause a watching electop recorded, not `lease_ended`).
    let told: Vec<Option<String>> = lists(&views)
        .into_iter()
        .map(|(_, list)| list.get(1).and_then(|c| c.cause.clone()))
        .collect();
    // Read again while the watching electops may still hold the change in memory (they
    // write within 100 ms).
    let deadline = Instant::now() + T;
    loop {
        let (later, doc) = history_cause_out(&cell, &ia);
        if later.is_some() && told.contains(&later) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{kind:?}: history says node-a's tenure ended {later:?}, the views {told:?}: {doc:#}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(
        a.said_resigned(),
        "{kind:?}: the leader says it resigned, as in every other scheme: {}",
        a.dump()
    );
}

pub fn store_down_expect(kind: Kind) -> Expect {
    match kind.server_port() {
        None => Expect::Limit("SQLite is a file: there is no server to lose"),
        Some(_) => Expect::Pass,
    }
}

/// The connection markers of every source alternate (see `markers_alternate`).
pub fn markers_ok(obs: &Observers, kind: Kind) {
    if let Err(why) = markers_alternate(&obs.watch.seen) {
        panic!("{kind:?}: watch --json: {why}\n{}", lines(&obs.watch.seen));
    }
}

/// The watch's lines about the cell's source (not an election's).
fn marks(watch: &[Value], kind: &str) -> usize {
    watch.iter().filter(|v| v["kind"] == kind).count()
}

/// (4) The store out of the observers' reach for `OUTAGE` (a frozen proxy: a partition,
/// no reset), while the participants, connected directly, go on renewing: one
/// `disconnected` and one `connected`, no leader change, and fresh views after.
pub fn store_down(kind: Kind) {
    let cell = Cell::new(kind, "store-down", 4);
    let (Expect::Pass, Some(port)) = (store_down_expect(kind), kind.server_port()) else {
        return no_outage(&cell);
    };
    let proxy = Proxy::start(port, Duration::from_secs(120));
    let mut obs = Observers::start(&cell, &cell.source_via(proxy.port()), true);
    let (mut a, mut b, ia, _) = two_nodes(&cell, &mut obs);
    let before = obs.watch.seen.len();
    proxy.freeze();
    let frozen = Instant::now();
    wait_mark(&mut obs, before, "disconnected", OUTAGE + SLACK);
    let noticed = frozen.elapsed();
    std::thread::sleep(OUTAGE.saturating_sub(frozen.elapsed()));
    proxy.thaw();
    wait_mark(&mut obs, before, "connected", T);
    let views = settle(&mut obs, &cell, Some(&ia));
    let list = changes(&views);
    assert_eq!(
        list.len(),
        1,
        "{kind:?}: the holder renewed throughout: {list:?}"
    );
    assert!(a.believes("leader"), "{kind:?}: {}", a.dump());
    assert!(b.believes("follower"), "{kind:?}: {}", b.dump());
    fresh(&cell, &obs.source, &[]);
    // Let a late second marker arrive before counting.
    std::thread::sleep(Duration::from_secs(2));
    obs.watch.pump();
    let during = &obs.watch.seen[before..];
    assert_eq!(
        (marks(during, "disconnected"), marks(during, "connected")),
        (1, 1),
        "{kind:?}: one disconnected and one connected per outage (noticed after {noticed:?}): \
         {}",
        lines(during)
    );
    markers_ok(&obs, kind);
}

/// Waits until the watch printed a `kind` line after its `before`th line.
fn wait_mark(obs: &mut Observers, before: usize, kind: &str, within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        obs.watch.pump();
        if marks(&obs.watch.seen[before..], kind) > 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "no {kind} line within {within:?}: {:#?}",
            &obs.watch.seen[before..]
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// SQLite has no server: over the same time nothing says it was lost, nor a change.
fn no_outage(cell: &Cell) {
    let mut obs = Observers::start(cell, &cell.source, true);
    let (_a, _b, ia, _) = two_nodes(cell, &mut obs);
    let before = obs.watch.seen.len();
    std::thread::sleep(Duration::from_secs(3));
    let views = settle(&mut obs, cell, Some(&ia));
    let during = &obs.watch.seen[before..];
    assert_eq!(marks(during, "disconnected"), 0, "{during:#?}");
    assert_eq!(changes(&views).len(), 1);
}

/// `status --json` over `source` (and `extra` sources): this cell's source read now and
/// not stale; its exit code and the source's id.
pub fn fresh(cell: &Cell, source: &[String], extra: &[String]) -> (i32, String) {
    let out = command(cell.home())
        .args(source)
        .args(extra)
        .args(["status", "--json"])
        .output()
        .expect("run electop status");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "status printed no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let e = find_election(&doc, &cell.election)
        .unwrap_or_else(|| panic!("{:?}: no election in {doc:#}", cell.kind));
    let src = doc["sources"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["id"] == e["source_id"]))
        .unwrap_or_else(|| panic!("no source of the election in {doc:#}"));
    assert!(
        src["state"] == "connected" && src["stale"] == false && e["stale"] == false,
        "{:?}: the source is read and fresh: {src:#}\n{e:#}",
        cell.kind
    );
    let id = src["id"].as_str().unwrap_or_default().to_string();
    (out.status.code().unwrap_or(-1), id)
}

/// A Redis source on a port nobody listens on: a refused connection.
fn closed_source() -> Vec<String> {
    let port = crate::common::free_port();
    vec!["--redis".into(), format!("redis://127.0.0.1:{port}")]
}

/// The watch's lines about `source` from its first `connected` on (what a source says
/// while it first connects is its start, not an outage).
fn since_connected<'a>(seen: &'a [Value], source: &str) -> Vec<&'a Value> {
    seen.iter()
        .filter(|v| v["source_id"] == source && v.get("election").is_none())
        .skip_while(|v| v["kind"] != "connected")
        .collect()
}

/// (5) Another source is down: this one stays fresh in every view, and status exits 3.
pub fn other_source_down(kind: Kind) {
    let cell = Cell::new(kind, "other-down", 5);
    let extra = closed_source();
    let all = [cell.source.clone(), extra.clone()].concat();
    let mut obs = Observers::start(&cell, &all, false);
    let (_a, _b, ia, _) = two_nodes(&cell, &mut obs);
    let (code, id) = fresh(&cell, &cell.source, &extra);
    assert_eq!(
        code, 3,
        "{kind:?}: status exits 3 when some source was not read"
    );
    let m = obs.metrics();
    let up = |v: &str| {
        m.lines()
            .filter(|l| l.starts_with("electop_source_up{"))
            .find(|l| l.contains(&format!("source=\"{v}\"")))
            .map(|l| l.ends_with(" 1") || l.ends_with(" 1.0"))
    };
    let other = if id == "redis1" { "redis2" } else { "redis1" };
    assert_eq!(
        (up(&id), up(other)),
        (Some(true), Some(false)),
        "{kind:?}: /metrics has {id} up and {other} down"
    );
    settle(&mut obs, &cell, Some(&ia));
    let ours = since_connected(&obs.watch.seen, &id);
    let gone: Vec<&&Value> = ours
        .iter()
        .filter(|v| v["kind"] == "stale" || v["kind"] == "disconnected")
        .collect();
    assert!(
        gone.is_empty(),
        "{kind:?}: nothing said {id} went away: {gone:#?}\nwatch saw:\n{}",
        lines(&obs.watch.seen)
    );
    markers_ok(&obs, kind);
}

fn lines(seen: &[Value]) -> String {
    seen.iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

/// What a release then another's quick acquire can show in each store.
pub fn release_expect(kind: Kind) -> Expect {
    match kind {
        Kind::redis_events | Kind::etcd_lease_key | Kind::kubernetes => Expect::Pass,
        Kind::etcd_election
        | Kind::zookeeper
        | Kind::zookeeper_kazoo
        | Kind::pg_advisory
        | Kind::mysql_lock => Expect::Limit(
            "the next in line holds it in the same step as the release: one change, \
             no moment without a leader",
        ),
        _ => Expect::Limit(
            "polling cannot see a release and the next acquire between two polls: one \
             change or two, never another holder",
        ),
    }
}

/// (6) A release, then another's acquire quickly after: where the store gives the two
/// steps (a delete, then a put or SET: written here with the store's own client, a few ms
/// apart), every view says lost, then elected; where it has a line, one handover; where
/// it is polled, one change or two, and nothing else.
pub fn release_acquire(kind: Kind) {
    let cell = Cell::new(kind, "release", 6);
    let mut obs = Observers::start(&cell, &cell.source, true);
    let _nodes;
    let (ia, ib) = match kind {
        Kind::redis_events | Kind::redis_poll | Kind::etcd_lease_key => {
            let mut writer = crate::stores::Writer::new(&cell);
            writer.acquire("node-a");
            settle(&mut obs, &cell, Some("node-a"));
            writer.release_then_acquire("node-b");
            ("node-a".to_string(), "node-b".to_string())
        }
        _ => {
            let (mut a, b, ia, ib) = two_nodes(&cell, &mut obs);
            a.resign(Duration::from_secs(3));
            _nodes = (a, b);
            (ia, ib)
        }
    };
    let views = settle_as(&mut obs, &cell, Some(&ib), departure_agreement(kind));
    let expect = release_expect(kind);
    each_list(kind, &views, &format!("{expect:?}"), |after| {
        match (expect, kind.has_line()) {
            (Expect::Pass, _) => gap(&ia, &ib, after),
            (Expect::Limit(_), true) => handover(&ia, &ib, after),
            (Expect::Limit(_), false) => handover(&ia, &ib, after) || gap(&ia, &ib, after),
        }
    });
    let after = &changes(&views)[1..];
    println!("{kind:?}: release then acquire: {after:?}");
}

/// (13) The leader's tenure ends (SIGKILL; its lease, session or term runs out) while a
/// `watch` and `serve` watch, and nobody takes over; then they stop. A fresh `status
/// --json` and `history ELECTION --json` still list the election: no leader, its last
/// change that tenure's end, with its cause. What one electop saw, the next one tells,
/// whichever store the election lives in.
pub fn remembered(kind: Kind) {
    let cell = Cell::new(kind, "remembered", 13);
    let mut obs = Observers::start(&cell, &cell.source, true);
    let mut a = cell.participant("node-a");
    a.wait_leader(T);
    let ia = cell.shown(&mut a);
    settle(&mut obs, &cell, Some(&ia));
    a.crash();
    settle_as(&mut obs, &cell, None, departure_agreement(kind));
    drop(obs);
    let ended = crash_cause(kind);
    let ends = |h: &Value| {
        let last = h.as_array().and_then(|h| h.last());
        last.is_some_and(|c| {
            c["to"].is_null()
                && c["from"].as_str().is_some_and(|f| names(f, &ia))
                && c["cause"] == ended
        })
    };
    let doc = json_of(&cell, &["status", "--json"]);
    let e = find_election(&doc, &cell.election)
        .unwrap_or_else(|| panic!("{kind:?}: a fresh status lists the election: {doc:#}"));
    assert!(e["leader"].is_null(), "{kind:?}: no leader: {e:#}");
    assert!(ends(&e["history"]), "{kind:?}: ends {ia} ({ended}): {e:#}");
    let doc = json_of(&cell, &["history", &cell.election, "--json"]);
    let e = find_election(&doc, &cell.election)
        .unwrap_or_else(|| panic!("{kind:?}: history tells the election: {doc:#}"));
    let tenures = e["segments"].as_array().into_iter().flatten();
    let last = tenures.rev().find(|s| s["kind"] == "tenure");
    assert!(
        e["leader"].is_null()
            && last.is_some_and(|t| {
                t["holder"].as_str().is_some_and(|h| names(h, &ia)) && t["cause_out"] == ended
            }),
        "{kind:?}: history: no leader, the last tenure {ia}'s, ended {ended}: {e:#}"
    );
}

/// How `history ELECTION --json`, run now, says the last tenure of `holder` ended; with
/// what it printed.
fn history_cause_out(cell: &Cell, holder: &str) -> (Option<String>, Value) {
    let doc = json_of(cell, &["history", &cell.election, "--json"]);
    let segments = find_election(&doc, &cell.election).and_then(|e| e["segments"].as_array());
    let tenure =
        segments.into_iter().flatten().rev().find(|s| {
            s["kind"] == "tenure" && s["holder"].as_str().is_some_and(|h| names(h, holder))
        });
    let cause = tenure.and_then(|t| t["cause_out"].as_str().map(str::to_string));
    (cause, doc)
}

/// What electop prints over the cell's source when run with `args`, as JSON.
fn json_of(cell: &Cell, args: &[&str]) -> Value {
    let out = command(cell.home())
        .args(&cell.source)
        .args(args)
        .output()
        .expect("run electop");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{:?}: {args:?} printed no JSON ({e}): {}",
            cell.kind,
            String::from_utf8_lossy(&out.stderr)
        )
    })
}
