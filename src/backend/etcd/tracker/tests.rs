use super::*;
use crate::backend::etcd::election::EtcdElection;
use crate::backend::etcd::lease_key::EtcdLeaseKey;
use std::time::Duration;

fn kv(key: &str, value: &str, create: i64, rev: i64, lease: i64) -> Kv {
    Kv {
        key: key.as_bytes().to_vec(),
        value: value.as_bytes().to_vec(),
        create_revision: create,
        mod_revision: rev,
        lease,
    }
}

fn del(key: &str, rev: i64) -> Change {
    Change::Delete {
        key: key.as_bytes().to_vec(),
        revision: rev,
    }
}

fn live(now: Instant) -> Observation {
    Observation {
        at: Some(SystemTime::UNIX_EPOCH),
        now,
        since: now,
        replayed: false,
    }
}

fn election_tracker() -> Tracker {
    Tracker::new(
        0,
        "src".into(),
        Box::new(EtcdElection {
            prefix: b"/e/".to_vec(),
        }),
        10,
    )
}

#[test]
fn a_put_and_its_delete_in_one_batch_both_apply() {
    let mut t = election_tracker();
    let changes = vec![
        Change::Put(kv("/e/j/1", "a", 2, 2, 1)),
        Change::Put(kv("/e/j/2", "b", 3, 3, 2)),
        del("/e/j/1", 4),
    ];
    let (elections, events) = t.apply(
        changes,
        &HashMap::from([(1, LeaseFate::Alive)]),
        live(Instant::now()),
    );
    let e = &elections[0];
    assert_eq!(e.leader.as_ref().map(|l| l.id.as_str()), Some("b"));
    let kinds: Vec<_> = events.iter().map(|e| e.kind).collect();
    assert!(kinds.contains(&EventKind::LeaderElected));
    let change = events
        .iter()
        .find(|e| e.kind == EventKind::LeaderChanged)
        .expect("change");
    assert_eq!(change.cause, Some(Cause::Resigned));
    assert_eq!(e.transitions, 2);
    // Delivered again after a resumed watch: nothing changes twice.
    let again = vec![Change::Put(kv("/e/j/2", "b", 3, 3, 2)), del("/e/j/1", 4)];
    let (_, events) = t.apply(again, &HashMap::new(), live(Instant::now()));
    assert!(events.is_empty(), "{events:?}");
}

/// Each election that lost its leader, and why.
fn lost_causes(events: &[Event]) -> Vec<(Option<String>, Option<Cause>)> {
    events
        .iter()
        .filter(|e| e.kind == EventKind::LeaderLost)
        .map(|e| (e.election.clone(), e.cause))
        .collect()
}

/// Lease keys `a` (lease 7, a second left of 10 at `now`) and `b` (lease 8, 20 s of 30).
fn two_lease_keys(now: Instant) -> Tracker {
    let mut t = Tracker::new(
        0,
        "src".into(),
        Box::new(EtcdLeaseKey {
            prefix: b"/l/".to_vec(),
            registry: None,
        }),
        10,
    );
    let snap: Mirror = [kv("/l/a", "x", 2, 2, 7), kv("/l/b", "y", 3, 3, 8)]
        .into_iter()
        .map(|kv| (kv.key.clone(), kv))
        .collect();
    t.load(snap, 3);
    t.set_ttl(7, Some((1, 10)), now);
    t.set_ttl(8, Some((20, 30)), now);
    t
}

#[test]
fn a_vanished_lease_is_expired_when_its_countdown_ran_out_else_revoked() {
    let now = Instant::now();
    let mut t = two_lease_keys(now);
    let gone = HashMap::from([(7, LeaseFate::Gone), (8, LeaseFate::Gone)]);
    let later = now + Duration::from_millis(1_400);
    let (_, events) = t.apply(vec![del("/l/a", 4), del("/l/b", 5)], &gone, live(later));
    assert_eq!(
        lost_causes(&events),
        [
            (Some("a".to_string()), Some(Cause::LeaseExpired)),
            (Some("b".to_string()), Some(Cause::LeaseRevoked)),
        ]
    );
}

