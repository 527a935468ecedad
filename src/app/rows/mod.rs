//! The table's rows: which elections pass the filter, in which order, with their alarms and
//! rate. Kept in the state and brought up to date incrementally: a change marks its election,
//! and before a frame only the marked elections' rows are redone and merged into the order
//! (their rank under the sort key is worked out once, so comparing rows looks nothing up).
//! Everything is redone only when the sort, the filter or a source's staleness changes.
//! Drawing reads only the rows it shows.

use std::cmp::Ordering;
use std::time::Instant;

use super::alarm::Alarms;
use super::{App, SourceView};
use crate::model::Election;
use crate::state::{HashMap, HashSet, Settled};

pub(crate) use crate::state::Key;

#[derive(Clone, Debug, PartialEq)]
pub struct RowInfo {
    pub key: Key,
    pub alarms: Alarms,
    /// Leader changes per minute over the flapping window.
    pub rate: f64,
    /// Its place under the sort in force.
    pub rank: Rank,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SortKey {
    /// Alarmed rows first, worst first, then by name: triage.
    #[default]
    Alarms,
    Name,
    Leader,
    /// Shortest time left first: who is about to lose the lead.
    Ttl,
    Changes,
    /// Longest line of candidates first: the elections many wait in.
    Line,
    Rate,
    /// Most recent change first.
    Last,
}

impl SortKey {
    pub const ALL: [SortKey; 8] = [
        SortKey::Alarms,
        SortKey::Name,
        SortKey::Leader,
        SortKey::Ttl,
        SortKey::Changes,
        SortKey::Line,
        SortKey::Rate,
        SortKey::Last,
    ];

    pub fn name(self) -> &'static str {
        match self {
            SortKey::Alarms => "alarms",
            SortKey::Name => "name",
            SortKey::Leader => "leader",
            SortKey::Ttl => "ttl",
            SortKey::Changes => "changes",
            SortKey::Line => "line",
            SortKey::Rate => "rate",
            SortKey::Last => "last",
        }
    }

    pub fn from_name(name: &str) -> Option<SortKey> {
        SortKey::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The next key for `s`.
    pub fn next(self) -> SortKey {
        let i = SortKey::ALL.iter().position(|k| *k == self).unwrap_or(0);
        SortKey::ALL[(i + 1) % SortKey::ALL.len()]
    }

    /// The mark beside the column header: ▲ when the column's values grow down the table.
    pub fn arrow(self, reversed: bool) -> &'static str {
        let up = matches!(
            self,
            SortKey::Name | SortKey::Leader | SortKey::Ttl | SortKey::Last
        );
        if up != reversed { "▲" } else { "▼" }
    }
}

/// The sort in force; sorting by the same key again reverses it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sort {
    pub key: SortKey,
    pub reversed: bool,
}

/// A row filter: a case-insensitive substring, or a regular expression after `re:`.
#[derive(Clone, Debug)]
pub struct Filter {
    /// As typed, for the header.
    pub text: String,
    matcher: Matcher,
}

#[derive(Clone, Debug)]
enum Matcher {
    Sub(String),
    Re(regex::Regex),
}

impl Filter {
    pub fn parse(text: &str) -> Result<Filter, String> {
        let matcher = match text.strip_prefix("re:") {
            Some(pattern) => Matcher::Re(
                regex::Regex::new(pattern)
                    .map_err(|e| format!("not a regex: {}", first_line(&e.to_string())))?,
            ),
            None => Matcher::Sub(text.to_lowercase()),
        };
        Ok(Filter {
            text: text.to_string(),
            matcher,
        })
    }

    pub fn matches_text(&self, s: &str) -> bool {
        match &self.matcher {
            Matcher::Sub(sub) => s.to_lowercase().contains(sub),
            Matcher::Re(re) => re.is_match(s),
        }
    }

    /// On the election's name, its leader, anyone in line or deposed, and its source.
    pub fn matches(&self, e: &Election, source: Option<&SourceView>) -> bool {
        let ids = e
            .leader
            .iter()
            .chain(&e.candidates)
            .chain(e.deposed.as_deref())
            .map(|c| c.id.as_str());
        let src = source
            .map(|s| [s.info.short.as_str(), s.info.name.as_str()])
            .into_iter()
            .flatten();
        std::iter::once(e.name.as_str())
            .chain(ids)
            .chain(src)
            .any(|s| self.matches_text(s))
    }
}

/// regex errors span several lines with a caret; the last line says what is wrong.
fn first_line(s: &str) -> String {
    s.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or(s)
        .trim()
        .to_string()
}

