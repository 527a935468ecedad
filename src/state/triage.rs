//! Every election's alarms, kept current incrementally: a change costs the changed elections,
//! not all of them, which matters at 100,000 elections and a thousand changes a second.
//! This is the one place alarms are worked out; every view reads them from here.

use std::collections::BTreeMap;
use std::time::SystemTime;

use super::alarm::{self, Alarm, Alarms};
use super::{HashMap, HashSet, Key, ReadModel};
use crate::model::Election;

/// What the alarms keep between settles.
#[derive(Clone, Debug, Default)]
pub(super) struct Triage {
    /// Each election's alarms and leader changes a minute, as of the last settle.
    cached: HashMap<Key, (Alarms, f64)>,
    /// Elections with each alarm, over all elections.
    pub(super) counts: [usize; Alarm::ALL.len()],
    /// Elections changed since the last settle.
    dirty: HashSet<Key>,
    /// Everything must be redone (a source's staleness changed, or a snapshot came).
    full: bool,
    /// Elections with a change inside the flapping window, whose rate moves with the clock:
    /// the second it next moves (when the oldest change in the window leaves it).
    recent: HashMap<Key, u64>,
    /// The same elections by that second. An election looked at again since has a newer
    /// second in `recent`, and its entry here is passed over.
    due: BTreeMap<u64, Vec<Key>>,
    /// Elections with nothing left in the store, for pruning without walking every election.
    pub(super) empty: HashSet<Key>,
    /// Which sources were stale at the last settle: a change redoes everything.
    stale: Vec<bool>,
    /// The wall-clock second of the last full settle or rate check: rates move once a second.
    pub(super) second: u64,
}

/// What a settle redid, for the views that keep something per election (the TUI's rows).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Settled {
    /// Every election (and any that went).
    All,
    /// These elections, changed or gone.
    Some(Vec<Key>),
}

impl Settled {
    pub fn is_empty(&self) -> bool {
        matches!(self, Settled::Some(keys) if keys.is_empty())
    }
}

impl Triage {
    /// Changes are waiting for a settle.
    pub(super) fn pending(&self) -> bool {
        self.full || !self.dirty.is_empty()
    }

    pub(super) fn touch(&mut self, key: &Key, elections: usize) {
        if self.full {
            return;
        }
        // Past a point one pass over everything is cheaper than finding each (a snapshot).
        if self.dirty.len() > 64 && self.dirty.len() > elections / 4 {
            self.full = true;
            self.dirty.clear();
            return;
        }
        self.dirty.insert(key.clone());
    }

    pub(super) fn invalidate(&mut self) {
        self.full = true;
    }

    pub(super) fn get(&self, key: &Key) -> Option<(Alarms, f64)> {
        self.cached.get(key).copied()
    }
}

/// Whole seconds of `wall`: rates and ages move once a second, so alarms are redone as often.
pub fn second(wall: std::time::SystemTime) -> u64 {
    wall.duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Brings every election's alarms up to date: only the changed ones, or all when a source's
/// staleness changed or most of them changed.
pub(super) fn settle(m: &mut ReadModel) -> Settled {
    let stale = m.stale_sources();
    let t = &m.triage;
    if t.full || t.stale != stale || (t.dirty.len() > 64 && t.dirty.len() > m.elections.len() / 4) {
        return refresh(m, stale);
    }
    let mut t = std::mem::take(&mut m.triage);
    let dirty: Vec<Key> = t.dirty.drain().collect();
    for key in &dirty {
        if let Some((old, _)) = t.cached.remove(key) {
            count(&mut t.counts, old, false);
        }
        t.recent.remove(key);
        t.empty.remove(key);
        if let Some(e) = m.elections.get(key) {
            let (alarms, rate) = compute(m, &mut t, key, e);
            count(&mut t.counts, alarms, true);
            t.cached.insert(key.clone(), (alarms, rate));
        }
    }
    m.triage = t;
    Settled::Some(dirty)
}

/// Redoes every election's alarms and the counts.
fn refresh(m: &mut ReadModel, stale: Vec<bool>) -> Settled {
    let mut t = std::mem::take(&mut m.triage);
    t.cached.clear();
    t.cached.reserve(m.elections.len());
    t.dirty.clear();
    t.recent.clear();
    t.due.clear();
    t.empty.clear();
    t.full = false;
    t.stale = stale;
    t.second = second(m.wall);
    let mut counts = [0usize; Alarm::ALL.len()];
    for (key, e) in &m.elections {
        let (alarms, rate) = compute(m, &mut t, key, e);
        count(&mut counts, alarms, true);
        t.cached.insert(key.clone(), (alarms, rate));
    }
    t.counts = counts;
    m.triage = t;
    Settled::All
}

/// A new second: rates (and so flapping) move, only for elections whose oldest change in
/// the window has just left it; those are redone at the settle. Looking at every election
/// with a change in the window each second (under churn, all of them) was much of serve's
/// CPU (docs/PERFORMANCE.md).
pub(super) fn next_second(m: &mut ReadModel) {
    let mut t = std::mem::take(&mut m.triage);
    t.second = second(m.wall);
    let mut moved = Vec::new();
    while let Some(entry) = t.due.first_entry()
        && *entry.key() <= t.second
    {
        let (at, keys) = entry.remove_entry();
        for key in keys {
            if t.recent.get(&key) != Some(&at) {
                continue;
            }
            let Some(e) = m.elections.get(&key) else {
                t.recent.remove(&key);
                continue;
            };
            let (rate, next) = window(e, m.wall);
            if t.cached.get(&key).is_none_or(|c| c.1 != rate) {
                t.recent.remove(&key);
                moved.push(key);
                continue;
            }
            // Not yet (the second began before the change left): the next one.
            match next {
                Some(next) => t.follow(key, next.max(t.second + 1)),
                None => {
                    t.recent.remove(&key);
                }
            }
        }
    }
    t.dirty.extend(moved);
    m.triage = t;
}

impl Triage {
    /// Looks at election `key`'s rate again in second `at`. Already due then (a change that
    /// left its oldest in place): its entry in `due` stands, and is not made twice.
    fn follow(&mut self, key: Key, at: u64) {
        if self.recent.insert(key.clone(), at) != Some(at) {
            self.due.entry(at).or_default().push(key);
        }
    }
}

/// `e`'s leader changes a minute, and the second in which that next moves: when its oldest
/// change inside the flapping window leaves it (`None` with none inside). One walk of the
/// history for both.
fn window(e: &Election, wall: SystemTime) -> (f64, Option<u64>) {
    let (rate, oldest) = alarm::rate_and_oldest(&e.history, wall, alarm::FLAP_WINDOW);
    (rate, oldest.map(|at| second(at + alarm::FLAP_WINDOW)))
}

fn count(counts: &mut [usize; Alarm::ALL.len()], alarms: Alarms, add: bool) {
    for a in alarms.iter() {
        let n = &mut counts[a as usize];
        *n = if add { *n + 1 } else { n.saturating_sub(1) };
    }
}

fn compute(m: &ReadModel, t: &mut Triage, key: &Key, e: &Election) -> (Alarms, f64) {
    let (rate, next) = window(e, m.wall);
    if let Some(at) = next {
        t.follow(key.clone(), at);
    }
    if e.is_empty() {
        t.empty.insert(key.clone());
    }
    let cx = alarm::Context {
        stale: t.stale.get(key.0).copied().unwrap_or(false),
        split_brain: m.split_brain.contains(key),
        rate,
        flap_per_min: m.flap_per_min,
        idle_is_normal: m.idle_is_normal(key.0),
    };
    (alarm::of(e, &cx), rate)
}
