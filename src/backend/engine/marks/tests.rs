use std::time::{Duration, Instant, SystemTime};

use super::*;
use crate::backend::engine::journal::Bound;
use crate::model::{Candidate, Election, Scheme};

fn t(s: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000 + s)
}

fn outage(from: u64, to: Option<u64>, down: bool) -> Entry {
    Entry::Outage {
        from: t(from),
        to: to.map(t),
        down,
    }
}

fn deposed(from: u64, to: Option<u64>) -> Entry {
    Entry::Deposed(Deposed {
        election: "jobs".into(),
        holder: "a".into(),
        from: t(from),
        to: to.map(t),
    })
}

/// Two runs: the first saw an outage (its start, then its end) and a deposed holder, and
/// stopped cleanly; the second was killed in an outage. What a third run reads: both
/// outages (the second ending at its run's last line), the deposed stretch once, and the
/// two stretches no electop watched.
#[test]
fn the_journal_gives_back_the_outages_deposed_holders_and_unwatched_stretches() {
    let entries = [
        Entry::Watching(t(0)),
        outage(10, None, true),
        outage(10, Some(14), true),
        deposed(20, None),
        deposed(20, Some(30)),
        outage(40, Some(60), false),
        Entry::Stopped(t(100)),
        Entry::Watching(t(200)),
        outage(210, None, true),
        Entry::Watching(t(300)),
        outage(320, None, true),
    ];
    let p = past_marks(&entries, Some(t(400)));
    let o: Vec<(SystemTime, SystemTime, bool)> =
        p.outages.iter().map(|o| (o.from, o.to, o.down)).collect();
    // The run killed at 210's outage ends at its last line (its start): nothing known.
    assert_eq!(
        o,
        [(t(10), t(14), true), (t(40), t(60), false)],
        "{:?}",
        p.outages
    );
    assert_eq!(p.deposed.len(), 1);
    assert_eq!((p.deposed[0].from, p.deposed[0].to), (t(20), Some(t(30))));
    let gaps: Vec<(SystemTime, SystemTime, bool)> = p
        .unwatched
        .iter()
        .map(|g| (g.from, g.to, g.stop_recorded))
        .collect();
    assert_eq!(
        gaps,
        [
            (t(100), t(200), true),
            (t(210), t(300), false),
            (t(320), t(400), false)
        ]
    );
    // Another electop writes the journal now: the stretch since its last line is watched.
    assert_eq!(past_marks(&entries, None).unwatched.len(), 2);
}

/// What a contact at `s` made, but the `alive` lines.
fn contact(r: &mut Recorder, i0: Instant, s: u64) -> Vec<Entry> {
    let mut made = r.see(&SourceEvent::Contact {
        source: 0,
        at: i0 + Duration::from_secs(s),
        wall: t(s),
        next_within: Duration::from_millis(500),
    });
    made.retain(|e| !matches!(e, Entry::Alive(_)));
    made
}

/// A run that hears from its source says so once a second; a run killed after such a
/// record is known to have watched up to it.
#[test]
fn a_run_says_it_is_alive_once_a_second_and_a_killed_one_watched_until_then() {
    let mut r = Recorder::new(History::none(), None);
    let i0 = Instant::now();
    let mut alive = Vec::new();
    for ms in (0..=2_500).step_by(250) {
        let made = r.see(&SourceEvent::Contact {
            source: 0,
            at: i0 + Duration::from_millis(ms),
            wall: t(0) + Duration::from_millis(ms),
            next_within: Duration::from_millis(250),
        });
        alive.extend(made.into_iter().filter(|e| matches!(e, Entry::Alive(_))));
    }
    let ms = |n| Entry::Alive(t(0) + Duration::from_millis(n));
    assert_eq!(alive, [ms(0), ms(1_000), ms(2_000)]);
    let entries = [
        Entry::Watching(t(0)),
        Entry::Alive(t(0)),
        Entry::Alive(t(60)),
        Entry::Watching(t(300)),
    ];
    let p = past_marks(&entries, None);
    assert_eq!(
        p.unwatched,
        [HistoryGap {
            from: t(60),
            to: t(300),
            stop_recorded: false
        }]
    );
}

