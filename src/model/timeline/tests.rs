use std::time::{Duration, SystemTime};

use super::*;
use crate::model::timeline::fixtures::{change, t};

fn tenures(tl: &Timeline) -> Vec<(&str, u64, u64)> {
    let secs = |x: SystemTime| x.duration_since(t(0)).expect("after").as_secs();
    tl.segments
        .iter()
        .map(|s| match s {
            Segment::Tenure(x) => (x.holder.as_str(), secs(x.start), secs(x.end)),
            Segment::Gap(g) => ("-", secs(g.start), secs(g.end)),
            Segment::Unwatched(u) => ("?", secs(u.start), secs(u.end)),
        })
        .collect()
}

#[test]
fn no_history_claims_nothing_but_names_the_leader_now() {
    let tl = timeline(&[], Some("a"), t(0), t(100), t(100));
    assert!(tl.segments.is_empty());
    assert_eq!(tl.known_from, None);
    assert_eq!(tl.led_before.as_deref(), Some("a"));
    assert_eq!(tl.summary, Summary::default());
}

#[test]
fn an_ongoing_tenure_runs_to_now_and_has_no_cause_out() {
    let h = [change(10, None, Some("a"), Cause::Elected)];
    // The window reaches past now: it ends at now.
    let tl = timeline(&h, Some("a"), t(0), t(500), t(100));
    assert_eq!(tenures(&tl), [("a", 10, 100)]);
    assert_eq!(tl.until, t(100));
    assert_eq!(tl.known_from, Some(t(10)));
    let Segment::Tenure(x) = &tl.segments[0] else {
        panic!("a tenure")
    };
    assert!(x.ongoing);
    assert_eq!((x.cause_in, x.cause_out), (Cause::Elected, None));
    assert_eq!(x.duration_ms, 90_000);
    assert_eq!((tl.summary.changes, tl.summary.failovers), (1, 0));
}

#[test]
fn a_failover_is_a_tenure_a_gap_and_a_tenure() {
    let h = [
        change(10, None, Some("a"), Cause::Elected),
        change(40, Some("a"), None, Cause::LeaseExpired),
        change(46, None, Some("b"), Cause::Elected),
    ];
    let tl = timeline(&h, Some("b"), t(0), t(100), t(100));
    assert_eq!(tenures(&tl), [("a", 10, 40), ("-", 40, 46), ("b", 46, 100)]);
    let Segment::Gap(g) = &tl.segments[1] else {
        panic!("a gap")
    };
    assert_eq!(
        (g.cause, g.after.as_deref()),
        (Cause::LeaseExpired, Some("a"))
    );
    assert!(!g.ongoing);
    let s = &tl.summary;
    assert_eq!((s.failovers, s.gaps, s.no_leader_ms), (1, 1, 6_000));
    assert_eq!(s.longest_gap_ms, Some(6_000));
}

#[test]
fn a_window_that_starts_in_a_gap_counts_the_gap_from_its_start() {
    let h = [
        change(10, None, Some("a"), Cause::Elected),
        change(40, Some("a"), None, Cause::Deleted),
        change(70, None, Some("b"), Cause::Elected),
    ];
    let tl = timeline(&h, Some("b"), t(50), t(100), t(100));
    assert_eq!(tenures(&tl), [("-", 50, 70), ("b", 70, 100)]);
    assert_eq!(tl.known_from, Some(t(50)));
    // Only the change inside the window is counted; the gap within it.
    let s = &tl.summary;
    assert_eq!((s.changes, s.failovers, s.no_leader_ms), (1, 0, 20_000));
    let Segment::Gap(g) = &tl.segments[0] else {
        panic!("a gap")
    };
    assert_eq!(
        g.cause,
        Cause::Deleted,
        "the cause that opened it, before the window"
    );
}

