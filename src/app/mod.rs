//! The state the screen shows, and `update`, which turns key actions and backend events into
//! a new state. No IO happens here, so all of it is tested without servers.

mod action;
pub mod alarm;
mod commands;
pub mod contexts;
pub mod describe;
pub mod dialog;
pub mod frames;
pub mod keys;
pub mod log;
pub mod prompt;
pub mod rows;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Instant, SystemTime};

pub use action::Action;
pub use dialog::Dialog;
pub use prompt::{Prompt, PromptKind};
pub use rows::{Filter, RowInfo, Sort, SortKey};

use crate::backend::Command;
use crate::model::{Candidate, ConnState, Election, EventKind, SourceEvent, SourceId, SourceInfo};

/// Which pane the movement keys act on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Focus {
    #[default]
    Elections,
    Candidates,
    History,
}

/// Which screen the body shows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Screen {
    #[default]
    Main,
    /// The timeline of every change (`v`, `:events`).
    Events,
}

/// What a mouse event landed on, as the view laid it out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// A row of the elections table, by its index in `App::rows`.
    Row(usize),
    Pane(Focus),
    Events,
}

/// A source as the status bar shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct SourceView {
    pub info: SourceInfo,
    pub conn: ConnState,
    pub revision: Option<i64>,
    /// Snapshot and history replay done.
    pub synced: bool,
    /// The latest thing worth telling about this source (e.g. compacted history).
    pub notice: Option<String>,
    /// When the store last answered a read that proves the view current.
    pub last_contact: Option<(Instant, SystemTime)>,
    /// How often the source confirms contact while all is well.
    pub contact_every: std::time::Duration,
    /// Each member of a clustered store, as last probed.
    pub members: Vec<crate::model::MemberStatus>,
    /// The first snapshot is being read: keys read and keys in all (until connected).
    pub loading: Option<(usize, usize)>,
}

/// No contact for this much longer than the source's own contact interval and its rows are
/// shown as stale: with contact every 500 ms, stale after 2 s.
pub const STALE_MARGIN: std::time::Duration = std::time::Duration::from_millis(1500);

impl SourceView {
    /// How long the source has gone without contact, once that is long enough to matter
    /// (or it is down). `None`: current, or never reached (nothing shown yet).
    pub fn stale_for(&self, now: Instant) -> Option<std::time::Duration> {
        let (at, _) = self.last_contact?;
        let age = now.saturating_duration_since(at);
        let down = matches!(self.conn, ConnState::Down { .. });
        (down || age > self.contact_every + STALE_MARGIN).then_some(age)
    }

    /// The instant what this source shows was last known true, for countdowns frozen at it.
    pub fn as_of(&self, now: Instant) -> Instant {
        match (self.stale_for(now), self.last_contact) {
            (Some(_), Some((at, _))) => at,
            _ => now,
        }
    }
}

/// Everything that reaches `update`.
#[derive(Clone, Debug)]
pub enum Msg {
    Action(Action),
    Source(SourceEvent),
    /// Time passed: countdowns move on.
    Tick {
        now: Instant,
        wall: SystemTime,
    },
    /// The terminal's size, for paging.
    Resize {
        width: u16,
        height: u16,
    },
    /// An admin action finished.
    AdminDone(crate::admin::Outcome),
    /// A mouse click.
    Click(Target),
    /// The mouse wheel, rows to scroll (negative: up).
    Wheel(Target, isize),
}

/// How long an action's outcome stays in the status line; it lives on in the events view.
pub const FLASH_FOR: std::time::Duration = std::time::Duration::from_secs(10);

/// What the config sets about the dashboard.
#[derive(Clone, Debug, Default)]
pub struct Prefs {
    pub keys: keys::KeyMap,
    /// Flapping above this many leader changes a minute.
    pub flap_per_min: Option<u32>,
}

/// A one-line message shown in place: the outcome of an action, or why it was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Flash {
    pub text: String,
    pub error: bool,
}

impl Flash {
    pub fn info(text: &str) -> Flash {
        Flash {
            text: text.to_string(),
            error: false,
        }
    }

    pub fn error(text: &str) -> Flash {
        Flash {
            text: text.to_string(),
            error: true,
        }
    }
}

