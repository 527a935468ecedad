use super::*;
use crate::model::Scheme;

fn app_with(n: usize) -> App {
    let info = SourceInfo::test_etcd();
    let mut app = App::new(vec![info], Instant::now(), SystemTime::now());
    let elections = (0..n)
        .map(|i| Election::new(0, format!("e{i:03}"), Scheme::EtcdElection))
        .collect();
    update(
        &mut app,
        Msg::Source(SourceEvent::Elections {
            source: 0,
            elections,
        }),
    );
    app
}

#[test]
fn an_empty_prefix_notice_ends_when_elections_appear() {
    use crate::model::SourceNotice;
    for (notice, stays) in [
        (SourceNotice::Empty("no keys under /e/".into()), false),
        (SourceNotice::Unsure("layout unsure".into()), true),
    ] {
        let mut app = app_with(0);
        app.model.sources[0].info.notice = Some(notice);
        let elections = vec![Election::new(0, "jobs".into(), Scheme::EtcdElection)];
        update(
            &mut app,
            Msg::Source(SourceEvent::Elections {
                source: 0,
                elections,
            }),
        );
        assert_eq!(app.model.sources[0].info.notice.is_some(), stays);
    }
}

#[test]
fn selection_moves_and_clamps() {
    let mut app = app_with(3);
    assert!(
        !update(&mut app, Msg::Action(Action::Up)).redraw,
        "nothing to redraw at the top"
    );
    update(&mut app, Msg::Action(Action::PageDown));
    assert_eq!(app.selected, 2);
    update(&mut app, Msg::Action(Action::Top));
    assert_eq!(app.selected, 0);
}

#[test]
fn selection_follows_its_election_when_others_appear() {
    let mut app = app_with(3);
    update(&mut app, Msg::Action(Action::Down));
    assert_eq!(
        app.selected_election().map(|e| e.name.as_str()),
        Some("e001")
    );
    let new = vec![Election::new(0, "a-first".into(), Scheme::EtcdElection)];
    update(
        &mut app,
        Msg::Source(SourceEvent::Elections {
            source: 0,
            elections: new,
        }),
    );
    assert_eq!(
        app.selected_election().map(|e| e.name.as_str()),
        Some("e001")
    );
}

#[test]
fn esc_closes_and_clears_but_never_quits() {
    let mut app = app_with(3);
    update(&mut app, Msg::Action(Action::ToggleHelp));
    let esc = update(&mut app, Msg::Action(Action::Back));
    assert!(!app.show_help && !esc.quits());
    update(&mut app, Msg::Action(Action::StartFilter));
    for c in "e001".chars() {
        update(&mut app, Msg::Action(Action::Type(c)));
    }
    update(&mut app, Msg::Action(Action::Accept));
    assert_eq!(app.rows.len(), 1, "the filter stays after Enter");
    update(&mut app, Msg::Action(Action::ToggleEvents));
    update(&mut app, Msg::Action(Action::Back));
    assert_eq!(app.screen, Screen::Main, "Esc leaves the events view");
    assert!(update(&mut app, Msg::Action(Action::Back)).redraw);
    assert_eq!(app.rows.len(), 3, "then clears the filter");
    let esc = update(&mut app, Msg::Action(Action::Back));
    assert!(!esc.redraw, "then does nothing");
    assert!(!esc.quits());
    let q = update(&mut app, Msg::Action(Action::Quit));
    assert!(q.quits(), "q quits");
}

#[test]
fn quitting_asks_first_where_it_stops_something() {
    let mut app = app_with(1);
    app.around.quit_asks = Some("stops every node");
    let q = update(&mut app, Msg::Action(Action::Quit));
    assert!(!q.quits() && matches!(app.dialog, Some(Dialog::ConfirmQuit { .. })));
    let n = update(&mut app, Msg::Action(Action::Back));
    assert!(!n.quits() && app.dialog.is_none(), "n/Esc: stay");
    update(&mut app, Msg::Action(Action::Quit));
    let y = update(&mut app, Msg::Action(Action::Accept));
    assert!(y.quits(), "y: quit");
}

#[test]
fn action_outcomes_flash_for_ten_seconds_and_stay_in_the_events() {
    let mut app = app_with(1);
    let (now, wall) = (app.model.now, app.model.wall);
    update(
        &mut app,
        Msg::AdminDone(crate::admin::Outcome::Done {
            detail: "revoked lease 7".into(),
        }),
    );
    assert!(app.flash.is_some());
    let tick = |app: &mut App, s| {
        let d = std::time::Duration::from_secs(s);
        update(
            app,
            Msg::Tick {
                now: now + d,
                wall: wall + d,
            },
        );
    };
    tick(&mut app, 9);
    assert!(app.flash.is_some(), "still shown after 9 s");
    tick(&mut app, 11);
    assert!(app.flash.is_none(), "aged out after 10 s");
    let last = app.model.events.entries.back().expect("in the events");
    assert!(last.text.contains("revoked lease 7"), "{last:?}");
}

