//! The demo as an extension of the one dashboard loop: its nodes' output and exits are
//! extra event sources, its keys come before the dashboard's, its panes are drawn around
//! the dashboard, and quitting stops the nodes.

use std::future::Future;
use std::time::{Duration, Instant, SystemTime};

use crossterm::event::{KeyEvent, MouseEvent};
use tokio::sync::mpsc;

use super::state::{Demo, DemoAction, Proc};
use super::supervisor::{NodeOutput, Supervisor};
use super::view;
use crate::app::App;
use crate::app::log::{LogEntry, Tone};
use crate::runtime::Extension;

/// How often exited children are looked for.
const REAP_EVERY: Duration = Duration::from_millis(250);

pub(super) struct DemoExt {
    pub demo: Demo,
    pub sup: Supervisor,
    out: mpsc::Receiver<NodeOutput>,
    reap: tokio::time::Interval,
    /// How many of the demo's events the dashboard's events view has been given.
    forwarded: u64,
    /// The nodes are started once the dashboard has read the store (so it sees the first
    /// leader elected, and the timeline shows since when), or at this deadline.
    pub start_by: Option<Instant>,
}

pub(super) enum DemoInput {
    /// A line a node printed.
    Line(NodeOutput),
    /// Time to look for children that exited.
    Reap,
}

impl DemoExt {
    pub(super) fn new(demo: Demo, sup: Supervisor, out: mpsc::Receiver<NodeOutput>) -> Self {
        let mut reap = tokio::time::interval(REAP_EVERY);
        reap.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        DemoExt {
            demo,
            sup,
            out,
            reap,
            forwarded: 0,
            start_by: None,
        }
    }

    /// Starts the nodes if they wait and the dashboard has read the store, or waited long
    /// enough (a store down: the nodes' panes say so).
    fn start_nodes(&mut self, app: &App) -> bool {
        let Some(by) = self.start_by else {
            return false;
        };
        if !app.model.all_synced() && Instant::now() < by {
            return false;
        }
        self.start_by = None;
        let wall = SystemTime::now();
        for i in 0..self.demo.nodes.len() {
            if let Err(e) = self.sup.start(i) {
                self.demo.log_at(i, wall, &format!("start failed: {e}"));
            }
        }
        true
    }
}

impl Extension for DemoExt {
    type Input = DemoInput;

    fn init(&mut self, app: &mut App) {
        app.around.extra_keys = super::KEYS;
        app.around.quit_asks = Some("stops every node");
        app.around.known_ids = self.demo.live_ids();
    }

    async fn next(&mut self) -> DemoInput {
        // The supervisor keeps a sender, so the lines never end; were they to, the reap tick
        // alone would wake the loop, not a closed channel over and over.
        tokio::select! {
            Some(line) = self.out.recv() => DemoInput::Line(line),
            _ = self.reap.tick() => DemoInput::Reap,
        }
    }

    fn on_input(&mut self, app: &mut App, input: DemoInput) -> bool {
        match input {
            DemoInput::Line(out) => {
                self.demo.node_line(out.node, &out.text);
                true
            }
            DemoInput::Reap => {
                let started = self.start_nodes(app);
                let exited = self.sup.reap();
                for (node, code) in &exited {
                    self.demo.node_exited(*node, *code, SystemTime::now());
                }
                // What `F` offers follows the nodes as they exit, are killed or restart.
                app.around.known_ids = self.demo.live_ids();
                started || !exited.is_empty()
            }
        }
    }

    fn on_key(&mut self, app: &mut App, key: KeyEvent) -> Option<bool> {
        // Typed text (the / and : bars, a dialog) and the help are not the demo's keys.
        if app.dialog.is_some() || app.prompt.is_some() || app.show_help {
            return None;
        }
        let action = super::demo_action(key)?;
        on_demo_action(&mut self.demo, app, &mut self.sup, action);
        app.around.known_ids = self.demo.live_ids();
        Some(true)
    }

