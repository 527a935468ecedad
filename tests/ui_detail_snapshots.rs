//! Snapshots of the content-sized table, the history that never cuts a cause, the detail
//! view (`Enter`) of each kind of election, the copy flash, and every admin dialog; drawn
//! from hand-built states with a fixed clock, as in `ui_snapshots.rs`.

use std::time::{Duration, Instant};

use electop::app::{self, Action, App, Msg};
use electop::model::{Cause, ConnState, Election, HistoryEntry, Scheme, SourceEvent};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

mod common;
use common::ui::{candidate, info, wall};

fn change(secs_ago: u64, from: Option<&str>, to: Option<&str>, cause: Cause) -> HistoryEntry {
    HistoryEntry {
        at: Some(wall() - Duration::from_secs(secs_ago)),
        revision: Some(100 - secs_ago as i64),
        from: from.map(str::to_string),
        to: to.map(str::to_string),
        cause,
        by: None,
    }
}

fn load(app: &mut App, source: usize, elections: Vec<Election>) {
    app::update(
        app,
        Msg::Source(SourceEvent::Elections { source, elections }),
    );
    app::update(
        app,
        Msg::Source(SourceEvent::Conn {
            source,
            state: ConnState::Connected,
        }),
    );
    app::update(app, Msg::Source(SourceEvent::Synced { source }));
}

fn select(app: &mut App, name: &str) {
    app.selected = app
        .rows
        .iter()
        .position(|r| r.key.1 == name)
        .expect("the election is listed");
    app.chosen = true;
}

fn render(app: &mut App, w: u16, h: u16) -> String {
    app::update(
        app,
        Msg::Resize {
            width: w,
            height: h,
        },
    );
    let mut t = Terminal::new(TestBackend::new(w, h)).expect("terminal");
    t.draw(|f| electop::ui::view(app, f)).expect("draw");
    format!("{}", t.backend())
}

/// A long-named election beside short ones, and leaders of every length.
fn mixed(now: Instant) -> App {
    let mut app = App::new(vec![info(0, "/e/", Scheme::EtcdElection)], now, wall());
    let long = "payments-reconciliation-nightly-batch-eu-west-1-primary";
    let mut elections = Vec::new();
    for (name, leader) in [
        (long, "worker-7"),
        ("jobs", "node-a"),
        ("db", "pg-primary-2.internal.example.com"),
        ("cron", "c1"),
    ] {
        let mut e = Election::new(0, name.into(), Scheme::EtcdElection);
        let c = candidate(
            leader,
            &format!("/e/{name}/694d7a"),
            Some(0x694d7a),
            12,
            now,
        );
        e.leader = Some(c.clone());
        e.candidates = vec![c];
        e.record(change(30, None, Some(leader), Cause::Elected), 10);
        elections.push(e);
    }
    load(&mut app, 0, elections);
    app::update(&mut app, Msg::Action(Action::SortBy(app::SortKey::Name)));
    app
}

#[test]
fn columns_follow_content_at_80x24() {
    let mut app = mixed(Instant::now());
    select(&mut app, "jobs");
    let text = render(&mut app, 80, 24);
    let header = text.lines().nth(2).unwrap_or("");
    assert!(
        header.contains("LEADER") && header.contains("LAST"),
        "every column has a place:\n{text}"
    );
    let db = text.lines().find(|l| l.contains("│   db")).unwrap_or("");
    assert!(
        db.contains("pg-primary-2"),
        "the leader is not starved by the long name:\n{text}"
    );
    insta::assert_snapshot!(text);
}

#[test]
fn columns_follow_content_at_200x50() {
    let mut app = mixed(Instant::now());
    let text = render(&mut app, 200, 50);
    // The table has half the width: the long name and the long leader share the cut.
    let kept = |full: &str| {
        let cut: String = full.chars().take(24).collect();
        text.contains(&cut)
    };
    assert!(
        kept("payments-reconciliation-nightly-batch-eu-west-1-primary")
            && kept("pg-primary-2.internal.example.com"),
        "both long cells keep 24 characters or more:\n{text}"
    );
    assert!(
        !text.contains("SCHEME"),
        "the scheme gives way while names are cut:\n{text}"
    );
    insta::assert_snapshot!(text);
}

