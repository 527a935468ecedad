//! What a source's events tell, in the history journal, so a dashboard or `history` started
//! later shows what an earlier electop saw: each live leader change (of every store, from
//! its event), each outage of the source (a record when it went down, another with its end)
//! and each deposed holder (when it began, when it ended), and the stretches no electop
//! watched, from the runs' `watching` and `stopped` records.
//!
//! What is marked is decided once, by the read model's own rules ([`Marks`]): a
//! [`Recorder`] applies each event a source's task sends, as the read model will, on its
//! way to the runtime ([`tap`]), and appends what became a record to the journal the task
//! named ([`SourceEvent::Journal`]; none: nothing recorded). From that journal it reads back
//! what earlier runs marked, and sends it on ahead of the source's events as
//! [`SourceEvent::PastMarks`].

use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::mpsc;

use super::journal::{Bound, Entry, History, Journal};
use crate::backend::change::entry_of;
use crate::model::marks::{Deposed, Outage, PastMarks};
use crate::model::{
    ConnState, Event, EventKind, HistoryEntry, HistoryGap, SourceEvent, SourceInfo,
};
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

/// One source's marks and leader changes as its events go by, and the journal they are
/// appended to: this run's, from its `watching` record to its `stopped` one (written when
/// the recorder is dropped: a clean stop; a killed electop says nothing).
pub(crate) struct Recorder {
    history: History,
    /// What the journal is kept within as this run starts recording it; `None`: left as it
    /// is (a command that answers once and ends, which writes little, leaves that to the
    /// runs that watch).
    trim: Option<Bound>,
    /// The journal the source's task named, if this run records there.
    journal: Option<Journal>,
    /// The journal the source's task named, recorded there or not.
    named: Option<Journal>,
    marks: Marks,
    last_contact: Option<(Instant, SystemTime)>,
    every: Duration,
    /// The record of the outage under way was written (it went down).
    down_said: bool,
    /// When an `alive` record was last written.
    alive: Option<Instant>,
    /// The change an admin action relabelled, by election, until the event that tells it.
    relabelled: HashMap<String, HistoryEntry>,
}

impl Recorder {
    pub(crate) fn new(history: History, trim: Option<Bound>) -> Recorder {
        Recorder {
            history,
            trim,
            journal: None,
            named: None,
            marks: Marks::default(),
            last_contact: None,
            every: Duration::from_millis(500),
            down_said: false,
            alive: None,
            relabelled: HashMap::new(),
        }
    }

    /// What earlier runs marked in the journal named (`past`, or read from it here: etcd's,
    /// whose own replay says what no electop watched); from `record` on (this run's start,
    /// as the source's task dated it) this run is recorded there.
    pub(crate) fn journal(
        &mut self,
        key: &str,
        record: Option<SystemTime>,
        past: Option<PastMarks>,
    ) -> PastMarks {
        let j = self.history.journal(key);
        let past = past.unwrap_or_else(|| {
            // Another electop watching now: the stretch up to now was watched.
            let now = record.unwrap_or_else(SystemTime::now);
            past_outages(&j.load_marks(), (!j.others_watching()).then_some(now))
        });
        if let Some(was) = self.journal.take() {
            was.append(&[Entry::Stopped(SystemTime::now())]);
        }
        if let Some(start) = record {
            if let Some(bound) = self.trim {
                j.trim(bound);
            }
            j.append(&[Entry::Watching(start)]);
            self.journal = Some(j.clone());
        }
        self.named = Some(j);
        past
    }

    /// Applies `ev` as the read model will; the marks and leader changes it made, as journal
    /// records.
    pub(crate) fn see(&mut self, ev: &SourceEvent) -> Vec<Entry> {
        let mut out = Vec::new();
        match ev {
            SourceEvent::Happened(ev) => out.extend(self.change(ev)),
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
                for e in elections {
                    if let Some(h) = e.relabelled_entry() {
                        self.relabelled.insert(e.name.clone(), h.clone());
                    }
                }
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

    /// The leader change `ev` tells, as a record: a live one, or one an admin action
    /// relabelled (the later record wins when it is read back).
    fn change(&mut self, ev: &Event) -> Option<Entry> {
        let (election, entry) = match ev.kind {
            EventKind::Attributed => {
                let name = ev.election.as_deref()?;
                (name.to_string(), self.relabelled.remove(name)?)
            }
            _ => entry_of(ev).map(|(name, entry)| (name.to_string(), entry))?,
        };
        Some(Entry::Change { election, entry })
    }

    /// Appends `entries` to the source's journal, if this run records it.
    fn record(&self, entries: &[Entry]) {
        if let Some(j) = self.journal.as_ref().filter(|_| !entries.is_empty()) {
            j.append(entries);
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        if let Some(j) = &self.journal {
            j.append(&[Entry::Stopped(SystemTime::now())]);
        }
    }
}

/// The sender a source's task is given: each event goes through a [`Recorder`] (its marks
/// and changes journaled, the past marks sent first) on to `events`, in order. The task,
/// spawned on `tasks` so a clean stop waits for its `stopped` record, ends when the
/// source's task drops its sender, or nobody listens on `events`.
pub(crate) fn tap(
    info: &SourceInfo,
    events: mpsc::Sender<SourceEvent>,
    opts: &crate::backend::BackendOptions,
    tasks: &mut tokio::task::JoinSet<()>,
) -> mpsc::Sender<SourceEvent> {
    let (tx, mut rx) = mpsc::channel::<SourceEvent>(1024);
    let history = opts.history.clone();
    let trim = (!opts.one_shot).then(|| super::history::bound(&history, opts.history_limit));
    let mut r = Recorder::new(history, trim);
    let mut remembered = super::remembered::Remembered::new(info, opts);
    let source = info.id;
    tasks.spawn(async move {
        while let Some(ev) = rx.recv().await {
            remembered.see(&ev);
            if let SourceEvent::Synced { .. } = ev {
                for held in remembered.at_first_sync(r.named.as_ref()) {
                    let made = r.see(&held);
                    r.record(&made);
                    if events.send(held).await.is_err() {
                        return;
                    }
                }
            }
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
