//! The tracker's decisions, on znodes as a read gives them.

use super::*;
use crate::backend::forced::Marks as _;

fn node(path: &str, data: &str, czxid: i64) -> Znode {
    Znode {
        path: path.into(),
        data: data.as_bytes().to_vec(),
        czxid,
        mzxid: czxid,
        ephemeral_owner: 0x100 + czxid,
    }
}

fn none() -> HashSet<i64> {
    HashSet::new()
}

/// Leader changes only (the line's joins and leaves are checked on their own).
fn leaders(a: &Changes) -> Vec<(EventKind, Option<&str>, Option<&str>)> {
    kinds(a)
        .into_iter()
        .filter(|(k, _, _)| !matches!(k, EventKind::CandidateJoined | EventKind::CandidateLeft))
        .collect()
}

fn tracker() -> ZkTracker {
    ZkTracker::new(0, "zk1".into(), "/election".into(), 10)
}

fn kinds(a: &Changes) -> Vec<(EventKind, Option<&str>, Option<&str>)> {
    a.events
        .iter()
        .map(|e| (e.kind, e.from.as_deref(), e.to.as_deref()))
        .collect()
}

#[test]
fn the_first_read_reports_no_change() {
    let mut t = tracker();
    let got = t.load(&[
        node("/election/jobs/a__lock__0000000000", "n1", 10),
        node("/election/jobs/b__lock__0000000001", "n2", 11),
    ]);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].transitions, 0);
    assert_eq!(got[0].leader.as_ref().map(|l| l.id.as_str()), Some("n1"));
}

fn causes(a: &Changes) -> Vec<Option<Cause>> {
    a.events
        .iter()
        .filter(|e| e.cause.is_some())
        .map(|e| e.cause)
        .collect()
}

#[test]
fn the_next_in_line_leads_when_the_leader_node_goes() {
    let mut t = tracker();
    let second = node("/election/jobs/b__lock__0000000001", "n2", 11);
    t.load(&[
        node("/election/jobs/a__lock__0000000000", "n1", 10),
        second.clone(),
    ]);
    let got = t.apply(
        "/election/jobs",
        std::slice::from_ref(&second),
        SystemTime::now(),
        &none(),
    );
    assert_eq!(
        kinds(&got),
        [
            (EventKind::LeaderChanged, Some("n1"), Some("n2")),
            (EventKind::CandidateLeft, Some("n1"), None),
        ]
    );
    // Its session holds nothing else: gone, and ZooKeeper does not say why.
    assert_eq!(causes(&got), [Some(Cause::NodeGone)]);
    assert_eq!(got.events[0].revision, Some(11));
    assert_eq!(got.events[1].detail.as_deref(), Some("session 0x10a"));
    assert_eq!(got.changed[0].candidates.len(), 1);
    let again = t.apply("/election/jobs", &[second], SystemTime::now(), &none());
    assert!(
        again.changed.is_empty() && again.events.is_empty(),
        "nothing new"
    );
    let gone = t.apply("/election/jobs", &[], SystemTime::now(), &none());
    assert_eq!(leaders(&gone), [(EventKind::LeaderLost, Some("n2"), None)]);
    assert!(gone.changed[0].is_empty(), "listed, empty");
}

/// A session still holding a node elsewhere is alive: its leader node was deleted,
/// which is a resignation (as etcd calls a delete with the lease alive).
#[test]
fn a_leader_node_deleted_while_its_session_lives_is_resigned() {
    let mut t = tracker();
    let mut elsewhere = node("/election/other/x__lock__0000000000", "n1", 12);
    let leader = node("/election/jobs/a__lock__0000000000", "n1", 10);
    elsewhere.ephemeral_owner = leader.ephemeral_owner;
    let second = node("/election/jobs/b__lock__0000000001", "n2", 11);
    t.load(&[leader.clone(), second.clone(), elsewhere.clone()]);
    let (session, others) = t
        .deleted_leader_session("/election/jobs", &leader.path)
        .expect("the leader's node went");
    assert_eq!(session, leader.ephemeral_owner);
    assert_eq!(others, [elsewhere.path.clone()]);
    assert!(
        t.deleted_leader_session("/election/jobs", &second.path)
            .is_none(),
        "not the leader's node"
    );
    let held = HashSet::from([session]);
    let got = t.deleted(&leader.path, SystemTime::now(), &held);
    assert_eq!(causes(&got), [Some(Cause::Resigned)]);
    assert!(
        t.deleted_leader_session("/election/jobs", &leader.path)
            .is_none()
    );
}