#[test]
fn command_bar_runs_sort_events_and_refuses_unknown_commands() {
    let mut app = app_with(2);
    let run = |app: &mut App, text: &str| {
        update(app, Msg::Action(Action::StartCommand));
        for c in text.chars() {
            update(app, Msg::Action(Action::Type(c)));
        }
        update(app, Msg::Action(Action::Complete));
        update(app, Msg::Action(Action::Accept)).quits()
    };
    run(&mut app, "sort ra");
    assert_eq!(app.sort.key, SortKey::Rate, "Tab completed `ra` to rate");
    run(&mut app, "ev");
    assert_eq!(app.screen, Screen::Events);
    run(&mut app, "bogus");
    assert!(
        app.flash
            .as_ref()
            .is_some_and(|f| f.error && f.text.contains("bogus"))
    );
    assert!(app.prompt.is_none());
    assert!(run(&mut app, "q"));
}

#[test]
fn visible_requests_follow_the_view() {
    let mut app = app_with(30);
    update(&mut app, Msg::Action(Action::Bottom));
    let req = app.visible_requests(5);
    let Request::Visible { names, selected } = &req[0].1 else {
        panic!("visible request")
    };
    assert_eq!(names.first().map(String::as_str), Some("e025"));
    assert_eq!(names.len(), 5);
    assert_eq!(selected.as_deref(), Some("e029"));
}

#[test]
fn an_empty_election_stays_listed_until_its_retention_ends() {
    use crate::model::{Cause, HistoryEntry};
    let mut app = app_with(2);
    let wall = app.model.wall;
    let mut gone = Election::new(0, "e000".into(), Scheme::EtcdElection);
    gone.record(
        HistoryEntry {
            at: Some(wall),
            revision: None,
            from: Some("node-a".into()),
            to: None,
            cause: Cause::Resigned,
            by: None,
        },
        10,
    );
    assert_eq!(gone.no_leader_since(), Some(wall));
    update(
        &mut app,
        Msg::Source(SourceEvent::Elections {
            source: 0,
            elections: vec![gone],
        }),
    );
    let tick = |app: &mut App, secs| {
        let (now, wall) = (app.model.now, wall + std::time::Duration::from_secs(secs));
        update(app, Msg::Tick { now, wall });
    };
    tick(&mut app, 599);
    assert_eq!(
        app.model.elections.len(),
        2,
        "within the 10 minutes: listed"
    );
    tick(&mut app, 601);
    let names: Vec<&str> = app
        .model
        .elections
        .values()
        .map(|e| e.name.as_str())
        .collect();
    assert_eq!(
        names,
        ["e001"],
        "gone after its retention; no history ever went"
    );
}

#[test]
fn resign_on_etcd_election_offers_a_reelection_instead() {
    let mut app = app_with(1);
    let mut e = Election::new(0, "e000".into(), Scheme::EtcdElection);
    let c = crate::model::Candidate {
        id: "node-a".into(),
        raw_id: b"node-a".to_vec(),
        key: "/e/e000/a".into(),
        raw_key: b"/e/e000/a".to_vec(),
        lease: Some(0xa),
        create_revision: 1,
        mod_revision: 1,
        stamp: None,
        ttl: None,
    };
    e.leader = Some(c.clone());
    e.candidates = vec![c];
    update(
        &mut app,
        Msg::Source(SourceEvent::Elections {
            source: 0,
            elections: vec![e],
        }),
    );
    update(&mut app, Msg::Action(Action::Resign));
    update(&mut app, Msg::Action(Action::Reelect));
    match &app.dialog {
        Some(Dialog::Confirm { request, .. }) => {
            assert_eq!(request.kind, crate::admin::ActionKind::Reelect)
        }
        other => panic!("a re-election to confirm, got {other:?}"),
    }
}

/// The dashboard's confirmation is made from the source's configured table and columns,
/// not the scheme's defaults (the runtime hands the app its sources' settings).
#[test]
fn a_sql_confirmation_names_the_configured_columns() {
    let mut app = app_with(0);
    let cfg: crate::config::SourceConfig = crate::config::SourceConfig::Sql(
        toml::from_str(
            "url = 'postgres://db/x'\nscheme = 'sql-lease'\ntable = 'locks'\n\
             columns = { key = 'lock_name', leader_id = 'owner', valid_until = 'until_at' }",
        )
        .expect("a SQL source"),
    );
    app.targets = vec![crate::backend::target(&cfg)];
    let mut e = Election::new(0, "jobs".into(), Scheme::SqlLease);
    e.candidates = vec![crate::model::Candidate {
        id: "node-a".into(),
        raw_id: b"node-a".to_vec(),
        key: "jobs".into(),
        raw_key: b"jobs".to_vec(),
        lease: None,
        create_revision: 0,
        mod_revision: 0,
        stamp: Some("2026-01-01 00:00:00".into()),
        ttl: None,
    }];
    e.leader = e.candidates.first().cloned();
    let elections = vec![e];
    update(
        &mut app,
        Msg::Source(SourceEvent::Elections {
            source: 0,
            elections,
        }),
    );
    update(&mut app, Msg::Action(Action::Resign));
    let Some(Dialog::Confirm { plan, .. }) = &app.dialog else {
        panic!("a resign to confirm, got {:?}", app.dialog);
    };
    let text = plan.writes().join("\n");
    assert!(
        text.starts_with(
            "UPDATE \"locks\" SET \"until_at\" = ⟨the database's now⟩ WHERE \
             CAST(\"lock_name\" AS TEXT) = $1 AND CAST(\"owner\" AS TEXT) = $2"
        ),
        "{text}"
    );
}