#[test]
fn history_causes_are_never_cut() {
    let now = Instant::now();
    let mut app = App::new(vec![info(0, "/e/", Scheme::EtcdElection)], now, wall());
    let mut e = Election::new(0, "jobs".into(), Scheme::EtcdElection);
    let a = "service-instance-alpha-0123456789";
    let b = "service-instance-bravo-0123456789";
    let c = candidate(b, "/e/jobs/1", Some(1), 5, now);
    e.leader = Some(c.clone());
    e.candidates = vec![c];
    e.record(change(90, None, Some(a), Cause::Elected), 10);
    e.record(change(60, Some(a), Some(b), Cause::ForcedReelection), 10);
    e.record(change(30, Some(b), Some(a), Cause::LeaseExpired), 10);
    e.record(change(10, Some(a), Some(b), Cause::LeaseRevoked), 10);
    load(&mut app, 0, vec![e]);
    for (w, h) in [(80, 24), (120, 30)] {
        let text = render(&mut app, w, h);
        for cause in [
            "forced_reelection",
            "lease_expired",
            "lease_revoked",
            "elected",
        ] {
            assert!(text.contains(cause), "{cause} whole at {w}x{h}:\n{text}");
        }
    }
    insta::assert_snapshot!(render(&mut app, 80, 24));
}

/// Two workers' ids that differ only at their end (kazoo's `host:pid`): the history pane
/// cuts them in the middle, so the pids that tell them apart stay.
#[test]
fn history_names_cut_keep_their_ends() {
    let now = Instant::now();
    let mut app = App::new(vec![info(0, "/e/", Scheme::EtcdElection)], now, wall());
    let mut e = Election::new(0, "jobs".into(), Scheme::EtcdElection);
    let a = "worker-a.eu-west-1.internal:10234";
    let b = "worker-b.eu-west-1.internal:10297";
    let c = candidate(a, "/e/jobs/1", Some(1), 5, now);
    e.leader = Some(c.clone());
    e.candidates = vec![c];
    e.record(change(60, None, Some(b), Cause::Elected), 10);
    e.record(change(10, Some(b), Some(a), Cause::LeaseExpired), 10);
    load(&mut app, 0, vec![e]);
    let text = render(&mut app, 80, 24);
    let line = text
        .lines()
        .find(|l| l.contains(" → worke"))
        .unwrap_or_else(|| panic!("the change:\n{text}"));
    assert!(
        line.contains("0297 → ") && line.contains("0234│"),
        "both pids:\n{text}"
    );
}

/// An etcd lease key: a long key, a value that is the leader's id, a lease and its TTL.
#[test]
fn detail_of_a_lease_key() {
    let now = Instant::now();
    let mut app = App::new(vec![info(0, "/leader/", Scheme::EtcdLeaseKey)], now, wall());
    let mut e = Election::new(0, "billing".into(), Scheme::EtcdLeaseKey);
    let key = format!("/leader/billing/{}", "region-eu-west-1/".repeat(6));
    let c = candidate("node-b", &key, Some(0x694d7a1c2b), 40, now);
    e.leader = Some(c.clone());
    e.candidates = vec![c];
    e.record(
        change(4, Some("node-a"), Some("node-b"), Cause::LeaseExpired),
        10,
    );
    load(&mut app, 0, vec![e]);
    app::update(&mut app, Msg::Action(Action::Describe));
    let text = render(&mut app, 80, 24);
    assert!(text.contains("694d7a1c2b (hex)"), "{text}");
    assert!(text.contains("42.3s left of 1m00s granted"), "{text}");
    assert!(text.contains("create 40 · mod 41"), "{text}");
    insta::assert_snapshot!(text);
    app::update(&mut app, Msg::Action(Action::Back));
    assert!(app.describe.is_none(), "Esc closes the detail");
}

