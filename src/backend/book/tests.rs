use std::time::{Duration, Instant, SystemTime};

use super::*;
use crate::admin::audit_tail::Done;
use crate::model::{EventKind, Scheme};

fn same_id(a: &Candidate, b: &Candidate) -> bool {
    a.raw_id == b.raw_id
}

fn holder(id: &str) -> Candidate {
    let mut c = Candidate::plain(id, "k");
    c.raw_id = id.as_bytes().to_vec();
    c
}

fn election(leader: Option<&str>) -> Election {
    let mut e = Election::new(0, "jobs".into(), Scheme::RedisLock);
    e.leader = leader.map(holder);
    e.candidates = e.leader.iter().cloned().collect();
    e
}

fn step(before: Option<&Candidate>, may_lead: bool, when: When) -> Step<'_> {
    Step {
        before,
        same_tenure: false,
        gone: Cause::Resigned,
        in_place: Cause::TakenOver,
        may_lead,
        when,
    }
}

fn mark(cause: Cause, before: Option<&str>) -> Option<ForcedMark> {
    Some(ForcedMark {
        cause,
        by: "ops@host".into(),
        before: before.map(str::to_string),
    })
}

#[test]
fn a_forced_change_is_labelled_and_deposes_a_holder_that_may_still_lead() {
    let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
    let mut book = Book::new("redis x".into(), 10, Some(same_id));
    book.mark("jobs", mark(Cause::ForcedReelection, None), Instant::now());
    let a = holder("a");
    let mut e = election(Some("b"));
    let mut out = Changes::default();
    let o = book.apply(&mut e, step(Some(&a), true, When::live(wall)), &mut out);
    assert!(o.forced);
    assert_eq!(o.deposed.as_ref().map(|d| d.id.as_str()), Some("a"));
    assert_eq!(e.deposed.as_ref().map(|d| d.id.as_str()), Some("a"));
    assert_eq!(out.events[0].kind, EventKind::LeaderChanged);
    assert_eq!(out.events[0].cause, Some(Cause::ForcedReelection));
    assert_eq!(
        e.history.back().and_then(|h| h.by.as_deref()),
        Some("ops@host")
    );

    // The deposed holder takes the election again: it knows where it stands.
    let b = holder("b");
    e.leader = Some(a.clone());
    e.candidates = vec![a.clone()];
    let o = book.apply(&mut e, step(Some(&b), true, When::live(wall)), &mut out);
    assert_eq!(o.back.map(|c| c.id), Some("a".to_string()));
    assert!(e.deposed.is_none());
    assert!(!o.forced, "the mark was used up");
    assert_eq!(out.events[1].cause, Some(Cause::Resigned));
}

#[test]
fn no_deposed_holder_where_it_cannot_lead_or_the_store_has_none() {
    let wall = SystemTime::UNIX_EPOCH;
    let a = holder("a");
    for (same, may_lead) in [(Some(same_id as Same), false), (None, true)] {
        let mut book = Book::new("s".into(), 10, same);
        book.mark("jobs", mark(Cause::ForcedResign, None), Instant::now());
        let mut e = election(None);
        let mut out = Changes::default();
        let o = book.apply(&mut e, step(Some(&a), may_lead, When::live(wall)), &mut out);
        assert!(o.forced && o.deposed.is_none() && e.deposed.is_none());
        assert_eq!(out.events[0].kind, EventKind::LeaderLost);
    }
}

#[test]
fn a_replayed_change_takes_no_mark_and_no_change_takes_nothing() {
    let mut book = Book::new("s".into(), 10, Some(same_id));
    let now = Instant::now();
    book.mark("jobs", mark(Cause::ForcedReelection, None), now);
    let a = holder("a");
    let mut e = election(Some("a"));
    let mut out = Changes::default();
    let mut w = When::live(SystemTime::UNIX_EPOCH);
    // Same leader, same tenure: nothing happened, the mark waits.
    let mut s = step(Some(&a), true, w);
    s.same_tenure = true;
    let o = book.apply(&mut e, s, &mut out);
    assert!(out.events.is_empty() && !o.forced);
    w.replayed = true;
    let mut e = election(None);
    let o = book.apply(
        &mut e,
        step(Some(&a), true, w.at_revision(Some(9))),
        &mut out,
    );
    assert!(!o.forced, "replayed past is not ours");
    assert!(out.events[0].replayed);
    assert_eq!(out.events[0].revision, Some(9));
    e.leader = Some(holder("c"));
    let o = book.apply(
        &mut e,
        step(None, true, When::live(SystemTime::UNIX_EPOCH)),
        &mut out,
    );
    assert!(o.forced, "the mark waited for a live change");
    assert_eq!(out.events[1].cause, Some(Cause::ForcedReelection));
}

#[test]
fn another_electops_action_learnt_later_relabels_and_deposes() {
    let wall = SystemTime::now();
    let mut book = Book::new("s".into(), 10, Some(same_id));
    let a = holder("a");
    let mut e = election(Some("b"));
    let mut out = Changes::default();
    book.apply(&mut e, step(Some(&a), true, When::live(wall)), &mut out);
    assert!(e.deposed.is_none(), "looked like a resignation");
    let now = Instant::now();
    let m = mark(Cause::ForcedReelection, Some("a"));
    let (sent, deposed) = book
        .forced("jobs", Some(&mut e), m, (now, wall), |_| true)
        .expect("relabelled");
    assert_eq!(sent.relabelled, Some((0, Cause::Resigned)));
    assert_eq!(
        sent.history.back().map(|h| h.cause),
        Some(Cause::ForcedReelection)
    );
    assert_eq!(deposed.map(|d| d.id), Some("a".to_string()));
    // Not one this election saw: the mark waits for its change.
    let m = mark(Cause::ForcedReelection, Some("zz"));
    assert!(
        book.forced("jobs", Some(&mut e), m, (now, wall), |_| true)
            .is_none()
    );
}