    fn on_mouse(&mut self, app: &mut App, m: MouseEvent) -> bool {
        view::on_mouse(&mut self.demo, app, m)
    }

    fn before_draw(&mut self, app: &mut App) {
        self.start_nodes(app);
        self.demo.check_failover(app);
        lend_stops(&self.demo, app);
        self.demo.lend_split_brain(app);
        forward_events(&self.demo, app, self.forwarded);
        self.forwarded = self.demo.noted;
    }

    fn draw(&self, app: &App, frame: &mut ratatui::Frame) {
        view::view(&self.demo, app, frame);
    }

    fn table_rows(&self, app: &App) -> usize {
        view::table_rows(&self.demo, app)
    }

    /// The failover clock and a split brain's length count up on screen.
    fn tick_interval(&self, app: &App, fast: Duration) -> Option<Duration> {
        let moving =
            self.demo.failing_over.is_some() || self.demo.split_now(app.model.wall).is_some();
        moving.then_some(fast)
    }

    fn shutdown(&mut self, app: &App) -> impl Future<Output = ()> {
        self.demo.log_open_split_brains(app.model.wall);
        self.sup.stop_all(Duration::from_secs(3))
    }
}

/// The nodes' kills and pauses into the dashboard's timeline, which draws a stopped
/// leader's tenure as a gap (only the demo knows a node was stopped).
pub(super) fn lend_stops(d: &Demo, app: &mut App) {
    if !app.around.stopped.iter().eq(d.stops.iter()) {
        app.around.stopped = d.stops.iter().cloned().collect();
    }
}

/// The demo's new events into the dashboard's events view (`:events`), where they can be
/// filtered and read at any size, beside the store's changes.
pub(super) fn forward_events(d: &Demo, app: &mut App, since: u64) {
    for e in d.events_since(since) {
        app.model.events.push(LogEntry {
            at: Some(e.at),
            revision: None,
            source: "demo".into(),
            election: Some(d.election.clone()),
            text: e.text.clone(),
            cause: None,
            tone: if e.alarm { Tone::Bad } else { Tone::Info },
        });
    }
}

