//! Every admin dialog at 80x24 (and the force-leader one larger): the title names the action
//! and the election, three short lines say what will happen, and the keys always show,
//! however long the plan; `d` opens the whole plan, scrolled with the dialog's keys. Drawn
//! from hand-built states with a fixed clock, as in `ui_detail_snapshots.rs`.

use std::time::{Duration, Instant, SystemTime};

use electop::app::{self, Action, App, Dialog, Msg};
use electop::model::{ConnState, Deadline, Election, MemberInfo, Scheme, SourceEvent};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

mod common;
use common::ui::candidate;

/// The keys of a confirmation, on one row of the screen.
const CONFIRM_KEYS: &str = "y: do it · n/Esc: cancel · d: details";

/// A dashboard showing `e`, on a source of its scheme.
fn showing(prefix: &str, e: Election, now: Instant) -> App {
    let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000);
    let mut app = App::new(vec![common::ui::info(0, prefix, e.scheme)], now, wall);
    let source = 0;
    let events = [
        SourceEvent::Elections {
            source,
            elections: vec![e],
        },
        SourceEvent::Conn {
            source,
            state: ConnState::Connected,
        },
        SourceEvent::Synced { source },
    ];
    for ev in events {
        app::update(&mut app, Msg::Source(ev));
    }
    app
}

/// An etcd-election `jobs` with a line of `n`: `jobs-1` leads.
fn line_of(n: usize, now: Instant) -> App {
    let mut e = Election::new(0, "jobs".into(), Scheme::EtcdElection);
    e.candidates = (0..n)
        .map(|i| {
            let lease = 0x11 + i as i64;
            let key = format!("/e/jobs/{lease:x}");
            candidate(
                &format!("jobs-{}", i + 1),
                &key,
                Some(lease),
                5 + i as i64,
                now,
            )
        })
        .collect();
    e.leader = e.candidates.first().cloned();
    showing("/e/", e, now)
}

/// etcd-lease-key `billing`: node-b holds the key; node-b and node-c are registered.
fn lease_key(now: Instant) -> App {
    let mut e = Election::new(0, "billing".into(), Scheme::EtcdLeaseKey);
    let leader = candidate("node-b", "/leader/billing", Some(0x2a), 40, now);
    e.leader = Some(leader.clone());
    e.candidates = vec![
        leader,
        candidate("node-b", "/registry/billing/node-b", Some(0x2a), 30, now),
        candidate("node-c", "/registry/billing/node-c", Some(0x2b), 31, now),
    ];
    showing("/leader/", e, now)
}

/// Patroni `demo`: pg-1 leads, pg-2 may take over.
fn patroni(now: Instant) -> App {
    let mut e = Election::new(0, "demo".into(), Scheme::Patroni);
    let leader = candidate("pg-1", "/service/demo/leader", Some(0x7), 9, now);
    e.leader = Some(leader.clone());
    e.candidates = vec![leader];
    for id in ["pg-1", "pg-2"] {
        e.members.push(MemberInfo {
            id: id.into(),
            ..MemberInfo::default()
        });
    }
    let mut app = showing("/service/", e, now);
    app.around.known_ids = vec!["pg-1".into(), "pg-2".into()];
    app
}

/// A SQL row `reportJob` held by app-1; app-2 is known (the demo's nodes would be).
fn sql(scheme: Scheme, now: Instant) -> App {
    let table = if scheme == Scheme::SqlLease {
        "leaderlock"
    } else {
        "service_election"
    };
    let mut e = Election::new(0, "reportJob".into(), scheme);
    let mut c = candidate("app-1", "reportJob", None, 0, now);
    c.stamp = Some("2026-11-23 01:02:03".into());
    c.ttl = Some(Deadline {
        granted_ms: 15_000,
        remaining_ms: 9_000,
        read_at: now,
    });
    e.leader = Some(c.clone());
    e.candidates = vec![c];
    let mut app = showing(table, e, now);
    app.around.known_ids = vec!["app-1".into(), "app-2".into()];
    app
}

