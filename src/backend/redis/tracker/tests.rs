use super::*;
use crate::model::EventKind;
use std::time::Duration;

/// The read model's default retention.
const KEEP: Duration = Duration::from_secs(600);

fn read(key: &str, held: Option<(&str, i64)>, at: Instant) -> Read {
    Read {
        key: key.as_bytes().to_vec(),
        held: held.map(|(v, p)| (v.as_bytes().to_vec(), p)),
        at,
    }
}

fn kinds(a: &Changes) -> Vec<(EventKind, Option<Cause>)> {
    a.events.iter().map(|e| (e.kind, e.cause)).collect()
}

#[test]
fn elected_renewed_expired_and_taken_again() {
    let t0 = Instant::now();
    let wall = SystemTime::now();
    let mut t = RedisTracker::new(0, "redis x".into(), 10, Default::default());
    t.load(
        &[read("leader:jobs", Some(("tok-a", 10_000)), t0)],
        SystemTime::UNIX_EPOCH,
        KEEP,
    );
    let e = &t.elections()[0];
    assert_eq!(e.leader.as_ref().map(|c| c.id.as_str()), Some("tok-a"));
    assert_eq!(
        e.leader
            .as_ref()
            .and_then(|c| c.ttl)
            .map(|d| d.remaining_ms),
        Some(10_000)
    );
    // Read again 1 s later at 9 s: the countdown agrees, nothing to send.
    let t1 = t0 + Duration::from_secs(1);
    let a = t.apply(
        &read("leader:jobs", Some(("tok-a", 9_000)), t1),
        Gone::Unseen,
        wall,
    );
    assert!(a.changed.is_empty() && a.events.is_empty());
    // Renewed to 10 s: the new reading, no leader change.
    let a = t.apply(
        &read("leader:jobs", Some(("tok-a", 10_000)), t1),
        Gone::Unseen,
        wall,
    );
    assert_eq!(a.changed.len(), 1);
    assert!(a.events.is_empty());
    // Gone after its countdown ran out, not told why: expired.
    let t2 = t1 + Duration::from_secs(11);
    let a = t.resync(&[], t2, wall, false);
    assert_eq!(
        kinds(&a),
        [(EventKind::LeaderLost, Some(Cause::LeaseExpired))]
    );
    let a = t.apply(
        &read("leader:jobs", Some(("tok-b", 10_000)), t2),
        Gone::Unseen,
        wall,
    );
    assert_eq!(
        kinds(&a),
        [(EventKind::LeaderElected, Some(Cause::Elected))]
    );
}

#[test]
fn released_with_time_left_overwritten_and_told_causes() {
    let t0 = Instant::now();
    let wall = SystemTime::now();
    let mut t = RedisTracker::new(0, "redis x".into(), 10, Default::default());
    t.load(
        &[read("k", Some(("a", 10_000)), t0)],
        SystemTime::UNIX_EPOCH,
        KEEP,
    );
    // A poll cannot tell a release and an acquire from a write over the key: it says so.
    let a = t.resync(&[read("k", Some(("b", 10_000)), t0)], t0, wall, false);
    assert_eq!(
        kinds(&a),
        [(EventKind::LeaderChanged, Some(Cause::Unknown))]
    );
    // A write's event with no removal told before it: written over.
    let a = t.apply(&read("k", Some(("b2", 10_000)), t0), Gone::Unseen, wall);
    assert_eq!(
        kinds(&a),
        [(EventKind::LeaderChanged, Some(Cause::TakenOver))]
    );
    let a = t.resync(&[], t0, wall, false);
    assert_eq!(kinds(&a), [(EventKind::LeaderLost, Some(Cause::Resigned))]);
    t.apply(&read("k", Some(("c", 10_000)), t0), Gone::Unseen, wall);
    let a = t.apply(&read("k", Some(("d", 5_000)), t0), Gone::Expired, wall);
    assert_eq!(
        kinds(&a),
        [(EventKind::LeaderChanged, Some(Cause::LeaseExpired))]
    );
    let a = t.apply(&read("k", None, t0), Gone::Evicted, wall);
    assert_eq!(kinds(&a), [(EventKind::LeaderLost, Some(Cause::Deleted))]);
    // Nothing there, nothing known: nothing to say.
    let a = t.apply(&read("other", None, t0), Gone::Deleted, wall);
    assert!(a.changed.is_empty() && a.events.is_empty());
}

