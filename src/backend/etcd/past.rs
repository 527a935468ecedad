//! Leader changes a store records itself (Patroni's `history` key), merged into the history
//! electop keeps from watching: they carry the wall-clock times that changes replayed from
//! etcd's revisions lack, and they reach back before etcd's compaction.

use std::collections::VecDeque;
use std::time::{Duration, SystemTime};

use crate::model::{Election, HistoryEntry, MemberInfo, Note};

/// How far apart the time electop saw a change and the time the store recorded for it may
/// be and still be one change: Patroni records the promotion, which follows the leader key.
const SAME_CHANGE: Duration = Duration::from_secs(30);

/// Takes the store's descriptions and past changes that a layout derived for `e`.
pub(super) fn adopt(
    e: &mut Election,
    members: Vec<MemberInfo>,
    notes: Vec<Note>,
    past: &[HistoryEntry],
    limit: usize,
) {
    e.members = members;
    e.notes = notes;
    merge(e, past, limit);
}

/// Merges `past` (oldest first, each with a time) into `e.history`: a change electop saw
/// too (same new leader, untimed or close in time) gains the store's time; one it did not
/// see is put in time order. Merging the same records again changes nothing.
pub(super) fn merge(e: &mut Election, past: &[HistoryEntry], limit: usize) {
    let mut pos = 0;
    for p in past {
        let Some(at) = p.at else { continue };
        if let Some(j) = find_same(&e.history, pos, p, at) {
            e.history[j].at.get_or_insert(at);
            pos = j + 1;
            continue;
        }
        let k = (pos..e.history.len())
            .find(|&i| e.history[i].at.is_none_or(|t| t > at))
            .unwrap_or(e.history.len());
        e.history.insert(k, p.clone());
        pos = k + 1;
        let mut kept = true;
        while e.history.len() > limit.max(1) {
            e.history.pop_front();
            kept &= pos > 1;
            pos = pos.saturating_sub(1);
        }
        if kept {
            e.transitions += 1;
        }
    }
}

fn find_same(
    history: &VecDeque<HistoryEntry>,
    from: usize,
    p: &HistoryEntry,
    at: SystemTime,
) -> Option<usize> {
    (from..history.len()).find(|&i| {
        let h = &history[i];
        h.to == p.to
            && h.at.is_none_or(|t| {
                let gap = t.duration_since(at).or_else(|_| at.duration_since(t));
                gap.is_ok_and(|g| g <= SAME_CHANGE)
            })
    })
}

/// An entry taken from the store's own records (every change electop saw has a revision).
/// The replayed history merged the same records when it reached the same keys, so the live
/// tracker's copies are dropped when the two are joined.
pub(super) fn from_store(h: &HistoryEntry) -> bool {
    h.revision.is_none()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Cause, Scheme};

    fn t(s: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000 + s)
    }

    fn entry(at: Option<SystemTime>, rev: Option<i64>, to: &str, cause: Cause) -> HistoryEntry {
        HistoryEntry {
            at,
            revision: rev,
            from: None,
            to: Some(to.into()),
            cause,
            by: None,
        }
    }

    #[test]
    fn seen_changes_gain_the_stores_time_and_unseen_ones_are_put_in_order() {
        let mut e = Election::new(0, "demo".into(), Scheme::Patroni);
        e.record(entry(None, Some(286), "n2", Cause::Resigned), 10);
        e.record(entry(Some(t(500)), Some(400), "n1", Cause::Elected), 10);
        let past = vec![
            entry(Some(t(10)), None, "n3", Cause::Promoted),
            entry(Some(t(100)), None, "n2", Cause::Promoted),
            entry(Some(t(505)), None, "n1", Cause::Promoted),
        ];
        merge(&mut e, &past, 10);
        let got: Vec<_> = e
            .history
            .iter()
            .map(|h| (h.at, h.revision, h.to.clone()))
            .collect();
        assert_eq!(
            got,
            [
                (Some(t(10)), None, Some("n3".into())),
                (Some(t(100)), Some(286), Some("n2".into())),
                (Some(t(500)), Some(400), Some("n1".into())),
            ]
        );
        assert_eq!(e.transitions, 3);
        merge(&mut e, &past, 10);
        assert_eq!((e.history.len(), e.transitions), (3, 3), "idempotent");
    }

    #[test]
    fn a_record_older_than_the_kept_history_is_not_counted_again_and_again() {
        let mut e = Election::new(0, "demo".into(), Scheme::Patroni);
        e.record(entry(Some(t(50)), Some(9), "n1", Cause::Elected), 1);
        let past = vec![entry(Some(t(1)), None, "n2", Cause::Promoted)];
        merge(&mut e, &past, 1);
        merge(&mut e, &past, 1);
        assert_eq!(e.history.len(), 1);
        assert_eq!(e.history[0].revision, Some(9));
        assert_eq!(e.transitions, 1);
    }
}
