use super::*;
use crate::model::EventKind;

const KEY: &str = "default/jobs";

fn tracker() -> KubeTracker {
    KubeTracker::new(0, "kube1".into(), 50, BTreeMap::new())
}

fn read(holder: &str, rv: u32, renew: SystemTime) -> Read {
    Read {
        key: KEY.into(),
        holder: Some(holder.to_string()).filter(|h| !h.is_empty()),
        duration_s: Some(15),
        renew: Some(renew),
        acquire: Some(renew),
        transitions: Some(0),
        preferred: None,
        resource_version: rv.to_string(),
    }
}

fn kinds(c: &Changes) -> Vec<(EventKind, Option<Cause>)> {
    c.events.iter().map(|e| (e.kind, e.cause)).collect()
}

fn leader(t: &KubeTracker) -> Option<String> {
    t.elections[KEY].leader.as_ref().map(|l| l.id.clone())
}

#[test]
fn a_listed_lease_counts_down_from_its_renew_time_at_most_its_duration() {
    let (now, wall) = (Instant::now(), SystemTime::now());
    let mut t = tracker();
    let renewed = wall - Duration::from_secs(5);
    let out = t.load(
        vec![read("a", 1, renewed)],
        (now, wall),
        Duration::from_secs(60),
    );
    assert!(out.events.is_empty(), "the first read sets the scene");
    let ttl = t.elections[KEY]
        .leader
        .as_ref()
        .and_then(|l| l.ttl)
        .expect("ttl");
    assert_eq!((ttl.granted_ms, ttl.remaining_ms), (15_000, 10_000));
    // The writer's clock ahead: never more than the duration.
    let mut t = tracker();
    let ahead = wall + Duration::from_secs(30);
    t.load(
        vec![read("a", 1, ahead)],
        (now, wall),
        Duration::from_secs(60),
    );
    let ttl = t.elections[KEY]
        .leader
        .as_ref()
        .and_then(|l| l.ttl)
        .expect("ttl");
    assert_eq!(ttl.remaining_ms, 15_000);
    // Long not renewed: listed expired, still named.
    let mut t = tracker();
    let old = wall - Duration::from_secs(3600);
    t.load(
        vec![read("a", 1, old)],
        (now, wall),
        Duration::from_secs(60),
    );
    assert_eq!(leader(&t), None);
    let e = &t.elections[KEY];
    assert!(
        e.notes
            .iter()
            .any(|n| n.name == "expired" && n.text.contains('a'))
    );
}

/// client-go's rule: a change of the record seen restarts the full countdown, whatever the
/// writer's renewTime says; how far that stamp was from the write is the skew.
#[test]
fn a_renewal_seen_restarts_the_countdown_and_tells_the_writers_skew() {
    let (now, wall) = (Instant::now(), SystemTime::now());
    let mut t = tracker();
    t.load(
        vec![read("a", 1, wall)],
        (now, wall),
        Duration::from_secs(60),
    );
    let later = now + Duration::from_secs(10);
    let stamp = wall + Duration::from_secs(10) - Duration::from_millis(1500);
    let out = t.written(read("a", 2, stamp), later, wall + Duration::from_secs(10));
    assert!(
        out.events.is_empty(),
        "a renewal is no change: {:?}",
        kinds(&out)
    );
    let e = &t.elections[KEY];
    let ttl = e.leader.as_ref().and_then(|l| l.ttl).expect("ttl");
    assert_eq!((ttl.remaining_ms, ttl.read_at), (15_000, later));
    let skew = e
        .notes
        .iter()
        .find(|n| n.name == "renew skew")
        .expect("skew");
    assert!(skew.text.contains("1.5 s before"), "{}", skew.text);
    // The same resourceVersion again (a watch resumed) changes nothing.
    let again = t.written(read("a", 2, stamp), later, wall);
    assert!(again.changed.is_empty() && again.events.is_empty());
}

#[test]
fn a_release_then_a_take_over_and_a_countdown_that_runs_out() {
    let (now, wall) = (Instant::now(), SystemTime::now());
    let mut t = tracker();
    t.load(
        vec![read("a", 1, wall)],
        (now, wall),
        Duration::from_secs(60),
    );
    let out = t.written(read("", 2, wall), now, wall);
    assert_eq!(
        kinds(&out),
        [(EventKind::LeaderLost, Some(Cause::Resigned))]
    );
    let out = t.written(read("b", 3, wall), now, wall);
    assert_eq!(
        kinds(&out),
        [(EventKind::LeaderElected, Some(Cause::Elected))]
    );
    // b stops renewing: lost when its 15 s run out, not before, and only once a read of
    // the Lease finds it unchanged.
    assert!(t.ran_out(now + Duration::from_secs(14)).is_empty());
    assert_eq!(
        t.next_expiry(now),
        Some(now + Duration::from_secs(15)),
        "the next tick is due when b's countdown ends"
    );
    let at = now + Duration::from_secs(15);
    assert_eq!(t.ran_out(at), [KEY]);
    let out = t.confirm(KEY, Some(read("b", 3, wall)), at, wall);
    assert_eq!(
        kinds(&out),
        [(EventKind::LeaderLost, Some(Cause::LeaseExpired))]
    );
    assert_eq!(leader(&t), None);
    // b renews late (it was paused): elected again.
    let late = now + Duration::from_secs(20);
    let out = t.written(read("b", 4, wall + Duration::from_secs(20)), late, wall);
    assert_eq!(
        kinds(&out),
        [(EventKind::LeaderElected, Some(Cause::Elected))]
    );
}

