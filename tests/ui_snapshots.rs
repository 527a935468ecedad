//! Screens as snapshots of ratatui's TestBackend buffer, drawn from hand-built states with a
//! fixed clock so every countdown is the same on every run.

use std::time::{Duration, Instant, SystemTime};

use electop::app::{self, Action, App, Msg};
use electop::model::{
    Candidate, Cause, ConnState, Deadline, Election, HistoryEntry, Scheme, SourceEvent, SourceInfo,
    SourceNotice,
};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn info(id: usize, prefix: &str) -> SourceInfo {
    SourceInfo {
        id,
        name: format!("etcd 127.0.0.1:2379 {prefix}"),
        label: prefix.to_string(),
        short: format!("etcd{}", id + 1),
        endpoints: "127.0.0.1:2379".into(),
        scheme: Some(Scheme::EtcdElection),
        read_only: false,
        clustered: false,
        idle_is_normal: false,
        notice: None,
    }
}

fn candidate(id: &str, lease: i64, rev: i64, ttl: Option<(i64, i64)>, now: Instant) -> Candidate {
    Candidate {
        id: id.to_string(),
        raw_id: id.as_bytes().to_vec(),
        key: format!("/e/jobs/{lease:x}"),
        raw_key: format!("/e/jobs/{lease:x}").into_bytes(),
        lease: Some(lease),
        create_revision: rev,
        mod_revision: rev,
        stamp: None,
        ttl: ttl.map(|(remaining_ms, granted_ms)| Deadline {
            granted_ms,
            remaining_ms,
            read_at: now,
        }),
    }
}

fn wall() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000)
}

fn sample(now: Instant) -> App {
    let mut app = App::new(vec![info(0, "/e/"), info(1, "/leader/")], now, wall());
    let mut jobs = Election::new(0, "jobs".into(), Scheme::EtcdElection);
    let line = vec![
        candidate("node-a", 0x11, 5, Some((42_300, 60_000)), now),
        candidate("node-b", 0x12, 6, Some((55_000, 60_000)), now),
        candidate("node-c", 0x13, 9, None, now),
    ];
    jobs.leader = line.first().cloned();
    jobs.candidates = line;
    jobs.record(
        HistoryEntry {
            at: None,
            revision: Some(3),
            from: None,
            to: Some("node-z".into()),
            cause: Cause::Elected,
            by: None,
        },
        10,
    );
    jobs.record(
        HistoryEntry {
            at: Some(wall() - Duration::from_secs(75)),
            revision: Some(5),
            from: Some("node-z".into()),
            to: Some("node-a".into()),
            cause: Cause::LeaseRevoked,
            by: None,
        },
        10,
    );
    let mut stuck = Election::new(0, "stuck".into(), Scheme::EtcdElection);
    let zombie = candidate("old-node", 0, 2, None, now);
    stuck.leader = Some(zombie.clone());
    stuck.candidates = vec![zombie];
    let mut empty = Election::new(1, "billing".into(), Scheme::EtcdLeaseKey);
    empty.record(
        HistoryEntry {
            at: Some(wall() - Duration::from_secs(4)),
            revision: Some(20),
            from: Some("node-b".into()),
            to: None,
            cause: Cause::LeaseExpired,
            by: None,
        },
        10,
    );
    for (source, elections) in [(0, vec![jobs, stuck]), (1, vec![empty])] {
        app::update(
            &mut app,
            Msg::Source(SourceEvent::Elections { source, elections }),
        );
        app::update(
            &mut app,
            Msg::Source(SourceEvent::Conn {
                source,
                state: ConnState::Connected,
            }),
        );
        app::update(
            &mut app,
            Msg::Source(SourceEvent::Revision {
                source,
                revision: 21,
            }),
        );
        app::update(&mut app, Msg::Source(SourceEvent::Synced { source }));
    }
    app
}

fn render(app: &App, w: u16, h: u16) -> Terminal<TestBackend> {
    let mut t = Terminal::new(TestBackend::new(w, h)).expect("terminal");
    t.draw(|f| electop::ui::view(app, f)).expect("draw");
    t
}

