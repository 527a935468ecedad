//! The headless observer's state: the read model every view reads, and what only a
//! long-running observer counts beside it (leader changes by cause, time without a leader,
//! a source's errors), kept as Prometheus counters must be: they only grow while the
//! process lives.

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime};

use crate::model::{ConnState, Event, EventKind, SourceEvent, SourceId};
use crate::state::{HashMap, HashSet, Key, ReadModel, Settled};

/// What an election has counted since the observer started.
#[derive(Clone, Debug, Default)]
pub(crate) struct Tally {
    /// Live leader changes by cause (`elected`, `lease_expired`...).
    pub changes: Causes,
    /// Seconds seen without a leader, all told.
    pub leaderless_s: f64,
    /// When the current stretch without a leader began, as seen here.
    pub leaderless_since: Option<Instant>,
    /// How far the current stretch has been added to `leaderless_s`.
    counted_to: Option<Instant>,
    /// When the last live change was seen.
    pub last_change: Option<Instant>,
}

/// Counts by cause, sorted by cause as a `BTreeMap` would iterate them: an election has
/// one or two causes, too few for a map's first node (docs/PERFORMANCE.md).
#[derive(Clone, Debug, Default)]
pub(crate) struct Causes(Vec<(&'static str, u64)>);

impl Causes {
    pub(crate) fn add(&mut self, cause: &'static str) {
        self.insert_with(cause, |n| n + 1);
    }

    /// Takes one change away from `cause`; false when none was counted there.
    pub(crate) fn remove_one(&mut self, cause: &str) -> bool {
        match self.0.iter().position(|(c, _)| *c == cause) {
            Some(i) if self.0[i].1 > 1 => {
                self.0[i].1 -= 1;
                true
            }
            Some(i) => {
                self.0.remove(i);
                true
            }
            None => false,
        }
    }

    #[cfg(test)]
    pub(crate) fn insert(&mut self, cause: &'static str, count: u64) {
        self.insert_with(cause, |_| count);
    }

    fn insert_with(&mut self, cause: &'static str, f: impl FnOnce(u64) -> u64) {
        match self.0.binary_search_by(|(c, _)| c.cmp(&cause)) {
            Ok(i) => self.0[i].1 = f(self.0[i].1),
            Err(i) => self.0.insert(i, (cause, f(0))),
        }
    }

    #[cfg(test)]
    pub(crate) fn get(&self, cause: &str) -> Option<&u64> {
        self.0.iter().find(|(c, _)| *c == cause).map(|(_, n)| n)
    }

    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    pub(crate) fn keys(&self) -> impl Iterator<Item = &&'static str> {
        self.0.iter().map(|(c, _)| c)
    }
}

impl<'a> IntoIterator for &'a Causes {
    type Item = (&'a &'static str, &'a u64);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (&'static str, u64)>,
        fn(&'a (&'static str, u64)) -> (&'a &'static str, &'a u64),
    >;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(c, n)| (c, n))
    }
}

/// The read model and the observer's own counts, behind one lock: a scrape, an API read and
/// the apply loop each take it briefly.
#[derive(Clone)]
pub(crate) struct Observed {
    pub model: ReadModel,
    pub tallies: HashMap<Key, Tally>,
    /// Elections without a leader, as of the last tick.
    leaderless: HashSet<Key>,
    /// Per source: how many times it went down, by whether the error lasts.
    pub source_errors: Vec<BTreeMap<&'static str, u64>>,
    last_tick: Instant,
    /// When counts of elections gone from the model are next looked for.
    next_sweep: Instant,
}

/// How often counts are checked against the elections the model still has.
const SWEEP: Duration = Duration::from_secs(60);

impl Observed {
    pub(crate) fn new(model: ReadModel) -> Self {
        let n = model.sources.len();
        Observed {
            last_tick: model.now,
            next_sweep: model.now + SWEEP,
            model,
            tallies: HashMap::default(),
            leaderless: HashSet::default(),
            source_errors: vec![BTreeMap::new(); n],
        }
    }

