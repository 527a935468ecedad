//! The timeline's marks in the history journal, so a dashboard or `history` started later
//! shows what an earlier electop saw: each outage of the source (a record when it went down,
//! another with its end) and each deposed holder (when it began, when it ended), and the
//! stretches no electop watched, from the runs' `watching` and `stopped` records.
//!
//! What is marked is decided once, by the read model's own rules ([`Marks`]): a
//! [`Recorder`] applies each event a source's task sends, as the read model will, on its
//! way to the runtime ([`tap`]), and appends what became a mark to the journal the task
//! named ([`SourceEvent::Journal`]; none: nothing recorded). From that journal it reads back
//! what earlier runs marked, and sends it on ahead of the source's events as
//! [`SourceEvent::PastMarks`].

use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::mpsc;

use super::journal::{Entry, History, Journal};
use crate::model::marks::{Deposed, Outage, PastMarks};
use crate::model::{ConnState, HistoryGap, SourceEvent, SourceInfo};
use crate::state::marks::Marks;

/// How often a run that hears from its source says so in the journal (`alive`, which
/// replaces the run's last): a run killed is known to have watched up to then, and another
/// run's records after it count from there (`journal::runs`).
pub(crate) const ALIVE_EVERY: Duration = Duration::from_secs(1);

/// What `entries` (a journal's records, in the file's order) say of the marks. `watching`:
/// when this run started watching, if nobody else watches now (this run took the writer's
/// turn, or it is free): the stretch from the last record to it was not watched.
pub(crate) fn past_marks(entries: &[Entry], watching: Option<SystemTime>) -> PastMarks {
    let mut p = PastMarks::default();
    let mut outages: Vec<(SystemTime, Option<SystemTime>, bool)> = Vec::new();
    let mut deposed: HashMap<(&str, &str, SystemTime), usize> = HashMap::new();
    let mut last: Option<&Entry> = None;
    let run_end = |last: Option<&Entry>, to: SystemTime, p: &mut PastMarks| {
        if let Some(prev) = last
            && let Some(from) = prev.at()
            && from < to
            && !matches!(prev, Entry::Watching(_))
        {
            p.unwatched.push(HistoryGap {
                from,
                to,
                stop_recorded: matches!(prev, Entry::Stopped(_)),
            });
        }
    };
    for r in entries {
        match r {
            Entry::Watching(to) => {
                run_end(last, *to, &mut p);
                close_open(&mut outages, &mut p.deposed, last.and_then(Entry::at));
            }
            Entry::Outage { from, to, down } => match outages.iter_mut().find(|o| o.0 == *from) {
                Some(o) => *o = (*from, o.1.or(*to), *down || o.2),
                None => outages.push((*from, *to, *down)),
            },
            Entry::Deposed(d) => match deposed.get(&(&d.election, &d.holder, d.from)) {
                Some(&i) => p.deposed[i].to = p.deposed[i].to.or(d.to),
                None => {
                    deposed.insert((&d.election, &d.holder, d.from), p.deposed.len());
                    p.deposed.push(d.clone());
                }
            },
            _ => {}
        }
        last = Some(r);
    }
    if let Some(now) = watching {
        run_end(last, now, &mut p);
        close_open(&mut outages, &mut p.deposed, last.and_then(Entry::at));
    }
    p.outages = outages
        .into_iter()
        .filter_map(|(from, to, down)| Some((from, to?, down)))
        .filter(|(from, to, _)| to > from)
        .map(|(from, to, down)| Outage { from, to, down })
        .collect();
    p.outages.sort_by_key(|o| o.from);
    p.deposed.sort_by_key(|d| d.from);
    p
}

/// What `entries` say of the outages and deposed holders alone, for a store that tells the
/// stretches no electop watched its own way: etcd keeps the changes between two runs (its
/// revisions are replayed), ZooKeeper's record says them ([`crate::backend::zookeeper`]).
pub(crate) fn past_outages(entries: &[Entry], watching: Option<SystemTime>) -> PastMarks {
    PastMarks {
        unwatched: Vec::new(),
        ..past_marks(entries, watching)
    }
}

/// The outages and deposed stretches still open when a run ended (it was killed, or
/// stopped, in the middle of them) end at its last record, `end`: after it, nothing was
/// watched.
fn close_open(
    outages: &mut [(SystemTime, Option<SystemTime>, bool)],
    deposed: &mut [Deposed],
    end: Option<SystemTime>,
) {
    let Some(end) = end else { return };
    for o in outages.iter_mut().filter(|o| o.1.is_none()) {
        o.1 = Some(end.max(o.0));
    }
    for d in deposed.iter_mut().filter(|d| d.to.is_none()) {
        d.to = Some(end.max(d.from));
    }
}