/// Reconnected after an outage longer than the TTL: the same token is no change (its
/// countdown ran out while nobody watched); a key gone or held by another token is a
/// change whose cause is not known; a key without expiry that went was deleted.
#[test]
fn after_a_gap_the_same_token_is_no_change_and_causes_are_not_guessed() {
    let t0 = Instant::now();
    let wall = SystemTime::now();
    let mut t = RedisTracker::new(0, "redis x".into(), 10, Default::default());
    let keys = [("same", "a"), ("gone", "b"), ("other", "c")];
    let mut first: Vec<Read> = keys
        .iter()
        .map(|(k, v)| read(k, Some((v, 2_000)), t0))
        .collect();
    first.push(read("forever", Some(("d", -1)), t0));
    t.load(&first, SystemTime::UNIX_EPOCH, KEEP);
    let later = t0 + Duration::from_secs(5);
    let again = [
        read("same", Some(("a", 2_000)), later),
        read("other", Some(("z", 2_000)), later),
    ];
    let a = t.resync(&again, later, wall, true);
    let mut got: Vec<_> = a
        .events
        .iter()
        .map(|e| (e.election.clone().unwrap_or_default(), e.kind, e.cause))
        .collect();
    got.sort_by(|x, y| x.0.cmp(&y.0));
    assert_eq!(
        got,
        [
            (
                "forever".into(),
                EventKind::LeaderLost,
                Some(Cause::Deleted)
            ),
            ("gone".into(), EventKind::LeaderLost, Some(Cause::Unknown)),
            (
                "other".into(),
                EventKind::LeaderChanged,
                Some(Cause::Unknown)
            ),
        ]
    );
    // The same token's countdown is the new reading.
    let same = a
        .changed
        .iter()
        .find(|e| e.name == "same")
        .expect("renewed");
    let ttl = same.leader.as_ref().and_then(|l| l.ttl).expect("ttl");
    assert_eq!((ttl.remaining_ms, ttl.read_at), (2_000, later));
    // Polled (no gap), the same token after its countdown ran out is no change either.
    let a = t.resync(&again, later + Duration::from_secs(5), wall, false);
    assert!(a.events.is_empty(), "{:?}", a.events);
}

/// Events that predate the full read, re-read: a removal whose key the read already
/// shows held again by the same token is no change.
#[test]
fn an_early_removal_read_with_the_same_token_is_no_change() {
    let t0 = Instant::now();
    let wall = SystemTime::now();
    let mut t = RedisTracker::new(0, "redis x".into(), 10, Default::default());
    t.load(
        &[read("k", Some(("a", 2_000)), t0)],
        SystemTime::UNIX_EPOCH,
        KEEP,
    );
    for gone in [Gone::Expired, Gone::Deleted] {
        let a = t.apply(&read("k", Some(("a", 2_000)), t0), gone, wall);
        assert!(a.events.is_empty(), "{gone:?}: {:?}", a.events);
    }
}

#[test]
fn a_key_without_expiry_is_noted_and_odd_tokens_are_escaped_and_cut() {
    let t0 = Instant::now();
    let mut t = RedisTracker::new(0, "redis x".into(), 10, Default::default());
    let huge = "x".repeat(10_000);
    t.load(
        &[
            read("forever", Some(("me", -1)), t0),
            Read {
                key: b"bin".to_vec(),
                held: Some((b"\xff\x1b[2J".to_vec(), 5_000)),
                at: t0,
            },
            read("huge", Some((&huge, 5_000)), t0),
        ],
        SystemTime::UNIX_EPOCH,
        KEEP,
    );
    let es = t.elections();
    let id = |n: &str| {
        let e = es.iter().find(|e| e.name == n).expect(n);
        e.leader.as_ref().map(|c| c.id.clone()).unwrap_or_default()
    };
    assert_eq!(id("bin"), "\\xff\\u{1b}[2J");
    assert_eq!(
        id("huge").len(),
        10_000,
        "whole: text output cuts it, the JSON does not"
    );
    let f = es.iter().find(|e| e.name == "forever").expect("forever");
    assert_eq!(f.notes[0].text, "no expiry: held until deleted");
    assert!(f.leader.as_ref().is_some_and(|c| c.ttl.is_none()));
    let wall = SystemTime::now();
    let a = t.resync(&[], t0 + Duration::from_secs(60), wall, false);
    let causes: Vec<_> = a
        .events
        .iter()
        .map(|e| (e.election.clone(), e.cause))
        .collect();
    assert!(
        causes.contains(&(Some("forever".into()), Some(Cause::Deleted))),
        "{causes:?}"
    );
}