#[test]
fn the_window_clips_both_edges_and_a_later_change_ends_the_last_tenure() {
    let h = [
        change(10, None, Some("a"), Cause::Elected),
        change(40, Some("a"), Some("b"), Cause::TakenOver),
        change(90, Some("b"), Some("c"), Cause::TakenOver),
    ];
    let tl = timeline(&h, Some("c"), t(20), t(60), t(100));
    assert_eq!(tenures(&tl), [("a", 20, 40), ("b", 40, 60)]);
    let Segment::Tenure(b) = &tl.segments[1] else {
        panic!("b")
    };
    assert!(!b.ongoing, "b's tenure ended after the window");
    assert_eq!(b.cause_out, Some(Cause::TakenOver));
    assert_eq!(tl.summary.changes, 1);
    // Before the oldest change nothing is claimed; who led then is named without a start.
    let tl = timeline(&h, Some("c"), t(0), t(30), t(100));
    assert_eq!(tenures(&tl), [("a", 10, 30)]);
    assert_eq!(tl.known_from, Some(t(10)));
    // A window wholly before the history: nothing known.
    let tl = timeline(&h, Some("c"), t(0), t(5), t(100));
    assert!(tl.segments.is_empty() && tl.known_from.is_none());
}

#[test]
fn a_forced_change_is_counted_and_says_who_forced_it() {
    let mut forced = change(40, Some("a"), Some("b"), Cause::ForcedLeader);
    forced.by = Some("this electop".into());
    let h = [change(10, None, Some("a"), Cause::Elected), forced];
    let tl = timeline(&h, Some("b"), t(0), t(100), t(100));
    let [Segment::Tenure(a), Segment::Tenure(b)] = tl.segments.as_slice() else {
        panic!("two tenures: {:?}", tl.segments)
    };
    assert_eq!(a.forced_out_by.as_deref(), Some("this electop"));
    assert_eq!(b.forced_in_by.as_deref(), Some("this electop"));
    assert_eq!(a.forced_in_by, None);
    assert_eq!((tl.summary.forced, tl.summary.failovers), (1, 1));
}

#[test]
fn p50_and_p95_are_nearest_rank_over_the_gaps() {
    // Twenty gaps of 1..=20 seconds, each followed by a second of leader.
    let mut h = Vec::new();
    let mut at = 0;
    for n in 1..=20u64 {
        h.push(change(at, None, Some("a"), Cause::Elected));
        h.push(change(at + 1, Some("a"), None, Cause::Expired));
        at += 1 + n;
    }
    h.push(change(at, None, Some("a"), Cause::Elected));
    let tl = timeline(&h, Some("a"), t(0), t(at + 1), t(at + 1));
    let s = &tl.summary;
    assert_eq!(s.gaps, 20);
    assert_eq!(s.p50_gap_ms, Some(10_000));
    assert_eq!(s.p95_gap_ms, Some(19_000));
    assert_eq!(s.longest_gap_ms, Some(20_000));
    assert_eq!(s.no_leader_ms, 210_000);
    assert_eq!(percentile(&[7], 95), Some(7));
    assert_eq!(percentile(&[], 50), None);
}

#[test]
fn untimed_changes_are_left_out_and_counted() {
    let mut replayed = change(0, None, Some("x"), Cause::Elected);
    replayed.at = None;
    let h = [replayed, change(10, Some("x"), Some("a"), Cause::TakenOver)];
    let tl = timeline(&h, Some("a"), t(0), t(100), t(100));
    assert_eq!(tenures(&tl), [("a", 10, 100)]);
    assert_eq!(tl.led_before.as_deref(), Some("x"));
    assert_eq!(tl.summary.untimed, 1);
}

#[test]
fn a_change_that_keeps_the_holder_does_not_split_its_tenure() {
    let h = [
        change(10, None, Some("a"), Cause::Elected),
        change(20, Some("a"), Some("a"), Cause::Proclaimed),
    ];
    let tl = timeline(&h, Some("a"), t(0), t(100), t(100));
    assert_eq!(tenures(&tl), [("a", 10, 100)]);
}

#[test]
fn times_are_durations_before_now_or_rfc3339() {
    assert_eq!(parse_when("1h"), Ok(When::Ago(Duration::from_secs(3600))));
    assert_eq!(parse_when("90m"), Ok(When::Ago(Duration::from_secs(5400))));
    assert_eq!(
        parse_when("24h"),
        Ok(When::Ago(Duration::from_secs(86_400)))
    );
    let at = parse_when("2026-11-28T06:00:00Z").expect("a time");
    assert_eq!(
        at,
        When::At(crate::model::time::parse_rfc3339("2026-11-28T06:00:00Z").expect("t"))
    );
    for bad in ["", "10", "1d", "yesterday", "-1h", "h", "1.2.3m"] {
        let e = parse_when(bad).expect_err(bad);
        assert!(e.contains("RFC 3339"), "{e}");
    }
}