/// Rows arriving above (another source's snapshot, an alarm sorting first) do not carry the
/// selection down the table before the operator has chosen a row; once chosen, it follows.
#[test]
fn the_selection_stays_on_the_first_row_until_the_operator_chooses() {
    let mut app = app_with(3);
    assert_eq!(app.selected, 0);
    let first = vec![Election::new(0, "a-first".into(), Scheme::EtcdElection)];
    update(
        &mut app,
        Msg::Source(SourceEvent::Elections {
            source: 0,
            elections: first,
        }),
    );
    assert_eq!(app.selected, 0, "still the top row");
    assert_eq!(
        app.selected_election().map(|e| e.name.as_str()),
        app.rows.first().map(|r| r.key.1.as_str())
    );
    assert!(!app.chosen);
    update(&mut app, Msg::Action(Action::Down));
    assert!(app.chosen, "a movement key chooses");
}

/// Forcing an id never seen in the election (not leading, in line or in its history) is
/// asked on its own first, saying nobody may renew it; the plan comes second. An id seen
/// there, or known as a participant (the demo's nodes), goes straight to the plan.
#[test]
fn forcing_an_id_never_seen_is_asked_twice() {
    let mut app = app_with(0);
    let mut e = Election::new(0, "jobs".into(), Scheme::SqlLease);
    e.candidates = vec![crate::model::Candidate::plain("node-a", "jobs")];
    e.leader = e.candidates.first().cloned();
    // node-x led before node-a: seen.
    e.record(
        crate::model::HistoryEntry {
            at: None,
            revision: None,
            from: Some("node-x".into()),
            to: Some("node-a".into()),
            cause: crate::model::Cause::Expired,
            by: None,
        },
        10,
    );
    update(
        &mut app,
        Msg::Source(SourceEvent::Elections {
            source: 0,
            elections: vec![e],
        }),
    );
    let force = |app: &mut App, id: &str| {
        commands::run(app, &format!("force-leader {id}"));
    };
    force(&mut app, "ghost");
    let Some(Dialog::Unseen { warning, .. }) = &app.dialog else {
        panic!("asked about the unseen id first, got {:?}", app.dialog);
    };
    assert!(
        warning.contains("ghost was never seen in jobs") && warning.contains("renew"),
        "{warning}"
    );
    let first = update(&mut app, Msg::Action(Action::Accept));
    assert!(first.effects.is_empty(), "nothing sent on the first yes");
    assert!(
        matches!(app.dialog, Some(Dialog::Confirm { .. })),
        "then the plan"
    );
    let second = update(&mut app, Msg::Action(Action::Accept));
    assert!(matches!(second.effects.as_slice(), [Effect::Admin(_)]));

    app.dialog = None;
    force(&mut app, "node-x");
    assert!(
        matches!(app.dialog, Some(Dialog::Confirm { .. })),
        "seen in the history: the plan at once, got {:?}",
        app.dialog
    );
    app.dialog = None;
    app.around.known_ids = vec!["node-b".into()];
    force(&mut app, "node-b");
    assert!(
        matches!(app.dialog, Some(Dialog::Confirm { .. })),
        "a known participant"
    );
}

#[test]
fn the_timeline_opens_by_key_and_command_and_its_keys_act_only_where_a_strip_shows() {
    let mut app = app_with(3);
    let act = |app: &mut App, a: Action| update(app, Msg::Action(a)).redraw;
    assert!(!act(&mut app, Action::ZoomOut), "no strip on the elections");
    assert_eq!(app.timeline, timeline::TimelineView::default());
    act(&mut app, Action::ToggleTimeline);
    assert_eq!(app.screen, Screen::Timeline);
    assert!(act(&mut app, Action::ZoomOut));
    assert_eq!(app.timeline.zoom, 1);
    // The movement keys select among its rows, whichever pane had the focus.
    app.focus = Focus::History;
    act(&mut app, Action::Down);
    assert_eq!(app.selected, 1);
    // Enter opens the detail, whose strip answers the same keys.
    act(&mut app, Action::Describe);
    assert!(app.describe.is_some());
    assert!(act(&mut app, Action::PanLeft));
    assert_eq!(app.timeline.back, std::time::Duration::from_secs(360));
    act(&mut app, Action::Back);
    act(&mut app, Action::Back);
    assert_eq!(app.screen, Screen::Main, "Esc leaves the timeline");
    update(&mut app, Msg::Action(Action::StartCommand));
    for c in "timeline".chars() {
        update(&mut app, Msg::Action(Action::Type(c)));
    }
    update(&mut app, Msg::Action(Action::Accept));
    assert_eq!(app.screen, Screen::Timeline, ":timeline");
    assert_eq!(app.timeline.zoom, 1, "the window is kept between visits");
}
