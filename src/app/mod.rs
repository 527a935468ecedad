//! The state the screen shows, and `update`, which turns key actions and backend events into
//! a new state. No IO happens here, so all of it is tested without servers.

mod action;
mod commands;
pub mod contexts;
pub(crate) mod describe;
pub(crate) mod details;
pub(crate) mod dialog;
pub(crate) mod frames;
pub(crate) mod keys;
pub(crate) mod prompt;
pub(crate) mod rows;
pub mod timeline;

use std::time::{Instant, SystemTime};

pub use crate::state::{STALE_MARGIN, SourceView};
pub(crate) use crate::state::{alarm, log};
pub use action::Action;
pub use dialog::Dialog;
pub use prompt::{Prompt, PromptKind};
pub use rows::{Filter, RowInfo, Sort, SortKey};

use crate::backend::Request;
use crate::model::{Candidate, Election, SourceEvent, SourceId, SourceInfo};
use crate::state::{Applied, ReadModel};

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
    /// Who led when: a strip per election (`t`, `:timeline`).
    Timeline,
}

/// What a mouse event landed on, as the view laid it out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hit {
    /// A row of the elections table, by its index in `App::rows`.
    Row(usize),
    Pane(Focus),
    Events,
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
    /// A left click, and when (two on the same row close together open its detail).
    Click(Hit, Instant),
    /// The mouse wheel, rows to scroll (negative: up).
    Wheel(Hit, isize),
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

/// What an extension around the dashboard (the demo, `runtime::Extension`) tells it; the
/// plain dashboard leaves it empty.
#[derive(Clone, Debug, Default)]
pub struct Around {
    /// What quitting would stop, when it must be asked first (the demo's nodes).
    pub quit_asks: Option<&'static str>,
    /// Keys of its own, for the help: (keys, what).
    pub extra_keys: &'static [(&'static str, &'static str)],
    /// Who may lead, known from outside the store (the demo's nodes): the force-leader
    /// dialog offers them when the scheme keeps no line of candidates.
    pub known_ids: Vec<String>,
    /// Leaders stopped from outside the store (the demo's kills and pauses): the timeline
    /// draws their tenure as a gap while they were.
    pub stopped: Vec<timeline::Stopped>,
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
    /// What is true about the stores: the dashboard's copy of the read model, which only
    /// store events and the clock change. Everything else here is interaction.
    pub model: ReadModel,
    /// Index into `rows`.
    pub selected: usize,
    /// The operator chose a row (a movement key, a click): the selection follows that
    /// election as rows move. Until then it stays on the first row, whatever arrives.
    pub chosen: bool,
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
    /// What this update asks of the world outside, handed out by [`update`].
    effects: Vec<Effect>,
    /// The last left click, to tell a double click.
    last_click: Option<(Hit, Instant)>,
    pub size: (u16, u16),
    /// The key tables in force (defaults and the user's overrides).
    pub keys: keys::KeyMap,
    /// Each source's settings that decide what an action writes (its SQL table and columns),
    /// from its config; the runtime sets them, so the confirmation names what is written.
    pub targets: Vec<crate::admin::Target>,
    /// The table's rows (filtered, sorted, with their alarms); `selected` indexes these.
    pub rows: Vec<RowInfo>,
    /// What keeps the rows incremental (`rows.rs`).
    pub rows_index: rows::RowsIndex,
    pub sort: Sort,
    pub filter: Option<Filter>,
    pub screen: Screen,
    /// Entries of the events view scrolled past (newest first).
    pub events_scroll: usize,
    pub events_filter: Option<Filter>,
    /// The `/` or `:` bar, while typing.
    pub prompt: Option<Prompt>,
    /// What surrounds the dashboard (the demo) tells it.
    pub around: Around,
    /// The config's contexts: the one shown, the others `:ctx` switches to.
    pub contexts: contexts::Contexts,
    /// The detail view (`Enter`), when open.
    pub describe: Option<describe::Describe>,
    /// What the last frame showed of the elections (`frames`).
    pub drawn: frames::Drawn,
    /// The timeline's window and cursor (the timeline view's and the detail's strip).
    pub timeline: timeline::TimelineView,
}

/// Below a minute left a countdown shows tenths of a second (`42.3s`), so frames come at the
/// fast tick; above it the text moves once a second (`1m05s`) and so do the frames.
pub const FAST_COUNTDOWN_MS: i64 = 60_000;

/// Rows a page key moves.
const PAGE: usize = 10;