/// A demo key: pick a node, or kill, pause, resume or restart the one picked.
pub(super) fn on_demo_action(d: &mut Demo, app: &App, sup: &mut Supervisor, a: DemoAction) {
    let now = Instant::now();
    let wall = SystemTime::now();
    let i = d.selected;
    let id = d.nodes.get(i).map(|n| n.id.clone()).unwrap_or_default();
    match a {
        DemoAction::Pick(n) if n < d.nodes.len() => d.selected = n,
        DemoAction::Pick(_) => {}
        DemoAction::Kill => {
            if sup.kill(i) {
                d.stopping(app, i, now);
                d.killed(i, wall);
            }
        }
        DemoAction::PauseResume => match d.nodes[i].proc_ {
            Proc::Paused if sup.resume(i) => {
                d.nodes[i].proc_ = Proc::Running;
                d.stop_ended(i, wall);
                d.log_at(i, wall, "resumed (SIGCONT)");
                d.note(wall, format!("{id} resumed (SIGCONT)"));
            }
            Proc::Running if sup.pause(i) => {
                d.stopping(app, i, now);
                d.nodes[i].proc_ = Proc::Paused;
                d.stop_began(i, wall, "paused (SIGSTOP)");
                d.log_at(i, wall, "paused (SIGSTOP)");
                // A paused node still believes what it believed: it cannot notice anything.
                d.note(wall, format!("{id} paused (SIGSTOP)"));
            }
            _ => {}
        },
        DemoAction::Restart => {
            if sup.pid(i).is_some() {
                sup.kill(i);
                d.belief_ended(i, wall);
            }
            match sup.start(i) {
                Ok(()) => {
                    d.stop_ended(i, wall);
                    d.nodes[i].proc_ = Proc::Running;
                    d.nodes[i].belief = "starting".into();
                    d.log_at(i, wall, "restarted");
                    d.note(wall, format!("{id} restarted"));
                }
                Err(e) => d.log_at(i, wall, &format!("restart failed: {e}")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crossterm::event::{KeyCode, KeyModifiers};

    use super::*;
    use crate::app::{Action, Msg};
    use crate::model::SourceInfo;

    fn app() -> App {
        App::new(
            vec![SourceInfo::test_sqlite()],
            Instant::now(),
            SystemTime::now(),
        )
    }

    /// A demo of three nodes that are never started; `out`'s sender is handed back.
    fn ext() -> (DemoExt, mpsc::Sender<NodeOutput>) {
        let (tx, rx) = mpsc::channel(8);
        let sup = Supervisor::new(Vec::new(), Vec::new(), 3, tx.clone()).expect("supervisor");
        let demo = Demo::new(&sup.ids, "demo", "sqlite");
        (DemoExt::new(demo, sup, rx), tx)
    }

    fn key(c: char) -> KeyEvent {
        KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)
    }

    #[tokio::test]
    async fn force_leader_offers_only_the_nodes_still_alive() {
        let (mut e, _tx) = ext();
        let mut a = app();
        e.init(&mut a);
        e.demo.nodes[1].proc_ = Proc::Killed;
        e.demo.nodes[2].proc_ = Proc::Paused;
        e.on_input(&mut a, DemoInput::Reap);
        assert_eq!(a.around.known_ids, ["node-1", "node-3"]);
        e.demo.node_exited(0, Some(1), SystemTime::now());
        e.demo.nodes[1].proc_ = Proc::Running;
        e.on_key(&mut a, key('1'));
        assert_eq!(a.around.known_ids, ["node-2", "node-3"]);
    }

    #[tokio::test]
    async fn the_demo_sets_up_the_dashboard_and_takes_its_keys_only_outside_bars_and_dialogs() {
        let (mut e, _tx) = ext();
        let mut a = app();
        e.init(&mut a);
        assert_eq!(a.around.known_ids, ["node-1", "node-2", "node-3"]);
        assert!(a.around.quit_asks.is_some() && !a.around.extra_keys.is_empty());
        assert_eq!(e.on_key(&mut a, key('2')), Some(true));
        assert_eq!(e.demo.selected, 1);
        crate::app::update(&mut a, Msg::Action(Action::StartFilter));
        assert_eq!(e.on_key(&mut a, key('3')), None, "typed into the bar");
        assert_eq!(e.demo.selected, 1);
        assert_eq!(e.on_key(&mut a, key('q')), None, "the dashboard's key");
    }

    #[tokio::test]
    async fn a_line_is_a_belief_and_a_closed_channel_does_not_spin() {
        let (mut e, tx) = ext();
        let mut a = app();
        let text =
            r#"{"at":"2026-11-22T19:20:01Z","node":"node-2","election":"demo","belief":"leader"}"#;
        tx.send(NodeOutput {
            node: 1,
            text: text.into(),
        })
        .await
        .expect("open");
        // The first reap tick is due at once; the line may come before or after it.
        for _ in 0..2 {
            let input = e.next().await;
            e.on_input(&mut a, input);
        }
        assert_eq!(e.demo.nodes[1].belief, "LEADER");
        // Every sender gone: the next input is the reap tick, a full period later.
        drop(tx);
        let (other, _rx) = mpsc::channel(1);
        e.sup = Supervisor::new(Vec::new(), Vec::new(), 3, other).expect("supervisor");
        let t0 = Instant::now();
        assert!(matches!(e.next().await, DemoInput::Reap));
        assert!(t0.elapsed() >= REAP_EVERY / 2, "waited, not spun");
    }

    #[tokio::test]
    async fn the_failover_clock_keeps_the_screen_ticking() {
        let (mut e, _tx) = ext();
        let a = app();
        let fast = Duration::from_millis(100);
        assert_eq!(e.tick_interval(&a, fast), None);
        e.demo.failing_over = Some((Instant::now(), "node-1".into()));
        assert_eq!(e.tick_interval(&a, fast), Some(fast));
    }
}