/// Another holder written while the countdown ran is a take-over (no client-go candidate
/// does it: an admin, a tool); when an electop's force-leader wrote it, the holder written
/// over may still believe it leads while its countdown runs, and is deposed.
#[test]
fn a_holder_written_over_is_taken_over_and_deposed_while_its_countdown_runs() {
    let (now, wall) = (Instant::now(), SystemTime::now());
    let mut t = tracker();
    t.load(
        vec![read("a", 1, wall)],
        (now, wall),
        Duration::from_secs(60),
    );
    let mut other = read("x", 1, wall);
    other.key = "default/other".into();
    t.written(other.clone(), now, wall);
    other.holder = Some("y".into());
    other.resource_version = "2".into();
    let out = t.written(other, now, wall);
    assert_eq!(
        kinds(&out),
        [(EventKind::LeaderChanged, Some(Cause::TakenOver))]
    );
    let mark = ForcedMark {
        cause: Cause::ForcedLeader,
        by: "this electop".into(),
        before: None,
    };
    t.book.mark(KEY, Some(mark), now);
    let out = t.written(read("b", 3, wall), now + Duration::from_secs(1), wall);
    assert_eq!(
        kinds(&out),
        [(EventKind::LeaderChanged, Some(Cause::ForcedLeader))]
    );
    let e = &t.elections[KEY];
    assert_eq!(e.deposed.as_ref().map(|d| d.id.as_str()), Some("a"));
    let out = t.settle(now + Duration::from_secs(16));
    assert!(t.elections[KEY].deposed.is_none(), "a's countdown ran out");
    assert!(!out.changed.is_empty());
}

/// A re-list after a 410 or an outage: unchanged Leases change nothing; what changed
/// meanwhile was not watched (cause unknown); a Lease gone is said gone.
#[test]
fn a_relist_tells_only_what_changed_and_why_is_unknown() {
    let (now, wall) = (Instant::now(), SystemTime::now());
    let mut t = tracker();
    let mut other = read("x", 1, wall);
    other.key = "default/other".into();
    let first = vec![read("a", 1, wall), other.clone()];
    t.load(first.clone(), (now, wall), Duration::from_secs(60));
    let out = t.relist(first, now, wall);
    assert!(
        out.events.is_empty() && out.changed.is_empty(),
        "{:?}",
        kinds(&out)
    );
    let out = t.relist(vec![read("b", 5, wall)], now, wall);
    let mut got = kinds(&out);
    got.sort_by_key(|(k, _)| *k as u8);
    assert_eq!(
        got.len(),
        2,
        "default/other gone and a -> b: {:?}",
        out.events
    );
    assert!(
        got.iter().all(|(_, c)| *c == Some(Cause::Unknown)),
        "{got:?}"
    );
    assert_eq!(leader(&t).as_deref(), Some("b"));
}

#[test]
fn a_deleted_lease_loses_its_leader_and_stays_listed() {
    let (now, wall) = (Instant::now(), SystemTime::now());
    let mut t = tracker();
    t.load(
        vec![read("a", 1, wall)],
        (now, wall),
        Duration::from_secs(60),
    );
    let out = t.deleted(KEY, now, wall);
    assert_eq!(kinds(&out), [(EventKind::LeaderLost, Some(Cause::Deleted))]);
    assert!(t.elections.contains_key(KEY));
}

/// A watch that stalled (a frozen connection): the countdown ran out, but the Lease read
/// again was renewed meanwhile, so nothing changed; the stalled renewals that arrive after
/// are older than that read and change nothing either.
#[test]
fn a_countdown_that_ran_out_behind_a_stalled_watch_is_read_again_first() {
    let (now, wall) = (Instant::now(), SystemTime::now());
    let mut t = tracker();
    t.load(
        vec![read("a", 1, wall)],
        (now, wall),
        Duration::from_secs(60),
    );
    let at = now + Duration::from_secs(16);
    assert_eq!(t.ran_out(at), [KEY]);
    let mut renewed = read("a", 9, wall + Duration::from_secs(16));
    renewed.acquire = Some(wall);
    let out = t.confirm(KEY, Some(renewed), at, wall + Duration::from_secs(16));
    assert!(out.events.is_empty(), "{:?}", kinds(&out));
    assert_eq!(leader(&t).as_deref(), Some("a"));
    let late = t.written(read("a", 5, wall), at, wall);
    assert!(late.events.is_empty() && late.changed.is_empty());
    assert!(
        t.ran_out(at).is_empty(),
        "counted down afresh from the read"
    );
}

/// client-go reads a missing duration as 0: such a Lease's holder leads nobody.
#[test]
fn a_lease_without_a_duration_is_over_at_once() {
    let (now, wall) = (Instant::now(), SystemTime::now());
    let mut t = tracker();
    let mut r = read("a", 1, wall);
    r.duration_s = None;
    t.load(vec![r], (now, wall), Duration::from_secs(60));
    assert_eq!(leader(&t), None);
    assert!(t.elections[KEY].expired.is_some());
}

/// While nobody watched, a released and took the Lease again: the same holder, another
/// acquire time, read by a re-list, is another tenure.
#[test]
fn a_retake_by_the_same_holder_while_unwatched_is_told() {
    let (now, wall) = (Instant::now(), SystemTime::now());
    let mut t = tracker();
    t.load(
        vec![read("a", 1, wall)],
        (now, wall),
        Duration::from_secs(60),
    );
    let mut again = read("a", 7, wall + Duration::from_secs(5));
    again.transitions = Some(2);
    let out = t.relist(vec![again], now, wall);
    assert_eq!(
        kinds(&out),
        [(EventKind::LeaderChanged, Some(Cause::Unknown))]
    );
    // A renewal (the same acquire time) is none.
    let mut renewed = read("a", 8, wall + Duration::from_secs(5));
    renewed.renew = Some(wall + Duration::from_secs(9));
    assert!(t.relist(vec![renewed], now, wall).events.is_empty());
}
