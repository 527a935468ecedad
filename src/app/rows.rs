//! The table's rows: which elections pass the filter, in which order, with their alarms and
//! rate. Kept in the state and recomputed when something they depend on changes, never per
//! frame, so drawing only reads the rows it shows.

use std::cmp::Ordering;

use super::alarm::{self, Alarm, Alarms};
use super::{App, SourceView};
use crate::model::{Election, SourceId};

/// The key of an election in `App::elections`.
pub type Key = (SourceId, String);

#[derive(Clone, Debug, PartialEq)]
pub struct RowInfo {
    pub key: Key,
    pub alarms: Alarms,
    /// Leader changes per minute over the flapping window.
    pub rate: f64,
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
            .chain(&e.deposed)
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

/// Recomputes the rows, the alarm counts, and where the selection is (it follows its
/// election).
pub fn refresh(app: &mut App) {
    let keep = app.selected_key();
    let mut counts = [0usize; Alarm::ALL.len()];
    let mut rows = Vec::with_capacity(app.elections.len());
    for (key, e) in &app.elections {
        let source = app.sources.get(key.0);
        let rate = alarm::rate_per_min(&e.history, app.wall, alarm::FLAP_WINDOW);
        let cx = alarm::Context {
            stale: source.is_some_and(|s| s.stale_for(app.now).is_some()),
            split_brain: app.split_brain.contains(key),
            rate,
            flap_per_min: app.flap_per_min,
            idle_is_normal: source.is_some_and(|s| s.info.idle_is_normal),
        };
        let alarms = alarm::of(e, &cx);
        for a in alarms.iter() {
            counts[a as usize] += 1;
        }
        if app.filter.as_ref().is_none_or(|f| f.matches(e, source)) {
            rows.push(RowInfo {
                key: key.clone(),
                alarms,
                rate,
            });
        }
    }
    sort(&mut rows, app.sort, app);
    app.rows = rows;
    app.alarm_counts = counts;
    app.rows_second = second(app.wall);
    app.rows_stale = app.stale_sources();
    app.selected = keep
        .and_then(|k| app.rows.iter().position(|r| r.key == k))
        .unwrap_or(app.selected)
        .min(app.rows.len().saturating_sub(1));
}

/// Whole seconds of `wall`: rates and ages move once a second, so rows are redone as often.
pub fn second(wall: std::time::SystemTime) -> u64 {
    wall.duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn sort(rows: &mut [RowInfo], sort: Sort, app: &App) {
    let get = |r: &RowInfo| app.elections.get(&r.key);
    let cmp = |a: &RowInfo, b: &RowInfo| -> Ordering {
        let (Some(ea), Some(eb)) = (get(a), get(b)) else {
            return Ordering::Equal;
        };
        let by = match sort.key {
            SortKey::Alarms => rank(a.alarms).cmp(&rank(b.alarms)),
            SortKey::Name => Ordering::Equal,
            SortKey::Leader => leader(ea).cmp(&leader(eb)),
            SortKey::Ttl => ttl(app, ea).cmp(&ttl(app, eb)),
            SortKey::Changes => eb.transitions.cmp(&ea.transitions),
            SortKey::Rate => b.rate.total_cmp(&a.rate),
            SortKey::Last => last(eb).cmp(&last(ea)),
        };
        let by = if sort.reversed { by.reverse() } else { by };
        by.then_with(|| ea.name.cmp(&eb.name))
            .then_with(|| a.key.0.cmp(&b.key.0))
    };
    rows.sort_by(cmp);
}

/// Triage order: the worst alarm first, then more alarms first; no alarm last.
fn rank(a: Alarms) -> (usize, std::cmp::Reverse<usize>) {
    let worst = a.worst().map(|w| w as usize).unwrap_or(Alarm::ALL.len());
    (worst, std::cmp::Reverse(a.iter().count()))
}

/// Elections without a leader sort after those with one.
fn leader(e: &Election) -> (bool, Option<&str>) {
    (e.leader.is_none(), e.leader.as_ref().map(|l| l.id.as_str()))
}

/// Time left; a key that never expires after every countdown, no leader last.
fn ttl(app: &App, e: &Election) -> (u8, i64) {
    match &e.leader {
        Some(l) if l.zombie() => (1, 0),
        Some(l) => match l.ttl {
            Some(d) => (0, d.remaining_ms_at(app.as_of(e.source))),
            None => (1, 1),
        },
        None => (2, 0),
    }
}

/// When the last change was seen; a replayed one by its revision, before any timed one.
fn last(e: &Election) -> (u8, Option<std::time::SystemTime>, Option<i64>) {
    match e.last_change() {
        Some(h) => (if h.at.is_some() { 2 } else { 1 }, h.at, h.revision),
        None => (0, None, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::{Action, Msg, update};
    use crate::model::{Candidate, Cause, HistoryEntry, Scheme, SourceEvent, SourceInfo};
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
        assert_eq!(app.alarm_counts[Alarm::NoLeader as usize], 1);
        assert_eq!(
            filter(&mut app, "nothing"),
            "",
            "nothing matches: no rows, alarms still counted"
        );
        assert_eq!(app.alarm_counts[Alarm::Flapping as usize], 1);
        let e = Filter::parse("re:(").expect_err("bad regex");
        assert!(e.starts_with("not a regex"), "{e}");
    }
}
