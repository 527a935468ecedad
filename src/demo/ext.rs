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

pub struct DemoExt {
    pub demo: Demo,
    pub sup: Supervisor,
    out: mpsc::Receiver<NodeOutput>,
    reap: tokio::time::Interval,
    /// How many of the demo's events the dashboard's events view has been given.
    forwarded: u64,
}

pub enum DemoInput {
    /// A line a node printed.
    Line(NodeOutput),
    /// Time to look for children that exited.
    Reap,
}

impl DemoExt {
    pub fn new(demo: Demo, sup: Supervisor, out: mpsc::Receiver<NodeOutput>) -> Self {
        let mut reap = tokio::time::interval(REAP_EVERY);
        reap.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        DemoExt {
            demo,
            sup,
            out,
            reap,
            forwarded: 0,
        }
    }
}

impl Extension for DemoExt {
    type Input = DemoInput;

    fn init(&mut self, app: &mut App) {
        app.extra_keys = super::KEYS;
        app.quit_asks = Some("stops every node");
        app.known_ids = self.demo.nodes.iter().map(|n| n.id.clone()).collect();
    }

    async fn next(&mut self) -> DemoInput {
        // The supervisor keeps a sender, so the lines never end; were they to, the reap tick
        // alone would wake the loop, not a closed channel over and over.
        tokio::select! {
            Some(line) = self.out.recv() => DemoInput::Line(line),
            _ = self.reap.tick() => DemoInput::Reap,
        }
    }

    fn on_input(&mut self, _app: &mut App, input: DemoInput) -> bool {
        match input {
            DemoInput::Line(out) => {
                self.demo.node_line(out.node, &out.text);
                true
            }
            DemoInput::Reap => {
                let exited = self.sup.reap();
                for (node, code) in &exited {
                    self.demo.node_exited(*node, *code, SystemTime::now());
                }
                !exited.is_empty()
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
        Some(true)
    }

    fn on_mouse(&mut self, app: &mut App, m: MouseEvent) -> bool {
        view::on_mouse(&mut self.demo, app, m)
    }

    fn before_draw(&mut self, app: &mut App) {
        self.demo.check_failover(app);
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
        let moving = self.demo.failing_over.is_some() || self.demo.split_now(app.wall).is_some();
        moving.then_some(fast)
    }

    fn shutdown(&mut self, app: &App) -> impl Future<Output = ()> {
        self.demo.log_open_split_brains(app.wall);
        self.sup.stop_all(Duration::from_secs(3))
    }
}

/// The demo's new events into the dashboard's events view (`:events`), where they can be
/// filtered and read at any size, beside the store's changes.
pub fn forward_events(d: &Demo, app: &mut App, since: u64) {
    for e in d.events_since(since) {
        app.events.push(LogEntry {
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
pub fn on_demo_action(d: &mut Demo, app: &App, sup: &mut Supervisor, a: DemoAction) {
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
                d.belief_ended(i, wall);
                d.nodes[i].proc_ = Proc::Killed;
                d.nodes[i].belief = "killed (SIGKILL)".into();
                d.note(wall, format!("{id} killed (SIGKILL)"));
            }
        }
        DemoAction::PauseResume => match d.nodes[i].proc_ {
            Proc::Paused if sup.resume(i) => {
                d.nodes[i].proc_ = Proc::Running;
                d.nodes[i].log.push_back("resumed (SIGCONT)".into());
                d.note(wall, format!("{id} resumed (SIGCONT)"));
            }
            Proc::Running if sup.pause(i) => {
                d.stopping(app, i, now);
                d.nodes[i].proc_ = Proc::Paused;
                d.nodes[i].log.push_back("paused (SIGSTOP)".into());
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
                    d.nodes[i].proc_ = Proc::Running;
                    d.nodes[i].belief = "starting".into();
                    d.nodes[i].log.push_back("restarted".into());
                    d.note(wall, format!("{id} restarted"));
                }
                Err(e) => d.nodes[i].log.push_back(format!("restart failed: {e}")),
            }
        }
    }
}
