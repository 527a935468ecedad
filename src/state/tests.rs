//! The read model alone: what a store's events make true, with the clock held still
//! (`tokio::time::pause`) so staleness and rates are exact.

use std::time::{Duration, SystemTime};

use super::alarm::Alarm;
use super::*;
use crate::model::{Candidate, ConnState, Scheme, SourceEvent, SourceInfo};

/// The paused tokio clock as the std instant the model reads.
fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}

fn election(name: &str, leader: Option<&str>) -> Election {
    let mut e = Election::new(0, name.into(), Scheme::EtcdElection);
    e.leader = leader.map(|id| Candidate::plain(id, &format!("/e/{name}/{id}")));
    e.candidates = e.leader.iter().cloned().collect();
    e
}

fn model() -> ReadModel {
    let mut m = ReadModel::new(vec![SourceInfo::test_etcd()], now(), SystemTime::now());
    m.apply(SourceEvent::Elections {
        source: 0,
        elections: vec![election("jobs", Some("a")), election("cron", None)],
    });
    m
}

fn contact(m: &mut ReadModel) -> Applied {
    m.apply(SourceEvent::Contact {
        source: 0,
        at: now(),
        wall: SystemTime::now(),
        next_within: Duration::from_millis(500),
    })
}

#[test]
fn alarms_are_worked_out_once_at_the_settle_and_listed_worst_first() {
    let mut m = model();
    assert!(m.pending(), "marked, not yet worked out");
    assert_eq!(m.alarms(&(0, "cron".into())), None);
    assert_eq!(m.settle(), Settled::All, "a first snapshot redoes all");
    let cron = m.alarms(&(0, "cron".into())).map(|(a, _)| a);
    assert!(cron.is_some_and(|a| a.has(Alarm::NoLeader)), "{cron:?}");
    assert_eq!(m.alarm_counts()[Alarm::NoLeader as usize], 1);
    let order: Vec<&str> = m.triage_order().iter().map(|l| l.key.1.as_str()).collect();
    assert_eq!(order, ["cron", "jobs"], "the alarmed one first");

    // A leader arrives: only that election is redone, and its alarm goes.
    m.apply(SourceEvent::Elections {
        source: 0,
        elections: vec![election("cron", Some("b"))],
    });
    assert_eq!(m.settle(), Settled::Some(vec![(0, "cron".into())]));
    assert_eq!(m.alarm_counts()[Alarm::NoLeader as usize], 0);
}

#[tokio::test(start_paused = true)]
async fn a_source_without_contact_goes_stale_and_thaws_on_the_next() {
    let mut m = model();
    assert_eq!(contact(&mut m), Applied::Contact { thawed: false });
    m.settle();
    // Contact every 500 ms, and 1.5 s of margin: stale after 2 s, not before.
    tokio::time::advance(Duration::from_millis(1999)).await;
    m.tick(now(), SystemTime::now());
    assert_eq!(m.stale_for(0), None);
    m.settle();
    assert_eq!(m.alarm_counts()[Alarm::Stale as usize], 0);
    tokio::time::advance(Duration::from_millis(2)).await;
    m.tick(now(), SystemTime::now());
    assert_eq!(m.stale_for(0), Some(Duration::from_millis(2001)));
    assert_eq!(m.settle(), Settled::All, "staleness moves every alarm");
    assert_eq!(m.alarm_counts()[Alarm::Stale as usize], 2);
    // Frozen at the last contact, not now.
    assert!(m.as_of(0) < m.now);
    assert_eq!(contact(&mut m), Applied::Contact { thawed: true });
    m.settle();
    assert_eq!(m.alarm_counts()[Alarm::Stale as usize], 0);
}

#[tokio::test(start_paused = true)]
async fn a_down_source_is_stale_at_once_and_its_elections_stay() {
    let mut m = model();
    contact(&mut m);
    m.settle();
    let down = ConnState::Down {
        error: "connection refused".into(),
        retry_at: now() + Duration::from_secs(1),
        lasting: false,
    };
    assert_eq!(
        m.apply(SourceEvent::Conn {
            source: 0,
            state: down
        }),
        Applied::Conn
    );
    assert!(m.any_down());
    assert_eq!(m.settle(), Settled::All);
    assert_eq!(m.alarm_counts()[Alarm::Stale as usize], 2);
    assert_eq!(m.elections.len(), 2, "what was read stays, marked stale");
}

