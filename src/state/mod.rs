//! The read model: everything that is true about the stores (sources, elections, their
//! alarms, the timeline of changes, beliefs known from outside the store), changed only by
//! [`ReadModel::apply`] with a store's [`SourceEvent`] and by the clock ([`ReadModel::tick`]).
//!
//! It knows no terminal, key or dialog. The dashboard keeps its interaction state beside it;
//! `status`, `watch`, the admin verbs and a headless observer read it alone. Alarms are worked
//! out here, once ([`triage`]), so every view shows the same ones.

pub(crate) mod alarm;
pub(crate) mod log;
pub mod marks;
mod source;
mod triage;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant, SystemTime};

pub use source::{Link, STALE_MARGIN, SourceView};
pub use triage::{Settled, second};

use crate::model::{ConnState, Election, Event, EventKind, SourceEvent, SourceId, SourceInfo};
use alarm::{Alarm, Alarms};

/// An election's identity: its source and its name there.
pub type Key = (SourceId, String);

/// Maps and sets of every election, looked up at every change: a fast hash rather than
/// SipHash, whose `write` was a visible part of `status` over many elections.
pub(crate) type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
pub(crate) type HashSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;

#[derive(Clone, Debug)]
pub struct ReadModel {
    pub sources: Vec<SourceView>,
    pub elections: BTreeMap<Key, Election>,
    /// Every change and action outcome, newest last.
    pub events: log::EventLog,
    /// Elections known to have two leaders at once, known from outside the store (the
    /// demo's nodes say what they believe).
    pub split_brain: BTreeSet<Key>,
    /// How long an election with nothing left in the store stays listed.
    pub retention: Duration,
    /// Flapping above this many leader changes a minute.
    pub flap_per_min: u32,
    /// The clock the model was last brought to: countdowns, staleness and rates read it.
    pub now: Instant,
    pub wall: SystemTime,
    triage: triage::Triage,
}

/// What an event changed, for a view to decide whether to redraw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Applied {
    /// Nothing (an unknown source, a revision already known).
    Nothing,
    /// A source's state: connection, notice, members, progress.
    Source,
    /// The connection changed: staleness, and so every alarm, may have.
    Conn,
    /// Only the store's revision moved.
    Revision,
    /// Elections changed; `notice_cleared`: the source's "nothing here" notice went with them.
    Elections { notice_cleared: bool },
    /// An event joined the timeline; `compacted`: it is also the source's notice.
    Event { compacted: bool },
    /// The source answered; `thawed`: it had been stale.
    Contact { thawed: bool },
}

impl ReadModel {
    pub fn new(sources: Vec<SourceInfo>, now: Instant, wall: SystemTime) -> Self {
        ReadModel {
            sources: sources.into_iter().map(SourceView::new).collect(),
            elections: BTreeMap::new(),
            events: log::EventLog::default(),
            split_brain: BTreeSet::new(),
            retention: Duration::from_secs(600),
            flap_per_min: 4,
            now,
            wall,
            triage: triage::Triage::default(),
        }
    }

    /// Applies one event from a store.
    pub fn apply(&mut self, ev: SourceEvent) -> Applied {
        match ev {
            SourceEvent::Conn { source, state } => {
                // The timeline keeps outages and recoveries; the first connection is where
                // it starts, not news (`watch` still says it).
                let first = self
                    .sources
                    .get(source)
                    .is_some_and(|s| s.link == Link::Unknown);
                if let Some(marker) = self.conn_marker(source, &state)
                    && !(first && marker.kind == EventKind::Connected)
                {
                    self.on_happened(marker);
                }
                if let Some(s) = self.sources.get_mut(source) {
                    s.link = s.link.next(&state).0;
                    s.marks.on_conn(&state);
                    // Trying again while down is no news: the source stays down, with what
                    // took it down, until it is connected (not fresh for a moment between).
                    let retrying = matches!(
                        (&s.conn, &state),
                        (ConnState::Down { .. }, ConnState::Connecting)
                    );
                    if !retrying {
                        s.conn = state;
                    }
                    s.loading = None;
                }
                self.triage.invalidate();
                Applied::Conn
            }
            SourceEvent::Revision { source, revision } => {
                let Some(s) = self.sources.get_mut(source) else {
                    return Applied::Nothing;
                };
                if s.revision == Some(revision) {
                    return Applied::Nothing;
                }
                s.revision = Some(revision);
                Applied::Revision
            }
            SourceEvent::Elections { source, elections } => self.on_elections(source, elections),
            SourceEvent::Happened(event) => self.on_happened(event),
            SourceEvent::Contact {
                source,
                at,
                wall,
                next_within,
            } => self.on_contact(source, (at, wall), next_within),
            other => self.on_source(other),
        }
    }