    /// Applies one store event to the model and counts what it says; returns the event as
    /// `watch --json` tells it, when it is one.
    pub(crate) fn apply(&mut self, ev: SourceEvent) -> Option<Event> {
        let told = match &ev {
            SourceEvent::Happened(e) => Some(e.clone()),
            SourceEvent::Conn { source, state } => self.on_conn(*source, state),
            SourceEvent::Synced { source } => Some(self.marker(*source, EventKind::Synced)),
            _ => None,
        };
        if let Some(e) = &told {
            self.count(e);
        }
        self.model.apply(ev);
        told
    }

    fn on_conn(&mut self, source: SourceId, state: &ConnState) -> Option<Event> {
        let e = self.model.conn_marker(source, state)?;
        if let (ConnState::Down { lasting, .. }, Some(errors)) =
            (state, self.source_errors.get_mut(source))
        {
            let kind = if *lasting { "lasting" } else { "transient" };
            *errors.entry(kind).or_default() += 1;
        }
        Some(e)
    }

    fn marker(&self, source: SourceId, kind: EventKind) -> Event {
        let name = self.model.sources.get(source).map(|s| s.info.name.clone());
        Event::about_source(name.unwrap_or_default(), kind, None, None)
    }

    /// A live leader change counts for its election; replayed history does not (it was
    /// before this observer, and would count again at every restart).
    fn count(&mut self, e: &Event) {
        if e.kind == EventKind::Attributed {
            return self.recount(e);
        }
        let change = matches!(
            e.kind,
            EventKind::LeaderElected | EventKind::LeaderChanged | EventKind::LeaderLost
        );
        if !change || e.replayed {
            return;
        }
        let Some(key) = self.key_of(e) else { return };
        let now = self.model.now;
        // A stretch without a leader starts and ends at the change that says so, not at the
        // tick after it: a stretch shorter than a tick counted a whole tick or none.
        let lost = e.kind == EventKind::LeaderLost;
        if lost {
            self.leaderless.insert(key.clone());
        } else {
            self.leaderless.remove(&key);
        }
        let t = self.tallies.entry(key).or_default();
        let cause = e.cause.map_or("unknown", |c| c.as_str());
        t.changes.add(cause);
        t.last_change = Some(now);
        if lost {
            t.open_stretch(now, now);
        } else {
            t.close_stretch(now);
        }
    }

    /// A change counted under the store's cause turned out forced: counted under the
    /// action's cause instead, so `/metrics` agrees with the history and the event stream.
    fn recount(&mut self, e: &Event) {
        let (Some(was), Some(cause)) = (e.was, e.cause) else {
            return;
        };
        let Some(key) = self.key_of(e) else { return };
        if let Some(t) = self.tallies.get_mut(&key)
            && t.changes.remove_one(was.as_str())
        {
            t.changes.add(cause.as_str());
        }
    }

    /// The election an event is about, by its source's name.
    pub(crate) fn key_of(&self, e: &Event) -> Option<Key> {
        let source = self
            .model
            .sources
            .iter()
            .position(|s| s.info.name == e.source)?;
        Some((source, e.election.clone()?))
    }

    /// Brings the clock to `now`: alarms settled, elections past their retention dropped,
    /// time without a leader added up (only where the source is read and current: a stale
    /// source's elections are not known to be leaderless). Only the elections without a
    /// leader are walked, kept from what each settle redid: over many elections a walk of
    /// all of them every second was most of what an idle observer did.
    pub(crate) fn tick(&mut self, now: Instant, wall: SystemTime) {
        self.model.tick(now, wall);
        self.model.prune();
        let settled = self.model.settle();
        self.follow_leaders(settled, now);
        self.last_tick = now;
        let stale = self.model.stale_sources();
        for key in &self.leaderless {
            let current = self.model.sources.get(key.0).is_some_and(|s| {
                s.conn == ConnState::Connected && !stale.get(key.0).copied().unwrap_or(true)
            });
            let Some(t) = self.tallies.get_mut(key) else {
                continue;
            };
            // A stale source's time is not known to be without a leader: passed over.
            if current {
                t.add_to(now);
            } else {
                t.counted_to = Some(now);
            }
        }
        // Counts of elections gone from the model go with them, so the series stay bounded;
        // looked for only when there may be some (a walk of every count otherwise).
        if self.tallies.len() > self.model.elections.len() || now >= self.next_sweep {
            let model = &self.model;
            self.tallies.retain(|k, _| model.elections.contains_key(k));
            self.next_sweep = now + SWEEP;
        }
    }