fn act(app: &mut App, actions: &[Action]) {
    for a in actions {
        app::update(app, Msg::Action(*a));
    }
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

/// The row of the screen with `keys` whole, if any.
fn row_with<'a>(screen: &'a str, keys: &str) -> Option<&'a str> {
    screen.lines().find(|l| l.contains(keys))
}

use Action::{Accept, Choose, Down, ForceLeader, Reelect, Resign};

/// Every confirmation at 80x24: its title, what will happen, and its keys on one row.
#[test]
fn every_confirmation_at_80x24_says_what_happens_and_shows_its_keys() {
    let now = Instant::now();
    let cases: Vec<(&str, App, &[Action], &str)> = vec![
        (
            "election_force_leader",
            line_of(3, now),
            &[ForceLeader, Down, Choose],
            "Force jobs-3 to lead jobs",
        ),
        (
            "election_reelect",
            line_of(3, now),
            &[Reelect],
            "Force a re-election of jobs",
        ),
        (
            "election_resign",
            line_of(3, now),
            &[Resign],
            "Make jobs-1 resign as leader of jobs",
        ),
        (
            "lease_key_force_leader",
            lease_key(now),
            &[ForceLeader, Choose],
            "Force node-c to lead billing",
        ),
        (
            "lease_key_reelect",
            lease_key(now),
            &[Reelect],
            "Force a re-election of billing",
        ),
        (
            "lease_key_resign",
            lease_key(now),
            &[Resign],
            "Make node-b resign as leader of billing",
        ),
        (
            "patroni_force_leader",
            patroni(now),
            &[ForceLeader, Choose],
            "Force pg-2 to lead demo",
        ),
        (
            "sql_lease_force_leader",
            sql(Scheme::SqlLease, now),
            &[ForceLeader, Choose],
            "Force app-2 to lead reportJob",
        ),
        (
            "sql_lease_reelect",
            sql(Scheme::SqlLease, now),
            &[Reelect],
            "Force a re-election of reportJob",
        ),
        (
            "sql_lease_resign",
            sql(Scheme::SqlLease, now),
            &[Resign],
            "Make app-1 resign as leader of reportJob",
        ),
        (
            "sql_heartbeat_force_leader",
            sql(Scheme::SqlHeartbeat, now),
            &[ForceLeader, Choose],
            "Force app-2 to lead reportJob",
        ),
        (
            "sql_heartbeat_reelect",
            sql(Scheme::SqlHeartbeat, now),
            &[Reelect],
            "Force a re-election of reportJob",
        ),
        (
            "sql_heartbeat_resign",
            sql(Scheme::SqlHeartbeat, now),
            &[Resign],
            "Make app-1 resign as leader of reportJob",
        ),
    ];
    for (name, mut app, keys, title) in cases {
        act(&mut app, keys);
        let text = render(&mut app, 80, 24);
        let Some(Dialog::Confirm { plan, .. }) = &app.dialog else {
            panic!("{name}: a confirmation, not {:?}\n{text}", app.dialog);
        };
        assert!(text.contains(title), "{name}: the title\n{text}");
        for line in plan.gist.lines() {
            let start: String = line.chars().take(30).collect();
            assert!(text.contains(&start), "{name}: `{line}`\n{text}");
        }
        assert!(
            row_with(&text, CONFIRM_KEYS).is_some(),
            "{name}: the keys\n{text}"
        );
        insta::assert_snapshot!(format!("confirm_{name}_80x24"), text);
    }
}

/// The report of issue 18: forcing the third of a line at 120x35, where the keys were off
/// screen below a wall of transaction text.
#[test]
fn force_leader_at_120x35_fits_with_its_keys() {
    let mut app = line_of(3, Instant::now());
    act(&mut app, &[ForceLeader, Down, Choose]);
    let text = render(&mut app, 120, 35);
    assert!(row_with(&text, CONFIRM_KEYS).is_some(), "{text}");
    assert!(text.contains("No leader for 22 s"), "{text}");
    assert!(
        !text.contains("txn: if"),
        "the writes are one key away: {text}"
    );
    insta::assert_snapshot!(text);
}