/// What the rows keep between settles, so a change costs the changed elections, not all.
/// Which elections changed, and their alarms, the read model says ([`ReadModel::settle`]).
///
/// [`ReadModel::settle`]: crate::state::ReadModel::settle
#[derive(Clone, Debug, Default)]
pub struct RowsIndex {
    /// Each election's alarms, rate, place in the order and whether it passes the filter,
    /// as of the last settle.
    cached: HashMap<Key, Cached>,
    /// Settle only at frame time (the runtime's tick), not after every event: the runtime
    /// takes a burst of events in and draws once. Off, every update settles at once.
    pub defer: bool,
    /// The zero of the time-to-live ranks, which are deadlines so they hold as time passes.
    base: Option<Instant>,
    /// Elections settled since the last frame was drawn, and whether all were (a refresh):
    /// whether a frame is needed depends on whether any of them is on screen.
    pub(super) settled: HashSet<Key>,
    pub(super) settled_all: bool,
}

impl RowsIndex {
    /// Changes are waiting for a settle (the rows follow the model's).
    pub fn pending(&self, model: &crate::state::ReadModel) -> bool {
        model.pending()
    }
}

#[derive(Clone, Debug)]
struct Cached {
    alarms: Alarms,
    rate: f64,
    rank: Rank,
    shown: bool,
}

/// An election's place under the sort key in force, worked out once per change: comparing
/// rows then never looks an election up. Values that move with the clock are kept as
/// instants (a deadline, not the time left), so the order holds between changes.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Rank(i64, i64, i64, Option<String>);

/// Brings the rows up to date with the read model: the model settles the changed
/// elections' alarms, then only their rows are redone and merged in one pass, or every row
/// when the model redid everything or the sort or filter changed. The one caller of the
/// dashboard's model settle, so no change escapes the rows.
pub(crate) fn settle(app: &mut App) {
    let settled = app.model.settle();
    let dirty = match settled {
        Settled::All => return redo_all(app),
        Settled::Some(keys) => keys,
    };
    if dirty.is_empty() {
        return;
    }
    if dirty.len() > 64 && dirty.len() > app.rows.len() / 4 {
        return redo_all(app);
    }
    let keep = app.selected_key();
    let mut idx = std::mem::take(&mut app.rows_index);
    let mut gone = Vec::new();
    let mut added = Vec::new();
    idx.settled.extend(dirty.iter().cloned());
    for key in dirty {
        if let Some(old) = idx.cached.remove(&key)
            && old.shown
            && let Ok(i) = app
                .rows
                .binary_search_by(|r| by_parts(app.sort, (&r.rank, &r.key), (&old.rank, &key)))
        {
            gone.push(i);
        }
        let Some(e) = app.model.elections.get(&key) else {
            continue;
        };
        let c = compute(app, &mut idx, &key, e);
        if c.shown {
            added.push(row(&key, &c));
        }
        idx.cached.insert(key, c);
    }
    gone.sort_unstable();
    added.sort_unstable_by(|a, b| cmp(app.sort, a, b));
    app.rows = merge(std::mem::take(&mut app.rows), &gone, added, app.sort);
    app.rows_index = idx;
    reselect(app, keep);
}

/// Recomputes every election's alarms and every row, and where the selection is (it
/// follows its election).
pub(crate) fn refresh(app: &mut App) {
    app.model.invalidate();
    app.model.settle();
    redo_all(app);
}

/// Every row from the model's alarms as they are.
fn redo_all(app: &mut App) {
    let keep = app.selected_key();
    let mut idx = std::mem::take(&mut app.rows_index);
    idx.cached.clear();
    idx.cached.reserve(app.model.elections.len());
    idx.settled_all = true;
    let mut rows = Vec::with_capacity(app.model.elections.len());
    for (key, e) in &app.model.elections {
        let c = compute(app, &mut idx, key, e);
        if c.shown {
            rows.push(row(key, &c));
        }
        idx.cached.insert(key.clone(), c);
    }
    // Keys are unique, so an unstable sort gives the one order.
    rows.sort_unstable_by(|a, b| cmp(app.sort, a, b));
    app.rows = rows;
    app.rows_index = idx;
    reselect(app, keep);
}

fn row(key: &Key, c: &Cached) -> RowInfo {
    RowInfo {
        key: key.clone(),
        alarms: c.alarms,
        rate: c.rate,
        rank: c.rank.clone(),
    }
}

fn compute(app: &App, idx: &mut RowsIndex, key: &Key, e: &Election) -> Cached {
    let source = app.model.sources.get(key.0);
    let (alarms, rate) = app.model.alarms(key).unwrap_or_default();
    let base = *idx.base.get_or_insert(app.model.now);
    Cached {
        alarms,
        rate,
        rank: rank(app, base, e, alarms, rate),
        shown: app.filter.as_ref().is_none_or(|f| f.matches(e, source)),
    }
}