#[test]
fn the_json_says_times_in_rfc3339_and_segments_by_kind() {
    let h = [
        change(10, None, Some("a"), Cause::Elected),
        change(40, Some("a"), None, Cause::LeaseExpired),
    ];
    let tl = timeline(&h, None, t(0), t(100), t(100));
    let v = serde_json::to_value(&tl).expect("json");
    assert_eq!(v["segments"][0]["kind"], "tenure");
    assert_eq!(v["segments"][1]["kind"], "gap");
    assert_eq!(v["segments"][1]["cause"], "lease_expired");
    let start = v["segments"][0]["start"].as_str().expect("a string");
    assert_eq!(crate::model::time::parse_rfc3339(start), Some(t(10)));
    assert_eq!(v["summary"]["no_leader_ms"], 60_000);
}

#[test]
fn a_gap_that_goes_on_is_counted_to_the_windows_end() {
    let h = [
        change(10, None, Some("a"), Cause::Elected),
        change(40, Some("a"), None, Cause::SessionEnded),
    ];
    let tl = timeline(&h, None, t(0), t(100), t(100));
    assert_eq!(tenures(&tl), [("a", 10, 40), ("-", 40, 100)]);
    let Segment::Gap(g) = &tl.segments[1] else {
        panic!("a gap")
    };
    assert!(g.ongoing);
    assert_eq!(tl.summary.no_leader_ms, 60_000);
    assert_eq!(tl.summary.p95_gap_ms, Some(60_000));
}

/// A stretch no electop watched is cut out of the tenure and the gap it overlaps: neither
/// is claimed there, the tenure cut before its end has no cause out, and the summary's
/// gap is its known part.
#[test]
fn a_stretch_no_electop_watched_is_not_claimed_as_a_tenure_or_a_gap() {
    let h = [
        change(10, None, Some("a"), Cause::Elected),
        change(50, Some("a"), None, Cause::LeaseExpired),
        change(70, None, Some("b"), Cause::Elected),
    ];
    let tl = timeline(&h, Some("b"), t(0), t(100), t(100))
        .without_unwatched(&[(t(30), t(60), true), (t(90), t(200), false)]);
    assert_eq!(
        tenures(&tl),
        [
            ("a", 10, 30),
            ("?", 30, 60),
            ("-", 60, 70),
            ("b", 70, 90),
            ("?", 90, 100)
        ]
    );
    let Segment::Tenure(a) = &tl.segments[0] else {
        panic!("a tenure")
    };
    assert!(!a.ongoing && a.cause_out.is_none(), "{a:?}");
    let Segment::Unwatched(u) = &tl.segments[1] else {
        panic!("unwatched")
    };
    assert!(u.stop_recorded && u.duration_ms == 30_000, "{u:?}");
    assert_eq!((tl.summary.gaps, tl.summary.no_leader_ms), (1, 10_000));
    let Segment::Gap(g) = &tl.segments[2] else {
        panic!("the gap's known part")
    };
    assert_eq!(g.cause, Cause::Unknown, "how it began was not watched");
    // Outside the window: nothing changes.
    let same = timeline(&h, Some("b"), t(0), t(100), t(100));
    assert_eq!(
        same.clone().without_unwatched(&[(t(200), t(300), true)]),
        same
    );
}

/// A run killed just after it recorded a change: the change is known (a tenure of no
/// length, how it ended not known), what followed is not.
#[test]
fn a_change_a_killed_run_recorded_last_is_kept_at_its_time() {
    let h = [
        change(10, None, Some("a"), Cause::Elected),
        change(50, Some("a"), Some("b"), Cause::TakenOver),
    ];
    let tl =
        timeline(&h, Some("b"), t(0), t(100), t(100)).without_unwatched(&[(t(50), t(100), false)]);
    assert_eq!(tenures(&tl), [("a", 10, 50), ("b", 50, 50), ("?", 50, 100)]);
    let Segment::Tenure(b) = &tl.segments[1] else {
        panic!("b's tenure")
    };
    assert_eq!(
        (b.cause_in, b.cause_out, b.ongoing),
        (Cause::TakenOver, None, false)
    );
}