/// An etcd election with 1 200 candidates: the ranks fit their four digits, in the detail
/// view and in the candidates pane.
#[test]
fn detail_of_an_election_with_a_thousand_candidates() {
    let now = Instant::now();
    let mut app = App::new(vec![info(0, "/e/", Scheme::EtcdElection)], now, wall());
    let mut e = Election::new(0, "crowd".into(), Scheme::EtcdElection);
    e.candidates = (0..1200)
        .map(|i| {
            candidate(
                &format!("node-{i:04}"),
                &format!("/e/crowd/{:x}", 0x1000 + i),
                Some(0x1000 + i),
                10 + i,
                now,
            )
        })
        .collect();
    e.leader = e.candidates.first().cloned();
    e.record(change(5, None, Some("node-0000"), Cause::Elected), 10);
    load(&mut app, 0, vec![e]);
    app::update(&mut app, Msg::Action(Action::FocusNext));
    app::update(&mut app, Msg::Action(Action::Bottom));
    let pane = render(&mut app, 80, 24);
    assert!(pane.contains(" 1200 node-1199"), "rank 1200 whole:\n{pane}");
    insta::assert_snapshot!("thousand_candidates_pane", pane);
    app::update(&mut app, Msg::Action(Action::Describe));
    app::update(&mut app, Msg::Action(Action::Bottom));
    app::update(&mut app, Msg::Action(Action::PageUp));
    let text = render(&mut app, 100, 30);
    assert!(text.contains("1180  node-1179"), "{text}");
    insta::assert_snapshot!("thousand_candidates_detail", text);
}

/// A SQL lease row: the row's fields instead of revisions, and an alarm.
#[test]
fn detail_of_a_sql_lease() {
    let now = Instant::now();
    let mut app = App::new(vec![info(0, "leaderlock", Scheme::SqlLease)], now, wall());
    let mut e = Election::new(0, "reportJob".into(), Scheme::SqlLease);
    let mut c = candidate("app-3", "reportJob", None, 0, now);
    c.stamp = Some("2026-11-23 01:02:03.456".into());
    e.leader = Some(c.clone());
    e.candidates = vec![c];
    for i in 0..6u64 {
        let (x, y) = if i % 2 == 0 {
            ("app-3", "app-4")
        } else {
            ("app-4", "app-3")
        };
        e.record(change(50 - 5 * i, Some(x), Some(y), Cause::TakenOver), 10);
    }
    load(&mut app, 0, vec![e]);
    app::update(&mut app, Msg::Tick { now, wall: wall() });
    app::update(&mut app, Msg::Action(Action::Describe));
    let text = render(&mut app, 100, 30);
    assert!(
        text.contains("key reportJob · holder app-3 · until 2026-11-23 01:02:03.456"),
        "{text}"
    );
    assert!(text.contains("↯ flapping"), "{text}");
    insta::assert_snapshot!(text);
}

/// A ZooKeeper election: the holder's session where a TTL would be, czxid/mzxid in
/// ZooKeeper's hex, and since when history is known (ZooKeeper keeps none).
#[test]
fn detail_of_a_zookeeper_election() {
    let now = Instant::now();
    let mut app = App::new(vec![info(0, "/election", Scheme::ZkRecipe)], now, wall());
    let mut e = Election::new(0, "jobs".into(), Scheme::ZkRecipe);
    e.candidates = ["k-a", "k-b"]
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let key = format!("/election/jobs/u{i}__lock__000000000{i}");
            let mut c = candidate(id, &key, None, 0x1_0000_0004 + i as i64, now);
            c.ttl = None;
            c.stamp = Some(format!("0x10000b2c5f0000{i}"));
            c
        })
        .collect();
    e.leader = e.candidates.first().cloned();
    load(&mut app, 0, vec![e]);
    app::update(
        &mut app,
        Msg::Source(SourceEvent::Session {
            source: 0,
            id: "0x10000b2c5f00009".into(),
            timeout: Duration::from_secs(10),
            history_since: wall() - Duration::from_secs(30),
            gaps: Vec::new(),
        }),
    );
    app::update(&mut app, Msg::Tick { now, wall: wall() });
    select(&mut app, "jobs");
    let detail = render(&mut app, 120, 24);
    assert!(
        detail.contains("session 0x10000b2c5f00000 czxid 0x100000004"),
        "{detail}"
    );
    assert!(detail.contains("since"), "{detail}");
    assert!(!detail.contains("until"), "no deadline invented: {detail}");
    app::update(&mut app, Msg::Action(Action::Describe));
    let text = render(&mut app, 120, 30);
    assert!(
        text.contains("czxid 0x100000004 · mzxid 0x100000005"),
        "{text}"
    );
    assert!(
        !text.contains("Revisions") && !text.contains("not read yet"),
        "{text}"
    );
    insta::assert_snapshot!(text);
}

