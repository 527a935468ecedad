//! The state the screen shows, and `update`, which turns key actions and backend events into
//! a new state. No IO happens here, so all of it is tested without servers.

mod action;
pub mod dialog;
pub mod keys;

use std::collections::BTreeMap;
use std::time::{Instant, SystemTime};

pub use action::Action;
pub use dialog::Dialog;

use crate::backend::Command;
use crate::model::{ConnState, Election, EventKind, SourceEvent, SourceId, SourceInfo};

/// Which pane the movement keys act on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Focus {
    #[default]
    Elections,
    Candidates,
    History,
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
}

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
            outbox: Vec::new(),
            quit: false,
            now,
            wall,
            size: (80, 24),
            keys: keys::KeyMap::default(),
            retention: std::time::Duration::from_secs(600),
            targets: Vec::new(),
        }
    }

    pub fn selected_election(&self) -> Option<&Election> {
        self.elections.values().nth(self.selected)
    }

    fn selected_key(&self) -> Option<(SourceId, String)> {
        self.elections.keys().nth(self.selected).cloned()
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
    pub fn needs_tick(&self) -> bool {
        self.sources
            .iter()
            .any(|s| matches!(s.conn, ConnState::Down { .. }))
            || self.elections.values().any(|e| {
                e.leader
                    .as_ref()
                    .and_then(|l| l.ttl)
                    .is_some_and(|d| d.remaining_ms_at(self.now) > 0)
            })
    }

    /// What each source should keep fresh: the leaders of the elections in view and the
    /// selected election's line.
    pub fn visible_requests(&self, rows: usize) -> Vec<(SourceId, Command)> {
        let start = self.selected.saturating_sub(rows.saturating_sub(1));
        let in_view: Vec<&(SourceId, String)> = self
            .elections
            .keys()
            .skip(start)
            .take(rows.max(1))
            .collect();
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
    }
}

/// Drops elections with nothing left in the store whose last change is older than the
/// retention; until then they stay listed as "no leader since", with their history.
fn prune(app: &mut App) {
    let (wall, keep) = (app.wall, app.retention);
    let before = app.elections.len();
    let selected = app.selected_key();
    app.elections.retain(|_, e| {
        !e.is_empty()
            || e.last_change()
                .and_then(|h| h.at)
                .is_none_or(|at| wall.duration_since(at).unwrap_or_default() <= keep)
    });
    if app.elections.len() != before {
        app.selected = selected
            .and_then(|k| app.elections.keys().position(|x| *x == k))
            .unwrap_or(app.selected)
            .min(app.elections.len().saturating_sub(1));
    }
}

fn on_action(app: &mut App, action: Action) -> bool {
    if app.dialog.is_some() {
        dialog::on_action(app, action);
        return true;
    }
    if matches!(
        action,
        Action::ForceLeader | Action::Reelect | Action::Resign
    ) {
        app.flash = None;
        dialog::start(app, action);
        return true;
    }
    let n = app.elections.len();
    let before = (app.selected, app.line_scroll, app.history_scroll);
    let step = |pos: usize, len: usize, delta: isize| -> usize {
        if len == 0 {
            return 0;
        }
        (pos as isize + delta).clamp(0, len as isize - 1) as usize
    };
    let (cands, hist) = app
        .selected_election()
        .map(|e| (e.candidates.len(), e.history.len()))
        .unwrap_or((0, 0));
    let mut moved = |delta: isize| match app.focus {
        Focus::Elections => {
            app.selected = step(app.selected, n, delta);
            app.line_scroll = 0;
            app.history_scroll = 0;
        }
        Focus::Candidates => app.line_scroll = step(app.line_scroll, cands, delta),
        Focus::History => app.history_scroll = step(app.history_scroll, hist, delta),
    };
    match action {
        Action::Quit => {
            app.quit = true;
            return true;
        }
        Action::Back => {
            if app.show_help {
                app.show_help = false;
            } else if app.show_members {
                app.show_members = false;
            } else {
                app.quit = true;
            }
            return true;
        }
        Action::ToggleHelp => {
            app.show_help = !app.show_help;
            return true;
        }
        Action::ToggleMembers => {
            app.show_members = !app.show_members;
            return true;
        }
        Action::FocusNext | Action::FocusPrev => {
            let order = [Focus::Elections, Focus::Candidates, Focus::History];
            let i = order.iter().position(|f| *f == app.focus).unwrap_or(0);
            let j = if action == Action::FocusNext {
                (i + 1) % 3
            } else {
                (i + 2) % 3
            };
            app.focus = order[j];
            return true;
        }
        Action::Up => moved(-1),
        Action::Down => moved(1),
        Action::PageUp => moved(-(PAGE as isize)),
        Action::PageDown => moved(PAGE as isize),
        Action::Top => moved(-(isize::MAX / 2)),
        Action::Bottom => moved(isize::MAX / 2),
        Action::ForceLeader
        | Action::Reelect
        | Action::Resign
        | Action::Accept
        | Action::Type(_)
        | Action::Erase => {}
    }
    before != (app.selected, app.line_scroll, app.history_scroll)
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
            }
        }
        SourceEvent::Revision { source, revision } => {
            let Some(s) = app.sources.get_mut(source) else {
                return false;
            };
            if s.revision == Some(revision) {
                return false;
            }
            s.revision = Some(revision);
        }
        SourceEvent::Elections { source, elections } => {
            let keep = app.selected_key();
            if let Some(s) = app.sources.get_mut(source)
                && !elections.is_empty()
                && matches!(s.info.notice, Some(crate::model::SourceNotice::Empty(_)))
            {
                s.info.notice = None;
            }
            for e in elections {
                app.elections.insert((source, e.name.clone()), e);
            }
            if let Some(key) = keep {
                app.selected = app
                    .elections
                    .keys()
                    .position(|k| *k == key)
                    .unwrap_or(app.selected);
            }
        }
        SourceEvent::Happened(event) => {
            if event.kind != EventKind::HistoryCompacted {
                return false;
            }
            if let Some(s) = app.sources.iter_mut().find(|s| s.info.name == event.source) {
                s.notice = event.detail;
            }
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
        } => {
            let Some(s) = app.sources.get_mut(source) else {
                return false;
            };
            // Only a change of staleness changes the screen.
            let was = s.stale_for(app.now).is_some();
            s.last_contact = Some((at, wall));
            s.contact_every = next_within;
            return was;
        }
        SourceEvent::Members { source, members } => {
            if let Some(s) = app.sources.get_mut(source) {
                s.members = members;
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Scheme;

    fn app_with(n: usize) -> App {
        let info = SourceInfo {
            id: 0,
            name: "etcd x /e/".into(),
            label: "/e/".into(),
            short: "etcd1".into(),
            endpoints: "x".into(),
            scheme: Some(Scheme::EtcdElection),
            read_only: false,
            clustered: false,
            idle_is_normal: false,
            notice: None,
        };
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
    fn esc_closes_help_before_quitting() {
        let mut app = app_with(1);
        update(&mut app, Msg::Action(Action::ToggleHelp));
        update(&mut app, Msg::Action(Action::Back));
        assert!(!app.show_help && !app.quit);
        update(&mut app, Msg::Action(Action::Back));
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
        app.targets = vec![crate::admin::Target::from_config(&cfg).expect("settings")];
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