#[test]
fn dashboard_at_80x24() {
    let now = Instant::now();
    let app = sample(now);
    insta::assert_snapshot!(render(&app, 80, 24).backend());
}

#[test]
fn countdown_moves_with_the_clock() {
    let now = Instant::now();
    let mut app = sample(now);
    app::update(
        &mut app,
        Msg::Tick {
            now: now + Duration::from_millis(12_300),
            wall: wall() + Duration::from_millis(12_300),
        },
    );
    let t = render(&app, 80, 24);
    let text = format!("{}", t.backend());
    assert!(
        text.contains("30.0s"),
        "leader TTL counted down 42.3s -> 30.0s:\n{text}"
    );
}

#[test]
fn zombie_and_no_leader_are_flagged() {
    let now = Instant::now();
    let mut app = sample(now);
    app::update(&mut app, Msg::Action(Action::Down));
    insta::assert_snapshot!(render(&app, 80, 24).backend());
}

#[test]
fn help_overlay() {
    let now = Instant::now();
    let mut app = sample(now);
    app::update(&mut app, Msg::Action(Action::ToggleHelp));
    insta::assert_snapshot!(render(&app, 80, 24).backend());
}

#[test]
fn source_down_shows_the_retry() {
    let now = Instant::now();
    let mut app = sample(now);
    let state = ConnState::Down {
        error: "etcd 127.0.0.1:2379: connection refused".into(),
        retry_at: now + Duration::from_millis(2_500),
        lasting: false,
    };
    app::update(
        &mut app,
        Msg::Source(SourceEvent::Conn { source: 1, state }),
    );
    let text = format!("{}", render(&app, 120, 24).backend());
    assert!(text.contains("DOWN /leader/: retry in 2.5s"), "{text}");
}

#[test]
fn tiny_terminal_gets_a_message() {
    let app = sample(Instant::now());
    insta::assert_snapshot!(render(&app, 40, 10).backend());
}

#[test]
fn wide_terminal_puts_detail_beside_the_table() {
    let app = sample(Instant::now());
    insta::assert_snapshot!(render(&app, 150, 20).backend());
}

#[test]
fn hundreds_of_candidates_scroll_and_huge_values_are_cut() {
    let now = Instant::now();
    let mut app = App::new(vec![info(0, "/e/")], now, wall());
    let mut big = Election::new(0, "crowded".into(), Scheme::EtcdElection);
    big.candidates = (0..500)
        .map(|i| {
            candidate(
                &format!("node-{i:03}"),
                0x100 + i,
                10 + i,
                Some((30_000, 60_000)),
                now,
            )
        })
        .collect();
    big.candidates[0].id = "x".repeat(100_000);
    big.leader = big.candidates.first().cloned();
    app::update(
        &mut app,
        Msg::Source(SourceEvent::Elections {
            source: 0,
            elections: vec![big],
        }),
    );
    app::update(&mut app, Msg::Action(Action::FocusNext));
    for _ in 0..60 {
        app::update(&mut app, Msg::Action(Action::PageDown));
    }
    let text = format!("{}", render(&app, 80, 24).backend());
    assert!(
        text.contains("(100000 chars)"),
        "huge value is cut and says so:\n{text}"
    );
    assert!(text.contains("of 500"), "line says where it is:\n{text}");
    assert!(text.contains("node-49"), "scrolled to the end:\n{text}");
}

#[test]
fn confirm_dialog_says_what_will_be_written() {
    let now = Instant::now();
    let mut app = sample(now);
    app::update(&mut app, Msg::Action(Action::Reelect));
    insta::assert_snapshot!(render(&app, 100, 30).backend());
    app::update(&mut app, Msg::Action(Action::Back));
    assert!(app.dialog.is_none());
    assert!(app.outbox.is_empty(), "cancelled: nothing queued");
}