#[test]
fn y_copies_the_leader_id_and_says_so() {
    let mut app = mixed(Instant::now());
    select(&mut app, "db");
    let copied = app::update(&mut app, Msg::Action(Action::CopyLeader));
    let clipboard = copied.effects.iter().find_map(|e| match e {
        app::Effect::Copy(text) => Some(text.as_str()),
        _ => None,
    });
    assert_eq!(clipboard, Some("pg-primary-2.internal.example.com"));
    let text = render(&mut app, 100, 24);
    assert!(text.contains("copied leader id pg-primary-2"), "{text}");
    insta::assert_snapshot!(text);
}

/// The sample of `ui_snapshots.rs`, smaller: an etcd election with a line of three.
fn line_of_three(now: Instant) -> App {
    let mut app = App::new(vec![info(0, "/e/", Scheme::EtcdElection)], now, wall());
    let mut e = Election::new(0, "jobs".into(), Scheme::EtcdElection);
    e.candidates = ["node-a", "node-b", "node-c"]
        .iter()
        .enumerate()
        .map(|(i, id)| {
            candidate(
                id,
                &format!("/e/jobs/{:x}", 0x11 + i),
                Some(0x11 + i as i64),
                5 + i as i64,
                now,
            )
        })
        .collect();
    e.leader = e.candidates.first().cloned();
    load(&mut app, 0, vec![e]);
    app
}

#[test]
fn force_leader_picker() {
    let mut app = line_of_three(Instant::now());
    app::update(&mut app, Msg::Action(Action::ForceLeader));
    app::update(&mut app, Msg::Action(Action::Down));
    let text = render(&mut app, 100, 30);
    assert!(text.contains("node-b") && text.contains("node-c"), "{text}");
    insta::assert_snapshot!(text);
}

#[test]
fn force_leader_confirmation() {
    let mut app = line_of_three(Instant::now());
    app::update(&mut app, Msg::Action(Action::ForceLeader));
    app::update(&mut app, Msg::Action(Action::Accept));
    let text = render(&mut app, 100, 30);
    assert!(text.contains("Force node-b to lead jobs"), "{text}");
    insta::assert_snapshot!(text);
}

#[test]
fn resign_confirmation() {
    let now = Instant::now();
    let mut app = App::new(vec![info(0, "/leader/", Scheme::EtcdLeaseKey)], now, wall());
    let mut e = Election::new(0, "billing".into(), Scheme::EtcdLeaseKey);
    let c = candidate("node-b", "/leader/billing", Some(0x2a), 40, now);
    e.leader = Some(c.clone());
    e.candidates = vec![c];
    load(&mut app, 0, vec![e]);
    app::update(&mut app, Msg::Action(Action::Resign));
    let text = render(&mut app, 100, 30);
    assert!(
        matches!(app.dialog, Some(app::Dialog::Confirm { .. })),
        "{text}"
    );
    insta::assert_snapshot!(text);
}

#[test]
fn resign_on_an_etcd_election_offers_a_reelection() {
    let mut app = line_of_three(Instant::now());
    app::update(&mut app, Msg::Action(Action::Resign));
    let text = render(&mut app, 100, 30);
    insta::assert_snapshot!(text);
}

#[test]
fn typing_a_leader_where_there_is_no_line() {
    let now = Instant::now();
    let mut app = App::new(vec![info(0, "leaderlock", Scheme::SqlLease)], now, wall());
    let mut e = Election::new(0, "reportJob".into(), Scheme::SqlLease);
    let mut c = candidate("app-3", "reportJob", None, 0, now);
    c.stamp = Some("2026-11-23 01:02:03".into());
    e.leader = Some(c.clone());
    e.candidates = vec![c];
    load(&mut app, 0, vec![e]);
    app::update(&mut app, Msg::Action(Action::ForceLeader));
    for ch in "app-9".chars() {
        app::update(&mut app, Msg::Action(Action::Type(ch)));
    }
    let text = render(&mut app, 100, 30);
    assert!(text.contains("app-9"), "{text}");
    insta::assert_snapshot!(text);
}