#[derive(Clone, Debug)]
pub struct App {
    pub sources: Vec<SourceView>,
    pub elections: BTreeMap<(SourceId, String), Election>,
    /// Index into `elections` in key order.
    pub selected: usize,
    pub focus: Focus,
    /// First visible row of the candidates and history panes.
    pub line_scroll: usize,
    pub history_scroll: usize,
    pub show_help: bool,
    /// The members overlay (`e`).
    pub show_members: bool,
    /// The admin dialog on screen, if any.
    pub dialog: Option<Dialog>,
    pub flash: Option<Flash>,
    /// When the flash appeared, to age it out.
    pub flash_at: Instant,
    /// Confirmed admin actions for the runtime to carry out.
    pub outbox: Vec<crate::admin::AdminRequest>,
    pub quit: bool,
    /// The clock the countdowns are drawn at (set by ticks, so drawing is deterministic).
    pub now: Instant,
    pub wall: SystemTime,
    pub size: (u16, u16),
    /// The key tables in force (defaults and the user's overrides).
    pub keys: keys::KeyMap,
    /// How long an election with nothing left in the store stays listed.
    pub retention: std::time::Duration,
    /// Each source's settings that decide what an action writes (its SQL table and columns),
    /// from its config; the runtime sets them, so the confirmation names what is written.
    pub targets: Vec<crate::admin::Target>,
    /// The table's rows (filtered, sorted, with their alarms); `selected` indexes these.
    pub rows: Vec<RowInfo>,
    /// Elections with each alarm, over all elections (the filter hides rows, not alarms).
    pub alarm_counts: [usize; alarm::Alarm::ALL.len()],
    /// The wall-clock second the rows were computed at: rates and ages move once a second.
    pub rows_second: u64,
    /// Which sources were stale when the rows were computed: a change redoes them.
    pub rows_stale: Vec<bool>,
    /// What keeps the rows incremental (`rows.rs`).
    pub rows_index: rows::RowsIndex,
    pub sort: Sort,
    pub filter: Option<Filter>,
    pub flap_per_min: u32,
    /// Elections known to have two leaders at once (the demo knows from its nodes).
    pub split_brain: BTreeSet<rows::Key>,
    pub screen: Screen,
    /// Every change and action outcome, for the events view.
    pub events: log::EventLog,
    /// Entries of the events view scrolled past (newest first).
    pub events_scroll: usize,
    pub events_filter: Option<Filter>,
    /// The `/` or `:` bar, while typing.
    pub prompt: Option<Prompt>,
    /// What quitting would stop, when it must be asked first (the demo's nodes).
    pub quit_asks: Option<&'static str>,
    /// Keys of what surrounds the dashboard (the demo's), for the help: (keys, what).
    pub extra_keys: &'static [(&'static str, &'static str)],
    /// The config's contexts: the one shown, the others `:ctx` switches to.
    pub contexts: contexts::Contexts,
    /// Who may lead, known from outside the store (the demo's nodes): the force-leader
    /// dialog offers them when the scheme keeps no line of candidates.
    pub known_ids: Vec<String>,
    /// The detail view (`Enter`), when open.
    pub describe: Option<describe::Describe>,
    /// Text for the terminal's clipboard, which the runtime writes (OSC 52) and clears.
    pub clipboard: Option<String>,
    /// The last left click, to tell a double click (the runtime sets it).
    pub last_click: Option<(Target, Instant)>,
    /// What the last frame showed of the elections (`frames`).
    pub drawn: frames::Drawn,
}

/// Below a minute left a countdown shows tenths of a second (`42.3s`), so frames come at the
/// fast tick; above it the text moves once a second (`1m05s`) and so do the frames.
pub const FAST_COUNTDOWN_MS: i64 = 60_000;

/// Rows a page key moves.
const PAGE: usize = 10;