/// One source's marks as its events go by, and the journal they are appended to.
pub(crate) struct Recorder {
    history: History,
    /// The journal the source's task named, if this run records its marks there.
    journal: Option<Journal>,
    marks: Marks,
    last_contact: Option<(Instant, SystemTime)>,
    every: Duration,
    /// The record of the outage under way was written (it went down).
    down_said: bool,
    /// When an `alive` record was last written.
    alive: Option<Instant>,
}

impl Recorder {
    pub(crate) fn new(history: History) -> Recorder {
        Recorder {
            history,
            journal: None,
            marks: Marks::default(),
            last_contact: None,
            every: Duration::from_millis(500),
            down_said: false,
            alive: None,
        }
    }

    /// What earlier runs marked in the journal named (`past`, or read from it here: etcd's,
    /// whose own replay says what no electop watched); from now on this run's marks are
    /// recorded there (if `record`).
    pub(crate) fn journal(
        &mut self,
        key: &str,
        record: bool,
        past: Option<PastMarks>,
    ) -> PastMarks {
        let j = self.history.journal(key);
        let past = past.unwrap_or_else(|| {
            // Another electop watching now: the stretch up to now was watched.
            let now = (!j.others_watching()).then(SystemTime::now);
            past_outages(&j.load_marks(), now)
        });
        self.journal = record.then_some(j);
        past
    }

    /// Applies `ev` as the read model will; the marks it made, as journal records.
    pub(crate) fn see(&mut self, ev: &SourceEvent) -> Vec<Entry> {
        let mut out = Vec::new();
        match ev {
            SourceEvent::Conn { state, .. } => {
                self.marks.on_conn(state);
                if let (ConnState::Down { .. }, false, Some((_, from))) =
                    (state, self.down_said, self.last_contact)
                {
                    self.down_said = true;
                    out.push(Entry::Outage {
                        from,
                        to: None,
                        down: true,
                    });
                }
            }
            SourceEvent::Contact {
                at,
                wall,
                next_within,
                ..
            } => {
                let before = self.marks.outages.back().copied();
                self.marks
                    .on_contact(self.last_contact, self.every, (*at, *wall));
                (self.last_contact, self.every) = (Some((*at, *wall)), *next_within);
                self.down_said = false;
                if self
                    .alive
                    .is_none_or(|a| at.saturating_duration_since(a) >= ALIVE_EVERY)
                {
                    self.alive = Some(*at);
                    out.push(Entry::Alive(*wall));
                }
                if let Some(o) = self.marks.outages.back().filter(|o| Some(**o) != before) {
                    out.push(Entry::Outage {
                        from: o.from,
                        to: Some(o.to),
                        down: o.down,
                    });
                }
            }
            SourceEvent::Elections { elections, .. } => {
                let open = self.marks.deposed.iter().any(|d| d.to.is_none());
                if !open && elections.iter().all(|e| e.deposed.is_none()) {
                    return out;
                }
                let before = self.marks.deposed.clone();
                let wall = SystemTime::now();
                for e in elections {
                    self.marks.on_election(e, wall);
                }
                for d in &self.marks.deposed {
                    if !before.contains(d) {
                        out.push(Entry::Deposed(d.clone()));
                    }
                }
            }
            _ => {}
        }
        out
    }

    /// Appends `entries` to the source's journal, if this run records it.
    fn record(&self, entries: &[Entry]) {
        if let Some(j) = self.journal.as_ref().filter(|_| !entries.is_empty()) {
            j.append(entries);
        }
    }
}

/// The sender a source's task is given: each event goes through a [`Recorder`] (its marks
/// journaled, the past ones sent first) on to `events`, in order. The task ends when the
/// source's task drops its sender, or nobody listens on `events`.
pub(crate) fn tap(
    info: &SourceInfo,
    events: mpsc::Sender<SourceEvent>,
    history: History,
) -> mpsc::Sender<SourceEvent> {
    let (tx, mut rx) = mpsc::channel::<SourceEvent>(1024);
    let mut r = Recorder::new(history);
    let source = info.id;
    tokio::spawn(async move {
        while let Some(ev) = rx.recv().await {
            if let SourceEvent::Journal {
                key, record, past, ..
            } = ev
            {
                let marks = r.journal(&key, record, past);
                if !marks.is_empty()
                    && events
                        .send(SourceEvent::PastMarks { source, marks })
                        .await
                        .is_err()
                {
                    return;
                }
                continue;
            }
            let made = r.see(&ev);
            r.record(&made);
            if events.send(ev).await.is_err() {
                return;
            }
        }
    });
    tx
}

#[cfg(test)]
mod tests;