    /// What readers hear of a connection state before it is applied: `connected` or
    /// `disconnected` when it changes what they were last told, once per outage (the one
    /// decision behind the dashboard's log, `watch` and `serve`).
    pub fn conn_marker(&self, source: SourceId, state: &ConnState) -> Option<Event> {
        let s = self.sources.get(source)?;
        let kind = s.link.next(state).1?;
        let detail = match state {
            ConnState::Down { error, .. } => Some(error.clone()),
            _ => None,
        };
        Some(Event::about_source(
            s.info.name.clone(),
            kind,
            s.revision,
            detail,
        ))
    }

    /// The sources that went stale or fresh again since readers were last told, as the
    /// events `watch` and `serve` tell: once per change, each source on its own.
    pub fn staleness_markers(&mut self) -> Vec<Event> {
        let now = self.now;
        let mut out = Vec::new();
        for s in &mut self.sources {
            let stale = s.stale_for(now);
            if stale.is_some() == s.told_stale {
                continue;
            }
            s.told_stale = stale.is_some();
            let kind = if stale.is_some() {
                EventKind::Stale
            } else {
                EventKind::Fresh
            };
            let detail = match (stale, s.last_contact) {
                (Some(age), Some((_, wall))) => Some(format!(
                    "no contact for {}s; state as of {}",
                    age.as_secs(),
                    crate::model::time::rfc3339(wall)
                )),
                _ => None,
            };
            out.push(Event::about_source(
                s.info.name.clone(),
                kind,
                s.revision,
                detail,
            ));
        }
        out
    }

    /// An event that sets only what is known of its source: no election, no alarm moves.
    fn on_source(&mut self, ev: SourceEvent) -> Applied {
        let id = match &ev {
            SourceEvent::Info(info) => info.id,
            SourceEvent::Notice { source, .. }
            | SourceEvent::Loading { source, .. }
            | SourceEvent::Synced { source }
            | SourceEvent::Session { source, .. }
            | SourceEvent::PastMarks { source, .. }
            | SourceEvent::Members { source, .. } => *source,
            _ => return Applied::Nothing,
        };
        let Some(s) = self.sources.get_mut(id) else {
            return Applied::Nothing;
        };
        match ev {
            SourceEvent::Info(info) => s.info = info,
            // An empty notice withdraws the last one.
            SourceEvent::Notice { text, .. } => s.notice = (!text.is_empty()).then_some(text),
            SourceEvent::Loading {
                read, total, what, ..
            } => s.loading = Some((read, total, what)),
            SourceEvent::Synced { .. } => s.synced = true,
            SourceEvent::Session {
                id,
                timeout,
                history_since,
                gaps,
                ..
            } => {
                s.session = Some((id, timeout));
                // The first connection: a new session later does not forget what the one
                // before saw.
                if s.history_since.is_none() {
                    s.history_gaps = gaps;
                }
                s.history_since.get_or_insert(history_since);
            }
            SourceEvent::Members { members, .. } => s.members = members,
            SourceEvent::PastMarks { marks, .. } => {
                s.marks.restore(&marks);
                s.history_gaps.extend(marks.unwatched);
                s.history_gaps.sort_by_key(|g| g.from);
                s.history_gaps.dedup();
            }
            _ => return Applied::Nothing,
        }
        Applied::Source
    }