impl App {
    pub fn new(sources: Vec<SourceInfo>, now: Instant, wall: SystemTime) -> Self {
        App {
            sources: sources
                .into_iter()
                .map(|info| SourceView {
                    info,
                    conn: ConnState::Connecting,
                    revision: None,
                    synced: false,
                    notice: None,
                    last_contact: None,
                    contact_every: std::time::Duration::from_millis(500),
                    members: Vec::new(),
                    loading: None,
                })
                .collect(),
            elections: BTreeMap::new(),
            selected: 0,
            focus: Focus::Elections,
            line_scroll: 0,
            history_scroll: 0,
            show_help: false,
            show_members: false,
            dialog: None,
            flash: None,
            flash_at: now,
            outbox: Vec::new(),
            quit: false,
            now,
            wall,
            size: (80, 24),
            keys: keys::KeyMap::default(),
            retention: std::time::Duration::from_secs(600),
            targets: Vec::new(),
            rows: Vec::new(),
            alarm_counts: Default::default(),
            rows_second: 0,
            rows_stale: Vec::new(),
            rows_index: Default::default(),
            sort: Sort::default(),
            filter: None,
            flap_per_min: 4,
            split_brain: BTreeSet::new(),
            screen: Screen::Main,
            events: log::EventLog::default(),
            events_scroll: 0,
            events_filter: None,
            prompt: None,
            quit_asks: None,
            extra_keys: &[],
            contexts: contexts::Contexts::default(),
            known_ids: Vec::new(),
            describe: None,
            clipboard: None,
            last_click: None,
            drawn: Default::default(),
        }
    }

    pub fn with_prefs(mut self, prefs: Prefs) -> Self {
        self.keys = prefs.keys;
        if let Some(n) = prefs.flap_per_min {
            self.flap_per_min = n;
        }
        self
    }

    pub fn selected_election(&self) -> Option<&Election> {
        self.rows
            .get(self.selected)
            .and_then(|r| self.elections.get(&r.key))
    }

    fn selected_key(&self) -> Option<(SourceId, String)> {
        self.rows.get(self.selected).map(|r| r.key.clone())
    }

    /// The selected election's candidates, for completing `force-leader`.
    pub fn candidate_ids(&self) -> Vec<String> {
        self.selected_election()
            .map(|e| e.candidates.iter().map(|c| c.id.clone()).collect())
            .unwrap_or_default()
    }

    /// Whether each source is stale now.
    pub fn stale_sources(&self) -> Vec<bool> {
        self.sources
            .iter()
            .map(|s| s.stale_for(self.now).is_some())
            .collect()
    }

    /// Shows a one-line message in the status line for [`FLASH_FOR`].
    pub fn say(&mut self, flash: Flash) {
        self.flash = Some(flash);
        self.flash_at = self.now;
    }

    /// The events the events view shows, newest first, through its filter.
    pub fn visible_events(&self) -> impl Iterator<Item = &log::LogEntry> {
        self.events.entries.iter().rev().filter(|e| {
            self.events_filter
                .as_ref()
                .is_none_or(|f| f.matches_text(&e.haystack()))
        })
    }