/// Deletes delivered late, after the watch moved to another member: they happened at some
/// time since the view was last current. A lease near its end then was expired; one whose
/// countdown is near its end only now may have expired or been revoked on the way.
#[test]
fn a_lease_seen_gone_late_is_judged_over_when_it_may_have_gone() {
    let t0 = Instant::now();
    let mut t = two_lease_keys(t0);
    let gone = HashMap::from([(7, LeaseFate::Gone), (8, LeaseFate::Gone)]);
    let late = Observation {
        since: t0,
        ..live(t0 + Duration::from_secs(19))
    };
    let (_, events) = t.apply(vec![del("/l/a", 4), del("/l/b", 5)], &gone, late);
    assert_eq!(
        lost_causes(&events),
        [
            (Some("a".to_string()), Some(Cause::LeaseExpired)),
            (Some("b".to_string()), Some(Cause::LeaseEnded)),
        ]
    );
}

#[test]
fn replayed_changes_have_no_time_and_cannot_tell_expiry_from_revocation() {
    let mut t = election_tracker();
    let now = Instant::now();
    let seen = Observation {
        at: None,
        now,
        since: now,
        replayed: true,
    };
    let changes = vec![Change::Put(kv("/e/j/1", "a", 2, 2, 1)), del("/e/j/1", 3)];
    let (elections, events) = t.apply(changes, &HashMap::from([(1, LeaseFate::Gone)]), seen);
    let h: Vec<_> = elections[0]
        .history
        .iter()
        .map(|h| (h.at, h.cause))
        .collect();
    assert_eq!(h, [(None, Cause::Elected), (None, Cause::LeaseEnded)]);
    assert!(events.iter().all(|e| e.replayed));

    // An electop that watched revision 3 live recorded when, and that the lease expired:
    // the replay says the same, and a revision it saw only the time of keeps its cause.
    let t3 = SystemTime::UNIX_EPOCH + Duration::from_secs(3);
    let t2 = SystemTime::UNIX_EPOCH + Duration::from_secs(2);
    let seen = HashMap::from([(3, (t3, Some(Cause::LeaseExpired))), (2, (t2, None))]);
    t.fill_seen(&seen);
    let e = t.elections().next().expect("j");
    let h: Vec<_> = e.history.iter().map(|h| (h.at, h.cause)).collect();
    assert_eq!(
        h,
        [(Some(t2), Cause::Elected), (Some(t3), Cause::LeaseExpired)]
    );
}

#[test]
fn a_change_our_admin_action_made_is_forced() {
    let mut t = election_tracker();
    let now = Instant::now();
    t.apply(
        vec![
            Change::Put(kv("/e/j/1", "a", 2, 2, 1)),
            Change::Put(kv("/e/j/2", "b", 3, 3, 2)),
        ],
        &HashMap::new(),
        live(now),
    );
    let mark = crate::backend::ForcedMark {
        cause: Cause::ForcedReelection,
        by: crate::backend::BY_US.into(),
        before: None,
    };
    t.mark("j", Some(mark), now);
    let alive = HashMap::from([(1, LeaseFate::Alive)]);
    let (_, events) = t.apply(vec![del("/e/j/1", 4)], &alive, live(now));
    let change = events
        .iter()
        .find(|e| e.kind == EventKind::LeaderChanged)
        .expect("change");
    assert_eq!(change.cause, Some(Cause::ForcedReelection));
    // The mark is used up: the next change is read from the store again.
    let (_, events) = t.apply(
        vec![Change::Put(kv("/e/j/1", "c", 5, 5, 3)), del("/e/j/2", 6)],
        &HashMap::from([(2, LeaseFate::Alive)]),
        live(now),
    );
    let change = events
        .iter()
        .find(|e| e.kind == EventKind::LeaderChanged)
        .expect("change");
    assert_eq!(change.cause, Some(Cause::Resigned));
}

