//! What a source's timeline strips mark beside its leader changes, kept as events are
//! applied: the past stretches the source was down or stale (no contact), and the holders
//! deposed while they may still believe they lead. Plain data, bounded per source; the
//! backend journals them as it sees them (`backend::engine::marks`), and the marks an
//! earlier electop journaled are put back at the start ([`Marks::restore`]).

use std::collections::VecDeque;
use std::time::{Duration, Instant, SystemTime};

use super::source::STALE_MARGIN;
use crate::model::{ConnState, Election};

/// Past outages kept per source: a day of one every half hour.
pub const OUTAGES_KEPT: usize = 64;
/// Deposed holders kept per source (ended and still going on).
pub const DEPOSED_KEPT: usize = 64;

pub use crate::model::marks::{Deposed, Outage};

/// One source's marks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Marks {
    /// Oldest first.
    pub outages: VecDeque<Outage>,
    /// Oldest first; those still going on have no `to`.
    pub deposed: VecDeque<Deposed>,
    /// Deposed holders still going on: elections without one skip the look-up.
    open: usize,
    /// A `Down` was applied since the last contact.
    went_down: bool,
}

impl Marks {
    pub(crate) fn on_conn(&mut self, state: &ConnState) {
        if matches!(state, ConnState::Down { .. }) {
            self.went_down = true;
        }
    }

    /// The source answered at `at`; `before`: its answer before, `every`: how often it
    /// answered then. A lost connection, or a silence long enough to be shown stale, between
    /// the two is an outage.
    pub(crate) fn on_contact(
        &mut self,
        before: Option<(Instant, SystemTime)>,
        every: Duration,
        at: (Instant, SystemTime),
    ) {
        let Some((b_at, b_wall)) = before else {
            self.went_down = false;
            return;
        };
        let silent = at.0.saturating_duration_since(b_at) > every + STALE_MARGIN;
        if (self.went_down || silent) && at.1 > b_wall {
            push(
                &mut self.outages,
                Outage {
                    from: b_wall,
                    to: at.1,
                    down: self.went_down,
                },
                OUTAGES_KEPT,
            );
        }
        self.went_down = false;
    }

    /// `e` as the source now has it, at `wall`: a holder newly deposed opens a stretch, one
    /// no longer deposed (its lease ended, or back in line) closes its own.
    pub(crate) fn on_election(&mut self, e: &Election, wall: SystemTime) {
        if self.open == 0 && e.deposed.is_none() {
            return;
        }
        let now = e.deposed.as_deref().map(|d| d.id.as_str());
        let mut same = false;
        for d in self.deposed.iter_mut() {
            if d.to.is_none() && d.election == e.name {
                if Some(d.holder.as_str()) == now {
                    same = true;
                } else {
                    d.to = Some(wall);
                    self.open -= 1;
                }
            }
        }
        let Some(holder) = now.filter(|_| !same) else {
            return;
        };
        // From the change that removed it; where that is not in the history, from when it
        // was first seen deposed.
        let from = e
            .history
            .iter()
            .rev()
            .find(|h| h.from.as_deref() == Some(holder) && h.at.is_some())
            .and_then(|h| h.at)
            .unwrap_or(wall);
        // The same stretch an earlier run saw (restored, ended where it stopped): it goes on.
        if let Some(d) = self.deposed.iter_mut().find(|d| {
            d.election == e.name && d.holder == holder && d.from == from && d.to.is_some()
        }) {
            d.to = None;
            self.open += 1;
            return;
        }
        let d = Deposed {
            election: e.name.clone(),
            holder: holder.to_string(),
            from,
            to: None,
        };
        self.open += 1;
        if let Some(gone) = push(&mut self.deposed, d, DEPOSED_KEPT)
            && gone.to.is_none()
        {
            self.open -= 1;
        }
    }

    /// Puts back what an earlier electop's journal says, before what this run saw: the
    /// oldest dropped past the bounds. A holder still deposed when that electop stopped
    /// stays open until this run reads its election (and closes it, or goes on with it).
    pub fn restore(&mut self, past: &crate::model::marks::PastMarks) {
        let mut outages: Vec<Outage> = past.outages.to_vec();
        outages.extend(self.outages.drain(..));
        outages.sort_by_key(|o| (o.from, o.to));
        outages.dedup_by_key(|o| o.from);
        self.outages = outages.into_iter().collect();
        while self.outages.len() > OUTAGES_KEPT {
            self.outages.pop_front();
        }
        let mut deposed: Vec<Deposed> = past.deposed.clone();
        for d in self.deposed.drain(..) {
            let known = deposed.iter_mut().find(|p| {
                (p.election.as_str(), p.holder.as_str(), p.from)
                    == (d.election.as_str(), d.holder.as_str(), d.from)
            });
            match known {
                Some(p) => *p = d,
                None => deposed.push(d),
            }
        }
        deposed.sort_by_key(|d| d.from);
        let kept = deposed.len().saturating_sub(DEPOSED_KEPT);
        self.deposed = deposed.into_iter().skip(kept).collect();
        self.open = self.deposed.iter().filter(|d| d.to.is_none()).count();
    }

