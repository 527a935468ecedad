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
        store: electop::model::StoreKind::Etcd,
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
    select(&mut app, "jobs");
    app
}

/// Selects the row of `name`, wherever the sort put it.
fn select(app: &mut App, name: &str) {
    app.selected = app
        .rows
        .iter()
        .position(|r| r.key.1 == name)
        .expect("the election is listed");
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
    select(&mut app, "stuck");
    insta::assert_snapshot!(render(&app, 80, 24).backend());
}

#[test]
fn help_overlay() {
    let now = Instant::now();
    let mut app = sample(now);
    app::update(&mut app, Msg::Action(Action::ToggleHelp));
    let t = render(&app, 80, 24);
    let text = format!("{}", t.backend());
    // Every alarm mark, and what the words on screen mean as far as the rows allow.
    for code in [
        "split-brain",
        "no-leader",
        "deposed",
        "flapping",
        "zombie",
        "stale",
        "see the detail view (Enter)",
        "waiting behind the leader",
        "store revision of a change",
    ] {
        assert!(text.contains(code), "{code}\n{text}");
    }
    insta::assert_snapshot!(t.backend());
    // Where there is room, the causes are listed with what they mean.
    let text = format!("{}", render(&app, 200, 50).backend());
    for (cause, meaning) in [
        ("node_gone", "session ended or node deleted"),
        ("taken_over", "wrote over the leader's key or row"),
    ] {
        assert!(
            text.lines()
                .any(|l| l.contains(cause) && l.contains(meaning)),
            "{cause}\n{text}"
        );
    }
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
    assert!(text.contains("DOWN etcd2: retry in 2.5s"), "{text}");
}

/// Two SQLite sources share the label `sqlite leaderlock`: the status line tells them apart
/// by their configured names, with the label while the line has room for it.
#[test]
fn the_status_line_names_each_source() {
    let now = Instant::now();
    let sqlite = |id: usize, short: &str| {
        let mut s = info(id, "sqlite leaderlock");
        s.short = short.into();
        s.endpoints = "sqlite:/srv/locks.db".into();
        s.scheme = Some(Scheme::SqlLease);
        s
    };
    let mut app = App::new(vec![sqlite(0, "orders"), sqlite(1, "sql2")], now, wall());
    let down = ConnState::Down {
        error: "database is locked".into(),
        retry_at: now + Duration::from_secs(3),
        lasting: false,
    };
    for (source, state) in [(0, ConnState::Connected), (1, down)] {
        app::update(&mut app, Msg::Source(SourceEvent::Conn { source, state }));
    }
    let status = |w: u16| {
        let t = render(&app, w, 24);
        let buf = t.backend().buffer();
        let last: String = (0..w).map(|x| buf[(x, 23)].symbol().to_string()).collect();
        last.trim_end().to_string()
    };
    let wide = status(140);
    let narrow = status(80);
    insta::assert_snapshot!(format!("140 columns:\n{wide}\n80 columns:\n{narrow}"));
    assert!(!narrow.contains("leaderlock"), "labels go first: {narrow}");
    assert!(narrow.contains("● orders ✖ sql2 "), "{narrow}");
}

/// Issue 43: a long reason was cut at the line's end (`(etcd 127.0.0.1:26379: the se`):
/// the problem comes before the endpoints, and what does not fit says where it is whole.
#[test]
fn the_status_line_gives_a_down_source_room_and_says_where_the_reason_is() {
    let now = Instant::now();
    let mut app = App::new(vec![info(0, "/e/"), info(1, "/leader/")], now, wall());
    let down = ConnState::Down {
        error: "etcd 127.0.0.1:26379: the server closed the connection: GOAWAY too_many_pings \
                (is the etcd member overloaded?)"
            .into(),
        retry_at: now + Duration::from_secs(3),
        lasting: false,
    };
    for (source, state) in [(0, ConnState::Connected), (1, down)] {
        app::update(&mut app, Msg::Source(SourceEvent::Conn { source, state }));
    }
    let t = render(&app, 80, 24);
    let buf = t.backend().buffer();
    let last: String = (0..80).map(|x| buf[(x, 23)].symbol().to_string()).collect();
    assert!(
        last.starts_with("DOWN etcd2: retry in 3.0s (etcd 127.0.0.1:26379: the server"),
        "the problem first: {last}"
    );
    assert!(last.trim_end().ends_with("… v: whole reason"), "{last}");
    let t = render(&app, 200, 24);
    let buf = t.backend().buffer();
    let wide: String = (0..200)
        .map(|x| buf[(x, 23)].symbol().to_string())
        .collect();
    assert!(
        wide.contains("(is the etcd member overloaded?))"),
        "whole: {wide}"
    );
}

