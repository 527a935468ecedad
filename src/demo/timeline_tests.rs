//! The timeline view (`t`) in the demo: the three nodes' election, each kill and pause of
//! its leader a gap from the moment it was stopped until the store named another, though
//! the store named the stopped node all along.

use std::time::Duration;

use super::ext::lend_stops;
use super::screen_tests::{at, elected, render};
use crate::app::{self, Action, Msg};
use crate::model::{Candidate, Cause, Election, HistoryEntry, Scheme, SourceEvent};

fn change(secs: f64, from: &str, to: &str) -> HistoryEntry {
    HistoryEntry {
        at: Some(at(secs)),
        revision: None,
        from: (!from.is_empty()).then(|| from.to_string()),
        to: Some(to.to_string()),
        cause: if from.is_empty() {
            Cause::Elected
        } else {
            Cause::TakenOver
        },
        by: None,
    }
}

/// node-1 elected at 19:20:01 and killed at 19:21:00, node-2 taking over at 19:21:06;
/// node-2 paused at 19:22:00, node-3 taking over at 19:22:09, node-2 resumed at 19:22:20;
/// now 19:22:30, the timeline open.
fn stopped(w: u16, h: u16) -> (crate::app::App, super::Demo) {
    let (mut a, mut d) = elected(w, h);
    let t0 = a.model.now - Duration::from_secs(3);
    let mut e = Election::new(0, "demo".into(), Scheme::SqlLease);
    for h in [
        change(1.0, "", "node-1"),
        change(66.0, "node-1", "node-2"),
        change(129.0, "node-2", "node-3"),
    ] {
        e.record(h, 10);
    }
    let l = Candidate::plain("node-3", "demo");
    e.leader = Some(l.clone());
    e.candidates = vec![l];
    d.killed(0, at(60.0));
    d.stop_began(1, at(120.0), "paused (SIGSTOP)");
    d.stop_ended(1, at(140.0));
    let ev = SourceEvent::Elections {
        source: 0,
        elections: vec![e],
    };
    app::update(&mut a, Msg::Source(ev));
    let (now, wall) = (t0 + Duration::from_secs(150), at(150.0));
    app::update(&mut a, Msg::Tick { now, wall });
    lend_stops(&d, &mut a);
    app::update(&mut a, Msg::Action(Action::ToggleTimeline));
    (a, d)
}

/// The demo election's strip: its row of the timeline, its name and the panes beside left
/// out.
fn strip_row(s: &str) -> String {
    let line = s
        .lines()
        .find(|l| l.contains("│demo "))
        .unwrap_or_else(|| panic!("the demo's row:\n{s}"));
    let row = &line[line.find("│demo ").unwrap_or(0) + "│demo ".len()..];
    // The names' column is 8 wide, then a space.
    row.chars().skip(4).take_while(|c| *c != '│').collect()
}

/// The runs of `░` in `row`, as lengths.
fn gaps(row: &str) -> Vec<usize> {
    row.split(|c| c != '░')
        .filter(|r| !r.is_empty())
        .map(|r| r.chars().count())
        .collect()
}

#[test]
fn a_kill_and_a_pause_of_the_leader_are_gaps_of_their_length() {
    for (w, h) in [(80, 24), (200, 50)] {
        let (a, d) = stopped(w, h);
        let t = render(&a, &d);
        insta::assert_snapshot!(format!("timeline_kill_pause_{w}x{h}"), t.backend());
        let s = format!("{}", t.backend());
        let row = strip_row(&s);
        let g = gaps(&row);
        assert_eq!(
            g.len(),
            2,
            "{w}x{h}: the kill's gap and the pause's: {row}\n{s}"
        );
        // 6 s and 9 s in a window of 300 s: a column is 300 s / the strip's width.
        let width = row.chars().count();
        let cols = |secs: f64| secs * width as f64 / 300.0;
        for (got, secs) in g.iter().zip([6.0, 9.0]) {
            assert!(
                (*got as f64 - cols(secs)).abs() <= 1.5,
                "{w}x{h}: {secs} s is about {:.1} columns, not {got}: {row}",
                cols(secs)
            );
        }
    }
}

#[test]
fn the_cursor_on_the_kill_says_nobody_led_though_the_store_named_the_node() {
    let (mut a, d) = stopped(200, 50);
    // 18 steps of 5 s back from 19:22:30: 19:21:00, the kill.
    for _ in 0..18 {
        app::update(&mut a, Msg::Action(Action::CursorLeft));
    }
    let s = format!("{}", render(&a, &d).backend());
    assert!(
        s.contains(
            "demo: NO LEADER at work: node-1 killed (SIGKILL) at 19:21:00; the store named it \
             until 19:21:06 (taken_over)"
        ),
        "{s}"
    );
}