    /// Elections as the source now has them: each is marked for the next settle.
    fn on_elections(&mut self, source: SourceId, elections: Vec<Election>) -> Applied {
        let mut notice_cleared = false;
        if let Some(s) = self.sources.get_mut(source)
            && !elections.is_empty()
            && matches!(s.info.notice, Some(crate::model::SourceNotice::Empty(_)))
        {
            s.info.notice = None;
            notice_cleared = true;
        }
        if let Some(s) = self.sources.get_mut(source) {
            for e in &elections {
                s.marks.on_election(e, self.wall);
            }
        }
        if elections.len() > self.elections.len() {
            // A snapshot: built as one tree and merged in, rather than inserted one by one,
            // which moved every election several times at 100,000 of them.
            let mut batch: BTreeMap<_, _> = elections
                .into_iter()
                .map(|e| ((source, e.name.clone()), e))
                .collect();
            for key in batch.keys() {
                self.triage.touch(key, self.elections.len());
            }
            self.elections.append(&mut batch);
        } else {
            for e in elections {
                let key = (source, e.name.clone());
                self.triage.touch(&key, self.elections.len());
                self.elections.insert(key, e);
            }
        }
        Applied::Elections { notice_cleared }
    }

    /// The source answered. Only a change of staleness changes what is shown: its rows thaw.
    fn on_contact(
        &mut self,
        source: SourceId,
        at: (Instant, SystemTime),
        next_within: Duration,
    ) -> Applied {
        let now = self.now;
        let Some(s) = self.sources.get_mut(source) else {
            return Applied::Nothing;
        };
        let thawed = s.stale_for(now).is_some();
        s.marks.on_contact(s.last_contact, s.contact_every, at);
        s.last_contact = Some(at);
        s.contact_every = next_within;
        if thawed {
            self.triage.invalidate();
        }
        Applied::Contact { thawed }
    }

    /// A store's event: into the timeline under the source's short name; a compacted
    /// history also becomes the source's notice.
    fn on_happened(&mut self, event: crate::model::Event) -> Applied {
        let short = self
            .sources
            .iter()
            .find(|s| s.info.name == event.source)
            .map(|s| s.info.short.clone())
            .unwrap_or_else(|| event.source.clone());
        self.events.event(&event, &short);
        if event.kind != EventKind::HistoryCompacted {
            return Applied::Event { compacted: false };
        }
        if let Some(s) = self
            .sources
            .iter_mut()
            .find(|s| s.info.name == event.source)
        {
            s.notice = event.detail;
        }
        Applied::Event { compacted: true }
    }

    /// Time passed: rates move on the second, and elections past their retention go.
    pub fn tick(&mut self, now: Instant, wall: SystemTime) {
        self.now = now;
        self.wall = wall;
        if second(wall) != self.triage.second {
            triage::next_second(self);
        }
    }

    /// Works out the alarms of what changed since the last settle; says what it redid.
    pub fn settle(&mut self) -> Settled {
        triage::settle(self)
    }

    /// Changes are waiting for a settle.
    pub fn pending(&self) -> bool {
        self.triage.pending()
    }

    /// Every election must be looked at again (what its alarms depend on moved).
    pub fn invalidate(&mut self) {
        self.triage.invalidate();
    }

    /// Marks an election changed (or gone) for the next settle.
    pub fn touch(&mut self, key: &Key) {
        self.triage.touch(key, self.elections.len());
    }

    /// Sets the elections known to have two leaders; returns whether that changed anything.
    pub fn set_split_brain(&mut self, split: BTreeSet<Key>) -> bool {
        if split == self.split_brain {
            return false;
        }
        self.split_brain = split;
        self.triage.invalidate();
        true
    }