#[test]
fn preloaded_history_counts_and_is_bounded() {
    let book = Book::new("s".into(), 2, None);
    let mut e = election(None);
    let entry = |to: &str| HistoryEntry {
        at: None,
        revision: None,
        from: None,
        to: Some(to.into()),
        cause: Cause::Elected,
        by: None,
    };
    book.preload(&mut e, [entry("a"), entry("b"), entry("c")]);
    assert_eq!(e.transitions, 3);
    assert_eq!(e.history.len(), 2);
    assert_eq!(e.history[0].to.as_deref(), Some("b"));
}

#[test]
fn an_election_first_seen_starts_from_the_history_read_back() {
    let entry = |to: &str| HistoryEntry {
        at: None,
        revision: None,
        from: None,
        to: Some(to.into()),
        cause: Cause::Elected,
        by: None,
    };
    let past = [("jobs".to_string(), vec![entry("a"), entry("b")])];
    let mut book = Book::new("s".into(), 10, None).with_past(past);
    let e = book.election(0, "jobs".into(), Scheme::RedisLock);
    assert_eq!(e.transitions, 2);
    assert_eq!(e.history.back().and_then(|h| h.to.as_deref()), Some("b"));
    let again = book.election(0, "jobs".into(), Scheme::RedisLock);
    assert!(
        again.history.is_empty(),
        "read back once, by its first election"
    );
    assert!(
        book.election(0, "other".into(), Scheme::RedisLock)
            .history
            .is_empty()
    );
}

fn done(before: &str, at: SystemTime) -> Done {
    Done {
        pid: Some(1),
        source: "s".into(),
        election: "jobs".into(),
        cause: Cause::ForcedReelection,
        by: "ops@host".into(),
        before: Some(before.into()),
        before_lease: None,
        before_session: None,
        before_ttl_ms: None,
        at: Some(at),
    }
}

/// A change while no electop watched is the first read's to tell: unknown, or the audit
/// log's action where one removed the leader the history ends with, after that history.
#[test]
fn the_first_read_tells_what_changed_since_the_history_read_back() {
    let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
    let entry = HistoryEntry {
        at: Some(t0),
        revision: None,
        from: None,
        to: Some("a".into()),
        cause: Cause::Elected,
        by: None,
    };
    let past = || [("jobs".to_string(), vec![entry.clone()])];
    let read_at = t0 + Duration::from_secs(30);
    let mut cases = Vec::new();
    for actions in [
        vec![],
        vec![done("a", t0 + Duration::from_secs(5))],
        vec![done("a", t0 - Duration::from_secs(5))],
    ] {
        let mut book = Book::new("s".into(), 10, None).with_past(past());
        book.set_actions(actions);
        let mut e = book.election(0, "jobs".into(), Scheme::SqlLease);
        e.leader = Some(holder("b"));
        let mut out = Changes::default();
        book.first_read(&mut e, (read_at, None), &mut out);
        let h = e.history.back().expect("a change");
        assert_eq!((h.from.as_deref(), h.to.as_deref()), (Some("a"), Some("b")));
        assert_eq!(out.events.len(), 1);
        cases.push((h.cause, h.by.clone()));
    }
    assert_eq!(
        cases,
        [
            (Cause::Unknown, None),
            (Cause::ForcedReelection, Some("ops@host".to_string())),
            (Cause::Unknown, None),
        ],
        "no action; one after the history; one before it (not this change's)"
    );
    // The same leader as the history ends with: nothing happened.
    let mut book = Book::new("s".into(), 10, None).with_past(past());
    let mut e = book.election(0, "jobs".into(), Scheme::SqlLease);
    e.leader = Some(holder("a"));
    let mut out = Changes::default();
    book.first_read(&mut e, (read_at, None), &mut out);
    assert!(out.events.is_empty() && e.history.len() == 1);
}

/// An election read back from the journal with nothing in the store is listed while its
/// last change is within the retention, as the read model keeps one; an older one is not
/// brought back to be listed as leaderless.
#[test]
fn only_recent_past_elections_are_listed_unseen() {
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(100_000);
    let lost = |ago: u64| HistoryEntry {
        at: Some(now - Duration::from_secs(ago)),
        revision: None,
        from: Some("a".into()),
        to: None,
        cause: Cause::Expired,
        by: None,
    };
    let past = [
        ("recent".to_string(), vec![lost(3_000), lost(60)]),
        ("old".to_string(), vec![lost(7_200)]),
        (
            "untimed".to_string(),
            vec![HistoryEntry {
                at: None,
                ..lost(0)
            }],
        ),
    ];
    let book = Book::new("s".into(), 10, None).with_past(past);
    let keep = Duration::from_secs(600);
    assert_eq!(book.unseen(now, keep), vec!["recent".to_string()]);
    assert_eq!(book.unseen(now, Duration::from_secs(10_000)).len(), 2);
}
