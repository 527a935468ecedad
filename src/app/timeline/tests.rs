use std::time::Duration;

use super::*;
use crate::model::Cause;
use crate::model::timeline::fixtures::{change, t};

/// The cells as text: a letter per holder (a, b…; upper case while deposed), `░` gap,
/// `◆` forced, `*` changes, `┄` stale, `×` down, space unknown. Also `marks`' tests'.
pub(super) fn text(s: &Strip) -> String {
    let first = |i: usize| s.holders[i].chars().next().unwrap_or('?');
    s.cells
        .iter()
        .map(|c| match c {
            Cell::Unknown => ' ',
            Cell::Tenure(i) => first(*i),
            Cell::Deposed(i) => first(*i).to_ascii_uppercase(),
            Cell::Gap => '░',
            Cell::Changes => '*',
            Cell::Forced => '◆',
            Cell::Stale => '┄',
            Cell::Down => '×',
        })
        .collect()
}

#[test]
fn columns_split_the_window_evenly_and_its_end_is_in_the_last() {
    let (since, until) = (t(0), t(100));
    assert_eq!(column(t(0), since, until, 10), Some(0));
    assert_eq!(column(t(9), since, until, 10), Some(0));
    assert_eq!(column(t(10), since, until, 10), Some(1));
    assert_eq!(column(t(99), since, until, 10), Some(9));
    assert_eq!(column(t(100), since, until, 10), Some(9), "the end");
    assert_eq!(column(t(101), since, until, 10), None);
    assert_eq!(
        column(since - Duration::from_secs(1), since, until, 10),
        None
    );
    assert_eq!(column(t(5), since, until, 0), None);
    assert_eq!(column_start(3, since, until, 10), t(30));
    // A stretch ending exactly at a column's start does not touch that column.
    assert_eq!(columns((t(0), t(30)), since, until, 10), Some((0, 2)));
    assert_eq!(columns((t(31), t(32)), since, until, 10), Some((3, 3)));
    assert_eq!(columns((t(200), t(300)), since, until, 10), None);
}

#[test]
fn a_failover_shows_its_gap_and_the_history_before_is_blank() {
    let h = [
        change(20, None, Some("a"), Cause::Elected),
        change(50, Some("a"), None, Cause::LeaseExpired),
        change(60, None, Some("b"), Cause::Elected),
    ];
    let tl = timeline(&h, Some("b"), t(0), t(100), t(100));
    assert_eq!(text(&strip(&tl, 10, None, &[])), "  aaa░bbbb");
    assert_eq!(strip(&tl, 10, None, &[]).holders, ["a", "b"]);
}

#[test]
fn a_gap_shorter_than_a_column_still_shows() {
    let h = [
        change(0, None, Some("a"), Cause::Elected),
        change(41, Some("a"), None, Cause::LeaseExpired),
        change(42, None, Some("b"), Cause::Elected),
    ];
    let tl = timeline(&h, Some("b"), t(0), t(100), t(100));
    assert_eq!(text(&strip(&tl, 10, None, &[])), "aaaa░bbbbb");
}

#[test]
fn a_forced_change_and_many_changes_in_a_column_are_marked() {
    let mut forced = change(30, Some("a"), Some("b"), Cause::ForcedLeader);
    forced.by = Some("ops".into());
    let h = [
        change(0, None, Some("a"), Cause::Elected),
        forced,
        change(71, Some("b"), Some("c"), Cause::TakenOver),
        change(72, Some("c"), Some("b"), Cause::TakenOver),
    ];
    let tl = timeline(&h, Some("b"), t(0), t(100), t(100));
    assert_eq!(text(&strip(&tl, 10, None, &[])), "aaa◆bbb*bb");
}

#[test]
fn a_stale_source_ends_its_strip_at_its_last_contact() {
    let h = [change(0, None, Some("a"), Cause::Elected)];
    let tl = timeline(&h, Some("a"), t(0), t(100), t(100));
    assert_eq!(text(&strip(&tl, 10, Some(t(55)), &[])), "aaaaaa┄┄┄┄");
}

#[test]
fn zoom_pan_and_cursor_keep_within_the_window_and_never_pass_now() {
    let now = t(100_000);
    let mut v = TimelineView::default();
    assert_eq!(v.window(now), (now - Duration::from_secs(300), now));
    assert!(v.on_action(Action::PanRight, now));
    assert_eq!(v.back, Duration::ZERO, "never past now");
    v.on_action(Action::PanLeft, now);
    assert_eq!(v.back, Duration::from_secs(30), "a tenth of 5 minutes");
    v.on_action(Action::ZoomOut, now);
    v.on_action(Action::ZoomOut, now);
    v.on_action(Action::ZoomOut, now);
    assert_eq!(v.span(), Duration::from_secs(24 * 3600), "24 h at most");
    v.on_action(Action::ZoomIn, now);
    assert_eq!(span_label(v.span()), "1h");
    v.on_action(Action::PanRight, now);
    assert_eq!(v.back, Duration::ZERO);
    assert_eq!(v.cursor_at(now), now, "the cursor starts at the end");
    v.on_action(Action::CursorLeft, now);
    assert_eq!(
        v.cursor_at(now),
        now - Duration::from_secs(60),
        "1/60 of an hour"
    );
    v.on_action(Action::CursorRight, now);
    assert_eq!(v.cursor, None, "back at now, it follows the clock");
    for _ in 0..100 {
        v.on_action(Action::CursorLeft, now);
    }
    assert_eq!(
        v.cursor_at(now),
        now - Duration::from_secs(3600),
        "the window's start"
    );
    v.on_action(Action::ZoomIn, now);
    assert_eq!(
        v.cursor_at(now),
        now - Duration::from_secs(300),
        "a narrower window clamps the cursor"
    );
    assert!(!v.on_action(Action::Up, now));
}

