use super::*;
use crate::app::{Action, Msg, update};
use crate::model::{Candidate, Cause, HistoryEntry, Scheme, SourceEvent, SourceInfo};
use crate::state::alarm::Alarm;
use std::time::{Duration, Instant, SystemTime};

fn holder(id: &str, ttl_ms: i64, now: Instant) -> Candidate {
    Candidate {
        id: id.into(),
        raw_id: id.as_bytes().to_vec(),
        key: format!("k/{id}"),
        raw_key: format!("k/{id}").into_bytes(),
        lease: Some(7),
        create_revision: 1,
        mod_revision: 1,
        stamp: None,
        ttl: Some(crate::model::Deadline {
            granted_ms: 60_000,
            remaining_ms: ttl_ms,
            read_at: now,
        }),
    }
}

/// `alpha` led by zed (10 s left, 2 changes), `bravo` without leader, `charlie` led by
/// amy (50 s left, flapping: 6 changes in the last minute).
fn app() -> App {
    let now = Instant::now();
    let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000);
    let info = SourceInfo::test_etcd();
    let mut app = App::new(vec![info], now, wall);
    let changes = |e: &mut Election, n: u64, ago: u64| {
        for i in 0..n {
            e.record(
                HistoryEntry {
                    at: Some(wall - Duration::from_secs(ago + i)),
                    revision: None,
                    from: None,
                    to: Some("x".into()),
                    cause: Cause::Elected,
                    by: None,
                },
                100,
            );
        }
    };
    let mut a = Election::new(0, "alpha".into(), Scheme::EtcdElection);
    a.leader = Some(holder("zed", 10_000, now));
    changes(&mut a, 2, 600);
    let b = Election::new(0, "bravo".into(), Scheme::EtcdElection);
    let mut c = Election::new(0, "charlie".into(), Scheme::EtcdElection);
    c.leader = Some(holder("amy", 50_000, now));
    c.candidates = vec![holder("amy", 50_000, now), holder("bob", 50_000, now)];
    changes(&mut c, 6, 1);
    update(
        &mut app,
        Msg::Source(SourceEvent::Elections {
            source: 0,
            elections: vec![a, b, c],
        }),
    );
    app
}

fn names(app: &App) -> Vec<&str> {
    app.rows.iter().map(|r| r.key.1.as_str()).collect()
}

fn sort_by(app: &mut App, key: SortKey) {
    update(app, Msg::Action(Action::SortBy(key)));
}

#[test]
fn alarms_first_by_default_then_each_key() {
    let mut app = app();
    assert_eq!(
        names(&app),
        ["bravo", "charlie", "alpha"],
        "no leader, flapping, fine"
    );
    assert!(app.rows[1].alarms.has(Alarm::Flapping));
    assert_eq!(app.rows[1].rate, 6.0);
    sort_by(&mut app, SortKey::Name);
    assert_eq!(names(&app), ["alpha", "bravo", "charlie"]);
    sort_by(&mut app, SortKey::Leader);
    assert_eq!(names(&app), ["charlie", "alpha", "bravo"], "amy, zed, none");
    sort_by(&mut app, SortKey::Ttl);
    assert_eq!(
        names(&app),
        ["alpha", "charlie", "bravo"],
        "10 s, 50 s, none"
    );
    sort_by(&mut app, SortKey::Changes);
    assert_eq!(names(&app), ["charlie", "alpha", "bravo"]);
    sort_by(&mut app, SortKey::Rate);
    assert_eq!(names(&app)[0], "charlie");
    sort_by(&mut app, SortKey::Last);
    assert_eq!(
        names(&app),
        ["charlie", "alpha", "bravo"],
        "newest change first"
    );
    sort_by(&mut app, SortKey::Last);
    assert!(app.sort.reversed, "the same key again reverses");
    assert_eq!(names(&app), ["bravo", "alpha", "charlie"]);
}