#[test]
fn proclaim_and_zombie_keys() {
    let mut t = election_tracker();
    let (_, _) = t.apply(
        vec![Change::Put(kv("/e/j/1", "a", 2, 2, 0))],
        &HashMap::new(),
        live(Instant::now()),
    );
    let (elections, events) = t.apply(
        vec![Change::Put(kv("/e/j/1", "a2", 2, 3, 0))],
        &HashMap::new(),
        live(Instant::now()),
    );
    assert_eq!(events[0].cause, Some(Cause::Proclaimed));
    assert!(elections[0].has_zombie(), "lease 0 never expires");
    let (_, events) = t.apply(
        vec![del("/e/j/1", 4)],
        &HashMap::new(),
        live(Instant::now()),
    );
    assert_eq!(events[0].cause, Some(Cause::Deleted));
}

#[test]
fn diff_to_a_later_snapshot_reports_what_was_missed() {
    let mut t = election_tracker();
    let old: Mirror = [kv("/e/j/1", "a", 2, 2, 1)]
        .into_iter()
        .map(|kv| (kv.key.clone(), kv))
        .collect();
    t.load(old, 2);
    let new: Mirror = [kv("/e/j/5", "c", 9, 9, 5)]
        .into_iter()
        .map(|kv| (kv.key.clone(), kv))
        .collect();
    let changes = t.diff_to(&new, 10);
    let (elections, _) = t.apply(
        changes,
        &HashMap::from([(1, LeaseFate::Gone)]),
        live(Instant::now()),
    );
    assert_eq!(
        elections[0].leader.as_ref().map(|l| l.id.as_str()),
        Some("c")
    );
    assert!(
        t.mirror_equals(
            &new.into_iter()
                .map(|(k, mut v)| {
                    v.mod_revision = 10;
                    (k, v)
                })
                .collect()
        )
    );
}

#[test]
fn a_ttl_reading_touches_only_the_elections_on_that_lease() {
    let now = Instant::now();
    let mut t = election_tracker();
    let mut m = Mirror::new();
    for (i, lease) in [(1, 0x10), (2, 0x20), (3, 0x10)] {
        let key = format!("/e/job{i}/{lease:x}");
        m.insert(key.clone().into_bytes(), kv(&key, "n", i, i, lease));
    }
    t.load(m, 3);
    let mut names: Vec<String> = t
        .set_ttl(0x10, Some((30, 60)), now)
        .into_iter()
        .map(|e| e.name)
        .collect();
    names.sort();
    assert_eq!(names, ["job1", "job3"]);
    // job1's key moves to another lease: the old lease no longer reaches it.
    let moved = Change::Put(kv("/e/job1/10", "n", 1, 4, 0x30));
    t.apply(vec![moved], &HashMap::new(), live(now));
    let names: Vec<String> = t
        .set_ttl(0x10, Some((20, 60)), now)
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names, ["job3"]);
    assert_eq!(t.set_ttl(0x30, None, now).len(), 1);
}

#[test]
fn a_leader_removed_by_an_admin_with_its_lease_alive_is_deposed_until_the_lease_ends() {
    let now = Instant::now();
    let mut t = election_tracker();
    let mut m = Mirror::new();
    m.insert(b"/e/jobs/a".to_vec(), kv("/e/jobs/a", "node-a", 1, 1, 0xa));
    m.insert(b"/e/jobs/b".to_vec(), kv("/e/jobs/b", "node-b", 2, 2, 0xb));
    t.load(m, 2);
    let mark = crate::backend::ForcedMark {
        cause: Cause::ForcedResign,
        by: "ops".into(),
        before: None,
    };
    t.mark("jobs", Some(mark), now);
    let alive = HashMap::from([(0xa, LeaseFate::Alive)]);
    let (changed, _) = t.apply(vec![del("/e/jobs/a", 3)], &alive, live(now));
    assert!(changed[0].resigned.is_none(), "it did not resign itself");
    let d = changed[0].deposed.as_ref().expect("deposed");
    assert_eq!((d.id.as_str(), d.lease), ("node-a", Some(0xa)));
    assert!(t.is_deposed_lease(0xa));
    assert!(t.all_leases().contains(&0xa), "its lease is still read");
    let after = t.set_ttl(0xa, None, now);
    assert_eq!(after.len(), 1);
    assert!(after[0].deposed.is_none(), "lease over: no longer an alarm");
    assert!(!t.is_deposed_lease(0xa));
    // A lease that ended with the key is no deposition.
    let gone = HashMap::from([(0xb, LeaseFate::Gone)]);
    let (changed, _) = t.apply(vec![del("/e/jobs/b", 4)], &gone, live(now));
    assert!(changed[0].deposed.is_none());
}