#[test]
fn stretches_no_electop_watched_are_not_drawn_as_a_tenure() {
    let h = [change(0, None, Some("a"), Cause::Elected)];
    let tl = timeline(&h, Some("a"), t(0), t(100), t(100));
    assert_eq!(
        text(&strip(&tl, 10, None, &[(t(25), t(65))])),
        "aaa┄┄┄aaaa",
        "the columns either side hold what was seen"
    );
}

#[test]
fn a_gap_and_a_forced_change_in_one_column_show_the_gap() {
    let h = [
        change(0, None, Some("a"), Cause::Elected),
        change(51, Some("a"), None, Cause::LeaseExpired),
        change(53, None, Some("b"), Cause::Elected),
        change(55, Some("b"), Some("c"), Cause::ForcedLeader),
    ];
    let tl = timeline(&h, Some("c"), t(0), t(100), t(100));
    assert_eq!(text(&strip(&tl, 10, None, &[])), "aaaaa░cccc");
    // A forced resignation: its change marked, the rest of its gap shown.
    let h = [
        change(0, None, Some("a"), Cause::Elected),
        change(30, Some("a"), None, Cause::ForcedResign),
        change(60, None, Some("b"), Cause::Elected),
    ];
    let tl = timeline(&h, Some("b"), t(0), t(100), t(100));
    assert_eq!(text(&strip(&tl, 10, None, &[])), "aaa◆░░bbbb");
}

/// A wrapped ring of a long history, through a narrow window late in it: walked from just
/// before the window, uncopied, it draws the same strip as the whole history does.
#[test]
fn a_window_late_in_a_long_history_draws_as_the_whole_history_does() {
    let mut e = Election::new(0, "jobs".into(), crate::model::Scheme::SqlLease);
    let holder = |i: u64| (i % 4 != 3).then(|| format!("n{}", i % 3));
    let all: Vec<HistoryEntry> = (0..300u64)
        .map(|i| {
            let (from, to) = (i.checked_sub(1).and_then(holder), holder(i));
            HistoryEntry {
                from,
                to,
                ..change(i * 10, None, None, Cause::TakenOver)
            }
        })
        .collect();
    for h in &all {
        e.record(h.clone(), 200);
    }
    assert!(!e.history.as_slices().1.is_empty(), "the ring has wrapped");
    let kept: Vec<HistoryEntry> = e.history.iter().cloned().collect();
    for (since, until) in [(t(2_555), t(2_905)), (t(0), t(2_990)), (t(2_990), t(3_100))] {
        let whole = timeline(&kept, None, since, until, t(3_000));
        let walked = of(&e, since, until, t(3_000));
        assert_eq!(walked.segments, whole.segments, "{since:?}");
        assert_eq!(strip(&walked, 40, None, &[]), strip(&whole, 40, None, &[]));
        // Painted straight from the walk, as the view draws each row.
        let mut p = Painter::new((since, whole.until), 40);
        crate::model::timeline::walk(
            e.history.range(first_needed(&e.history, since)..),
            (since, whole.until),
            |_| {},
            |s| {
                p.paint(
                    (s.start, s.end),
                    s.holder,
                    crate::model::timeline::is_forced(s.entry),
                )
            },
        );
        assert_eq!(p.finish(None, &[]), strip(&whole, 40, None, &[]));
    }
}

/// The painter's whole-number columns agree with [`columns`] over windows of a minute to a
/// day, at the widths a terminal has.
#[test]
fn the_painter_s_columns_are_those_of_the_window() {
    for (span, width) in [(60, 7), (300, 68), (3_600, 113), (86_400, 190), (86_400, 1)] {
        let since = t(1_000);
        let until = since + Duration::from_secs(span);
        let p = Painter::new((since, until), width);
        for (a, b) in [
            (0, 1),
            (0, span),
            (span / 3, span / 2),
            (17, 17 + span / 7),
            (span, span + 5),
        ] {
            let stretch = (
                since + Duration::from_secs(a),
                since + Duration::from_secs(b),
            );
            assert_eq!(
                p.columns(stretch),
                columns(stretch, since, until, width),
                "{span} s over {width}: {a}..{b}"
            );
        }
        let before = (
            since - Duration::from_secs(50),
            since - Duration::from_secs(1),
        );
        assert_eq!(p.columns(before), None);
    }
}