    /// The deposed stretches of election `name`, oldest first.
    pub fn deposed_in<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Deposed> {
        self.deposed.iter().filter(move |d| d.election == name)
    }
}

/// Appends `item`, dropping (and returning) the oldest past `kept`.
fn push<T>(list: &mut VecDeque<T>, item: T, kept: usize) -> Option<T> {
    list.push_back(item);
    (list.len() > kept).then(|| list.pop_front()).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Candidate, Cause, HistoryEntry, Scheme};

    fn t(s: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000 + s)
    }

    fn down() -> ConnState {
        ConnState::Down {
            error: "refused".into(),
            retry_at: Instant::now(),
            lasting: false,
        }
    }

    #[test]
    fn a_lost_connection_and_a_long_silence_are_outages_and_steady_contact_is_not() {
        let i0 = Instant::now();
        let at = |s: u64| (i0 + Duration::from_secs(s), t(s));
        let every = Duration::from_millis(500);
        let mut m = Marks::default();
        m.on_contact(None, every, at(0));
        m.on_contact(Some(at(0)), every, at(1));
        assert!(m.outages.is_empty(), "a second apart is steady");
        m.on_conn(&down());
        m.on_contact(Some(at(1)), every, at(2));
        m.on_contact(Some(at(2)), every, at(12));
        let got: Vec<(SystemTime, SystemTime, bool)> =
            m.outages.iter().map(|o| (o.from, o.to, o.down)).collect();
        assert_eq!(got, [(t(1), t(2), true), (t(2), t(12), false)]);
        for s in 0..(OUTAGES_KEPT as u64 + 5) {
            m.on_contact(Some(at(100 + 10 * s)), every, at(105 + 10 * s));
        }
        assert_eq!(m.outages.len(), OUTAGES_KEPT, "bounded");
    }

    fn election(deposed: Option<&str>, history: &[(u64, &str, &str)]) -> Election {
        let mut e = Election::new(0, "jobs".into(), Scheme::RedisLock);
        e.deposed = deposed.map(|d| Box::new(Candidate::plain(d, "jobs")));
        for (at, from, to) in history {
            e.record(
                HistoryEntry {
                    at: Some(t(*at)),
                    revision: None,
                    from: Some(from.to_string()),
                    to: Some(to.to_string()),
                    cause: Cause::ForcedReelection,
                    by: None,
                },
                10,
            );
        }
        e
    }

    #[test]
    fn a_deposed_holder_is_marked_from_the_change_that_removed_it_until_it_is_gone() {
        let mut m = Marks::default();
        m.on_election(&election(None, &[]), t(0));
        assert!(m.deposed.is_empty());
        let h = [(10, "node-a", "node-b")];
        m.on_election(&election(Some("node-a"), &h), t(11));
        m.on_election(&election(Some("node-a"), &h), t(12));
        assert_eq!(m.deposed.len(), 1, "one stretch however often it is read");
        m.on_election(&election(None, &h), t(40));
        let d: Vec<_> = m.deposed_in("jobs").collect();
        assert_eq!(
            (d[0].holder.as_str(), d[0].from, d[0].to),
            ("node-a", t(10), Some(t(40)))
        );
        assert_eq!(m.open, 0);
        assert_eq!(m.deposed_in("other").count(), 0);
    }

    /// What an earlier electop's journal says is put back before what this run saw, each
    /// outage once; a holder it left deposed (ended at its last line) goes on when this run
    /// still reads it deposed, as one stretch.
    #[test]
    fn the_past_marks_are_put_back_and_a_deposed_holder_seen_again_goes_on() {
        use crate::model::marks::PastMarks;
        let mut m = Marks::default();
        let i0 = Instant::now();
        let at = |s: u64| (i0 + Duration::from_secs(s), t(s));
        m.on_contact(Some(at(100)), Duration::from_millis(500), at(110));
        let past = PastMarks {
            outages: vec![
                Outage {
                    from: t(1),
                    to: t(5),
                    down: true,
                },
                Outage {
                    from: t(100),
                    to: t(110),
                    down: false,
                },
            ],
            deposed: vec![Deposed {
                election: "jobs".into(),
                holder: "node-a".into(),
                from: t(10),
                to: Some(t(20)),
            }],
            unwatched: Vec::new(),
        };
        m.restore(&past);
        let o: Vec<SystemTime> = m.outages.iter().map(|o| o.from).collect();
        assert_eq!(o, [t(1), t(100)], "once each, oldest first");
        assert_eq!(m.open, 0);
        let h = [(10, "node-a", "node-b")];
        m.on_election(&election(Some("node-a"), &h), t(120));
        let d: Vec<_> = m.deposed_in("jobs").collect();
        assert_eq!(d.len(), 1, "one stretch: {d:?}");
        assert_eq!((d[0].from, d[0].to), (t(10), None), "going on");
    }
}