/// A line of forty, the last forced: the plan is pages long, the confirmation still three
/// lines with its keys, at 80x24 and on the smallest screen drawn.
#[test]
fn a_plan_too_long_for_the_screen_keeps_the_keys_in_view() {
    let mut app = line_of(40, Instant::now());
    act(&mut app, &[ForceLeader]);
    for _ in 0..38 {
        act(&mut app, &[Down]);
    }
    act(&mut app, &[Choose]);
    let Some(Dialog::Confirm { plan, .. }) = &app.dialog else {
        panic!("a confirmation, not {:?}", app.dialog);
    };
    assert!(
        plan.writes().join(" ").len() > 80 * 24,
        "longer than the screen"
    );
    assert!(
        plan.gist.next.contains("jobs-1 and the 38 after it"),
        "{:?}",
        plan.gist
    );
    for (w, h) in [(80, 24), (60, 16), (200, 50)] {
        let text = render(&mut app, w, h);
        assert!(
            row_with(&text, CONFIRM_KEYS).is_some(),
            "{w}x{h}: the keys\n{text}"
        );
    }
    let text = render(&mut app, 80, 24);
    insta::assert_snapshot!(text);
}

/// `d`: the whole plan, every write and what it is compared on, scrolled with j/k and
/// PgUp/PgDn; `d` again goes back to the confirmation, and `y` there or in the details
/// confirms.
#[test]
fn d_shows_the_whole_plan_scrolled_and_y_still_confirms() {
    let mut app = line_of(3, Instant::now());
    act(&mut app, &[ForceLeader, Down, Choose, Action::Details]);
    let top = render(&mut app, 80, 24);
    assert!(
        matches!(app.dialog, Some(Dialog::Details { scroll: 0, .. })),
        "{top}"
    );
    assert!(top.contains("txn: if"), "{top}");
    assert!(top.contains("create_revision(/e/jobs/11) == 5"), "{top}");
    assert!(row_with(&top, "y: do it · d/Esc: back").is_some(), "{top}");
    insta::assert_snapshot!("details_top_80x24", top);

    act(&mut app, &[Action::PageDown, Down]);
    let scrolled = render(&mut app, 80, 24);
    let Some(Dialog::Details { scroll, .. }) = app.dialog else {
        panic!("still the details");
    };
    assert!(scroll > 0, "scrolled");
    assert!(scrolled.contains("revoke lease 11, 12"), "{scrolled}");
    assert!(
        scrolled.contains("Nothing is written if the store changed"),
        "{scrolled}"
    );
    insta::assert_snapshot!("details_scrolled_80x24", scrolled);

    // Past the end it stays at the end; back up to the top.
    act(
        &mut app,
        &[Action::PageDown, Action::PageDown, Action::PageDown],
    );
    let Some(Dialog::Details { scroll: end, .. }) = app.dialog else {
        panic!("still the details");
    };
    act(&mut app, &[Action::Up]);
    assert!(matches!(app.dialog, Some(Dialog::Details { scroll, .. }) if scroll + 1 == end));
    act(&mut app, &[Action::PageUp, Action::PageUp, Action::PageUp]);
    assert!(matches!(
        app.dialog,
        Some(Dialog::Details { scroll: 0, .. })
    ));

    act(&mut app, &[Action::Details]);
    assert!(
        matches!(app.dialog, Some(Dialog::Confirm { .. })),
        "d: back"
    );
    act(&mut app, &[Action::Details, Action::Back]);
    assert!(
        matches!(app.dialog, Some(Dialog::Confirm { .. })),
        "Esc: back, not cancel"
    );
    act(&mut app, &[Action::Details]);
    let yes = app::update(&mut app, Msg::Action(Accept));
    assert!(
        matches!(app.dialog, Some(Dialog::Running { .. })),
        "y in the details confirms"
    );
    let sent = yes
        .effects
        .iter()
        .filter(|e| matches!(e, app::Effect::Admin(_)));
    assert_eq!(sent.count(), 1, "sent once");
}