#[test]
fn a_snapshot_being_read_says_how_far_until_connected() {
    let now = Instant::now();
    let mut app = sample(now);
    let loading = |read| SourceEvent::Loading {
        source: 0,
        read,
        total: 100_000,
        what: "keys",
    };
    app::update(&mut app, Msg::Source(loading(12_000)));
    let text = format!("{}", render(&app, 120, 24).backend());
    assert!(
        text.contains("loading snapshot: 12,000 of 100,000 keys"),
        "{text}"
    );
    let connected = SourceEvent::Conn {
        source: 0,
        state: ConnState::Connected,
    };
    app::update(&mut app, Msg::Source(connected));
    let text = format!("{}", render(&app, 120, 24).backend());
    assert!(!text.contains("loading snapshot"), "{text}");
}

/// A ZooKeeper source's first read, 10,000 elections: what was read so far is listed at
/// once, the count is qualified by how far the read got, and nothing says "connected".
#[test]
fn elections_read_so_far_are_shown_while_the_first_read_goes_on() {
    let now = Instant::now();
    let mut zk = info(0, "/b");
    zk.name = "zookeeper 127.0.0.1:2181 /b".into();
    zk.short = "zk1".into();
    zk.scheme = Some(Scheme::ZkRecipe);
    let mut app = App::new(vec![zk], now, wall());
    let elections = (0..3)
        .map(|i| {
            let mut e = Election::new(0, format!("e{i:06}"), Scheme::ZkRecipe);
            e.candidates = (0..3)
                .map(|c| {
                    let path = format!("/b/e{i:06}/_c_{c}-latch-{c:010}");
                    Candidate {
                        key: path.clone(),
                        raw_key: path.into_bytes(),
                        lease: None,
                        stamp: Some("0x1000a2b3c4d0000".into()),
                        ..candidate(&format!("node-{i}-{c}"), 0, 10 + c, None, now)
                    }
                })
                .collect();
            e.leader = e.candidates.first().cloned();
            e
        })
        .collect();
    let events = [
        SourceEvent::Loading {
            source: 0,
            read: 0,
            total: 40_000,
            what: "znodes",
        },
        SourceEvent::Elections {
            source: 0,
            elections,
        },
        SourceEvent::Loading {
            source: 0,
            read: 10_012,
            total: 40_000,
            what: "znodes",
        },
    ];
    for ev in events {
        app::update(&mut app, Msg::Source(ev));
    }
    app::update(&mut app, Msg::Tick { now, wall: wall() });
    let text = format!("{}", render(&app, 120, 16).backend());
    assert!(
        text.contains("3 elections · loading snapshot: 10,012 of 40,000 znodes"),
        "{text}"
    );
    let header = text.lines().next().unwrap_or_default();
    assert!(!header.contains("no leader"), "{header}");
    insta::assert_snapshot!(text);
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
    // Cut to its cell with `…`: the text, not its length in its place (`Enter` has it whole).
    assert!(
        text.contains(&format!("{}…", "x".repeat(20))) && !text.contains("chars)"),
        "huge value is cut and marked:\n{text}"
    );
    assert!(text.contains("of 500"), "line says where it is:\n{text}");
    assert!(text.contains("node-49"), "scrolled to the end:\n{text}");
}

/// How many admin actions an update sent off to run.
fn sent(done: &app::Updated) -> usize {
    done.effects
        .iter()
        .filter(|e| matches!(e, app::Effect::Admin(_)))
        .count()
}