#[test]
fn a_new_waiter_changes_the_line_but_not_the_leader() {
    let mut t = tracker();
    let first = node("/election/jobs/a__lock__0000000000", "n1", 10);
    t.load(std::slice::from_ref(&first));
    let got = t.apply(
        "/election/jobs",
        &[first, node("/election/jobs/c__lock__0000000002", "n3", 12)],
        SystemTime::now(),
        &none(),
    );
    assert_eq!(
        kinds(&got),
        [(EventKind::CandidateJoined, None, Some("n3"))]
    );
    assert_eq!(got.events[0].revision, Some(12), "the zxid that created it");
    assert_eq!(got.changed[0].candidates.len(), 2);
}

#[test]
fn a_new_election_elects_and_a_resync_finds_what_changed_meanwhile() {
    let mut t = tracker();
    let got = t.apply(
        "/election/new",
        &[node("/election/new/x__lock__0000000000", "n9", 20)],
        SystemTime::now(),
        &none(),
    );
    assert_eq!(
        kinds(&got),
        [
            (EventKind::LeaderElected, None, Some("n9")),
            (EventKind::CandidateJoined, None, Some("n9")),
        ]
    );
    // While away, that election emptied and another appeared.
    let back = t.resync(
        &[node("/election/other/_c_u-latch-0000000003", "m1", 30)],
        SystemTime::now(),
    );
    // In zxid order: n9's node (zxid 20) before m1's (30).
    assert_eq!(
        leaders(&back),
        [
            (EventKind::LeaderLost, Some("n9"), None),
            (EventKind::LeaderElected, None, Some("m1")),
        ]
    );
    // Changes of the gap went unseen: only the result is known.
    assert_eq!(causes(&back), [Some(Cause::Unknown), Some(Cause::Elected)]);
}

/// Changes found by a re-read are told in the order ZooKeeper made them (zxid), not in
/// the order of the elections' paths.
#[test]
fn a_resync_reports_elections_in_zxid_order() {
    let mut t = tracker();
    t.load(&[
        node("/election/a/x__lock__0000000000", "a1", 10),
        node("/election/b/x__lock__0000000000", "b1", 11),
    ]);
    let back = t.resync(
        &[
            node("/election/a/y__lock__0000000001", "a2", 40),
            node("/election/b/y__lock__0000000001", "b2", 30),
        ],
        SystemTime::now(),
    );
    assert_eq!(
        leaders(&back),
        [
            (EventKind::LeaderChanged, Some("b1"), Some("b2")),
            (EventKind::LeaderChanged, Some("a1"), Some("a2")),
        ]
    );
}

/// A resync over many elections whose nodes come in no particular order (a read gives
/// them parent by parent, as they arrive): each election is judged on its own nodes only,
/// an unchanged one says nothing, and one whose nodes all went is known to have lost its
/// leader.
#[test]
fn a_resync_of_many_elections_judges_each_on_its_own_nodes() {
    const N: i64 = 300;
    let path = |e: i64, c: i64| format!("/election/e{e:04}/x__lock__{c:010}");
    let first = |e: i64| node(&path(e, 0), &format!("{e}-0"), 10 + e);
    let second = |e: i64| node(&path(e, 1), &format!("{e}-1"), 10_000 + e);
    let mut t = tracker();
    // Every election's first candidates, then every second one: no election's nodes
    // are next to each other.
    let all: Vec<Znode> = (0..N).map(first).chain((0..N).map(second)).collect();
    assert_eq!(t.load(&all).len(), N as usize);
    // Meanwhile every third election lost its leader, and the last lost everyone.
    let now: Vec<Znode> = (0..N - 1)
        .rev()
        .filter(|e| e % 3 != 0)
        .map(first)
        .chain((0..N - 1).map(second))
        .collect();
    let back = t.resync(&now, SystemTime::now());
    let changed: Vec<(String, Option<String>, usize)> = back
        .changed
        .iter()
        .map(|e| {
            let leader = e.leader.as_ref().map(|l| l.id.clone());
            (e.name.clone(), leader, e.candidates.len())
        })
        .collect();
    let mut want: Vec<(String, Option<String>, usize)> = (0..N - 1)
        .filter(|e| e % 3 == 0)
        .map(|e| (format!("e{e:04}"), Some(format!("{e}-1")), 1))
        .collect();
    want.push((format!("e{:04}", N - 1), None, 0));
    let mut got = changed;
    got.sort();
    assert_eq!(got, want);
    let lost = leaders(&back)
        .iter()
        .filter(|(k, _, _)| *k == EventKind::LeaderLost)
        .count();
    assert_eq!(lost, 1, "only the emptied election has no leader");
}