/// The dialogs that are not a plan's confirmation, at 80x24, each with its keys.
#[test]
fn the_other_dialogs_at_80x24() {
    let now = Instant::now();
    let mut pick = line_of(3, now);
    act(&mut pick, &[ForceLeader, Down]);
    let mut typed = {
        let mut app = sql(Scheme::SqlLease, now);
        app.around.known_ids.clear();
        act(&mut app, &[ForceLeader]);
        for c in "ghost".chars() {
            act(&mut app, &[Action::Type(c)]);
        }
        app
    };
    let typing = render(&mut typed, 80, 24);
    assert!(
        row_with(&typing, "Enter: continue · Esc: cancel").is_some(),
        "{typing}"
    );
    insta::assert_snapshot!("type_80x24", typing);
    act(&mut typed, &[Choose]);
    let unseen = render(&mut typed, 80, 24);
    assert!(
        matches!(typed.dialog, Some(Dialog::Unseen { .. })),
        "{unseen}"
    );
    assert!(
        unseen.contains("Never seen · Force ghost to lead reportJob"),
        "{unseen}"
    );
    assert!(
        row_with(&unseen, "n/Esc: cancel · d: details").is_some(),
        "{unseen}"
    );
    insta::assert_snapshot!("unseen_80x24", unseen);
    act(&mut typed, &[Action::Details]);
    let details = render(&mut typed, 80, 24);
    assert!(details.contains("ghost was never seen"), "{details}");

    let text = render(&mut pick, 80, 24);
    assert!(
        row_with(&text, "Enter: choose · Esc: cancel").is_some(),
        "{text}"
    );
    insta::assert_snapshot!("pick_80x24", text);

    let mut quit = line_of(3, now);
    quit.around.quit_asks = Some("stops every node");
    act(&mut quit, &[Reelect, Accept, Action::Quit]);
    let text = render(&mut quit, 80, 24);
    assert!(row_with(&text, "y: quit · n/Esc: stay").is_some(), "{text}");
    insta::assert_snapshot!("quit_while_running_80x24", text);
}

/// `r` in the details of a resign on an etcd-election answers its confirmation as there: it
/// becomes a re-election, which ends the leader's session.
#[test]
fn r_in_the_details_of_a_resign_turns_it_into_a_reelection() {
    let mut app = line_of(3, Instant::now());
    act(&mut app, &[Resign, Action::Details, Reelect]);
    let Some(Dialog::Confirm { request, .. }) = &app.dialog else {
        panic!("a confirmation, not {:?}", app.dialog);
    };
    assert_eq!(request.kind, electop::admin::ActionKind::Reelect);
}

/// A ZooKeeper election (Curator `LeaderLatch` nodes): `latch-1` leads, two wait.
fn zookeeper(now: Instant) -> App {
    let _ = now;
    let mut e = Election::new(0, "jobs".into(), Scheme::ZkRecipe);
    e.candidates = (0..3)
        .map(|i| {
            let key = format!(
                "/election/jobs/_c_7f3e9a52-4c1a-4b0e-9a1c-1d2e3f4a5b6{i}-latch-000000000{i}"
            );
            let mut c = electop::model::Candidate::plain(&format!("latch-{}", i + 1), &key);
            c.create_revision = 0x1a + i as i64;
            c.mod_revision = 0x1a + i as i64;
            c.stamp = Some(format!("0x1000004b3e8a000{i}"));
            c
        })
        .collect();
    e.leader = e.candidates.first().cloned();
    showing("/election", e, now)
}

/// ZooKeeper: the confirmation says plainly that the deposed client does not notice and
/// that ZooKeeper cannot end its session; the details show the one multi and its compares.
#[test]
fn zookeeper_confirmation_says_the_deposed_client_does_not_notice() {
    let mut app = zookeeper(Instant::now());
    act(&mut app, &[Reelect]);
    let text = render(&mut app, 80, 24);
    assert!(text.contains("Force a re-election of jobs"), "{text}");
    assert!(text.contains("latch-1 does not notice"), "{text}");
    assert!(row_with(&text, CONFIRM_KEYS).is_some(), "{text}");
    insta::assert_snapshot!("confirm_zookeeper_reelect_80x24", text);
    act(&mut app, &[Action::Details]);
    let details = render(&mut app, 100, 40);
    for said in [
        "read, then one multi: if",
        "czxid(/election/jobs/_c_7f3e9a52",
        "delete /election/jobs/_c_7f3e9a52-4c1a-4b0e-9a1c-1d2e3f4a5b60-latch-0000000000",
        "fires no notLeader",
    ] {
        assert!(details.contains(said), "{said}\n{details}");
    }
    insta::assert_snapshot!("details_zookeeper_reelect_100x40", details);
}