/// The recorder writes an outage's start when the source goes down and the whole outage
/// when it answers again; a long silence is written at its end; steady contact nothing.
#[test]
fn the_recorder_writes_an_outage_at_its_start_and_its_end() {
    let mut r = Recorder::new(History::none(), None);
    let i0 = Instant::now();
    assert!(contact(&mut r, i0, 0).is_empty());
    assert!(contact(&mut r, i0, 1).is_empty());
    let down = SourceEvent::Conn {
        source: 0,
        state: ConnState::Down {
            error: "refused".into(),
            retry_at: i0,
            lasting: false,
        },
    };
    assert_eq!(r.see(&down), [outage(1, None, true)]);
    assert!(r.see(&down).is_empty(), "said once");
    assert_eq!(contact(&mut r, i0, 5), [outage(1, Some(5), true)]);
    assert_eq!(contact(&mut r, i0, 20), [outage(5, Some(20), false)]);
}

/// A holder deposed is written when it is first seen so and when it is no longer.
#[test]
fn the_recorder_writes_a_deposed_holder_when_it_begins_and_ends() {
    let mut r = Recorder::new(History::none(), None);
    let mut e = Election::new(0, "jobs".into(), Scheme::RedisLock);
    let elections = |e: &Election| SourceEvent::Elections {
        source: 0,
        elections: vec![e.clone()],
    };
    assert!(r.see(&elections(&e)).is_empty());
    e.deposed = Some(Box::new(Candidate::plain("a", "jobs")));
    let began = r.see(&elections(&e));
    assert!(
        matches!(&began[..], [Entry::Deposed(d)] if d.holder == "a" && d.to.is_none()),
        "{began:?}"
    );
    assert!(r.see(&elections(&e)).is_empty(), "once");
    e.deposed = None;
    let ended = r.see(&elections(&e));
    assert!(
        matches!(&ended[..], [Entry::Deposed(d)] if d.holder == "a" && d.to.is_some()),
        "{ended:?}"
    );
}

/// The recorder reads back what earlier runs marked in the journal its source named, and
/// records this run's marks there; a read-only one (some elections asked for) records none.
#[test]
fn the_recorder_reads_and_writes_the_journal_its_source_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("history.sqlite3");
    let keep = crate::backend::engine::journal::Keep::UNBOUNDED;
    let earlier = History::at(path.clone(), keep).journal("etcd-c");
    earlier.append(&[
        Entry::Watching(t(0)),
        outage(1, Some(5), true),
        Entry::Stopped(t(6)),
    ]);
    let history = History::at(path, keep);
    let mut r = Recorder::new(history.clone(), None);
    let past = r.journal("etcd-c", Some(SystemTime::now()), None);
    assert_eq!(past, past_outages(&[outage(1, Some(5), true)], None));
    r.record(&[outage(7, Some(9), true)]);
    let j = history.journal("etcd-c");
    let read = j.load(Bound::changes(1, keep), &[]);
    assert!(read.contains(&outage(7, Some(9), true)), "{read:?}");
    let mut read_only = Recorder::new(history.clone(), None);
    read_only.journal("etcd-c", None, None);
    read_only.record(&[outage(20, Some(21), true)]);
    let read = j.load(Bound::changes(1, keep), &[]);
    assert!(!read.contains(&outage(20, Some(21), true)), "{read:?}");
}

/// etcd's and ZooKeeper's past marks leave the stretches no electop watched to the store.
#[test]
fn past_outages_leave_the_unwatched_stretches_out() {
    let entries = [
        Entry::Watching(t(0)),
        outage(10, Some(14), true),
        Entry::Stopped(t(20)),
        Entry::Watching(t(100)),
    ];
    let p = past_outages(&entries, Some(t(200)));
    assert!(p.unwatched.is_empty(), "{p:?}");
    assert_eq!(p.outages.len(), 1);
    assert_eq!(past_marks(&entries, Some(t(200))).unwatched.len(), 1);
}