/// `etcdctl elect`'s Ctrl-C deletes its own key and leaves its lease to expire: that holder
/// knows it left. It is shown as resigned, never as a deposed alarm, until the lease ends; if
/// another electop's audit line then says an admin removed it, it was deposed after all.
#[test]
fn a_leader_that_removed_its_own_key_is_resigned_not_deposed() {
    let now = Instant::now();
    let mut t = election_tracker();
    let mut m = Mirror::new();
    m.insert(b"/e/jobs/a".to_vec(), kv("/e/jobs/a", "node-a", 1, 1, 0xa));
    m.insert(b"/e/jobs/b".to_vec(), kv("/e/jobs/b", "node-b", 2, 2, 0xb));
    t.load(m, 2);
    let alive = HashMap::from([(0xa, LeaseFate::Alive)]);
    let (changed, events) = t.apply(vec![del("/e/jobs/a", 3)], &alive, live(now));
    assert!(changed[0].deposed.is_none(), "no alarm");
    let r = changed[0].resigned.as_ref().expect("resigned");
    assert_eq!((r.id.as_str(), r.lease), ("node-a", Some(0xa)));
    assert!(!t.is_deposed_lease(0xa));
    let change = events.iter().find(|e| e.from.as_deref() == Some("node-a"));
    assert_eq!(change.and_then(|e| e.cause), Some(Cause::Resigned));
    // Another electop's resign, learnt from the audit log after the change.
    let mark = crate::backend::ForcedMark {
        cause: Cause::ForcedResign,
        by: "ops@h (another electop)".into(),
        before: Some("node-a".into()),
    };
    let wall = changed[0].history.back().and_then(|h| h.at).expect("timed");
    let e = t.forced("jobs", Some(mark), now, wall).expect("relabelled");
    assert!(e.resigned.is_none());
    assert_eq!(e.deposed.as_ref().map(|d| d.id.as_str()), Some("node-a"));
    assert!(t.is_deposed_lease(0xa), "read eagerly now");
    let after = t.set_ttl(0xa, None, now);
    assert!(after[0].deposed.is_none() && after[0].resigned.is_none());
}

#[test]
fn a_reading_the_countdown_agrees_with_sends_nothing() {
    let t0 = Instant::now();
    let mut t = election_tracker();
    let mut m = Mirror::new();
    m.insert(b"/e/job/10".to_vec(), kv("/e/job/10", "n", 1, 1, 0x10));
    t.load(m, 1);
    assert_eq!(
        t.set_ttl(0x10, Some((30, 60)), t0).len(),
        1,
        "first reading"
    );
    let later = t0 + std::time::Duration::from_secs(5);
    assert!(
        t.set_ttl(0x10, Some((25, 60)), later).is_empty(),
        "25 s left, as counted down"
    );
    assert_eq!(
        t.set_ttl(0x10, Some((60, 60)), later).len(),
        1,
        "a keep-alive moved the deadline"
    );
}

fn two_candidates(t: &mut Tracker) {
    let mut m = Mirror::new();
    m.insert(b"/e/job/10".to_vec(), kv("/e/job/10", "a", 1, 1, 0x10));
    m.insert(b"/e/job/20".to_vec(), kv("/e/job/20", "b", 2, 2, 0x20));
    m.insert(b"/e/other/30".to_vec(), kv("/e/other/30", "c", 3, 3, 0x30));
    t.load(m, 3);
}

#[test]
fn a_batch_of_readings_sends_each_election_once_with_every_countdown() {
    let now = Instant::now();
    let mut t = election_tracker();
    two_candidates(&mut t);
    let changed = t.set_ttls([(0x10, Some((30, 60)), now), (0x20, Some((40, 60)), now)]);
    assert_eq!(changed.len(), 1, "one election, two of its leases read");
    let ttls: Vec<_> = changed[0]
        .candidates
        .iter()
        .map(|c| c.ttl.map(|d| d.remaining_ms))
        .collect();
    // A reading in whole seconds is counted from the middle of that second.
    assert_eq!(ttls, [Some(30_500), Some(40_500)]);
    t.set_ttls_quietly([(0x30, Some((5, 60)), now)]);
    let other = t.elections().find(|e| e.name == "other").expect("other");
    assert_eq!(
        other
            .leader
            .as_ref()
            .and_then(|l| l.ttl)
            .map(|d| d.remaining_ms),
        Some(5_500)
    );
}