/// The rows with those at `gone` (sorted positions) taken out and `added` (sorted) put in:
/// each new row's place is found by binary search, then the rows are moved over once, with
/// no comparison per row.
fn merge(old: Vec<RowInfo>, gone: &[usize], added: Vec<RowInfo>, sort: Sort) -> Vec<RowInfo> {
    let at: Vec<usize> = added
        .iter()
        .map(|a| old.partition_point(|r| cmp(sort, r, a) == Ordering::Less))
        .collect();
    let mut out = Vec::with_capacity(old.len() - gone.len().min(old.len()) + added.len());
    let mut gone = gone.iter().copied().peekable();
    let mut added = added.into_iter().zip(at).peekable();
    for (i, r) in old.into_iter().enumerate() {
        while let Some((a, _)) = added.next_if(|(_, p)| *p <= i) {
            out.push(a);
        }
        if gone.next_if_eq(&i).is_none() {
            out.push(r);
        }
    }
    out.extend(added.map(|(a, _)| a));
    out
}

/// The selection stays on its election wherever it moved; else on the same line.
fn reselect(app: &mut App, keep: Option<Key>) {
    if !app.chosen {
        app.selected = 0;
        return;
    }
    let found = keep.and_then(|k| {
        let c = app.rows_index.cached.get(&k)?;
        app.rows
            .binary_search_by(|r| by_parts(app.sort, (&r.rank, &r.key), (&c.rank, &k)))
            .ok()
    });
    app.selected = found
        .unwrap_or(app.selected)
        .min(app.rows.len().saturating_sub(1));
}

fn cmp(sort: Sort, a: &RowInfo, b: &RowInfo) -> Ordering {
    by_parts(sort, (&a.rank, &a.key), (&b.rank, &b.key))
}

/// The table's order: by the key's rank (reversed on request), then by name and source.
fn by_parts(sort: Sort, a: (&Rank, &Key), b: (&Rank, &Key)) -> Ordering {
    let by = a.0.cmp(b.0);
    let by = if sort.reversed { by.reverse() } else { by };
    by.then_with(|| a.1.1.cmp(&b.1.1))
        .then_with(|| a.1.0.cmp(&b.1.0))
}

/// Where `e` goes under the sort key in force; every key but the leader's name is numbers.
fn rank(app: &App, base: Instant, e: &Election, alarms: Alarms, rate: f64) -> Rank {
    let n = |a: i64, b: i64, c: i64| Rank(a, b, c, None);
    match app.sort.key {
        // Triage order: the worst alarm first, then more alarms first; no alarm last.
        SortKey::Alarms => {
            let (worst, more) = crate::state::alarm::triage_rank(alarms);
            n(worst as i64, more, 0)
        }
        SortKey::Name => Rank::default(),
        // Elections without a leader sort after those with one.
        SortKey::Leader => Rank(
            i64::from(e.leader.is_none()),
            0,
            0,
            e.leader.as_ref().map(|l| l.id.clone()),
        ),
        SortKey::Ttl => ttl(app, base, e),
        SortKey::Changes => n(-(e.transitions as i64), 0, 0),
        // Where the store keeps no line, after every line (even an empty one).
        SortKey::Line => match e.waiting() {
            Some(w) => n(0, -(w as i64), 0),
            None => n(1, 0, 0),
        },
        // Rates are never negative, and then their bits order as they do.
        SortKey::Rate => n(-(rate.to_bits() as i64), 0, 0),
        // Most recent first; a replayed change by its revision, after every timed one.
        SortKey::Last => match e.last_change() {
            Some(h) => {
                let at =
                    h.at.and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                        .map_or(0, |d| d.as_nanos() as i64);
                let class = if h.at.is_some() { 2 } else { 1 };
                n(-class, -at, -h.revision.unwrap_or(0))
            }
            None => n(0, 0, 0),
        },
    }
}

/// Time left, as the deadline it runs out at (ms after `base`), so the order holds while
/// every countdown runs; a stale source's rows are frozen at its last contact. A key that
/// never expires after every countdown, no leader last.
fn ttl(app: &App, base: Instant, e: &Election) -> Rank {
    let signed_ms = |from: Instant, to: Instant| {
        if to >= from {
            to.duration_since(from).as_millis() as i64
        } else {
            -(from.duration_since(to).as_millis() as i64)
        }
    };
    match &e.leader {
        Some(l) if l.zombie() => Rank(1, 0, 0, None),
        Some(l) => match l.ttl {
            Some(d) => {
                let at = app.model.as_of(e.source);
                // Live: `at` is now, and this is the deadline. Stale: the time left at the last
                // contact, from now on.
                let left = d.remaining_ms - signed_ms(d.read_at, at);
                Rank(0, signed_ms(base, app.model.now) + left, 0, None)
            }
            None => Rank(1, 1, 0, None),
        },
        None => Rank(2, 0, 0, None),
    }
}

#[cfg(test)]
mod tests;