    /// Drops elections with nothing left in the store whose last change is older than the
    /// retention; until then they stay listed as "no leader since", with their history.
    /// Only the elections known to be empty are looked at. Returns whether any went.
    pub fn prune(&mut self) -> bool {
        let (wall, keep) = (self.wall, self.retention);
        let expired: Vec<Key> = self
            .triage
            .empty
            .iter()
            .filter(|k| {
                self.elections.get(*k).is_some_and(|e| {
                    e.is_empty()
                        && e.last_change()
                            .and_then(|h| h.at)
                            .is_some_and(|at| wall.duration_since(at).unwrap_or_default() > keep)
                })
            })
            .cloned()
            .collect();
        for key in &expired {
            self.elections.remove(key);
            self.touch(key);
        }
        !expired.is_empty()
    }

    /// An election's alarms and leader changes a minute, as of the last settle.
    pub fn alarms(&self, key: &Key) -> Option<(Alarms, f64)> {
        self.triage.get(key)
    }

    /// Elections with each alarm, as of the last settle.
    pub fn alarm_counts(&self) -> [usize; Alarm::ALL.len()] {
        self.triage.counts
    }

    /// Whether each source is stale now.
    pub fn stale_sources(&self) -> Vec<bool> {
        self.sources
            .iter()
            .map(|s| s.stale_for(self.now).is_some())
            .collect()
    }

    /// Every source has finished its snapshot and replay.
    pub fn all_synced(&self) -> bool {
        self.sources.iter().all(|s| s.synced)
    }

    /// A connected source is still replaying its history (a down one is not replaying).
    pub fn replaying(&self) -> bool {
        self.sources
            .iter()
            .any(|s| s.conn == ConnState::Connected && !s.synced)
    }

    /// The source is stale: its age without contact.
    pub fn stale_for(&self, source: SourceId) -> Option<Duration> {
        self.sources.get(source).and_then(|s| s.stale_for(self.now))
    }

    /// An election of `source` without a leader is at rest, not in trouble (a lock between
    /// runs): no alarm.
    pub fn idle_is_normal(&self, source: SourceId) -> bool {
        self.sources
            .get(source)
            .is_some_and(|s| s.info.idle_is_normal)
    }

    /// The instant an election of `source` is shown at: now, or the last contact when stale.
    pub fn as_of(&self, source: SourceId) -> Instant {
        self.sources
            .get(source)
            .map(|s| s.as_of(self.now))
            .unwrap_or(self.now)
    }

    /// Some source is down: its retry timer moves with the clock.
    pub fn any_down(&self) -> bool {
        self.sources
            .iter()
            .any(|s| matches!(s.conn, ConnState::Down { .. }))
    }
}

/// One election as the plain views list it, with its alarms.
#[derive(Clone, Copy, Debug)]
pub struct Listed<'a> {
    pub key: &'a Key,
    pub election: &'a Election,
    pub alarms: Alarms,
    /// Leader changes a minute over the flapping window.
    pub rate: f64,
}

impl ReadModel {
    /// Every election with its alarms as of the last settle, worst first: the triage order
    /// the dashboard opens in and `status` prints.
    pub fn triage_order(&self) -> Vec<Listed<'_>> {
        let mut all: Vec<Listed<'_>> = self
            .elections
            .iter()
            .map(|(key, election)| {
                let (alarms, rate) = self.alarms(key).unwrap_or_default();
                Listed {
                    key,
                    election,
                    alarms,
                    rate,
                }
            })
            .collect();
        // Keys are unique, so an unstable sort gives the one order.
        all.sort_unstable_by(|a, b| {
            alarm::triage_rank(a.alarms)
                .cmp(&alarm::triage_rank(b.alarms))
                .then_with(|| a.key.1.cmp(&b.key.1))
                .then_with(|| a.key.0.cmp(&b.key.0))
        });
        all
    }
}

#[cfg(test)]
mod tests;