#[tokio::test(start_paused = true)]
async fn an_empty_election_goes_when_its_retention_ends() {
    let mut m = model();
    let wall = SystemTime::now();
    let mut gone = election("cron", None);
    gone.candidates.clear();
    gone.record(
        crate::model::HistoryEntry {
            at: Some(wall),
            revision: None,
            from: Some("x".into()),
            to: None,
            cause: crate::model::Cause::LeaseExpired,
            by: None,
        },
        10,
    );
    m.apply(SourceEvent::Elections {
        source: 0,
        elections: vec![gone],
    });
    m.settle();
    m.retention = Duration::from_secs(60);
    tokio::time::advance(Duration::from_secs(59)).await;
    m.tick(now(), wall + Duration::from_secs(59));
    assert!(!m.prune(), "kept within the retention");
    m.tick(now(), wall + Duration::from_secs(61));
    assert!(m.prune());
    assert!(!m.elections.contains_key(&(0, "cron".into())));
    assert_eq!(m.settle(), Settled::Some(vec![(0, "cron".into())]));
}

#[test]
fn a_revision_already_known_changes_nothing() {
    let mut m = model();
    let rev = |revision| SourceEvent::Revision {
        source: 0,
        revision,
    };
    assert_eq!(m.apply(rev(7)), Applied::Revision);
    assert_eq!(m.apply(rev(7)), Applied::Nothing);
    let unknown = SourceEvent::Synced { source: 9 };
    assert_eq!(m.apply(unknown), Applied::Nothing);
    assert!(!m.all_synced(), "an unknown source changes no known one");
}

/// `n` changes of `name`, the oldest `oldest` before `wall`, the newest `newest` before.
fn changed(name: &str, wall: SystemTime, (oldest, newest): (u64, u64), n: u64) -> Election {
    let mut e = election(name, Some("a"));
    for i in 0..n {
        let ago = oldest - (oldest - newest) * i / (n - 1).max(1);
        e.record(
            crate::model::HistoryEntry {
                at: Some(wall - Duration::from_secs(ago)),
                revision: None,
                from: Some("b".into()),
                to: Some("a".into()),
                cause: crate::model::Cause::TakenOver,
                by: None,
            },
            50,
        );
    }
    e
}

fn flapping(m: &ReadModel, name: &str) -> bool {
    m.alarms(&(0, name.into()))
        .is_some_and(|(a, _)| a.has(Alarm::Flapping))
}

/// A rate moves when the oldest change in the window leaves it; only then is the election
/// looked at again, not every second while it has changes in the window.
#[test]
fn a_rate_is_redone_when_its_oldest_change_leaves_the_window_and_not_before() {
    let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
    let mut m = ReadModel::new(vec![SourceInfo::test_etcd()], now(), wall);
    // 5 changes in the last minute (over the 4 of flapping), the oldest 50 s ago; and one
    // whose 5 are all within the last 20 s.
    m.apply(SourceEvent::Elections {
        source: 0,
        elections: vec![
            changed("early", wall, (50, 10), 5),
            changed("late", wall, (20, 1), 5),
        ],
    });
    m.settle();
    assert!(flapping(&m, "early") && flapping(&m, "late"));
    let at = |s: u64| wall + Duration::from_millis(s * 1000 + 500);
    for s in 1..10 {
        m.tick(now(), at(s));
        assert_eq!(
            m.settle(),
            Settled::Some(vec![]),
            "second {s}: nothing left"
        );
    }
    // 50 s + 60 s - 50 s: the oldest of "early" leaves in second 10.
    m.tick(now(), at(10));
    assert_eq!(m.settle(), Settled::Some(vec![(0, "early".into())]));
    assert!(!flapping(&m, "early"), "4 left in the window: not over 4");
    assert!(flapping(&m, "late"));

    // A change since makes "late" looked at as it is now (its oldest still leaves in second
    // 40); "early"'s next oldest leave in seconds 20, 30 and 40.
    m.apply(SourceEvent::Elections {
        source: 0,
        elections: vec![changed("late", wall, (20, 1), 6)],
    });
    m.settle();
    for s in 11..=40 {
        m.tick(now(), at(s));
        let want: Vec<Key> = match s {
            20 | 30 => vec![(0, "early".into())],
            40 => vec![(0, "early".into()), (0, "late".into())],
            _ => vec![],
        };
        let Settled::Some(mut got) = m.settle() else {
            panic!("second {s}: all redone")
        };
        got.sort();
        assert_eq!(got, want, "second {s}");
    }
    assert!(flapping(&m, "late"), "5 of its 6 in the window still");
}

