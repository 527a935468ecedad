//! Every election's alarms, kept current incrementally: a change costs the changed elections,
//! not all of them, which matters at 100,000 elections and a thousand changes a second.
//! This is the one place alarms are worked out; every view reads them from here.

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
    /// Elections with a change inside the flapping window: their rate moves with the clock.
    recent: HashSet<Key>,
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

/// A new second: rates (and so flapping) move, only for elections with changes inside the
/// window, and only when a change has just left it; those are redone at the settle.
pub(super) fn next_second(m: &mut ReadModel) {
    let mut t = std::mem::take(&mut m.triage);
    t.second = second(m.wall);
    let mut moved = Vec::new();
    t.recent.retain(|key| {
        let Some(e) = m.elections.get(key) else {
            return false;
        };
        let rate = alarm::rate_per_min(&e.history, m.wall, alarm::FLAP_WINDOW);
        if t.cached.get(key).is_some_and(|c| c.1 == rate) {
            return in_window(e, m.wall);
        }
        moved.push(key.clone());
        false
    });
    t.dirty.extend(moved);
    m.triage = t;
}

/// Whether the last timed change is inside the flapping window, so the rate may still move.
fn in_window(e: &Election, wall: std::time::SystemTime) -> bool {
    e.last_change()
        .and_then(|h| h.at)
        .is_some_and(|at| wall.duration_since(at).unwrap_or_default() <= alarm::FLAP_WINDOW)
}

fn count(counts: &mut [usize; Alarm::ALL.len()], alarms: Alarms, add: bool) {
    for a in alarms.iter() {
        let n = &mut counts[a as usize];
        *n = if add { *n + 1 } else { n.saturating_sub(1) };
    }
}

fn compute(m: &ReadModel, t: &mut Triage, key: &Key, e: &Election) -> (Alarms, f64) {
    let rate = alarm::rate_per_min(&e.history, m.wall, alarm::FLAP_WINDOW);
    if in_window(e, m.wall) || rate > 0.0 {
        t.recent.insert(key.clone());
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