    /// Which elections are without a leader, after a settle: those it redid looked at again
    /// (all when it redid all). A stretch no change event opened or closed (a snapshot, a
    /// source's first read) is known only to a tick: it is counted from the last tick, and
    /// to the last tick when it ended.
    fn follow_leaders(&mut self, settled: Settled, now: Instant) {
        let since = self.last_tick;
        let keys = match settled {
            Settled::All => {
                let elections = &self.model.elections;
                self.leaderless = elections
                    .iter()
                    .filter(|(_, e)| e.leader.is_none())
                    .map(|(k, _)| k.clone())
                    .collect();
                for (key, t) in self.tallies.iter_mut() {
                    if !self.leaderless.contains(key) {
                        t.close_stretch(since);
                    }
                }
                for key in &self.leaderless {
                    let t = self.tallies.entry(key.clone()).or_default();
                    t.open_stretch(now, since);
                }
                return;
            }
            Settled::Some(keys) => keys,
        };
        for key in keys {
            let leaderless = self
                .model
                .elections
                .get(&key)
                .is_some_and(|e| e.leader.is_none());
            if leaderless {
                let t = self.tallies.entry(key.clone()).or_default();
                t.open_stretch(now, since);
                self.leaderless.insert(key);
            } else {
                if let Some(t) = self.tallies.get_mut(&key) {
                    t.close_stretch(since);
                }
                self.leaderless.remove(&key);
            }
        }
    }

    /// How long the election has been without a leader now, as seen here.
    #[cfg(test)]
    pub(crate) fn leaderless_now(&self, key: &Key) -> Duration {
        self.tallies
            .get(key)
            .map_or(Duration::ZERO, |t| t.leaderless_at(self.model.now))
    }
}

impl Tally {
    /// A stretch without a leader seen at `now`, counted from `from`; one already open goes on.
    fn open_stretch(&mut self, now: Instant, from: Instant) {
        if self.counted_to.is_none() {
            self.leaderless_since = Some(now);
            self.counted_to = Some(from);
        }
    }

    /// Adds the open stretch's time up to `now`.
    fn add_to(&mut self, now: Instant) {
        if let Some(from) = self.counted_to.replace(now) {
            self.leaderless_s += now.saturating_duration_since(from).as_secs_f64();
        }
    }

    /// A leader came at `now`: the open stretch is counted to there and ends.
    fn close_stretch(&mut self, now: Instant) {
        self.add_to(now);
        self.counted_to = None;
        self.leaderless_since = None;
    }