fn down(error: &str) -> SourceEvent {
    SourceEvent::Conn {
        source: 0,
        state: ConnState::Down {
            error: error.into(),
            retry_at: now(),
            lasting: false,
        },
    }
}

/// Every view hears an outage once, however many retries a store makes: `watch` and `serve`
/// ask `conn_marker` before applying, the timeline keeps what apply decided.
#[tokio::test(start_paused = true)]
async fn an_outage_with_its_retries_is_one_disconnected_and_one_connected() {
    let mut m = model();
    let connected = SourceEvent::Conn {
        source: 0,
        state: ConnState::Connected,
    };
    let mut heard = Vec::new();
    for ev in [
        connected.clone(),
        connected.clone(),
        down("refused"),
        SourceEvent::Conn {
            source: 0,
            state: ConnState::Connecting,
        },
        down("refused again"),
        connected.clone(),
        connected,
    ] {
        if let SourceEvent::Conn { source, state } = &ev {
            heard.extend(m.conn_marker(*source, state).map(|e| (e.kind, e.detail)));
        }
        m.apply(ev);
    }
    assert_eq!(
        heard,
        [
            (EventKind::Connected, None),
            (EventKind::Disconnected, Some("refused".to_string())),
            (EventKind::Connected, None),
        ]
    );
    let logged: Vec<&str> = m.events.entries.iter().map(|e| e.text.as_str()).collect();
    assert_eq!(
        logged,
        ["disconnected", "connected"],
        "the first connect is no news"
    );
}

/// A source goes stale and fresh once each, told per source: another's silence is not its.
#[tokio::test(start_paused = true)]
async fn staleness_is_told_once_per_change_and_per_source() {
    let mut infos = vec![SourceInfo::test_etcd(), SourceInfo::test_sqlite()];
    infos[1].id = 1;
    let mut m = ReadModel::new(infos, now(), SystemTime::now());
    contact(&mut m);
    assert!(m.staleness_markers().is_empty(), "fresh from the start");
    tokio::time::advance(Duration::from_secs(3)).await;
    m.now = now();
    let told: Vec<_> = m.staleness_markers().into_iter().map(|e| e.kind).collect();
    assert_eq!(
        told,
        [EventKind::Stale],
        "only the source that was reached goes stale"
    );
    assert!(m.staleness_markers().is_empty(), "said once");
    contact(&mut m);
    let told: Vec<_> = m.staleness_markers().into_iter().map(|e| e.kind).collect();
    assert_eq!(told, [EventKind::Fresh]);
}

/// A retry while down leaves the source down, with its error, and so stale: never fresh
/// for a moment between two failed attempts.
#[tokio::test(start_paused = true)]
async fn a_retry_while_down_keeps_the_source_down_and_stale() {
    let mut m = model();
    contact(&mut m);
    m.apply(down("refused"));
    m.apply(SourceEvent::Conn {
        source: 0,
        state: ConnState::Connecting,
    });
    assert!(
        matches!(&m.sources[0].conn, ConnState::Down { error, .. } if error == "refused"),
        "{:?}",
        m.sources[0].conn
    );
    assert!(m.sources[0].stale_for(now()).is_some());
}