#[test]
fn force_leader_picks_from_the_line_then_confirms() {
    let now = Instant::now();
    let mut app = sample(now);
    app::update(&mut app, Msg::Action(Action::ForceLeader));
    app::update(&mut app, Msg::Action(Action::Down));
    app::update(&mut app, Msg::Action(Action::Accept));
    let text = format!("{}", render(&app, 100, 30).backend());
    assert!(text.contains("force node-c as leader of jobs"), "{text}");
    assert!(
        text.contains("Removes from the line: node-a, node-b"),
        "{text}"
    );
    app::update(&mut app, Msg::Action(Action::Accept));
    assert_eq!(app.outbox.len(), 1, "confirmed: queued for the runtime");
    app::update(
        &mut app,
        Msg::AdminDone(electop::admin::Outcome::Changed {
            detail: "changed since you looked: x".into(),
        }),
    );
    let text = format!("{}", render(&app, 100, 30).backend());
    assert!(
        text.contains("changed: changed since you looked"),
        "outcome shown in place:\n{text}"
    );
}

#[test]
fn read_only_sources_refuse_and_say_why() {
    let now = Instant::now();
    let mut app = sample(now);
    for s in app.sources.iter_mut() {
        s.info.read_only = true;
    }
    app::update(&mut app, Msg::Action(Action::Resign));
    assert!(app.dialog.is_none());
    let text = format!("{}", render(&app, 120, 30).backend());
    assert!(
        text.contains("READ-ONLY") && text.contains("read-only: admin actions are off"),
        "{text}"
    );
}

fn contact(app: &mut App, source: usize, at: Instant) {
    app::update(
        app,
        Msg::Source(SourceEvent::Contact {
            source,
            at,
            wall: wall(),
            next_within: Duration::from_millis(500),
        }),
    );
}

#[test]
fn a_stale_source_is_frozen_dimmed_and_named() {
    let now = Instant::now();
    let mut app = sample(now);
    contact(&mut app, 0, now);
    contact(&mut app, 1, now + Duration::from_secs(9));
    app::update(
        &mut app,
        Msg::Tick {
            now: now + Duration::from_secs(10),
            wall: wall() + Duration::from_secs(10),
        },
    );
    let text = format!("{}", render(&app, 80, 24).backend());
    assert!(
        text.contains("STALE — no contact with etcd1 for 10s"),
        "{text}"
    );
    assert!(
        !text.contains("etcd2 for"),
        "etcd2 answered 1 s ago:\n{text}"
    );
    assert!(text.contains("last seen node-a"), "{text}");
    assert!(
        text.contains("42.3s"),
        "the countdown stopped at the last contact:\n{text}"
    );
    insta::assert_snapshot!(render(&app, 80, 24).backend());
}

#[test]
fn members_overlay_shows_each_endpoint() {
    use electop::model::MemberStatus;
    let now = Instant::now();
    let mut app = sample(now);
    app.sources[0].info.clustered = true;
    let member = |ep: &str, up: bool, leader: bool, serving: bool| MemberStatus {
        endpoint: ep.into(),
        up,
        serving,
        error: (!up).then(|| {
            format!("etcd {ep}: connection refused (is etcd running and listening there?)")
        }),
        id: up.then(|| "aa25f76279e90820".into()),
        is_leader: up.then_some(leader),
        raft_term: up.then_some(3),
        revision: up.then_some(21),
        db_size: up.then_some(20480),
        version: up.then(|| "3.4.23".into()),
        checked_at: None,
    };
    let members = vec![
        member("127.0.0.1:2379", false, false, false),
        member("127.0.0.1:22379", true, true, true),
        member("127.0.0.1:32379", true, false, false),
    ];
    app::update(
        &mut app,
        Msg::Source(SourceEvent::Members { source: 0, members }),
    );
    app::update(&mut app, Msg::Action(Action::ToggleMembers));
    let text = format!("{}", render(&app, 100, 24).backend());
    assert!(text.contains("DOWN"), "{text}");
    assert!(text.contains("1/3 members down"), "{text}");
    insta::assert_snapshot!(render(&app, 100, 24).backend());
    app::update(&mut app, Msg::Action(Action::Back));
    assert!(
        !app.show_members && !app.quit,
        "Esc closes the overlay first"
    );
}