mod deposed_tests {
    use super::super::*;
    use crate::backend::forced::Marks as _;
    use crate::model::EventKind;
    use std::time::Duration;

    fn mark() -> ForcedMark {
        ForcedMark {
            cause: Cause::ForcedReelection,
            by: "this electop".into(),
            before: Some("a".into()),
        }
    }

    /// Our re-election: the removed holder is deposed while its key's time would have run,
    /// then settled; one that takes the lock again is no longer deposed.
    #[test]
    fn a_forced_removal_deposes_the_holder_until_its_time_runs_out() {
        let t0 = Instant::now();
        let wall = SystemTime::now();
        let mut t = RedisTracker::new(0, "redis x".into(), 10, Default::default());
        let read = |v: Option<&str>| Read {
            key: b"k".to_vec(),
            held: v.map(|v| (v.as_bytes().to_vec(), 3_000)),
            at: t0,
        };
        t.load(&[read(Some("a"))], SystemTime::UNIX_EPOCH, super::KEEP);
        assert!(
            t.forced("k", Some(mark()), t0, wall).is_none(),
            "nothing changed yet"
        );
        let a = t.apply(&read(None), Gone::Deleted, wall);
        assert_eq!(a.events[0].cause, Some(Cause::ForcedReelection));
        assert_eq!(a.events[0].kind, EventKind::LeaderLost);
        let e = &a.changed[0];
        assert_eq!(e.deposed.as_ref().map(|d| d.id.as_str()), Some("a"));
        assert!(e.deposed_hold(t0).is_some_and(|h| h.contains("PTTL had")));
        assert!(
            t.settle(t0 + Duration::from_secs(1)).is_empty(),
            "still within its time"
        );
        let settled = t.settle(t0 + Duration::from_secs(4));
        assert!(settled.len() == 1 && settled[0].deposed.is_none());
        // Deposed again, then it takes the lock again: it knows.
        t.apply(&read(Some("a")), Gone::Unseen, wall);
        t.forced("k", Some(mark()), Instant::now(), wall);
        t.apply(&read(None), Gone::Deleted, wall);
        let a = t.apply(&read(Some("a")), Gone::Unseen, wall);
        assert!(a.changed[0].deposed.is_none());
    }

    /// Another electop's re-election, from the audit log at start: the removed holder is
    /// deposed for what was left of its countdown (the election made up when its key is
    /// gone); an action whose countdown has ended, or a name shown escaped, is not.
    #[test]
    fn the_audit_log_deposes_the_holder_another_electop_removed() {
        let t0 = Instant::now();
        let wall = SystemTime::now();
        let done = |election: &str, ttl: i64, ago_ms: u64| Done {
            pid: Some(1),
            source: "redis x".into(),
            election: election.into(),
            cause: Cause::ForcedReelection,
            by: "someone".into(),
            before: Some("old".into()),
            before_lease: None,
            before_session: None,
            before_ttl_ms: Some(ttl),
            at: Some(wall - Duration::from_millis(ago_ms)),
        };
        let mut t = RedisTracker::new(0, "redis x".into(), 10, Default::default());
        t.load(
            &[Read {
                key: b"held".to_vec(),
                held: Some((b"new".to_vec(), 9_000)),
                at: t0,
            }],
            SystemTime::UNIX_EPOCH,
            super::KEEP,
        );
        t.audited(
            &[
                done("held", 5_000, 1_000),
                done("gone", 5_000, 2_000),
                done("over", 1_000, 2_000),
                done("bin\\xff", 5_000, 0),
            ],
            t0,
            wall,
        );
        let es = t.elections();
        let find = |n: &str| es.iter().find(|e| e.name == n);
        let held = find("held").expect("held");
        let d = held.deposed.as_ref().expect("deposed");
        assert_eq!(
            (d.id.as_str(), d.ttl.map(|t| t.remaining_ms)),
            ("old", Some(4_000))
        );
        assert_eq!(held.leader.as_ref().map(|l| l.id.as_str()), Some("new"));
        let gone = find("gone").expect("made up");
        assert!(gone.leader.is_none() && gone.deposed.is_some());
        assert!(find("over").is_none() && find("bin\\xff").is_none());
        assert_eq!(t.settle(t0 + Duration::from_millis(4_001)).len(), 2);
    }
}