#[test]
fn a_leader_removed_by_an_admin_action_is_deposed_until_its_session_is_gone() {
    let mut t = tracker();
    let second = node("/election/jobs/b__lock__0000000001", "n2", 11);
    t.load(&[
        node("/election/jobs/a__lock__0000000000", "n1", 10),
        second.clone(),
    ]);
    let ours = ForcedMark {
        cause: Cause::ForcedReelection,
        by: crate::backend::BY_US.into(),
        before: None,
    };
    t.forced("jobs", Some(ours), Instant::now(), SystemTime::now());
    let got = t.apply("/election/jobs", &[second], SystemTime::now(), &none());
    let e = &got.changed[0];
    assert_eq!(e.deposed.as_ref().map(|d| d.id.as_str()), Some("n1"));
    assert_eq!(e.deposed_session, Some(SessionCheck::Checking));
    let h = e.history.back().expect("a change");
    assert_eq!(h.cause, Cause::ForcedReelection);
    let detail = got.events[0].detail.as_deref().unwrap_or("");
    assert!(
        detail.contains("n1 deposed") && detail.contains("0x10a"),
        "{detail}"
    );
    // Listed alive by the member, then gone from every member past its timeout.
    let now = Instant::now();
    let alive = Listing {
        sessions: [(0x10a, Some(400))].into_iter().collect(),
        complete: true,
        authoritative: false,
    };
    let checked = t.sessions_listed(&alive, now);
    assert_eq!(
        checked.changed[0].deposed_session,
        Some(SessionCheck::Alive)
    );
    assert_eq!(
        checked.changed[0].deposed_session_text(true).as_deref(),
        Some("session 0x10a alive")
    );
    let none = Listing {
        sessions: Default::default(),
        complete: true,
        authoritative: false,
    };
    assert!(t.sessions_listed(&none, now).changed.is_empty(), "not yet");
    let later = now + std::time::Duration::from_secs(2);
    let gone = t.sessions_listed(&none, later);
    assert!(gone.changed[0].deposed.is_none());
    assert_eq!(gone.events[0].kind, EventKind::CandidateLeft);
    assert_eq!(gone.events[0].from.as_deref(), Some("n1"));
}

#[test]
fn a_leader_whose_node_goes_without_an_action_is_not_deposed() {
    let mut t = tracker();
    let second = node("/election/jobs/b__lock__0000000001", "n2", 11);
    t.load(&[
        node("/election/jobs/a__lock__0000000000", "n1", 10),
        second.clone(),
    ]);
    let got = t.apply("/election/jobs", &[second], SystemTime::now(), &none());
    assert!(got.changed[0].deposed.is_none());
    // Another electop's action, learnt after the change: relabelled and deposed.
    let theirs = ForcedMark {
        cause: Cause::ForcedResign,
        by: "ops@h (another electop)".into(),
        before: Some("n1".into()),
    };
    let e = t
        .forced("jobs", Some(theirs), Instant::now(), SystemTime::now())
        .expect("relabelled");
    assert_eq!(e.history.back().map(|h| h.cause), Some(Cause::ForcedResign));
    assert_eq!(e.deposed.as_ref().map(|d| d.id.as_str()), Some("n1"));
}

fn entry(at: u64, zxid: i64, from: Option<&str>, to: Option<&str>) -> crate::model::HistoryEntry {
    crate::model::HistoryEntry {
        at: Some(SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(at)),
        revision: Some(zxid),
        from: from.map(str::to_string),
        to: to.map(str::to_string),
        cause: Cause::NodeGone,
        by: None,
    }
}

#[test]
fn the_record_of_earlier_runs_is_the_history_and_a_change_since_is_seen_now() {
    let now = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1000);
    let past = BTreeMap::from([
        // The record ends with n1 leading from node zxid 10, as it still does: no change.
        ("jobs".to_string(), vec![entry(5, 10, None, Some("n1"))]),
        // It ended with n1 leading cron from zxid 20; n1 leads now from another node.
        ("cron".to_string(), vec![entry(6, 20, None, Some("n1"))]),
        // Gone while no electop watched.
        ("old".to_string(), vec![entry(7, 30, None, Some("x"))]),
    ]);
    let mut t = tracker();
    t.load(&[
        node("/election/jobs/a__lock__0000000000", "n1", 10),
        node("/election/cron/a__lock__0000000000", "n1", 40),
    ]);
    let got = t.restore(&past, now);
    let e = |name: &str| t.elections.get(name).expect(name).clone();
    assert_eq!(e("jobs").history.len(), 1);
    assert_eq!(e("jobs").transitions, 1);
    assert_eq!(e("cron").history.len(), 2);
    assert_eq!(e("cron").history[1].cause, Cause::Unknown);
    assert_eq!(e("cron").history[1].at, Some(now), "seen at this read");
    assert!(e("old").leader.is_none());
    assert_eq!(
        leaders(&got),
        [
            (EventKind::LeaderChanged, Some("n1"), Some("n1")),
            (EventKind::LeaderLost, Some("x"), None),
        ]
    );
    assert!(causes(&got).iter().all(|c| *c == Some(Cause::Unknown)));
}

