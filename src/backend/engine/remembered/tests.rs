use std::time::{Duration, SystemTime};

use super::*;
use crate::backend::BackendOptions;
use crate::backend::engine::journal::{History, Keep};
use crate::model::{EventKind, HistoryEntry};

fn change(election: &str, ago: Duration, from: Option<&str>, to: Option<&str>) -> Entry {
    Entry::Change {
        election: election.into(),
        entry: HistoryEntry {
            at: Some(SystemTime::now() - ago),
            revision: None,
            from: from.map(str::to_string),
            to: to.map(str::to_string),
            cause: match to {
                Some(_) => Cause::Elected,
                None => Cause::LeaseExpired,
            },
            by: None,
        },
    }
}

fn opts(history: &History, only: Option<&str>) -> BackendOptions {
    BackendOptions {
        retention: Duration::from_secs(3600),
        only: only.map(str::to_string),
        history: history.clone(),
        ..BackendOptions::default()
    }
}

/// A journal of four elections: `billing` lost its leader (its lease ran out), `jobs` still
/// had one at the last record, `shown` is in the store, `old` ended before the retention.
fn journal(dir: &tempfile::TempDir) -> (History, Journal) {
    let h = History::at(dir.path().join("history.sqlite3"), Keep::UNBOUNDED);
    let j = h.journal("src");
    let min = Duration::from_secs(60);
    j.append(&[
        change("billing", 5 * min, None, Some("a")),
        change("billing", 4 * min, Some("a"), None),
        change("jobs", 3 * min, None, Some("b")),
        change("shown", 2 * min, None, Some("c")),
        change("old", 100 * min, None, Some("d")),
        change("old", 90 * min, Some("d"), None),
    ]);
    (h, j)
}

fn shown() -> SourceEvent {
    let e = Election::new(0, "shown".into(), Scheme::EtcdLeaseKey);
    SourceEvent::Elections {
        source: 0,
        elections: vec![e],
    }
}

#[test]
fn the_history_lists_what_the_store_no_longer_holds_without_a_leader() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (h, j) = journal(&dir);
    let mut r = Remembered::new(&SourceInfo::test_etcd(), &opts(&h, None));
    r.see(&shown());
    let out = r.at_first_sync(Some(&j));
    let Some(SourceEvent::Elections { elections, .. }) = out.first() else {
        panic!("the elections first: {out:?}");
    };
    let names: Vec<&str> = elections.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(
        names,
        ["billing", "jobs"],
        "not the one shown, not one past the retention"
    );
    assert!(elections.iter().all(|e| e.leader.is_none()));
    let billing = &elections[0];
    let last = billing.history.back().expect("its history");
    assert_eq!(
        (last.from.as_deref(), last.cause),
        (Some("a"), Cause::LeaseExpired)
    );
    // `jobs` ended with a leader no store holds now: it went while nobody watched.
    let jobs = elections[1].history.back().expect("its history");
    assert_eq!(
        (jobs.from.as_deref(), jobs.to.as_deref(), jobs.cause),
        (Some("b"), None, Cause::Unknown)
    );
    let told: Vec<_> = out[1..]
        .iter()
        .filter_map(|e| match e {
            SourceEvent::Happened(ev) => Some((ev.election.clone(), ev.kind)),
            _ => None,
        })
        .collect();
    assert_eq!(told, [(Some("jobs".to_string()), EventKind::LeaderLost)]);
    assert!(
        r.at_first_sync(Some(&j)).is_empty(),
        "once: a later sync lists nothing"
    );
}

#[test]
fn a_command_for_one_election_lists_that_one_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (h, j) = journal(&dir);
    let mut r = Remembered::new(&SourceInfo::test_etcd(), &opts(&h, Some("billing")));
    let out = r.at_first_sync(Some(&j));
    let Some(SourceEvent::Elections { elections, .. }) = out.first() else {
        panic!("the election: {out:?}");
    };
    assert_eq!(elections.len(), 1);
    assert_eq!(elections[0].name, "billing");
}
