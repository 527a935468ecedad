//! The timeline's marks in the history journal, so a dashboard or `history` started later
//! shows what an earlier electop saw: each outage of the source (a line when it went down,
//! another with its end) and each deposed holder (when it began, when it ended), and the
//! stretches no electop watched, from the runs' `watching` and `stopped` lines.
//!
//! What is marked is decided once, by the read model's own rules ([`Marks`]): a
//! [`Recorder`] applies each event a source's task sends, as the read model will, on its
//! way to the runtime ([`tap`]), and appends what became a mark to the journal that task
//! opened (found by its path; none: nothing recorded, as for `history ELECTION`). At a
//! run's start the journal's task hands what it read back ([`stash`]); the tap sends it
//! on, ahead of the source's events, as [`SourceEvent::PastMarks`].
//!
//! Which journal a source's task opened is said by the task ([`opened`]): SQL, session
//! locks and Redis at `<data dir>/history/<source>.jsonl` (also the fallback), etcd at a
//! path named by the cluster's id, known only once it has connected, ZooKeeper beside the
//! audit log by connect string and prefix.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::mpsc;

use super::journal::{Batched, Entry};
use crate::model::marks::{Deposed, Outage, PastMarks};
use crate::model::{ConnState, HistoryGap, SourceEvent, SourceInfo};
use crate::state::marks::Marks;

/// How often a run that hears from its source says so in the journal (`alive`): a run
/// killed (no `stopped` line) is known to have watched up to a minute before it died.
pub(crate) const ALIVE_EVERY: Duration = Duration::from_secs(60);

/// What each journal's task read back at its start, until the tap takes it.
static PAST: Mutex<Vec<(PathBuf, PastMarks)>> = Mutex::new(Vec::new());

/// Keeps what the journal at `path` says of the marks for the source's tap to send on.
pub(crate) fn stash(path: &Path, marks: PastMarks) {
    let mut past = PAST.lock().unwrap_or_else(|p| p.into_inner());
    past.retain(|(p, _)| p != path);
    past.push((path.to_path_buf(), marks));
}

/// The journal each source's task opened, by source name (see [`opened`]).
static JOURNALS: Mutex<Vec<(String, PathBuf)>> = Mutex::new(Vec::new());

/// Says that the task of the source named `source` opened its journal at `path`, for the
/// source's [`Recorder`] to find it there. True the first time this process opens it (a
/// task that opens it again, on another member, has nothing more to read back).
pub(crate) fn opened(source: &str, path: &Path) -> bool {
    let mut j = JOURNALS.lock().unwrap_or_else(|p| p.into_inner());
    match j.iter_mut().find(|(s, _)| s == source) {
        Some((_, p)) if p == path => false,
        Some((_, p)) => {
            *p = path.to_path_buf();
            true
        }
        None => {
            j.push((source.to_string(), path.to_path_buf()));
            true
        }
    }
}

/// The journal the source named `source` has: the one its task opened, else the default.
pub(crate) fn journal_of(source: &str) -> Option<PathBuf> {
    let j = JOURNALS.lock().unwrap_or_else(|p| p.into_inner());
    match j.iter().find(|(s, _)| s == source) {
        Some((_, p)) => Some(p.clone()),
        None => super::history::default_path(source),
    }
}

fn take_past(path: &Path) -> Option<PastMarks> {
    let mut past = PAST.lock().unwrap_or_else(|p| p.into_inner());
    let i = past.iter().position(|(p, _)| p == path)?;
    Some(past.swap_remove(i).1)
}

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
    /// The source's name: its journal is the one its task opened ([`journal_of`]).
    name: String,
    marks: Marks,
    last_contact: Option<(Instant, SystemTime)>,
    every: Duration,
    /// The line of the outage under way was written (it went down).
    down_said: bool,
    /// The past marks were sent on (or the source synced without any).
    past_done: bool,
    /// When an `alive` line was last written.
    alive: Option<Instant>,
}

impl Recorder {
    pub(crate) fn new(info: &SourceInfo) -> Recorder {
        Recorder {
            name: info.name.clone(),
            marks: Marks::default(),
            last_contact: None,
            every: Duration::from_millis(500),
            down_said: false,
            past_done: false,
            alive: None,
        }
    }

    /// The past marks the journal's task read back, once, before the source's events.
    pub(crate) fn past(&mut self, ev: &SourceEvent) -> Option<PastMarks> {
        if self.past_done {
            return None;
        }
        let found = journal_of(&self.name).as_deref().and_then(take_past);
        if found.is_some() || matches!(ev, SourceEvent::Synced { .. }) {
            self.past_done = true;
        }
        found.filter(|p| !p.is_empty())
    }

    /// Applies `ev` as the read model will; the marks it made, as journal records.
    pub(crate) fn see(&mut self, ev: &SourceEvent) -> Vec<Entry> {
        let mut out = Vec::new();
        match ev {
            SourceEvent::Info(info) => self.name.clone_from(&info.name),
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

    /// Appends `entries` to the source's journal if this process has it open (and writes
    /// it: another electop's turn records its own marks).
    fn record(&self, entries: &[Entry]) {
        if entries.is_empty() {
            return;
        }
        let Some(j) = journal_of(&self.name).as_deref().and_then(Batched::find) else {
            return;
        };
        if let Err(e) = j.append(entries) {
            tracing::warn!(path = %j.path().display(), %e, "cannot record the timeline's marks");
        }
    }
}

/// The sender a source's task is given: each event goes through a [`Recorder`] (its marks
/// journaled, the past ones sent first) on to `events`, in order. The task ends when the
/// source's task drops its sender, or nobody listens on `events`.
pub(crate) fn tap(
    info: &SourceInfo,
    events: mpsc::Sender<SourceEvent>,
) -> mpsc::Sender<SourceEvent> {
    let (tx, mut rx) = mpsc::channel::<SourceEvent>(1024);
    let mut r = Recorder::new(info);
    let source = info.id;
    tokio::spawn(async move {
        while let Some(ev) = rx.recv().await {
            if let Some(marks) = r.past(&ev)
                && events
                    .send(SourceEvent::PastMarks { source, marks })
                    .await
                    .is_err()
            {
                return;
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