/// Redis: the confirmation says who leads next (whoever takes the lock) and that the holder
/// is not told; the details show the one compare-then-delete script on the token shown.
#[test]
fn redis_confirmation_deletes_the_key_only_while_it_holds_the_token() {
    let mut e = Election::new(0, "leader:jobs".into(), Scheme::RedisLock);
    let mut c = electop::model::Candidate::plain("b242b2bae87111f18ecc02fc00000001", "leader:jobs");
    c.ttl = Some(Deadline {
        granted_ms: 10_000,
        remaining_ms: 7_400,
        read_at: Instant::now(),
    });
    e.candidates = vec![c];
    e.leader = e.candidates.first().cloned();
    let mut app = showing("leader:*", e, Instant::now());
    // As the Redis store names its source.
    let mut info = common::ui::info(0, "leader:*", Scheme::RedisLock);
    info.name = "redis 127.0.0.1:6379/0 leader:*".into();
    info.short = "redis1".into();
    info.endpoints = "127.0.0.1:6379/0".into();
    app::update(&mut app, Msg::Source(SourceEvent::Info(info)));
    act(&mut app, &[Reelect]);
    let text = render(&mut app, 80, 24);
    assert!(
        text.contains("Force a re-election of leader:jobs"),
        "{text}"
    );
    assert!(text.contains("Redis keeps no line"), "{text}");
    assert!(row_with(&text, CONFIRM_KEYS).is_some(), "{text}");
    insta::assert_snapshot!("confirm_redis_reelect_80x24", text);
    act(&mut app, &[Action::Details]);
    let details = render(&mut app, 100, 40);
    assert!(
        details.contains("if GET leader:jobs == b242b2bae87111f18ecc02fc00000001 then"),
        "{details}"
    );
    insta::assert_snapshot!("details_redis_reelect_100x40", details);
}

/// Issue 43: `F`, Enter, Enter forced a leader unread. Enter chooses in the picker but
/// answers no question: the confirmation, the unseen-id question, the details and the
/// demo's quit stay, nothing is sent, and the status line names the key that answers.
#[test]
fn enter_answers_no_question_only_y_does() {
    let now = Instant::now();
    let mut force = line_of(3, now);
    act(&mut force, &[ForceLeader, Choose]);
    let mut details = line_of(3, now);
    act(&mut details, &[Reelect, Action::Details]);
    let mut unseen = sql(Scheme::SqlLease, now);
    act(&mut unseen, &[Action::StartCommand]);
    for c in "force-leader ghost".chars() {
        act(&mut unseen, &[Action::Type(c)]);
    }
    act(&mut unseen, &[Accept]);
    let mut quit = line_of(3, now);
    quit.around.quit_asks = Some("stops every node");
    act(&mut quit, &[Action::Quit]);
    for (name, mut app) in [
        ("confirm", force),
        ("details", details),
        ("unseen", unseen),
        ("quit", quit),
    ] {
        let before = format!("{:?}", app.dialog);
        assert!(app.dialog.is_some(), "{name}: a question is open");
        let enter = app::update(&mut app, Msg::Action(Choose));
        assert!(enter.effects.is_empty(), "{name}: Enter sent nothing");
        assert_eq!(format!("{:?}", app.dialog), before, "{name}: it stays");
        let text = render(&mut app, 80, 24);
        assert!(
            text.contains("Enter does not"),
            "{name}: the status line says which key answers\n{text}"
        );
        assert!(!text.contains("y/Enter"), "{name}\n{text}");
    }
}