#[test]
fn s_cycles_and_the_selection_follows_its_election() {
    let mut app = app();
    update(&mut app, Msg::Action(Action::Down));
    assert_eq!(
        app.selected_election().map(|e| e.name.as_str()),
        Some("charlie")
    );
    update(&mut app, Msg::Action(Action::CycleSort));
    assert_eq!(app.sort.key, SortKey::Name);
    assert_eq!(app.selected, 2, "charlie is last by name");
    assert_eq!(
        app.selected_election().map(|e| e.name.as_str()),
        Some("charlie")
    );
}

#[test]
fn filter_matches_names_leaders_candidates_and_sources() {
    let mut app = app();
    let filter = |app: &mut App, text: &str| {
        app.filter = Some(Filter::parse(text).expect("valid"));
        refresh(app);
        names(app).join(",")
    };
    assert_eq!(filter(&mut app, "ALP"), "alpha", "case-insensitive name");
    assert_eq!(filter(&mut app, "bob"), "charlie", "a candidate");
    assert_eq!(filter(&mut app, "zed"), "alpha", "the leader");
    assert_eq!(
        filter(&mut app, "etcd1"),
        "bravo,charlie,alpha",
        "the source"
    );
    assert_eq!(filter(&mut app, "re:^(a|b)[a-z]+o$"), "bravo", "a regex");
    assert_eq!(app.model.alarm_counts()[Alarm::NoLeader as usize], 1);
    assert_eq!(
        filter(&mut app, "nothing"),
        "",
        "nothing matches: no rows, alarms still counted"
    );
    assert_eq!(app.model.alarm_counts()[Alarm::Flapping as usize], 1);
    let e = Filter::parse("re:(").expect_err("bad regex");
    assert!(e.starts_with("not a regex"), "{e}");
}

/// A small deterministic generator, so a failing case can be rerun.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Election `i` after a random change: a new leader or none, a new deadline, a change
/// recorded now or long ago.
fn changed(app: &App, rng: &mut Rng, i: u64) -> Election {
    let name = format!("e{i:03}");
    let mut e = app
        .model
        .elections
        .get(&(0, name.clone()))
        .cloned()
        .unwrap_or_else(|| Election::new(0, name, crate::model::Scheme::SqlLease));
    let leader = match rng.below(5) {
        0 => None,
        k => Some(holder(
            &format!("n{k}"),
            rng.below(90_000) as i64,
            app.model.now,
        )),
    };
    e.candidates = leader.iter().cloned().collect();
    e.leader = leader;
    let ago = if rng.below(2) == 0 { 0 } else { 3_600 };
    e.record(
        HistoryEntry {
            at: Some(app.model.wall - Duration::from_secs(ago + rng.below(30))),
            revision: None,
            from: None,
            to: e.leader.as_ref().map(|l| l.id.clone()),
            cause: Cause::Elected,
            by: None,
        },
        100,
    );
    e
}

/// The rows kept up to date change by change, as the runtime does (events deferred to
/// the frame's tick), against the rows worked out from scratch.
fn same_as_from_scratch(app: &App, why: &str) {
    let mut full = app.clone();
    refresh(&mut full);
    assert_eq!(app.rows, full.rows, "{why}");
    assert_eq!(app.model.alarm_counts(), full.model.alarm_counts(), "{why}");
    assert_eq!(app.selected, full.selected, "{why}");
}

