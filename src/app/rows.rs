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
    Rate,
    /// Most recent change first.
    Last,
}

impl SortKey {
    pub const ALL: [SortKey; 7] = [
        SortKey::Alarms,
        SortKey::Name,
        SortKey::Leader,
        SortKey::Ttl,
        SortKey::Changes,
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
mod tests {
    use super::*;
    use crate::app::{Action, Msg, update};
    use crate::model::{Candidate, Cause, HistoryEntry, Scheme, SourceEvent, SourceInfo};
    use crate::state::alarm::Alarm;
    use std::time::{Duration, Instant, SystemTime};

    fn holder(id: &str, ttl_ms: i64, now: Instant) -> Candidate {
        Candidate {
            id: id.into(),
            raw_id: id.as_bytes().to_vec(),
            key: format!("k/{id}"),
            raw_key: format!("k/{id}").into_bytes(),
            lease: Some(7),
            create_revision: 1,
            mod_revision: 1,
            stamp: None,
            ttl: Some(crate::model::Deadline {
                granted_ms: 60_000,
                remaining_ms: ttl_ms,
                read_at: now,
            }),
        }
    }

    /// `alpha` led by zed (10 s left, 2 changes), `bravo` without leader, `charlie` led by
    /// amy (50 s left, flapping: 6 changes in the last minute).
    fn app() -> App {
        let now = Instant::now();
        let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000);
        let info = SourceInfo::test_etcd();
        let mut app = App::new(vec![info], now, wall);
        let changes = |e: &mut Election, n: u64, ago: u64| {
            for i in 0..n {
                e.record(
                    HistoryEntry {
                        at: Some(wall - Duration::from_secs(ago + i)),
                        revision: None,
                        from: None,
                        to: Some("x".into()),
                        cause: Cause::Elected,
                        by: None,
                    },
                    100,
                );
            }
        };
        let mut a = Election::new(0, "alpha".into(), Scheme::EtcdElection);
        a.leader = Some(holder("zed", 10_000, now));
        changes(&mut a, 2, 600);
        let b = Election::new(0, "bravo".into(), Scheme::EtcdElection);
        let mut c = Election::new(0, "charlie".into(), Scheme::EtcdElection);
        c.leader = Some(holder("amy", 50_000, now));
        c.candidates = vec![holder("amy", 50_000, now), holder("bob", 50_000, now)];
        changes(&mut c, 6, 1);
        update(
            &mut app,
            Msg::Source(SourceEvent::Elections {
                source: 0,
                elections: vec![a, b, c],
            }),
        );
        app
    }

    fn names(app: &App) -> Vec<&str> {
        app.rows.iter().map(|r| r.key.1.as_str()).collect()
    }

    fn sort_by(app: &mut App, key: SortKey) {
        update(app, Msg::Action(Action::SortBy(key)));
    }

    #[test]
    fn alarms_first_by_default_then_each_key() {
        let mut app = app();
        assert_eq!(
            names(&app),
            ["bravo", "charlie", "alpha"],
            "no leader, flapping, fine"
        );
        assert!(app.rows[1].alarms.has(Alarm::Flapping));
        assert_eq!(app.rows[1].rate, 6.0);
        sort_by(&mut app, SortKey::Name);
        assert_eq!(names(&app), ["alpha", "bravo", "charlie"]);
        sort_by(&mut app, SortKey::Leader);
        assert_eq!(names(&app), ["charlie", "alpha", "bravo"], "amy, zed, none");
        sort_by(&mut app, SortKey::Ttl);
        assert_eq!(
            names(&app),
            ["alpha", "charlie", "bravo"],
            "10 s, 50 s, none"
        );
        sort_by(&mut app, SortKey::Changes);
        assert_eq!(names(&app), ["charlie", "alpha", "bravo"]);
        sort_by(&mut app, SortKey::Rate);
        assert_eq!(names(&app)[0], "charlie");
        sort_by(&mut app, SortKey::Last);
        assert_eq!(
            names(&app),
            ["charlie", "alpha", "bravo"],
            "newest change first"
        );
        sort_by(&mut app, SortKey::Last);
        assert!(app.sort.reversed, "the same key again reverses");
        assert_eq!(names(&app), ["bravo", "alpha", "charlie"]);
    }

    #[test]
    fn s_cycles_and_the_selection_follows_its_election() {
        let mut app = app();
        update(&mut app, Msg::Action(Action::Down));
        assert_eq!(
            app.selected_election().map(|e| e.name.as_str()),
            Some("charlie")
        );
        update(&mut app, Msg::Action(Action::CycleSort));
        assert_eq!(app.sort.key, SortKey::Name);
        assert_eq!(app.selected, 2, "charlie is last by name");
        assert_eq!(
            app.selected_election().map(|e| e.name.as_str()),
            Some("charlie")
        );
    }

    #[test]
    fn filter_matches_names_leaders_candidates_and_sources() {
        let mut app = app();
        let filter = |app: &mut App, text: &str| {
            app.filter = Some(Filter::parse(text).expect("valid"));
            refresh(app);
            names(app).join(",")
        };
        assert_eq!(filter(&mut app, "ALP"), "alpha", "case-insensitive name");
        assert_eq!(filter(&mut app, "bob"), "charlie", "a candidate");
        assert_eq!(filter(&mut app, "zed"), "alpha", "the leader");
        assert_eq!(
            filter(&mut app, "etcd1"),
            "bravo,charlie,alpha",
            "the source"
        );
        assert_eq!(filter(&mut app, "re:^(a|b)[a-z]+o$"), "bravo", "a regex");
        assert_eq!(app.model.alarm_counts()[Alarm::NoLeader as usize], 1);
        assert_eq!(
            filter(&mut app, "nothing"),
            "",
            "nothing matches: no rows, alarms still counted"
        );
        assert_eq!(app.model.alarm_counts()[Alarm::Flapping as usize], 1);
        let e = Filter::parse("re:(").expect_err("bad regex");
        assert!(e.starts_with("not a regex"), "{e}");
    }

    /// A small deterministic generator, so a failing case can be rerun.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    /// Election `i` after a random change: a new leader or none, a new deadline, a change
    /// recorded now or long ago.
    fn changed(app: &App, rng: &mut Rng, i: u64) -> Election {
        let name = format!("e{i:03}");
        let mut e = app
            .model
            .elections
            .get(&(0, name.clone()))
            .cloned()
            .unwrap_or_else(|| Election::new(0, name, crate::model::Scheme::SqlLease));
        let leader = match rng.below(5) {
            0 => None,
            k => Some(holder(
                &format!("n{k}"),
                rng.below(90_000) as i64,
                app.model.now,
            )),
        };
        e.candidates = leader.iter().cloned().collect();
        e.leader = leader;
        let ago = if rng.below(2) == 0 { 0 } else { 3_600 };
        e.record(
            HistoryEntry {
                at: Some(app.model.wall - Duration::from_secs(ago + rng.below(30))),
                revision: None,
                from: None,
                to: e.leader.as_ref().map(|l| l.id.clone()),
                cause: Cause::Elected,
                by: None,
            },
            100,
        );
        e
    }

    /// The rows kept up to date change by change, as the runtime does (events deferred to
    /// the frame's tick), against the rows worked out from scratch.
    fn same_as_from_scratch(app: &App, why: &str) {
        let mut full = app.clone();
        refresh(&mut full);
        assert_eq!(app.rows, full.rows, "{why}");
        assert_eq!(app.model.alarm_counts(), full.model.alarm_counts(), "{why}");
        assert_eq!(app.selected, full.selected, "{why}");
    }

    #[test]
    fn changes_settled_incrementally_give_the_order_a_full_sort_gives() {
        let mut rng = Rng(0x5eed);
        let mut app = app();
        app.rows_index.defer = true;
        // None pruned: the selection must stay on its election.
        app.model.retention = Duration::from_secs(1 << 30);
        let (now, wall) = (app.model.now, app.model.wall);
        let first: Vec<Election> = (0..150).map(|i| changed(&app, &mut rng, i)).collect();
        update(
            &mut app,
            Msg::Source(SourceEvent::Elections {
                source: 0,
                elections: first,
            }),
        );
        update(&mut app, Msg::Tick { now, wall });
        for key in SortKey::ALL {
            for reversed in [false, true] {
                app.sort = Sort { key, reversed };
                // Half the time with a filter: rows come and go as elections change.
                app.filter = reversed.then(|| Filter::parse("re:^e1|n2").expect("valid"));
                refresh(&mut app);
                app.selected = rng.below(app.rows.len() as u64) as usize;
                let selected = app.selected_key();
                for round in 0..6 {
                    // A burst of 1 to 20 changes, then the frame's tick settles them.
                    let n = 1 + rng.below(20);
                    let batch = (0..n)
                        .map(|_| {
                            let i = rng.below(160);
                            changed(&app, &mut rng, i)
                        })
                        .collect();
                    update(
                        &mut app,
                        Msg::Source(SourceEvent::Elections {
                            source: 0,
                            elections: batch,
                        }),
                    );
                    update(&mut app, Msg::Tick { now, wall });
                    let why = format!("{key:?} reversed {reversed}, round {round}");
                    same_as_from_scratch(&app, &why);
                    if app.rows.iter().any(|r| Some(&r.key) == selected.as_ref()) {
                        assert_eq!(app.selected_key(), selected, "the selection follows: {why}");
                    }
                }
            }
        }
    }

    #[test]
    fn deferred_changes_wait_for_the_frame_and_settle_once() {
        let mut app = app();
        app.rows_index.defer = true;
        app.model.retention = Duration::from_secs(1 << 30);
        let mut a = app.model.elections[&(0, "alpha".to_string())].clone();
        a.leader = None;
        a.candidates.clear();
        update(
            &mut app,
            Msg::Source(SourceEvent::Elections {
                source: 0,
                elections: vec![a],
            }),
        );
        assert_eq!(
            names(&app),
            ["bravo", "charlie", "alpha"],
            "not redone per event"
        );
        let (now, wall) = (app.model.now, app.model.wall);
        update(&mut app, Msg::Tick { now, wall });
        assert_eq!(
            names(&app),
            ["alpha", "bravo", "charlie"],
            "both leaderless, by name, then flapping"
        );
        assert_eq!(app.model.alarm_counts()[Alarm::NoLeader as usize], 2);
        same_as_from_scratch(&app, "after the tick");
    }

    #[test]
    fn flapping_ends_when_the_window_passes_without_another_event() {
        let mut app = app();
        app.rows_index.defer = true;
        assert_eq!(app.model.alarm_counts()[Alarm::Flapping as usize], 1);
        let now = app.model.now;
        // charlie's six changes were 1-6 s ago; 30 s on they are all still in the window.
        let wall = app.model.wall + Duration::from_secs(30);
        update(&mut app, Msg::Tick { now, wall });
        assert_eq!(app.model.alarm_counts()[Alarm::Flapping as usize], 1);
        let wall = app.model.wall + Duration::from_secs(40);
        update(&mut app, Msg::Tick { now, wall });
        assert_eq!(
            app.model.alarm_counts()[Alarm::Flapping as usize],
            0,
            "out of the window"
        );
        let charlie = app.rows.iter().find(|r| r.key.1 == "charlie").expect("row");
        assert_eq!(charlie.rate, 0.0);
        same_as_from_scratch(&app, "after the window");
    }

    #[test]
    fn emptied_elections_are_pruned_after_the_retention_and_their_rows_go() {
        let mut app = app();
        app.model.retention = Duration::from_secs(60);
        let mut a = app.model.elections[&(0, "alpha".to_string())].clone();
        a.leader = None;
        a.candidates.clear();
        update(
            &mut app,
            Msg::Source(SourceEvent::Elections {
                source: 0,
                elections: vec![a],
            }),
        );
        // bravo was always empty but has no change with a time: it stays.
        let (now, wall) = (app.model.now, app.model.wall + Duration::from_secs(30 * 60));
        update(&mut app, Msg::Tick { now, wall });
        assert_eq!(names(&app), ["bravo", "charlie"]);
        assert!(!app.model.elections.contains_key(&(0, "alpha".to_string())));
        same_as_from_scratch(&app, "after pruning");
    }
}