    /// How long the current stretch without a leader has lasted at `now` (zero: led).
    pub(crate) fn leaderless_at(&self, now: Instant) -> Duration {
        self.leaderless_since
            .map_or(Duration::ZERO, |at| now.saturating_duration_since(at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Candidate, Cause, Election, Scheme, SourceInfo};

    fn observed() -> Observed {
        let now = Instant::now();
        let mut o = Observed::new(ReadModel::new(
            vec![SourceInfo::test_etcd()],
            now,
            SystemTime::now(),
        ));
        o.apply(SourceEvent::Conn {
            source: 0,
            state: ConnState::Connected,
        });
        o.apply(SourceEvent::Contact {
            source: 0,
            at: now,
            wall: SystemTime::now(),
            next_within: Duration::from_secs(3600),
        });
        o
    }

    fn change(kind: EventKind, cause: Cause, replayed: bool) -> SourceEvent {
        let mut e = Event::about_source("etcd x /e/".into(), kind, Some(7), None);
        e.election = Some("jobs".into());
        e.cause = Some(cause);
        e.replayed = replayed;
        SourceEvent::Happened(e)
    }

    #[test]
    fn live_changes_count_by_cause_and_replayed_ones_do_not() {
        let mut o = observed();
        o.apply(change(EventKind::LeaderChanged, Cause::LeaseExpired, false));
        o.apply(change(EventKind::LeaderChanged, Cause::LeaseExpired, false));
        o.apply(change(EventKind::LeaderElected, Cause::Elected, true));
        let t = &o.tallies[&(0, "jobs".to_string())];
        assert_eq!(t.changes.get("lease_expired"), Some(&2));
        assert_eq!(t.changes.get("elected"), None, "replayed");
    }

    /// A change found forced after it was counted moves to the action's cause: `/metrics`
    /// says what the history and the event stream say.
    #[test]
    fn an_attributed_change_is_counted_under_the_actions_cause() {
        let mut o = observed();
        o.apply(change(EventKind::LeaderChanged, Cause::Resigned, false));
        o.apply(change(EventKind::LeaderChanged, Cause::Resigned, false));
        let SourceEvent::Happened(mut e) =
            change(EventKind::Attributed, Cause::ForcedReelection, false)
        else {
            unreachable!("a change")
        };
        e.was = Some(Cause::Resigned);
        o.apply(SourceEvent::Happened(e));
        let t = &o.tallies[&(0, "jobs".to_string())];
        assert_eq!(t.changes.get("resigned"), Some(&1));
        assert_eq!(t.changes.get("forced_reelection"), Some(&1));
    }

    #[test]
    fn time_without_a_leader_adds_up_while_the_source_is_current() {
        let mut o = observed();
        let t0 = o.model.now;
        let e = Election::new(0, "jobs".into(), Scheme::EtcdElection);
        o.apply(SourceEvent::Elections {
            source: 0,
            elections: vec![e.clone()],
        });
        o.tick(t0 + Duration::from_secs(2), SystemTime::now());
        o.tick(t0 + Duration::from_secs(5), SystemTime::now());
        let key = (0, "jobs".to_string());
        assert!((o.tallies[&key].leaderless_s - 5.0).abs() < 1e-6);
        assert_eq!(o.leaderless_now(&key), Duration::from_secs(3));
        let mut led = e;
        led.leader = Some(Candidate::plain("node-a", "/e/jobs/1"));
        o.apply(SourceEvent::Elections {
            source: 0,
            elections: vec![led],
        });
        o.tick(t0 + Duration::from_secs(9), SystemTime::now());
        assert!((o.tallies[&key].leaderless_s - 5.0).abs() < 1e-6, "led now");
        assert_eq!(o.leaderless_now(&key), Duration::ZERO);
    }

    /// A stretch the store's changes bound is counted from the one to the other, however
    /// the ticks fall: 1.5 s between two ticks is 1.5 s, not one tick or none.
    #[test]
    fn a_stretch_between_two_changes_counts_its_own_length() {
        let mut o = observed();
        let t0 = o.model.now;
        let key = (0, "jobs".to_string());
        let mut led = Election::new(0, "jobs".into(), Scheme::EtcdElection);
        led.leader = Some(Candidate::plain("node-a", "/e/jobs/1"));
        o.apply(SourceEvent::Elections {
            source: 0,
            elections: vec![led],
        });
        o.tick(t0 + Duration::from_secs(1), SystemTime::now());
        o.model.now = t0 + Duration::from_millis(1200);
        o.apply(change(EventKind::LeaderLost, Cause::LeaseExpired, false));
        o.tick(t0 + Duration::from_secs(2), SystemTime::now());
        assert_eq!(o.leaderless_now(&key), Duration::from_millis(800));
        o.model.now = t0 + Duration::from_millis(2700);
        o.apply(change(EventKind::LeaderElected, Cause::Elected, false));
        o.tick(t0 + Duration::from_secs(3), SystemTime::now());
        o.tick(t0 + Duration::from_secs(4), SystemTime::now());
        assert!((o.tallies[&key].leaderless_s - 1.5).abs() < 1e-6);
        assert_eq!(o.leaderless_now(&key), Duration::ZERO);
    }

    #[test]
    fn a_source_going_down_counts_once_by_kind() {
        let mut o = observed();
        let down = |lasting| SourceEvent::Conn {
            source: 0,
            state: ConnState::Down {
                error: "refused".into(),
                retry_at: Instant::now(),
                lasting,
            },
        };
        assert!(o.apply(down(false)).is_some());
        assert!(o.apply(down(false)).is_none(), "still down: not again");
        assert_eq!(o.source_errors[0].get("transient"), Some(&1));
    }
}