/// An id never seen in the election, typed where there is no line: asked on its own before
/// the plan, whole and with its keys at 80x24.
#[test]
fn forcing_an_unseen_id_is_asked_first_at_80x24() {
    let now = Instant::now();
    let mut app = App::new(vec![info(0, "leaderlock", Scheme::SqlLease)], now, wall());
    let mut e = Election::new(0, "reportJob".into(), Scheme::SqlLease);
    let c = candidate("app-3", "reportJob", None, 0, now);
    e.leader = Some(c.clone());
    e.candidates = vec![c];
    load(&mut app, 0, vec![e]);
    app::update(&mut app, Msg::Action(Action::ForceLeader));
    for ch in "ghost".chars() {
        app::update(&mut app, Msg::Action(Action::Type(ch)));
    }
    app::update(&mut app, Msg::Action(Action::Accept));
    let text = render(&mut app, 80, 24);
    assert!(
        matches!(app.dialog, Some(app::Dialog::Unseen { .. })),
        "{text}"
    );
    assert!(text.contains("ghost was never seen in reportJob"), "{text}");
    assert!(
        text.contains("n/Esc: cancel · d: details"),
        "the keys show at 80x24:\n{text}"
    );
    insta::assert_snapshot!(text);
}

#[test]
fn an_action_running_and_its_outcome() {
    let mut app = line_of_three(Instant::now());
    app::update(&mut app, Msg::Action(Action::Reelect));
    app::update(&mut app, Msg::Action(Action::Accept));
    let running = render(&mut app, 100, 30);
    insta::assert_snapshot!("action_running", running);
    app::update(
        &mut app,
        Msg::AdminDone(electop::admin::Outcome::Done {
            detail: "revoked lease 11; node-b leads".into(),
        }),
    );
    let done = render(&mut app, 100, 30);
    assert!(done.contains("revoked lease 11"), "{done}");
    insta::assert_snapshot!("action_done", done);
}

#[test]
fn read_only_refusal() {
    let mut app = line_of_three(Instant::now());
    app.model.sources[0].info.read_only = true;
    app::update(&mut app, Msg::Action(Action::Reelect));
    assert!(app.dialog.is_none(), "refused, no dialog");
    let text = render(&mut app, 100, 24);
    assert!(text.contains("read-only: admin actions are off"), "{text}");
    insta::assert_snapshot!(text);
}

#[test]
fn quitting_asks_first_where_it_stops_something() {
    let mut app = line_of_three(Instant::now());
    app.around.quit_asks = Some("stops every node");
    app::update(&mut app, Msg::Action(Action::Quit));
    let text = render(&mut app, 100, 24);
    assert!(text.contains("stops every node"), "{text}");
    insta::assert_snapshot!(text);
}

/// ZooKeeper after a forced re-election: the deposed holder beside the new leader, with its
/// session, in the table row and in the detail view.
#[test]
fn a_deposed_zookeeper_holder_is_shown_with_its_session() {
    let now = Instant::now();
    let mut app = App::new(vec![info(0, "/election", Scheme::ZkRecipe)], now, wall());
    let mut e = Election::new(0, "jobs".into(), Scheme::ZkRecipe);
    let node = |id: &str, seq: u32, session: &str| {
        let key = format!("/election/jobs/_c_7f3e9a52-latch-{seq:010}");
        let mut c = electop::model::Candidate::plain(id, &key);
        c.create_revision = 0x1a + seq as i64;
        c.mod_revision = c.create_revision;
        c.stamp = Some(session.to_string());
        c
    };
    e.candidates = vec![node("latch-2", 1, "0x1000004b3e8a0001")];
    e.leader = e.candidates.first().cloned();
    e.deposed = Some(Box::new(node("latch-1", 0, "0x1000004b3e8a0000")));
    e.deposed_session = Some(electop::model::SessionCheck::Alive);
    e.record(
        change(2, Some("latch-1"), Some("latch-2"), Cause::ForcedReelection),
        10,
    );
    load(&mut app, 0, vec![e]);
    let table = render(&mut app, 120, 16);
    assert!(
        table.contains("⚠ deposed latch-1, session 0x1000004b3e8a0000 alive"),
        "{table}"
    );
    // The text itself where it is cut, never its length in its place; no session id in
    // the TTL column (ZooKeeper has no time to live: the pane's SESSION column names it).
    assert!(!table.contains("chars)"), "{table}");
    assert!(
        table.contains("│⚠ deposed latch-1, session 0x1000004b3e8a0000 alive:"),
        "{table}"
    );
    let row = table.lines().find(|l| l.contains("jobs ")).unwrap_or("");
    assert_eq!(
        row.matches("0x").count(),
        1,
        "only the deposed session: {row}"
    );
    assert!(
        table
            .lines()
            .any(|l| l.contains("★1") && l.contains("0x1000004b3e8a0001")),
        "{table}"
    );
    insta::assert_snapshot!("zookeeper_deposed_row_120x16", table);
    select(&mut app, "jobs");
    app::update(&mut app, Msg::Action(Action::Describe));
    let detail = render(&mut app, 100, 30);
    assert!(
        detail.contains("latch-1 may still believe it leads"),
        "{detail}"
    );
    assert!(
        detail.contains("session 0x1000004b3e8a0000 alive"),
        "{detail}"
    );
    insta::assert_snapshot!("zookeeper_deposed_detail_100x30", detail);
}

