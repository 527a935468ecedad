//! The demo screen as snapshots of ratatui's TestBackend, drawn from plain demo and
//! dashboard state with a fixed clock, at 80x24 (stacked, one line per node) and 200x50
//! (panes beside the dashboard); and what a click or a key does to that state.

use std::time::{Duration, Instant, SystemTime};

use crossterm::event::{KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use super::state::{Demo, Proc};
use super::view::{layout, on_mouse, view};
use crate::app::{self, Action, App, Dialog, Msg};
use crate::model::{
    Candidate, Cause, ConnState, Election, HistoryEntry, Scheme, SourceEvent, SourceInfo,
};
use crate::ui::theme;

/// 2026-11-22 19:20:00 UTC.
pub(super) fn at(secs: f64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs_f64(1_795_375_200.0 + secs)
}

pub(super) fn belief(node: &str, secs: f64, belief: &str, extra: &str) -> String {
    let whole = secs.floor();
    let tenths = ((secs - whole) * 10.0).round();
    format!(
        r#"{{"at":"2026-11-22T19:20:{whole:02}.{tenths}Z","node":"{node}","election":"demo","belief":"{belief}"{extra}}}"#
    )
}

/// The dashboard's state as the demo's SQLite source shows it, `leader` leading `demo`.
pub(super) fn dashboard(w: u16, h: u16, t0: Instant, leader: &str) -> App {
    let info = SourceInfo {
        store: crate::model::StoreKind::Sql,
        id: 0,
        name: "sqlite:///tmp/demo/elections.db leaderlock".into(),
        label: "sqlite leaderlock".into(),
        short: "sql1".into(),
        endpoints: "sqlite:///tmp/demo/elections.db".into(),
        scheme: Some(Scheme::SqlLease),
        read_only: false,
        clustered: false,
        idle_is_normal: false,
        notice: None,
    };
    let mut a = App::new(vec![info], t0, at(0.0));
    a.around.known_ids = vec!["node-1".into(), "node-2".into(), "node-3".into()];
    app::update(
        &mut a,
        Msg::Resize {
            width: w,
            height: h,
        },
    );
    lead(&mut a, leader);
    for ev in [
        SourceEvent::Conn {
            source: 0,
            state: ConnState::Connected,
        },
        SourceEvent::Synced { source: 0 },
    ] {
        app::update(&mut a, Msg::Source(ev));
    }
    a
}

fn lead(a: &mut App, id: &str) {
    let mut e = Election::new(0, "demo".into(), Scheme::SqlLease);
    let c = Candidate::plain(id, "demo");
    e.leader = Some(c.clone());
    e.candidates = vec![c];
    e.record(
        HistoryEntry {
            at: Some(at(1.0)),
            revision: None,
            from: None,
            to: Some(id.into()),
            cause: Cause::Elected,
            by: None,
        },
        10,
    );
    app::update(
        a,
        Msg::Source(SourceEvent::Elections {
            source: 0,
            elections: vec![e],
        }),
    );
}

pub(super) fn tick(a: &mut App, now: Instant, wall: SystemTime) {
    app::update(a, Msg::Tick { now, wall });
}

pub(super) fn nodes() -> Demo {
    let ids = ["node-1".to_string(), "node-2".into(), "node-3".into()];
    Demo::new(&ids, "demo", "sql-lease on sqlite:///tmp/demo/elections.db")
}

/// node-1 elected; the others follow it.
pub(super) fn elected(w: u16, h: u16) -> (App, Demo) {
    let t0 = Instant::now();
    let mut a = dashboard(w, h, t0, "node-1");
    let mut d = nodes();
    d.node_line(0, &belief("node-1", 1.0, "leader", r#","leader":"node-1""#));
    d.node_line(
        1,
        &belief("node-2", 1.2, "follower", r#","leader":"node-1""#),
    );
    d.node_line(
        2,
        &belief("node-3", 1.3, "follower", r#","leader":"node-1""#),
    );
    tick(&mut a, t0 + Duration::from_secs(3), at(3.0));
    (a, d)
}

/// The leader killed 1.2 s ago: the dashboard still shows it, the failover clock runs; the
/// node that was deposed earlier says why.
fn killed(w: u16, h: u16) -> (App, Demo) {
    let (mut a, mut d) = elected(w, h);
    let t0 = a.model.now;
    d.stopping(&a, 0, t0);
    d.killed(0, at(3.0));
    d.node_line(
        2,
        &belief(
            "node-3",
            3.5,
            "deposed",
            r#","reason":"lease on demo expired at 19:20:03""#,
        ),
    );
    d.selected = 0;
    tick(&mut a, t0 + Duration::from_millis(1_200), at(4.2));
    (a, d)
}

/// Three nodes: node-1 led, node-2 took over while node-1 was paused, and node-1 was
/// resumed and noticed; now node-3 believes it leads beside node-2.
fn split_brain(w: u16, h: u16) -> (App, Demo) {
    let t0 = Instant::now();
    let mut a = dashboard(w, h, t0, "node-2");
    let mut d = nodes();
    d.node_line(0, &belief("node-1", 1.0, "leader", ""));
    d.node_line(
        1,
        &belief("node-2", 1.0, "follower", r#","leader":"node-1""#),
    );
    d.node_line(
        2,
        &belief("node-3", 1.0, "follower", r#","leader":"node-1""#),
    );
    d.note(at(2.0), "node-1 paused (SIGSTOP)".into());
    d.nodes[0].proc_ = Proc::Paused;
    d.node_line(1, &belief("node-2", 4.0, "leader", ""));
    d.note(at(5.2), "node-1 resumed (SIGCONT)".into());
    d.nodes[0].proc_ = Proc::Running;
    d.node_line(
        0,
        &belief("node-1", 5.4, "follower", r#","leader":"node-2""#),
    );
    d.node_line(2, &belief("node-3", 8.0, "leader", ""));
    tick(&mut a, t0 + Duration::from_millis(8_700), at(8.7));
    d.lend_split_brain(&mut a);
    (a, d)
}

/// `F` on the demo's election: the scheme keeps no line, so the nodes are offered.
fn force_dialog(w: u16, h: u16) -> (App, Demo) {
    let (mut a, d) = elected(w, h);
    app::update(&mut a, Msg::Action(Action::ForceLeader));
    (a, d)
}

pub(super) fn render(a: &App, d: &Demo) -> Terminal<TestBackend> {
    let (w, h) = a.size;
    let mut t = Terminal::new(TestBackend::new(w, h)).expect("terminal");
    t.draw(|f| view(d, a, f)).expect("draw");
    t
}

pub(super) fn screen(a: &App, d: &Demo) -> String {
    format!("{}", render(a, d).backend())
}

const SIZES: [(u16, u16); 2] = [(80, 24), (200, 50)];

#[test]
fn leader_elected() {
    for (w, h) in SIZES {
        let (a, d) = elected(w, h);
        let t = render(&a, &d);
        insta::assert_snapshot!(format!("leader_elected_{w}x{h}"), t.backend());
        let s = format!("{}", t.backend());
        // The whole belief of every node, and the leader's row in the table.
        for text in ["LEADER", "follower of node-1"] {
            assert!(s.contains(text), "{w}x{h}: {text}\n{s}");
        }
        assert!(s.matches("follower of node-1").count() >= 2, "{s}");
        assert!(
            s.lines()
                .any(|l| l.starts_with("\"│   demo ") && l.contains("node-1")),
            "{w}x{h}: the table shows the election's row\n{s}"
        );
    }
}

#[test]
fn a_killed_leader_and_the_failover_clock() {
    for (w, h) in SIZES {
        let (a, d) = killed(w, h);
        let t = render(&a, &d);
        insta::assert_snapshot!(format!("killed_{w}x{h}"), t.backend());
        let s = format!("{}", t.backend());
        assert!(s.contains("KILLED"), "{s}");
        assert!(
            s.contains("node-1 down 1.2s, waiting for a new leader…"),
            "{w}x{h}\n{s}"
        );
        assert!(
            s.contains("deposed: lease on demo expired at 19:20:03"),
            "{w}x{h}: the reason the node gave, whole\n{s}"
        );
        // When it was killed (19:20:03), not when it became leader (19:20:01).
        let killed = s
            .lines()
            .find(|l| l.contains("node-1 KILLED"))
            .unwrap_or_default();
        let when = if w == 80 {
            "KILLED killed (SIGKILL) at 19:20:03"
        } else {
            "19:20:03 killed (SIGKILL)"
        };
        assert!(s.contains(when), "{w}x{h}: {killed}\n{s}");
        assert!(!killed.contains("19:20:01"), "{w}x{h}: {killed}");
    }
}

#[test]
fn split_brain_flagged() {
    for (w, h) in SIZES {
        let (a, d) = split_brain(w, h);
        let t = render(&a, &d);
        insta::assert_snapshot!(format!("split_brain_{w}x{h}"), t.backend());
        let s = format!("{}", t.backend());
        assert!(
            s.contains("SPLIT BRAIN: node-2 and node-3 both believe they lead · 0.7s"),
            "{s}"
        );
        assert_eq!(s.matches("LEADER · SPLIT BRAIN").count(), 2, "{w}x{h}\n{s}");
        // The line is drawn in the alarm colour.
        let row = (0..h)
            .find(|y| t.backend().buffer()[(1, *y)].symbol() == "S")
            .expect("the split brain line");
        assert_eq!(t.backend().buffer()[(1, row)].style().bg, theme::alarm().bg);
        // The dashboard counts it too.
        assert!(s.contains("split brain"), "{s}");
    }
    // At 80 columns the summary says less rather than be cut: `split brains: 2`, whole.
    let (a, d) = split_brain(80, 24);
    let s = screen(&a, &d);
    let line = s
        .lines()
        .find(|l| l.contains("SPLIT BRAIN:"))
        .unwrap_or_default();
    assert!(
        line.trim_end_matches(['"', ' '])
            .ends_with("· 0.7s  split brains: 2"),
        "{line}"
    );
    let (a, d) = split_brain(200, 50);
    assert!(
        screen(&a, &d)
            .contains("split brains: 2, longest 1.4s (node-1 and node-2 from 19:20:04.0)")
    );
}

#[test]
fn the_force_dialog_offers_the_nodes() {
    for (w, h) in SIZES {
        let (a, d) = force_dialog(w, h);
        let Some(Dialog::Pick { options, .. }) = &a.dialog else {
            panic!("a pick list, not {:?}", a.dialog);
        };
        assert_eq!(options, &["node-2", "node-3"], "the leader is not offered");
        let t = render(&a, &d);
        insta::assert_snapshot!(format!("force_dialog_{w}x{h}"), t.backend());
        let s = format!("{}", t.backend());
        assert!(
            s.contains("Who should lead?") && s.contains("▶ node-2"),
            "{s}"
        );
    }
}

#[test]
fn a_tiny_terminal_gets_the_usual_message() {
    let (a, d) = elected(60, 16);
    let s = screen(&a, &d);
    assert!(
        s.contains("Terminal too small: 60x16") && s.contains("at least 60x22"),
        "{s}"
    );
    // `q` asks first (it stops the nodes), and the question shows.
    let mut a = a;
    a.around.quit_asks = Some("stops every node");
    let q = app::update(&mut a, Msg::Action(Action::Quit));
    let s = screen(&a, &d);
    assert!(!q.quits() && s.contains("stops every node"), "{s}");
    // At the size it asks for, it draws.
    let (a, d) = elected(60, 22);
    let s = screen(&a, &d);
    assert!(
        s.contains("follower of node-1") && !s.contains("too small"),
        "{s}"
    );
}

/// The text in `r`, its rows trimmed and joined by spaces (a wrapped line joins up again).
fn text_in(t: &Terminal<TestBackend>, r: ratatui::layout::Rect) -> String {
    let buf = t.backend().buffer();
    (r.y..r.bottom())
        .map(|y| {
            (r.x..r.right())
                .map(|x| buf[(x, y)].symbol())
                .collect::<String>()
                .trim_matches(|c| c == '│' || c == ' ')
                .to_string()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn every_size_between_keeps_the_beliefs_whole() {
    for (w, h) in [
        (80, 24),
        (100, 30),
        (120, 24),
        (119, 40),
        (160, 40),
        (60, 22),
    ] {
        let (a, d) = killed(w, h);
        let t = render(&a, &d);
        let l = layout(ratatui::layout::Rect::new(0, 0, w, h), 3).expect("fits");
        for (i, n) in d.nodes.iter().enumerate() {
            let pane = text_in(&t, l.nodes[i]);
            assert!(
                pane.contains(&n.belief),
                "{w}x{h}: {} in its pane: {pane}\n{}",
                n.belief,
                t.backend()
            );
        }
        assert!(
            d.nodes[2].belief == "deposed: lease on demo expired at 19:20:03",
            "the belief checked is the whole reason"
        );
    }
}

fn click(column: u16, row: u16) -> MouseEvent {
    MouseEvent {
        kind: MouseEventKind::Down(MouseButton::Left),
        column,
        row,
        modifiers: KeyModifiers::NONE,
    }
}

#[test]
fn a_click_on_a_node_picks_it_and_one_on_the_dashboard_is_the_dashboards() {
    for (w, h) in [(80, 24), (100, 30), (200, 50)] {
        let (mut a, mut d) = elected(w, h);
        let l = layout(ratatui::layout::Rect::new(0, 0, w, h), 3).expect("fits");
        let third = l.nodes[2];
        assert!(on_mouse(&mut d, &mut a, click(third.x + 2, third.y)));
        assert_eq!(d.selected, 2, "{w}x{h}");
        let s = screen(&a, &d);
        if w == 80 {
            assert!(s.contains("▶3 node-3"), "{s}");
        }
        // The detail pane, under the table: the dashboard takes the click.
        let (x, y) = (l.dash.x + 2, l.dash.bottom() - 3);
        assert!(on_mouse(&mut d, &mut a, click(x, y)), "{w}x{h}");
        assert_ne!(a.focus, crate::app::Focus::Elections, "{w}x{h}");
        assert_eq!(d.selected, 2);
    }
}

/// The demo's dashboard is the dashboard: a double click on its row opens the detail view
/// there too, and the wheel then scrolls the detail.
#[test]
fn a_double_click_on_the_demos_table_opens_the_detail() {
    for (w, h) in [(80, 24), (200, 50)] {
        let (mut a, mut d) = elected(w, h);
        let l = layout(ratatui::layout::Rect::new(0, 0, w, h), 3).expect("fits");
        // The first row of the table: below the header line, the border and the titles.
        let (x, y) = (l.dash.x + 4, l.dash.y + 3);
        on_mouse(&mut d, &mut a, click(x, y));
        assert!(a.describe.is_none(), "one click only selects ({w}x{h})");
        on_mouse(&mut d, &mut a, click(x, y));
        assert!(
            a.describe.is_some(),
            "a double click opens the detail ({w}x{h})"
        );
        let s = screen(&a, &d);
        assert!(s.contains("node-1"), "{s}");
    }
}

#[test]
fn help_lists_the_demo_keys_with_the_dashboards() {
    let (mut a, d) = elected(200, 50);
    a.around.extra_keys = crate::demo::KEYS;
    app::update(&mut a, Msg::Action(Action::ToggleHelp));
    let s = screen(&a, &d);
    for text in [
        "Demo",
        "kill it (SIGKILL)",
        "pick a node (or click it)",
        "force a leader",
    ] {
        assert!(s.contains(text), "{text}\n{s}");
    }
    assert!(s.contains("Keys · elections"), "{s}");
}

#[test]
fn the_demos_events_show_in_the_events_view_at_80x24() {
    let (mut a, d) = split_brain(80, 24);
    super::ext::forward_events(&d, &mut a, 0);
    app::update(&mut a, Msg::Action(Action::ToggleEvents));
    let t = render(&a, &d);
    insta::assert_snapshot!("events_view_80x24", t.backend());
    let s = format!("{}", t.backend());
    for text in [
        "node-1 paused (SIGSTOP)",
        "node-1 resumed (SIGCONT)",
        "SPLIT BRAIN over: node-1 and node-2, 1.4s",
    ] {
        assert!(s.contains(text), "{text}\n{s}");
    }
    // Given once: nothing new since the last count.
    let before = a.model.events.entries.len();
    super::ext::forward_events(&d, &mut a, d.noted);
    assert_eq!(a.model.events.entries.len(), before);
}

#[test]
fn help_at_80x24_lists_the_demo_keys() {
    let (mut a, d) = elected(80, 24);
    a.around.extra_keys = crate::demo::KEYS;
    app::update(&mut a, Msg::Action(Action::ToggleHelp));
    let t = render(&a, &d);
    insta::assert_snapshot!("help_80x24", t.backend());
    let s = format!("{}", t.backend());
    // Every key, the demo's and the dialogs' too, down to the last.
    for text in [
        "Demo",
        "kill it (SIGKILL)",
        "restart it",
        "pick a node (or click it)",
        "C-c",
        // Both lines of the alarm marks (in the bottom border), and where causes are told.
        "‼ split-brain",
        "◐ stale",
        "see the detail view (Enter)",
    ] {
        assert!(s.contains(text), "{text}\n{s}");
    }
}

#[test]
fn the_wheel_scrolls_a_node_panes_lines() {
    let (mut a, mut d) = elected(200, 50);
    for i in 0..30 {
        d.node_line(1, &format!("line {i:02}"));
    }
    let l = layout(ratatui::layout::Rect::new(0, 0, 200, 50), 3).expect("fits");
    let pane = l.nodes[1];
    let wheel = |kind| MouseEvent {
        kind,
        column: pane.x + 3,
        row: pane.y + 3,
        modifiers: KeyModifiers::NONE,
    };
    assert!(
        screen(&a, &d).contains("line 29"),
        "the newest at the bottom"
    );
    assert!(on_mouse(&mut d, &mut a, wheel(MouseEventKind::ScrollUp)));
    assert_eq!(d.nodes[1].scroll, 3);
    let s = screen(&a, &d);
    assert!(
        s.contains("line 26") && !s.contains("line 29") && s.contains("↑3"),
        "{s}"
    );
    // New lines keep the same lines in view.
    d.node_line(1, "line 30");
    assert_eq!(d.nodes[1].scroll, 4);
    for _ in 0..20 {
        on_mouse(&mut d, &mut a, wheel(MouseEventKind::ScrollUp));
    }
    let s = screen(&a, &d);
    assert!(
        s.contains("follower of node-1") && s.contains("line 00"),
        "{s}"
    );
    assert!(
        !on_mouse(&mut d, &mut a, wheel(MouseEventKind::ScrollUp)),
        "at the oldest"
    );
    for _ in 0..20 {
        on_mouse(&mut d, &mut a, wheel(MouseEventKind::ScrollDown));
    }
    assert_eq!(d.nodes[1].scroll, 0);
    assert!(screen(&a, &d).contains("line 30"));
}

#[test]
fn nine_nodes_at_80x24_take_two_columns_and_keep_the_table() {
    let t0 = Instant::now();
    let a = dashboard(80, 24, t0, "node-1");
    let ids: Vec<String> = (1..=9).map(|i| format!("node-{i}")).collect();
    let mut d = Demo::new(&ids, "demo", "sql-lease on sqlite:///tmp/demo/elections.db");
    for (i, id) in ids.iter().enumerate() {
        let (b, extra) = if i == 0 {
            ("leader", "")
        } else {
            ("follower", r#","leader":"node-1""#)
        };
        d.node_line(i, &belief(id, 1.0, b, extra));
    }
    let t = render(&a, &d);
    insta::assert_snapshot!("nine_nodes_80x24", t.backend());
    let s = format!("{}", t.backend());
    assert_eq!(s.matches("follower of node-1").count(), 8, "{s}");
    assert!(s.lines().any(|l| l.starts_with("\"│   demo ")), "{s}");
    // Too few columns for two: it says how much it needs.
    let mut a = a;
    a.size = (60, 24);
    let s = screen(&a, &d);
    assert!(s.contains("at least 60x28"), "{s}");
    // One node on a tall terminal narrower than the dashboard: the usual message too.
    let one = Demo::new(&ids[..1], "demo", "sqlite");
    let (a, _) = elected(59, 40);
    let s = screen(&a, &one);
    assert!(s.contains("Terminal too small: 59x40"), "{s}");
}