    /// Printable keys are text (a dialog that types, or the `/` `:` bar): the demo's own
    /// keys stay off.
    pub fn typing(&self) -> bool {
        self.prompt.is_some() || self.dialog.as_ref().is_some_and(Dialog::typing)
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

    /// The source of `election` is stale: its age without contact.
    pub fn stale_for(&self, source: SourceId) -> Option<std::time::Duration> {
        self.sources.get(source).and_then(|s| s.stale_for(self.now))
    }

    /// An election of `source` without a leader is at rest, not in trouble (a lock between
    /// runs): no alarm.
    pub fn idle_is_normal(&self, source: SourceId) -> bool {
        self.sources
            .get(source)
            .is_some_and(|s| s.info.idle_is_normal)
    }

    /// The instant a row of `source` is drawn at: now, or the last contact when stale.
    pub fn as_of(&self, source: SourceId) -> Instant {
        self.sources
            .get(source)
            .map(|s| s.as_of(self.now))
            .unwrap_or(self.now)
    }

    /// Whether anything on screen moves with time (a countdown or a retry timer), so the
    /// runtime knows to keep ticking; with nothing moving it sleeps.
    pub fn needs_tick(&self, rows: usize) -> bool {
        self.sources
            .iter()
            .any(|s| matches!(s.conn, ConnState::Down { .. }))
            || self.countdown_on_screen(rows, FAST_COUNTDOWN_MS)
    }

    /// Whether a countdown on screen has less than `under_ms` left (and more than nothing):
    /// the leaders of the rows in view, and every candidate of the selected and the
    /// described election. Only what is on screen: this runs before every frame.
    pub fn countdown_on_screen(&self, rows: usize, under_ms: i64) -> bool {
        let running = |c: &Candidate| {
            c.ttl
                .is_some_and(|d| (1..under_ms).contains(&d.remaining_ms_at(self.now)))
        };
        let leaders = self
            .rows_in_view(rows)
            .filter_map(|r| self.elections.get(&r.key)?.leader.as_ref())
            .any(running);
        let described = self.describe.as_ref().map(|d| &d.key);
        leaders
            || [self.selected_key(), described.cloned()]
                .into_iter()
                .flatten()
                .filter_map(|k| self.elections.get(&k))
                .any(|e| e.leader.iter().chain(&e.candidates).any(running))
    }

    /// What each source should keep fresh: the leaders of the elections in view and the
    /// selected election's line.
    /// The rows a table of `rows` lines shows: the selected one stays in view at the bottom.
    fn rows_in_view(&self, rows: usize) -> impl Iterator<Item = &RowInfo> {
        let start = self.selected.saturating_sub(rows.saturating_sub(1));
        self.rows.iter().skip(start).take(rows.max(1))
    }

    pub fn visible_requests(&self, rows: usize) -> Vec<(SourceId, Command)> {
        let in_view: Vec<&(SourceId, String)> = self.rows_in_view(rows).map(|r| &r.key).collect();
        let selected = self.selected_key();
        (0..self.sources.len())
            .map(|id| {
                let names = in_view
                    .iter()
                    .filter(|(s, _)| *s == id)
                    .map(|(_, n)| n.clone())
                    .collect();
                let selected = selected
                    .as_ref()
                    .filter(|(s, _)| *s == id)
                    .map(|(_, n)| n.clone());
                (id, Command::Visible { names, selected })
            })
            .collect()
    }
}

/// Applies one message. Returns whether the screen needs a redraw.
pub fn update(app: &mut App, msg: Msg) -> bool {
    match msg {
        Msg::Action(a) => on_action(app, a),
        Msg::Source(ev) => on_source(app, ev),
        Msg::Tick { now, wall } => {
            app.now = now;
            app.wall = wall;
            if app.flash.is_some() && now.saturating_duration_since(app.flash_at) > FLASH_FOR {
                app.flash = None;
            }
            // The one place deferred changes are settled: once per frame, before drawing.
            if rows::second(wall) != app.rows_second {
                rows::next_second(app);
            }
            rows::settle(app);
            prune(app);
            true
        }
        Msg::Resize { width, height } => {
            app.size = (width, height);
            true
        }
        Msg::AdminDone(outcome) => {
            dialog::on_outcome(app, outcome);
            true
        }
        Msg::Click(target) => commands::click(app, target),
        Msg::Wheel(target, delta) => commands::wheel(app, target, delta),
    }
}

/// Drops elections with nothing left in the store whose last change is older than the
/// retention; until then they stay listed as "no leader since", with their history.
/// Only the elections the rows know to be empty are looked at, not every election.
fn prune(app: &mut App) {
    let (wall, keep) = (app.wall, app.retention);
    let expired: Vec<rows::Key> = app
        .rows_index
        .empty
        .iter()
        .filter(|k| {
            app.elections.get(*k).is_some_and(|e| {
                e.is_empty()
                    && e.last_change()
                        .and_then(|h| h.at)
                        .is_some_and(|at| wall.duration_since(at).unwrap_or_default() > keep)
            })
        })
        .cloned()
        .collect();
    if expired.is_empty() {
        return;
    }
    for key in expired {
        app.elections.remove(&key);
        rows::touch(app, &key);
    }
    rows::settle(app);
}

fn on_action(app: &mut App, action: Action) -> bool {
    if app.dialog.is_some() {
        dialog::on_action(app, action);
        return true;
    }
    if app.prompt.is_some() {
        commands::on_prompt(app, action);
        return true;
    }
    if !app.show_help
        && let Some(redraw) = describe::on_action(app, action)
    {
        return redraw;
    }
    match action {
        Action::Describe => describe::open(app),
        Action::CopyLeader => describe::copy(app, false),
        Action::CopyKey => describe::copy(app, true),
        Action::ForceLeader | Action::Reelect | Action::Resign => {
            app.flash = None;
            dialog::start(app, action);
        }
        Action::Quit => commands::quit(app),
        Action::Back => return commands::back(app),
        Action::ToggleHelp => app.show_help = !app.show_help,
        Action::ToggleMembers => app.show_members = !app.show_members,
        Action::ToggleEvents => {
            app.screen = match app.screen {
                Screen::Main => Screen::Events,
                Screen::Events => Screen::Main,
            };
        }
        Action::StartFilter => commands::open(app, PromptKind::Filter),
        Action::StartCommand => commands::open(app, PromptKind::Command),
        Action::CycleSort => {
            app.sort = Sort {
                key: app.sort.key.next(),
                reversed: false,
            };
            rows::refresh(app);
        }
        Action::SortBy(key) => commands::sort_by(app, key),
        Action::FocusNext | Action::FocusPrev => {
            let order = [Focus::Elections, Focus::Candidates, Focus::History];
            let i = order.iter().position(|f| *f == app.focus).unwrap_or(0);
            let j = if action == Action::FocusNext {
                (i + 1) % 3
            } else {
                (i + 2) % 3
            };
            app.focus = order[j];
        }
        Action::Up => return commands::scroll(app, None, -1),
        Action::Down => return commands::scroll(app, None, 1),
        Action::PageUp => return commands::scroll(app, None, -(PAGE as isize)),
        Action::PageDown => return commands::scroll(app, None, PAGE as isize),
        Action::Top => return commands::scroll(app, None, -(isize::MAX / 2)),
        Action::Bottom => return commands::scroll(app, None, isize::MAX / 2),
        Action::Accept | Action::Type(_) | Action::Erase | Action::Complete => return false,
    }
    true
}

fn on_source(app: &mut App, ev: SourceEvent) -> bool {
    match ev {
        SourceEvent::Info(info) => {
            if let Some(s) = app.sources.get_mut(info.id) {
                s.info = info;
            }
        }
        SourceEvent::Conn { source, state } => {
            if let Some(s) = app.sources.get_mut(source) {
                s.conn = state;
                s.loading = None;
            }
            rows::refresh(app);
        }
        SourceEvent::Revision { source, revision } => {
            let Some(s) = app.sources.get_mut(source) else {
                return false;
            };
            if s.revision == Some(revision) {
                return false;
            }
            s.revision = Some(revision);
            // Deferred (the dashboard): a revision moves with every change anywhere in the
            // store, so alone it would redraw the screen at the frame cap; the status bar
            // shows it at the next frame, which comes within 500 ms while the source answers
            // (the staleness tick).
            return !app.rows_index.defer;
        }
        SourceEvent::Elections { source, elections } => {
            return on_elections(app, source, elections);
        }
        SourceEvent::Happened(event) => return on_happened(app, event),
        SourceEvent::Notice { source, text } => {
            let Some(s) = app.sources.get_mut(source) else {
                return false;
            };
            s.notice = Some(text);
        }
        SourceEvent::Loading {
            source,
            read,
            total,
        } => {
            let Some(s) = app.sources.get_mut(source) else {
                return false;
            };
            s.loading = Some((read, total));
        }
        SourceEvent::Synced { source } => {
            if let Some(s) = app.sources.get_mut(source) {
                s.synced = true;
            }
        }
        SourceEvent::Contact {
            source,
            at,
            wall,
            next_within,
        } => return on_contact(app, source, (at, wall), next_within),
        SourceEvent::Members { source, members } => {
            if let Some(s) = app.sources.get_mut(source) {
                s.members = members;
            }
        }
    }
    true
}

/// Elections as the source now has them: each marks its row changed.
/// Returns whether to redraw now: when deferred, whether the changes show is known only
/// once they are settled, at frame time (`frames::rows_show`).
fn on_elections(app: &mut App, source: SourceId, elections: Vec<Election>) -> bool {
    let mut redraw = !app.rows_index.defer;
    if let Some(s) = app.sources.get_mut(source)
        && !elections.is_empty()
        && matches!(s.info.notice, Some(crate::model::SourceNotice::Empty(_)))
    {
        s.info.notice = None;
        redraw = true;
    }
    if elections.len() > app.elections.len() {
        // A snapshot: built as one tree and merged in, rather than inserted one by one,
        // which moved every election several times at 100,000 of them.
        let mut batch: std::collections::BTreeMap<_, _> = elections
            .into_iter()
            .map(|e| ((source, e.name.clone()), e))
            .collect();
        for key in batch.keys() {
            rows::touch(app, key);
        }
        app.elections.append(&mut batch);
    } else {
        for e in elections {
            let key = (source, e.name.clone());
            rows::touch(app, &key);
            app.elections.insert(key, e);
        }
    }
    if !app.rows_index.defer {
        rows::settle(app);
    }
    redraw
}

/// The source answered. Only a change of staleness changes the screen: its rows thaw.
fn on_contact(
    app: &mut App,
    source: SourceId,
    at: (Instant, SystemTime),
    next_within: std::time::Duration,
) -> bool {
    let Some(s) = app.sources.get_mut(source) else {
        return false;
    };
    let was = s.stale_for(app.now).is_some();
    s.last_contact = Some(at);
    s.contact_every = next_within;
    if was {
        rows::refresh(app);
    }
    was
}

/// A backend's event: into the events view under the source's short name; a compacted
/// history also becomes the source's notice. Returns whether the screen changed.
fn on_happened(app: &mut App, event: crate::model::Event) -> bool {
    let short = app
        .sources
        .iter()
        .find(|s| s.info.name == event.source)
        .map(|s| s.info.short.clone())
        .unwrap_or_else(|| event.source.clone());
    app.events.event(&event, &short);
    if event.kind != EventKind::HistoryCompacted {
        // On screen only in the events view.
        return app.screen == Screen::Events;
    }
    if let Some(s) = app.sources.iter_mut().find(|s| s.info.name == event.source) {
        s.notice = event.detail;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Scheme;

    fn app_with(n: usize) -> App {
        let info = SourceInfo::test_etcd();
        let mut app = App::new(vec![info], Instant::now(), SystemTime::now());
        let elections = (0..n)
            .map(|i| Election::new(0, format!("e{i:03}"), Scheme::EtcdElection))
            .collect();
        update(
            &mut app,
            Msg::Source(SourceEvent::Elections {
                source: 0,
                elections,
            }),
        );
        app
    }

    #[test]
    fn an_empty_prefix_notice_ends_when_elections_appear() {
        use crate::model::SourceNotice;
        for (notice, stays) in [
            (SourceNotice::Empty("no keys under /e/".into()), false),
            (SourceNotice::Unsure("layout unsure".into()), true),
        ] {
            let mut app = app_with(0);
            app.sources[0].info.notice = Some(notice);
            let elections = vec![Election::new(0, "jobs".into(), Scheme::EtcdElection)];
            update(
                &mut app,
                Msg::Source(SourceEvent::Elections {
                    source: 0,
                    elections,
                }),
            );
            assert_eq!(app.sources[0].info.notice.is_some(), stays);
        }
    }

    #[test]
    fn selection_moves_and_clamps() {
        let mut app = app_with(3);
        assert!(
            !update(&mut app, Msg::Action(Action::Up)),
            "nothing to redraw at the top"
        );
        update(&mut app, Msg::Action(Action::PageDown));
        assert_eq!(app.selected, 2);
        update(&mut app, Msg::Action(Action::Top));
        assert_eq!(app.selected, 0);
    }

    #[test]
    fn selection_follows_its_election_when_others_appear() {
        let mut app = app_with(3);
        update(&mut app, Msg::Action(Action::Down));
        assert_eq!(
            app.selected_election().map(|e| e.name.as_str()),
            Some("e001")
        );
        let new = vec![Election::new(0, "a-first".into(), Scheme::EtcdElection)];
        update(
            &mut app,
            Msg::Source(SourceEvent::Elections {
                source: 0,
                elections: new,
            }),
        );
        assert_eq!(
            app.selected_election().map(|e| e.name.as_str()),
            Some("e001")
        );
    }

    #[test]
    fn esc_closes_and_clears_but_never_quits() {
        let mut app = app_with(3);
        update(&mut app, Msg::Action(Action::ToggleHelp));
        update(&mut app, Msg::Action(Action::Back));
        assert!(!app.show_help && !app.quit);
        update(&mut app, Msg::Action(Action::StartFilter));
        for c in "e001".chars() {
            update(&mut app, Msg::Action(Action::Type(c)));
        }
        update(&mut app, Msg::Action(Action::Accept));
        assert_eq!(app.rows.len(), 1, "the filter stays after Enter");
        update(&mut app, Msg::Action(Action::ToggleEvents));
        update(&mut app, Msg::Action(Action::Back));
        assert_eq!(app.screen, Screen::Main, "Esc leaves the events view");
        assert!(update(&mut app, Msg::Action(Action::Back)));
        assert_eq!(app.rows.len(), 3, "then clears the filter");
        assert!(
            !update(&mut app, Msg::Action(Action::Back)),
            "then does nothing"
        );
        assert!(!app.quit);
        update(&mut app, Msg::Action(Action::Quit));
        assert!(app.quit, "q quits");
    }

    #[test]
    fn quitting_asks_first_where_it_stops_something() {
        let mut app = app_with(1);
        app.quit_asks = Some("stops every node");
        update(&mut app, Msg::Action(Action::Quit));
        assert!(!app.quit && matches!(app.dialog, Some(Dialog::ConfirmQuit { .. })));
        update(&mut app, Msg::Action(Action::Back));
        assert!(!app.quit && app.dialog.is_none(), "n/Esc: stay");
        update(&mut app, Msg::Action(Action::Quit));
        update(&mut app, Msg::Action(Action::Accept));
        assert!(app.quit, "y: quit");
    }

    #[test]
    fn action_outcomes_flash_for_ten_seconds_and_stay_in_the_events() {
        let mut app = app_with(1);
        let (now, wall) = (app.now, app.wall);
        update(
            &mut app,
            Msg::AdminDone(crate::admin::Outcome::Done {
                detail: "revoked lease 7".into(),
            }),
        );
        assert!(app.flash.is_some());
        let tick = |app: &mut App, s| {
            let d = std::time::Duration::from_secs(s);
            update(
                app,
                Msg::Tick {
                    now: now + d,
                    wall: wall + d,
                },
            );
        };
        tick(&mut app, 9);
        assert!(app.flash.is_some(), "still shown after 9 s");
        tick(&mut app, 11);
        assert!(app.flash.is_none(), "aged out after 10 s");
        let last = app.events.entries.back().expect("in the events");
        assert!(last.text.contains("revoked lease 7"), "{last:?}");
    }

    #[test]
    fn command_bar_runs_sort_events_and_refuses_unknown_commands() {
        let mut app = app_with(2);
        let run = |app: &mut App, text: &str| {
            update(app, Msg::Action(Action::StartCommand));
            for c in text.chars() {
                update(app, Msg::Action(Action::Type(c)));
            }
            update(app, Msg::Action(Action::Complete));
            update(app, Msg::Action(Action::Accept));
        };
        run(&mut app, "sort ra");
        assert_eq!(app.sort.key, SortKey::Rate, "Tab completed `ra` to rate");
        run(&mut app, "ev");
        assert_eq!(app.screen, Screen::Events);
        run(&mut app, "bogus");
        assert!(
            app.flash
                .as_ref()
                .is_some_and(|f| f.error && f.text.contains("bogus"))
        );
        assert!(app.prompt.is_none());
        run(&mut app, "q");
        assert!(app.quit);
    }

    #[test]
    fn visible_requests_follow_the_view() {
        let mut app = app_with(30);
        update(&mut app, Msg::Action(Action::Bottom));
        let req = app.visible_requests(5);
        let Command::Visible { names, selected } = &req[0].1 else {
            panic!("visible request")
        };
        assert_eq!(names.first().map(String::as_str), Some("e025"));
        assert_eq!(names.len(), 5);
        assert_eq!(selected.as_deref(), Some("e029"));
    }

    #[test]
    fn an_empty_election_stays_listed_until_its_retention_ends() {
        use crate::model::{Cause, HistoryEntry};
        let mut app = app_with(2);
        let wall = app.wall;
        let mut gone = Election::new(0, "e000".into(), Scheme::EtcdElection);
        gone.record(
            HistoryEntry {
                at: Some(wall),
                revision: None,
                from: Some("node-a".into()),
                to: None,
                cause: Cause::Resigned,
                by: None,
            },
            10,
        );
        assert_eq!(gone.no_leader_since(), Some(wall));
        update(
            &mut app,
            Msg::Source(SourceEvent::Elections {
                source: 0,
                elections: vec![gone],
            }),
        );
        let tick = |app: &mut App, secs| {
            let (now, wall) = (app.now, wall + std::time::Duration::from_secs(secs));
            update(app, Msg::Tick { now, wall });
        };
        tick(&mut app, 599);
        assert_eq!(app.elections.len(), 2, "within the 10 minutes: listed");
        tick(&mut app, 601);
        let names: Vec<&str> = app.elections.values().map(|e| e.name.as_str()).collect();
        assert_eq!(
            names,
            ["e001"],
            "gone after its retention; no history ever went"
        );
    }

    #[test]
    fn resign_on_etcd_election_offers_a_reelection_instead() {
        let mut app = app_with(1);
        let mut e = Election::new(0, "e000".into(), Scheme::EtcdElection);
        let c = crate::model::Candidate {
            id: "node-a".into(),
            raw_id: b"node-a".to_vec(),
            key: "/e/e000/a".into(),
            raw_key: b"/e/e000/a".to_vec(),
            lease: Some(0xa),
            create_revision: 1,
            mod_revision: 1,
            stamp: None,
            ttl: None,
        };
        e.leader = Some(c.clone());
        e.candidates = vec![c];
        update(
            &mut app,
            Msg::Source(SourceEvent::Elections {
                source: 0,
                elections: vec![e],
            }),
        );
        update(&mut app, Msg::Action(Action::Resign));
        update(&mut app, Msg::Action(Action::Reelect));
        match &app.dialog {
            Some(Dialog::Confirm { request, .. }) => {
                assert_eq!(request.kind, crate::admin::ActionKind::Reelect)
            }
            other => panic!("a re-election to confirm, got {other:?}"),
        }
    }

    /// The dashboard's confirmation is made from the source's configured table and columns,
    /// not the scheme's defaults (the runtime hands the app its sources' settings).
    #[test]
    fn a_sql_confirmation_names_the_configured_columns() {
        let mut app = app_with(0);
        let cfg: crate::config::SourceConfig = crate::config::SourceConfig::Sql(
            toml::from_str(
                "url = 'postgres://db/x'\nscheme = 'sql-lease'\ntable = 'locks'\n\
                 columns = { key = 'lock_name', leader_id = 'owner', valid_until = 'until_at' }",
            )
            .expect("a SQL source"),
        );
        app.targets = vec![crate::admin::Target::from_config(&cfg)];
        let mut e = Election::new(0, "jobs".into(), Scheme::SqlLease);
        e.candidates = vec![crate::model::Candidate {
            id: "node-a".into(),
            raw_id: b"node-a".to_vec(),
            key: "jobs".into(),
            raw_key: b"jobs".to_vec(),
            lease: None,
            create_revision: 0,
            mod_revision: 0,
            stamp: Some("2026-01-01 00:00:00".into()),
            ttl: None,
        }];
        e.leader = e.candidates.first().cloned();
        let elections = vec![e];
        update(
            &mut app,
            Msg::Source(SourceEvent::Elections {
                source: 0,
                elections,
            }),
        );
        update(&mut app, Msg::Action(Action::Resign));
        let Some(Dialog::Confirm { plan, .. }) = &app.dialog else {
            panic!("a resign to confirm, got {:?}", app.dialog);
        };
        let text = plan.writes().join("\n");
        assert!(
            text.starts_with(
                "UPDATE \"locks\" SET \"until_at\" = ⟨the database's now⟩ WHERE \
                 CAST(\"lock_name\" AS TEXT) = $1 AND CAST(\"owner\" AS TEXT) = $2"
            ),
            "{text}"
        );
    }
}