/// A lock table whose "no holder" is its resting state (ShedLock between runs) shows idle,
/// without the no-leader alarm; a source's notice (an unsure layout) is in the status bar.
#[test]
fn idle_locks_raise_no_alarm_and_notices_show() {
    let now = Instant::now();
    let mut lock = info(0, "shedlock");
    lock.scheme = Some(Scheme::SqlLease);
    lock.idle_is_normal = true;
    let mut etcd = info(1, "/x/");
    etcd.notice = Some(SourceNotice::Unsure("layout unsure: set --scheme".into()));
    let mut app = App::new(vec![lock, etcd], now, wall());
    let elections = vec![Election::new(0, "reportJob".into(), Scheme::SqlLease)];
    app::update(
        &mut app,
        Msg::Source(SourceEvent::Elections {
            source: 0,
            elections,
        }),
    );
    let text = format!("{}", render(&app, 120, 24).backend());
    assert!(text.contains("idle"), "{text}");
    assert!(!text.contains("— none —"), "{text}");
    assert!(!text.contains("without leader"), "{text}");
    assert!(text.contains("layout unsure: set --scheme"), "{text}");

    app.sources[0].info.idle_is_normal = false;
    let text = format!("{}", render(&app, 120, 24).backend());
    assert!(
        text.contains("1 without leader"),
        "the alarm elsewhere: {text}"
    );
}

fn patroni_app(now: Instant) -> App {
    let mut app = App::new(vec![info(0, "/service/")], now, wall());
    let mut e = Election::new(0, "pgdemo".into(), Scheme::Patroni);
    let line = vec![
        candidate("n1", 0x21, 9, Some((8_000, 10_000)), now),
        candidate("n2", 0x22, 11, Some((9_000, 10_000)), now),
    ];
    e.leader = line.first().cloned();
    e.candidates = line;
    e.members = vec![
        electop::model::MemberInfo {
            id: "n1".into(),
            role: Some("master".into()),
            state: Some("running".into()),
            timeline: Some(2),
            ..Default::default()
        },
        electop::model::MemberInfo {
            id: "n2".into(),
            role: Some("replica".into()),
            state: Some("running".into()),
            timeline: Some(2),
            lag_bytes: Some(0),
            nofailover: false,
        },
    ];
    e.notes = vec![electop::model::Note {
        name: "failover".into(),
        text: "switchover n1 → n2 requested".into(),
        raw_key: b"/service/pgdemo/failover".to_vec(),
        mod_revision: 40,
    }];
    app::update(
        &mut app,
        Msg::Source(SourceEvent::Elections {
            source: 0,
            elections: vec![e],
        }),
    );
    app
}

#[test]
fn patroni_members_and_notes_show_in_the_detail_and_force_leader_is_a_switchover() {
    let now = Instant::now();
    let mut app = patroni_app(now);
    let text = format!("{}", render(&app, 120, 30).backend());
    assert!(text.contains("n2 · replica running TL 2 lag 0 B"), "{text}");
    assert!(text.contains("switchover n1 → n2 requested"), "{text}");
    app::update(&mut app, Msg::Action(Action::ForceLeader));
    app::update(&mut app, Msg::Action(Action::Accept));
    let text = format!("{}", render(&app, 120, 30).backend());
    assert!(text.contains("force n2 as leader of pgdemo"), "{text}");
    assert!(text.contains("A Patroni switchover"), "{text}");
    app::update(&mut app, Msg::Action(Action::Back));
    app::update(&mut app, Msg::Action(Action::Reelect));
    let text = format!("{}", render(&app, 120, 30).backend());
    assert!(text.contains("Patroni picks its leader itself"), "{text}");
    assert!(app.outbox.is_empty(), "nothing queued");
}