#[test]
fn confirm_dialog_says_what_will_be_written() {
    let now = Instant::now();
    let mut app = sample(now);
    app::update(&mut app, Msg::Action(Action::Reelect));
    insta::assert_snapshot!(render(&app, 100, 30).backend());
    let back = app::update(&mut app, Msg::Action(Action::Back));
    assert!(app.dialog.is_none());
    assert!(sent(&back) == 0, "cancelled: nothing queued");
}

/// Quitting where it stops something (the demo) while an action is under way: the question
/// says the action is still running and that quitting waits for it.
#[test]
fn the_quit_question_names_the_action_under_way() {
    let mut app = sample(Instant::now());
    app.around.quit_asks = Some("stops every node");
    app::update(&mut app, Msg::Action(Action::Reelect));
    let yes = app::update(&mut app, Msg::Action(Action::Accept));
    assert_eq!(sent(&yes), 1, "the action was sent");
    let q = app::update(&mut app, Msg::Action(Action::Quit));
    let text = format!("{}", render(&app, 100, 30).backend());
    assert!(text.contains("Quitting stops every node."), "{text}");
    assert!(
        text.contains("Still under way: force a re-election of jobs"),
        "{text}"
    );
    assert!(text.contains("quitting waits for"), "{text}");
    assert!(!q.quits());
}