/// Two nodes deleted at once come as two events: each is a step, so the leadership passes
/// through the second node's tenure (n1 -> n2 -> n3), as the store had it.
#[test]
fn deletions_are_applied_one_at_a_time_in_order() {
    let mut t = tracker();
    let (a, b, c) = (
        node("/election/jobs/a__lock__0000000000", "n1", 10),
        node("/election/jobs/b__lock__0000000001", "n2", 11),
        node("/election/jobs/c__lock__0000000002", "n3", 12),
    );
    t.load(&[a.clone(), b.clone(), c.clone()]);
    let mut got = t.deleted(&a.path, SystemTime::now(), &none());
    got.events
        .extend(t.deleted(&b.path, SystemTime::now(), &none()).events);
    assert_eq!(
        leaders(&got),
        [
            (EventKind::LeaderChanged, Some("n1"), Some("n2")),
            (EventKind::LeaderChanged, Some("n2"), Some("n3")),
        ]
    );
    // A deletion of a node not known (its creation read after it was gone) is no step.
    assert!(
        t.deleted(&a.path, SystemTime::now(), &none())
            .events
            .is_empty()
    );
    // The last one goes: lost; a new one written: elected, with the data read for it.
    let lost = t.deleted(&c.path, SystemTime::now(), &none());
    assert_eq!(leaders(&lost), [(EventKind::LeaderLost, Some("n3"), None)]);
    let d = node("/election/jobs/d__lock__0000000003", "n4", 13);
    let got = t.written("/election/jobs", vec![d], SystemTime::now());
    assert_eq!(
        leaders(&got),
        [(EventKind::LeaderElected, None, Some("n4"))]
    );
}

/// At start, from the audit log: an action taken while no electop watched removed n1 (its
/// session 0x10a). The change this first read sees is the action's; n1 is deposed, alive
/// where a member lists its session, untold where none lists sessions, not shown where
/// every member answered without it.
#[test]
fn an_action_before_start_deposes_its_holder_and_labels_the_change_it_made() {
    use crate::admin::audit_tail::Done;
    let now = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1000);
    let done = Done {
        pid: Some(1),
        source: "zk1".into(),
        election: "jobs".into(),
        cause: Cause::ForcedReelection,
        by: "ops@host".into(),
        before: Some("n1".into()),
        before_lease: None,
        before_session: Some("0x10a".into()),
        before_ttl_ms: None,
        at: Some(now - std::time::Duration::from_secs(5)),
    };
    let listing = |sessions: &[i64], complete: bool| Listing {
        sessions: sessions.iter().map(|s| (*s, Some(3000))).collect(),
        complete,
        authoritative: false,
    };
    let cases = [
        (listing(&[0x10a], true), Some(SessionCheck::Alive)),
        (listing(&[], false), Some(SessionCheck::CannotTell)),
        (listing(&[], true), None),
    ];
    for (members, check) in cases {
        let mut t = tracker();
        t.load(&[node("/election/jobs/b__lock__0000000001", "n2", 11)]);
        let past = BTreeMap::from([("jobs".to_string(), vec![entry(5, 10, None, Some("n1"))])]);
        let mut seen = t.restore(&past, now);
        t.audited(
            std::slice::from_ref(&done),
            &members,
            Instant::now(),
            &mut seen,
        );
        let e = t.elections.get("jobs").expect("jobs").clone();
        assert_eq!(e.deposed_session, check, "{members:?}");
        assert_eq!(
            e.deposed.as_ref().map(|d| d.id.as_str()),
            check.map(|_| "n1")
        );
        let h = e.history.back().expect("the change seen");
        assert_eq!(
            (h.cause, h.by.as_deref()),
            (Cause::ForcedReelection, Some("ops@host"))
        );
        let ev = seen
            .events
            .iter()
            .find(|ev| ev.kind == EventKind::LeaderChanged);
        assert_eq!(ev.and_then(|ev| ev.cause), Some(Cause::ForcedReelection));
        let sent = seen
            .changed
            .iter()
            .find(|c| c.name == "jobs")
            .expect("sent");
        assert_eq!(sent.deposed_session, check, "what is sent is what is kept");
    }
}