/// A PostgreSQL advisory lock: the holder session and two waiting, in grant order, each
/// with what pg_stat_activity says of it; nothing counted down.
fn advisory_line(now: Instant) -> App {
    let mut app = App::new(
        vec![info(0, "advisory locks", Scheme::PgAdvisory)],
        now,
        wall(),
    );
    let mut e = Election::new(0, "nightly-report".into(), Scheme::PgAdvisory);
    let sessions = [
        ("svc-a", 4242, "holder"),
        ("svc-b", 4250, "waiting #1"),
        ("svc-c", 4261, "waiting #2"),
    ];
    for (i, (app_name, pid, role)) in sessions.iter().enumerate() {
        let id = format!("{app_name}:{pid}");
        let mut c = candidate(&id, "-1508477614", None, 0, now);
        c.raw_id = pid.to_string().into_bytes();
        c.ttl = None;
        c.create_revision = 0;
        c.mod_revision = 0;
        c.stamp = Some(format!("17640000{i}0000000"));
        e.candidates.push(c);
        let what = if i == 0 {
            "held since 2026-11-25 04:00:00 UTC or earlier".to_string()
        } else {
            format!("waiting since 2026-11-25 04:0{i}:00 UTC")
        };
        e.members.push(electop::model::MemberInfo {
            id,
            role: Some(role.to_string()),
            state: Some(format!(
                "{what}, user worker, from 10.0.0.{}:5123{i}, session started 2026-11-25 03:5{i}:00 UTC, pid {pid}",
                i + 5
            )),
            timeline: None,
            lag_bytes: None,
            nofailover: false,
        });
    }
    e.leader = e.candidates.first().cloned();
    load(&mut app, 0, vec![e]);
    app
}

#[test]
fn detail_of_a_pg_advisory_lock() {
    let now = Instant::now();
    let mut app = advisory_line(now);
    app::update(&mut app, Msg::Tick { now, wall: wall() });
    app::update(&mut app, Msg::Action(Action::Describe));
    let text = render(&mut app, 120, 30);
    assert!(text.contains("in the order the server grants"), "{text}");
    assert!(
        text.contains("held since 2026-11-25 04:00:00 UTC or earlier"),
        "{text}"
    );
    insta::assert_snapshot!(text);
}

#[test]
fn pg_advisory_reelect_confirmation_and_resign_refused() {
    let mut app = advisory_line(Instant::now());
    app::update(&mut app, Msg::Action(Action::Reelect));
    let text = render(&mut app, 120, 30);
    assert!(text.contains("svc-b:4250 leads next"), "{text}");
    insta::assert_snapshot!("pg_advisory_reelect_confirmation", text);
    let mut app = advisory_line(Instant::now());
    app::update(&mut app, Msg::Action(Action::Resign));
    let text = render(&mut app, 120, 30);
    assert!(text.contains("resign is unavailable"), "{text}");
    insta::assert_snapshot!("pg_advisory_resign_refused", text);
}

#[test]
fn pg_advisory_force_leader_lists_every_session_it_ends() {
    let mut app = advisory_line(Instant::now());
    app::update(&mut app, Msg::Action(Action::ForceLeader));
    app::update(&mut app, Msg::Action(Action::Down));
    app::update(&mut app, Msg::Action(Action::Accept));
    let text = render(&mut app, 120, 30);
    assert!(
        text.contains("svc-a:4242, svc-b:4250"),
        "both sessions ahead are named: {text}"
    );
    insta::assert_snapshot!(text);
}