#[test]
fn force_leader_picks_from_the_line_then_confirms() {
    let now = Instant::now();
    let mut app = sample(now);
    app::update(&mut app, Msg::Action(Action::ForceLeader));
    app::update(&mut app, Msg::Action(Action::Down));
    app::update(&mut app, Msg::Action(Action::Accept));
    let text = format!("{}", render(&app, 100, 30).backend());
    assert!(text.contains("Force node-c to lead jobs"), "{text}");
    assert!(
        text.contains("node-c leads next; node-a and node-b leave the line."),
        "{text}"
    );
    // The notes are in the details, one key away.
    app::update(&mut app, Msg::Action(Action::Details));
    let text = format!("{}", render(&app, 100, 30).backend());
    assert!(
        text.contains("Removes from the line: node-a, node-b"),
        "{text}"
    );
    let yes = app::update(&mut app, Msg::Action(Action::Accept));
    assert_eq!(sent(&yes), 1, "confirmed: queued for the runtime");
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
    for s in app.model.sources.iter_mut() {
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
    // The operator is on jobs (the top row): the selection follows it as rows move.
    app.chosen = true;
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
    app.model.sources[0].info.clustered = true;
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
        mode: None,
        latency: None,
        note: None,
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
    // Issue 43: at 80 columns the endpoints were cut to `127.0.0` and the reason was only
    // at the bottom: each endpoint is whole, and a DOWN member's reason is under its row.
    let text = format!("{}", render(&app, 80, 24).backend());
    let lines: Vec<&str> = text.lines().collect();
    let down = lines
        .iter()
        .position(|l| l.contains("127.0.0.1:2379 ") && l.contains("DOWN"))
        .unwrap_or_else(|| panic!("the endpoint whole beside DOWN:\n{text}"));
    let under: String = lines[down + 1..down + 3].concat();
    assert!(
        under.contains("connection refused") && under.contains("there?)"),
        "the whole reason under the DOWN row:\n{text}"
    );
    assert!(text.contains("127.0.0.1:32379"), "{text}");
    insta::assert_snapshot!("members_at_80x24", render(&app, 80, 24).backend());
    let esc = app::update(&mut app, Msg::Action(Action::Back));
    assert!(
        !app.show_members && !esc.quits(),
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
    assert!(!text.contains("1 no leader"), "{text}");
    assert!(text.contains("layout unsure: set --scheme"), "{text}");

    app.model.sources[0].info.idle_is_normal = false;
    let elections = vec![Election::new(0, "reportJob".into(), Scheme::SqlLease)];
    app::update(
        &mut app,
        Msg::Source(SourceEvent::Elections {
            source: 0,
            elections,
        }),
    );
    let text = format!("{}", render(&app, 120, 24).backend());
    assert!(text.contains("1 no leader"), "the alarm elsewhere: {text}");
}

fn change(at: SystemTime, from: Option<&str>, to: Option<&str>, cause: Cause) -> HistoryEntry {
    HistoryEntry {
        at: Some(at),
        revision: None,
        from: from.map(str::to_string),
        to: to.map(str::to_string),
        cause,
        by: None,
    }
}

fn led(name: &str, source: usize, leader: Candidate) -> Election {
    let mut e = Election::new(source, name.into(), Scheme::EtcdElection);
    e.leader = Some(leader.clone());
    e.candidates = vec![leader];
    e
}

/// One election for each alarm, and one without.
fn triage(now: Instant) -> App {
    let mut app = App::new(vec![info(0, "/e/"), info(1, "/far/")], now, wall());
    let ttl = Some((20_000, 30_000));
    let mut flapper = led("flapper", 0, candidate("svc-2", 0x21, 40, ttl, now));
    for i in 0..8u64 {
        let (a, b) = if i % 2 == 0 {
            ("svc-1", "svc-2")
        } else {
            ("svc-2", "svc-1")
        };
        let at = wall() - Duration::from_secs(16 - 2 * i);
        flapper.record(change(at, Some(a), Some(b), Cause::TakenOver), 50);
    }
    let mut orphan = Election::new(0, "orphan".into(), Scheme::EtcdElection);
    orphan.record(
        change(
            wall() - Duration::from_secs(30),
            Some("w-1"),
            None,
            Cause::LeaseExpired,
        ),
        50,
    );
    orphan.candidates = vec![candidate("w-2", 0x31, 50, None, now)];
    let mut deposed = led("billing", 0, candidate("b-2", 0x41, 60, ttl, now));
    deposed.deposed = Some(Box::new(candidate(
        "b-1",
        0x40,
        55,
        Some((8_000, 30_000)),
        now,
    )));
    let split = led("payments", 0, candidate("p-1", 0x51, 70, ttl, now));
    let zombie = led("stuck", 0, candidate("old-node", 0, 2, None, now));
    let calm = led(
        "calm",
        0,
        candidate("c-1", 0x61, 80, Some((28_000, 30_000)), now),
    );
    let far = led("far-away", 1, candidate("f-1", 0x71, 90, ttl, now));
    app.model.split_brain.insert((0, "payments".into()));
    let sets = [
        (0, vec![flapper, orphan, deposed, split, zombie, calm]),
        (1, vec![far]),
    ];
    for (source, elections) in sets {
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
        app::update(&mut app, Msg::Source(SourceEvent::Synced { source }));
    }
    contact(&mut app, 0, now + Duration::from_secs(9));
    contact(&mut app, 1, now);
    app::update(
        &mut app,
        Msg::Tick {
            now: now + Duration::from_secs(9),
            wall: wall(),
        },
    );
    app
}

#[test]
fn each_alarm_is_marked_counted_and_sorted_first() {
    let app = triage(Instant::now());
    let text = format!("{}", render(&app, 160, 30).backend());
    for counted in [
        "‼ 1 split brain",
        "✖ 1 no leader",
        "⚠ 1 deposed",
        "↯ 1 flapping",
        "∞ 1 zombie key",
        "STALE — no contact with etcd2",
    ] {
        assert!(text.contains(counted), "{counted}:\n{text}");
    }
    let order: Vec<&str> = app.rows.iter().map(|r| r.key.1.as_str()).collect();
    assert_eq!(
        order,
        [
            "payments", "orphan", "billing", "flapper", "stuck", "far-away", "calm"
        ],
        "worst first, the healthy last"
    );
    assert!(text.contains("8/m"), "the flapper's rate:\n{text}");
    insta::assert_snapshot!(render(&app, 160, 30).backend());
    let narrow = format!("{}", render(&app, 100, 30).backend());
    assert!(
        narrow.contains("‼1 ✖1 ⚠1 ↯1 ∞1"),
        "narrower, the counts are compact but all there:\n{narrow}"
    );
}

#[test]
fn without_colour_the_glyphs_still_tell_the_alarms() {
    use ratatui::style::Color;
    electop::ui::theme::set_color(false);
    let app = triage(Instant::now());
    let t = render(&app, 120, 30);
    electop::ui::theme::set_color(true);
    let buf = t.backend().buffer();
    let coloured = buf
        .content()
        .iter()
        .filter(|c| c.fg != Color::Reset || c.bg != Color::Reset)
        .count();
    assert_eq!(coloured, 0, "NO_COLOR: no cell has a colour");
    let text = format!("{}", t.backend());
    for glyph in ["‼", "✖", "⚠", "↯", "∞", "◐"] {
        assert!(text.contains(glyph), "{glyph} without colour:\n{text}");
    }
    insta::assert_snapshot!(t.backend());
}

fn typed(app: &mut App, start: Action, text: &str) {
    app::update(app, Msg::Action(start));
    for c in text.chars() {
        app::update(app, Msg::Action(Action::Type(c)));
    }
}

#[test]
fn a_filter_narrows_the_rows_and_shows_in_the_header() {
    let mut app = triage(Instant::now());
    typed(&mut app, Action::StartFilter, "re:^(f|s)");
    let text = format!("{}", render(&app, 100, 24).backend());
    assert!(text.contains("/re:^(f|s) (3 of 7)"), "{text}");
    insta::assert_snapshot!(render(&app, 100, 24).backend());
    app::update(&mut app, Msg::Action(Action::Accept));
    let text = format!("{}", render(&app, 100, 24).backend());
    assert!(
        text.contains("/re:^(f|s) (3 of 7)"),
        "kept after Enter:\n{text}"
    );
    assert!(!text.contains("calm"), "{text}");
    typed(&mut app, Action::StartFilter, "(");
    let text = format!("{}", render(&app, 100, 24).backend());
    assert!(text.contains("not a regex"), "a bad regex says so:\n{text}");
    app::update(&mut app, Msg::Action(Action::Back));
    assert!(app.filter.is_none() && app.rows.len() == 7, "Esc clears it");
}

#[test]
fn the_command_bar_lists_and_completes() {
    let mut app = triage(Instant::now());
    typed(&mut app, Action::StartCommand, "so");
    app::update(&mut app, Msg::Action(Action::Complete));
    typed(&mut app, Action::Erase, "");
    app::update(&mut app, Msg::Action(Action::Type(' ')));
    typed(&mut app, Action::Type('l'), "");
    let text = format!("{}", render(&app, 100, 24).backend());
    assert!(
        text.contains(":sort l▏") && text.contains("sort leader  sort line  sort last"),
        "{text}"
    );
    insta::assert_snapshot!(render(&app, 100, 24).backend());
    typed(&mut app, Action::Type('e'), "");
    app::update(&mut app, Msg::Action(Action::Complete));
    app::update(&mut app, Msg::Action(Action::Accept));
    let text = format!("{}", render(&app, 100, 24).backend());
    assert!(
        text.contains("LEADER▲"),
        "the sorted column says so:\n{text}"
    );
}

fn happened(
    app: &mut App,
    kind: electop::model::EventKind,
    from: Option<&str>,
    to: Option<&str>,
    secs: u64,
) {
    let event = electop::model::Event {
        at: Some(wall() - Duration::from_secs(60) + Duration::from_millis(secs * 1000 + 250)),
        source: "etcd 127.0.0.1:2379 /e/".into(),
        election: Some("jobs".into()),
        kind,
        from: from.map(str::to_string),
        to: to.map(str::to_string),
        cause: Some(Cause::LeaseExpired),
        was: None,
        revision: Some(40 + secs as i64),
        replayed: false,
        detail: None,
    };
    app::update(app, Msg::Source(SourceEvent::Happened(event)));
}

#[test]
fn the_events_view_lists_every_change_newest_first_and_wraps() {
    use electop::model::EventKind;
    let mut app = sample(Instant::now());
    happened(&mut app, EventKind::LeaderLost, Some("node-a"), None, 1);
    happened(&mut app, EventKind::LeaderElected, None, Some("node-b"), 3);
    let long = format!("node-{}", "x".repeat(90));
    happened(&mut app, EventKind::CandidateJoined, None, Some(&long), 4);
    app::update(&mut app, Msg::Action(Action::Reelect));
    app::update(&mut app, Msg::Action(Action::Accept));
    app::update(
        &mut app,
        Msg::AdminDone(electop::admin::Outcome::Done {
            detail: "revoked lease 11; node-b leads".into(),
        }),
    );
    app::update(&mut app, Msg::Action(Action::ToggleEvents));
    let text = format!("{}", render(&app, 80, 24).backend());
    assert!(text.contains("failover 2.0s"), "{text}");
    assert!(
        text.contains("done: revoked lease 11"),
        "the action outcome, in the status line and the events:\n{text}"
    );
    let newest = text.find("force a re-election").expect("the action");
    let oldest = text.find("leader node-a → ∅").expect("the loss");
    assert!(newest < oldest, "newest first:\n{text}");
    assert!(
        text.contains(&"x".repeat(20)),
        "long ids wrap, not cut:\n{text}"
    );
    insta::assert_snapshot!(render(&app, 80, 24).backend());
    typed(&mut app, Action::StartFilter, "node-a");
    app::update(&mut app, Msg::Action(Action::Accept));
    let text = format!("{}", render(&app, 80, 24).backend());
    assert!(text.contains("1 event ·"), "{text}");
    assert_eq!(
        text.matches("etcd1 jobs").count(),
        1,
        "only the loss:\n{text}"
    );
}

#[test]
fn a_click_selects_the_row_under_it_and_the_wheel_scrolls() {
    let mut app = triage(Instant::now());
    app::update(
        &mut app,
        Msg::Resize {
            width: 100,
            height: 30,
        },
    );
    // The table's first row is under its border and column headers.
    let target = electop::ui::target_at(&app, 10, 5).expect("a row");
    app::update(&mut app, Msg::Click(target, std::time::Instant::now()));
    assert_eq!(app.selected, 2);
    assert_eq!(
        app.selected_election().map(|e| e.name.as_str()),
        Some("billing")
    );
    let target = electop::ui::target_at(&app, 10, 20).expect("the candidates pane");
    app::update(&mut app, Msg::Click(target, std::time::Instant::now()));
    assert_eq!(app.focus, electop::app::Focus::Candidates);
    let table = electop::ui::target_at(&app, 10, 5).expect("the table");
    app::update(&mut app, Msg::Wheel(table, 3));
    assert_eq!(app.selected, 5, "the wheel moves the selection");
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
    let mut queued = sent(&app::update(&mut app, Msg::Action(Action::ForceLeader)));
    queued += sent(&app::update(&mut app, Msg::Action(Action::Accept)));
    let text = format!("{}", render(&app, 120, 30).backend());
    assert!(text.contains("Force n2 to lead pgdemo"), "{text}");
    assert!(
        text.contains("n2 leads once Patroni has switched over"),
        "{text}"
    );
    queued += sent(&app::update(&mut app, Msg::Action(Action::Details)));
    let text = format!("{}", render(&app, 120, 30).backend());
    assert!(text.contains("A Patroni switchover"), "{text}");
    queued += sent(&app::update(&mut app, Msg::Action(Action::Back)));
    queued += sent(&app::update(&mut app, Msg::Action(Action::Back)));
    queued += sent(&app::update(&mut app, Msg::Action(Action::Reelect)));
    let text = format!("{}", render(&app, 120, 30).backend());
    assert!(text.contains("Patroni picks its leader itself"), "{text}");
    assert!(queued == 0, "nothing queued");
}

/// With a context, the header names it; with several sources, each row names its source: in
/// a SOURCE column where there is room, before the name (`SOURCE/NAME`) where there is not.
#[test]
fn the_context_shows_in_the_header_and_each_row_names_its_source() {
    let now = Instant::now();
    let mut app = sample(now);
    app.model.sources[0].info.short = "prod-etcd".into();
    app.model.sources[1].info.short = "prod-pg".into();
    app.contexts = electop::app::contexts::Contexts {
        current: Some("prod".into()),
        names: vec!["prod".into(), "staging".into()],
        switch_to: None,
    };
    let wide = format!("{}", render(&app, 100, 24).backend());
    assert!(wide.contains(" electop · ctx prod · 3 elections"), "{wide}");
    assert!(
        wide.contains("SOURCE") && wide.contains("prod-pg   billing"),
        "{wide}"
    );
    insta::assert_snapshot!("context_wide", render(&app, 100, 24).backend());
    let narrow = format!("{}", render(&app, 80, 24).backend());
    assert!(
        !narrow.contains("SOURCE") && narrow.contains("prod-pg/billing"),
        "{narrow}"
    );
}

/// A store that could not be read at start is DOWN in the header and the table's title,
/// never shown as an empty store ("none found"), at 80x24 as at 120 columns.
#[test]
fn a_source_never_read_is_down_not_empty() {
    let now = Instant::now();
    let mut app = App::new(vec![info(0, "/e/")], now, wall());
    app::update(
        &mut app,
        Msg::Source(SourceEvent::Conn {
            source: 0,
            state: ConnState::Down {
                error: "etcd 127.0.0.1:1: connection refused".into(),
                retry_at: now + Duration::from_secs(1),
                lasting: false,
            },
        }),
    );
    for (w, h) in [(80, 24), (120, 35)] {
        let text = format!("{}", render(&app, w, h).backend());
        assert!(text.contains("DOWN — etcd1 not read"), "{w}x{h}:\n{text}");
        assert!(text.contains("unknown: etcd1 DOWN"), "{w}x{h}:\n{text}");
        assert!(!text.contains("none found"), "{w}x{h}:\n{text}");
    }
}

/// While an etcd-election re-election holds the deposed key, the row says so from the read
/// model (as any electop started meanwhile sees it) and counts the hold down
/// (`⏳ node-b next in 22 s · re-election`), at 80x24 as wider, until the store elects.
#[test]
fn a_reelection_under_way_counts_down_on_its_row() {
    let now = Instant::now();
    let mut app = sample(now);
    let mut jobs = app.model.elections[&(0, "jobs".to_string())].clone();
    let held = candidate("node-a", 0x99, 5, Some((22_000, 22_000)), now);
    jobs.leader = None;
    jobs.candidates.remove(0);
    jobs.held = Some(Box::new(held.clone()));
    jobs.deposed = Some(Box::new(held));
    let forced = HistoryEntry {
        at: Some(wall()),
        revision: Some(7),
        from: Some("node-a".into()),
        to: None,
        cause: Cause::ForcedReelection,
        by: Some("ops".into()),
    };
    jobs.record(forced, 10);
    let update = |app: &mut App, e: &Election| {
        let elections = vec![e.clone()];
        app::update(
            app,
            Msg::Source(SourceEvent::Elections {
                source: 0,
                elections,
            }),
        );
    };
    update(&mut app, &jobs);
    assert!(app.needs_tick(10), "a hold keeps the clock going");
    for (w, h) in [(80, 24), (120, 35)] {
        let text = format!("{}", render(&app, w, h).backend());
        assert!(text.contains("⏳ node-b next in 22 s"), "{w}x{h}:\n{text}");
    }
    let text = format!("{}", render(&app, 250, 35).backend());
    assert!(text.contains("· re-election"), "{text}");
    assert!(text.contains("deposed node-a"), "{text}");
    app::update(
        &mut app,
        Msg::Tick {
            now: now + Duration::from_secs(10),
            wall: wall() + Duration::from_secs(10),
        },
    );
    let text = format!("{}", render(&app, 120, 35).backend());
    assert!(text.contains("next in 12 s"), "counts down:\n{text}");
    // The hold lease ended: etcd deleted the held key and node-b leads.
    jobs.held = None;
    jobs.deposed = None;
    jobs.leader = jobs.candidates.first().cloned();
    update(&mut app, &jobs);
    let text = format!("{}", render(&app, 120, 35).backend());
    assert!(!text.contains("⏳"), "{text}");
}