#[test]
fn changes_settled_incrementally_give_the_order_a_full_sort_gives() {
    let mut rng = Rng(0x5eed);
    let mut app = app();
    app.rows_index.defer = true;
    // None pruned: the selection must stay on its election.
    app.model.retention = Duration::from_secs(1 << 30);
    let (now, wall) = (app.model.now, app.model.wall);
    let first: Vec<Election> = (0..150).map(|i| changed(&app, &mut rng, i)).collect();
    update(
        &mut app,
        Msg::Source(SourceEvent::Elections {
            source: 0,
            elections: first,
        }),
    );
    update(&mut app, Msg::Tick { now, wall });
    for key in SortKey::ALL {
        for reversed in [false, true] {
            app.sort = Sort { key, reversed };
            // Half the time with a filter: rows come and go as elections change.
            app.filter = reversed.then(|| Filter::parse("re:^e1|n2").expect("valid"));
            refresh(&mut app);
            app.selected = rng.below(app.rows.len() as u64) as usize;
            app.chosen = true;
            let selected = app.selected_key();
            for round in 0..6 {
                // A burst of 1 to 20 changes, then the frame's tick settles them.
                let n = 1 + rng.below(20);
                let batch = (0..n)
                    .map(|_| {
                        let i = rng.below(160);
                        changed(&app, &mut rng, i)
                    })
                    .collect();
                update(
                    &mut app,
                    Msg::Source(SourceEvent::Elections {
                        source: 0,
                        elections: batch,
                    }),
                );
                update(&mut app, Msg::Tick { now, wall });
                let why = format!("{key:?} reversed {reversed}, round {round}");
                same_as_from_scratch(&app, &why);
                if app.rows.iter().any(|r| Some(&r.key) == selected.as_ref()) {
                    assert_eq!(app.selected_key(), selected, "the selection follows: {why}");
                }
            }
        }
    }
}

#[test]
fn deferred_changes_wait_for_the_frame_and_settle_once() {
    let mut app = app();
    app.rows_index.defer = true;
    app.model.retention = Duration::from_secs(1 << 30);
    let mut a = app.model.elections[&(0, "alpha".to_string())].clone();
    a.leader = None;
    a.candidates.clear();
    update(
        &mut app,
        Msg::Source(SourceEvent::Elections {
            source: 0,
            elections: vec![a],
        }),
    );
    assert_eq!(
        names(&app),
        ["bravo", "charlie", "alpha"],
        "not redone per event"
    );
    let (now, wall) = (app.model.now, app.model.wall);
    update(&mut app, Msg::Tick { now, wall });
    assert_eq!(
        names(&app),
        ["alpha", "bravo", "charlie"],
        "both leaderless, by name, then flapping"
    );
    assert_eq!(app.model.alarm_counts()[Alarm::NoLeader as usize], 2);
    same_as_from_scratch(&app, "after the tick");
}

#[test]
fn flapping_ends_when_the_window_passes_without_another_event() {
    let mut app = app();
    app.rows_index.defer = true;
    assert_eq!(app.model.alarm_counts()[Alarm::Flapping as usize], 1);
    let now = app.model.now;
    // charlie's six changes were 1-6 s ago; 30 s on they are all still in the window.
    let wall = app.model.wall + Duration::from_secs(30);
    update(&mut app, Msg::Tick { now, wall });
    assert_eq!(app.model.alarm_counts()[Alarm::Flapping as usize], 1);
    let wall = app.model.wall + Duration::from_secs(40);
    update(&mut app, Msg::Tick { now, wall });
    assert_eq!(
        app.model.alarm_counts()[Alarm::Flapping as usize],
        0,
        "out of the window"
    );
    let charlie = app.rows.iter().find(|r| r.key.1 == "charlie").expect("row");
    assert_eq!(charlie.rate, 0.0);
    same_as_from_scratch(&app, "after the window");
}

#[test]
fn emptied_elections_are_pruned_after_the_retention_and_their_rows_go() {
    let mut app = app();
    app.model.retention = Duration::from_secs(60);
    let mut a = app.model.elections[&(0, "alpha".to_string())].clone();
    a.leader = None;
    a.candidates.clear();
    update(
        &mut app,
        Msg::Source(SourceEvent::Elections {
            source: 0,
            elections: vec![a],
        }),
    );
    // bravo was always empty but has no change with a time: it stays.
    let (now, wall) = (app.model.now, app.model.wall + Duration::from_secs(30 * 60));
    update(&mut app, Msg::Tick { now, wall });
    assert_eq!(names(&app), ["bravo", "charlie"]);
    assert!(!app.model.elections.contains_key(&(0, "alpha".to_string())));
    same_as_from_scratch(&app, "after pruning");
}