impl App {
    pub fn new(sources: Vec<SourceInfo>, now: Instant, wall: SystemTime) -> Self {
        App {
            model: ReadModel::new(sources, now, wall),
            selected: 0,
            chosen: false,
            focus: Focus::Elections,
            line_scroll: 0,
            history_scroll: 0,
            show_help: false,
            show_members: false,
            dialog: None,
            flash: None,
            flash_at: now,
            effects: Vec::new(),
            last_click: None,
            size: (80, 24),
            keys: keys::KeyMap::default(),
            targets: Vec::new(),
            rows: Vec::new(),
            rows_index: Default::default(),
            sort: Sort::default(),
            filter: None,
            screen: Screen::Main,
            events_scroll: 0,
            events_filter: None,
            prompt: None,
            around: Around::default(),
            contexts: contexts::Contexts::default(),
            describe: None,
            drawn: Default::default(),
            timeline: Default::default(),
        }
    }

    pub fn with_prefs(mut self, prefs: Prefs) -> Self {
        self.keys = prefs.keys;
        if let Some(n) = prefs.flap_per_min {
            self.model.flap_per_min = n;
        }
        self
    }

    pub fn selected_election(&self) -> Option<&Election> {
        self.rows
            .get(self.selected)
            .and_then(|r| self.model.elections.get(&r.key))
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

    /// Shows a one-line message in the status line for [`FLASH_FOR`].
    pub fn say(&mut self, flash: Flash) {
        self.flash = Some(flash);
        self.flash_at = self.model.now;
    }

    /// The events the events view shows, newest first, through its filter.
    pub fn visible_events(&self) -> impl Iterator<Item = &log::LogEntry> {
        self.model.events.entries.iter().rev().filter(|e| {
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

    /// Whether anything on screen moves with time (a countdown or a retry timer), so the
    /// runtime knows to keep ticking; with nothing moving it sleeps.
    pub fn needs_tick(&self, rows: usize) -> bool {
        self.model.any_down()
            || self.hold_in_view(rows)
            || self.countdown_on_screen(rows, FAST_COUNTDOWN_MS)
    }

    /// Whether a countdown on screen has less than `under_ms` left (and more than nothing):
    /// the leaders of the rows in view, and every candidate of the selected and the
    /// described election. Only what is on screen: this runs before every frame.
    pub fn countdown_on_screen(&self, rows: usize, under_ms: i64) -> bool {
        let running = |c: &Candidate| {
            c.ttl
                .is_some_and(|d| (1..under_ms).contains(&d.remaining_ms_at(self.model.now)))
        };
        let leaders = self
            .rows_in_view(rows)
            .filter_map(|r| self.model.elections.get(&r.key)?.leader.as_ref())
            .any(running);
        let described = self.describe.as_ref().map(|d| &d.key);
        leaders
            || [self.selected_key(), described.cloned()]
                .into_iter()
                .flatten()
                .filter_map(|k| self.model.elections.get(&k))
                .any(|e| e.leader.iter().chain(&e.candidates).any(running))
    }

    /// An admin action's hold counts down in a row in view (etcd-election).
    fn hold_in_view(&self, rows: usize) -> bool {
        self.rows_in_view(rows)
            .filter_map(|r| self.model.elections.get(&r.key))
            .any(|e| e.held.is_some())
    }

    /// What each source should keep fresh: the leaders of the elections in view and the
    /// selected election's line.
    /// The rows a table of `rows` lines shows: the selected one stays in view at the bottom.
    fn rows_in_view(&self, rows: usize) -> impl Iterator<Item = &RowInfo> {
        let start = self.selected.saturating_sub(rows.saturating_sub(1));
        self.rows.iter().skip(start).take(rows.max(1))
    }

    pub fn visible_requests(&self, rows: usize) -> Vec<(SourceId, Request)> {
        let in_view: Vec<&(SourceId, String)> = self.rows_in_view(rows).map(|r| &r.key).collect();
        let selected = self.selected_key();
        (0..self.model.sources.len())
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
                (id, Request::Visible { names, selected })
            })
            .collect()
    }
}

/// What the dashboard asks of the world outside it. `update` returns them; the runtime
/// carries them out. Nothing in the dashboard does IO.
#[derive(Clone, Debug)]
pub enum Effect {
    /// Carry out a confirmed admin action (its outcome comes back as [`Msg::AdminDone`]).
    Admin(Box<crate::admin::AdminRequest>),
    /// Put this text on the terminal's clipboard (OSC 52).
    Copy(String),
    /// Leave, once the actions under way are over.
    Quit,
}

/// What one message did: whether the screen needs a redraw, and what the runtime is to do.
#[derive(Debug, Default)]
pub struct Updated {
    pub redraw: bool,
    pub effects: Vec<Effect>,
}

impl Updated {
    /// The dashboard asked to be left.
    pub fn quits(&self) -> bool {
        self.effects.iter().any(|e| matches!(e, Effect::Quit))
    }
}

/// Applies one message.
pub fn update(app: &mut App, msg: Msg) -> Updated {
    let redraw = apply(app, msg);
    Updated {
        redraw,
        effects: std::mem::take(&mut app.effects),
    }
}

/// Applies one message. Returns whether the screen needs a redraw.
fn apply(app: &mut App, msg: Msg) -> bool {
    match msg {
        Msg::Action(a) => on_action(app, a),
        Msg::Source(ev) => on_source(app, ev),
        Msg::Tick { now, wall } => {
            app.model.tick(now, wall);
            if app.flash.is_some() && now.saturating_duration_since(app.flash_at) > FLASH_FOR {
                app.flash = None;
            }
            // The one place deferred changes are settled: once per frame, before drawing.
            rows::settle(app);
            if app.model.prune() {
                rows::settle(app);
            }
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
        Msg::Click(target, at) => commands::click_at(app, target, at),
        Msg::Wheel(target, delta) => commands::wheel(app, target, delta),
    }
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
        Action::Up
        | Action::Down
        | Action::PageUp
        | Action::PageDown
        | Action::Top
        | Action::Bottom => return commands::scroll(app, None, movement(action)),
        Action::ToggleEvents
        | Action::ToggleTimeline
        | Action::ZoomIn
        | Action::ZoomOut
        | Action::PanLeft
        | Action::PanRight
        | Action::CursorLeft
        | Action::CursorRight => return on_view(app, action),
        Action::Accept
        | Action::Choose
        | Action::Type(_)
        | Action::Erase
        | Action::Complete
        | Action::Details => {
            return false;
        }
    }
    true
}

/// The views' own keys: to and from the events and the timeline, and the timeline's window
/// and cursor. Returns whether to redraw.
fn on_view(app: &mut App, action: Action) -> bool {
    match action {
        Action::ToggleEvents => {
            app.screen = match app.screen {
                Screen::Events => Screen::Main,
                Screen::Main | Screen::Timeline => Screen::Events,
            };
            true
        }
        Action::ToggleTimeline => {
            app.screen = match app.screen {
                Screen::Timeline => Screen::Main,
                Screen::Main | Screen::Events => Screen::Timeline,
            };
            true
        }
        // The window and the cursor move only where a strip is on screen.
        _ => app.screen == Screen::Timeline && app.timeline.on_action(action, app.model.wall),
    }
}

/// How far a movement key moves.
fn movement(action: Action) -> isize {
    match action {
        Action::Up => -1,
        Action::Down => 1,
        Action::PageUp => -(PAGE as isize),
        Action::PageDown => PAGE as isize,
        Action::Top => -(isize::MAX / 2),
        _ => isize::MAX / 2,
    }
}

/// A store's event into the read model; the rows follow. Returns whether to redraw now:
/// when deferred (the dashboard), changes to elections are settled at frame time and drawn
/// only if they show (`frames::rows_show`).
fn on_source(app: &mut App, ev: SourceEvent) -> bool {
    match app.model.apply(ev) {
        Applied::Nothing => false,
        Applied::Source => true,
        Applied::Conn => {
            rows::refresh(app);
            true
        }
        // A revision moves with every change anywhere in the store, so alone it would
        // redraw the screen at the frame cap; the status bar shows it at the next frame,
        // which comes within 500 ms while the source answers (the staleness tick).
        Applied::Revision => !app.rows_index.defer,
        Applied::Elections { notice_cleared } => {
            if !app.rows_index.defer {
                rows::settle(app);
            }
            !app.rows_index.defer || notice_cleared
        }
        // On screen only in the events view, but for a compacted history, which is also
        // the source's notice.
        Applied::Event { compacted } => compacted || app.screen == Screen::Events,
        Applied::Contact { thawed } => {
            if thawed {
                rows::refresh(app);
            }
            thawed
        }
    }
}

#[cfg(test)]
mod tests;