#[test]
fn visible_leases_are_found_by_name() {
    let mut t = election_tracker();
    two_candidates(&mut t);
    assert_eq!(t.visible_leases(&["job".into()], None, 64), [0x10]);
    assert_eq!(
        t.visible_leases(&["other".into()], Some("job"), 64),
        [0x10, 0x20, 0x30]
    );
    assert_eq!(t.visible_leases(&["nope".into()], Some("job"), 1), [0x10]);
}

#[test]
fn a_preview_derives_without_storing_and_missing_elections_come_back_empty() {
    let t = election_tracker();
    let mut m = Mirror::new();
    m.insert(b"/e/job/10".to_vec(), kv("/e/job/10", "a", 1, 1, 0x10));
    m.insert(b"/e/gone/20".to_vec(), kv("/e/gone/20", "b", 2, 2, 0x20));
    let ids: BTreeSet<Vec<u8>> = [b"/e/job/".to_vec()].into();
    let shown = t.preview(&m, &ids);
    assert_eq!(shown.len(), 1);
    assert_eq!(shown[0].leader.as_ref().map(|l| l.id.as_str()), Some("a"));
    assert_eq!(t.elections().count(), 0, "nothing stored");
    let mut t = election_tracker();
    two_candidates(&mut t);
    let previewed: BTreeSet<Vec<u8>> = [b"/e/job/".to_vec(), b"/e/gone/".to_vec()].into();
    let missing = t.missing(previewed);
    assert_eq!(missing.len(), 1);
    assert_eq!(missing[0].name, "gone");
    assert!(missing[0].leader.is_none() && missing[0].candidates.is_empty());
}

/// electop's hold re-puts the leader's key (its name and create revision kept) onto a hold
/// lease: nobody leads, the tenure ended by the action, and the held key is deposed until
/// the hold lease ends; then etcd deletes it and the next in line is elected.
#[test]
fn a_held_leader_key_ends_its_tenure_and_nobody_leads_until_the_hold_ends() {
    let now = Instant::now();
    let mut t = election_tracker();
    let (la, lb, hold) = (0x390da22024880308, 0x390da2202488030d, 0x390da22024880319);
    let (a, b) = ("/e/jobs/390da22024880308", "/e/jobs/390da2202488030d");
    t.apply(
        vec![
            Change::Put(kv(a, "node-a", 2, 2, la)),
            Change::Put(kv(b, "node-b", 3, 3, lb)),
        ],
        &HashMap::new(),
        live(now),
    );
    let alive = HashMap::from([(la, LeaseFate::Alive)]);
    let (changed, events) = t.apply(
        vec![Change::Put(kv(a, "node-a", 2, 4, hold))],
        &alive,
        live(now),
    );
    let change = events
        .iter()
        .find(|e| e.kind == EventKind::LeaderLost)
        .expect("the tenure ended");
    assert_eq!(
        (change.from.as_deref(), change.to.as_deref(), change.cause),
        (Some("node-a"), None, Some(Cause::ForcedReelection))
    );
    let e = &changed[0];
    assert!(e.leader.is_none());
    assert_eq!(e.held.as_ref().map(|h| h.lease), Some(Some(hold)));
    assert_eq!(e.deposed.as_ref().map(|d| d.id.as_str()), Some("node-a"));
    assert!(t.is_deposed_lease(hold));
    let (changed, events) = t.apply(
        vec![del(a, 5)],
        &HashMap::from([(hold, LeaseFate::Gone)]),
        live(now),
    );
    let change = events
        .iter()
        .find(|e| e.kind == EventKind::LeaderElected)
        .expect("the election");
    assert_eq!(
        (change.from.as_deref(), change.to.as_deref()),
        (None, Some("node-b"))
    );
    assert_eq!(change.cause, Some(Cause::Elected));
    assert!(changed[0].held.is_none());
}
