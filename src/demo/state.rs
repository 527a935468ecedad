//! The demo's state beside the dashboard's: each node's process state, belief and recent
//! lines, the selected node, the failover being timed, the split brains seen (two nodes
//! believing they lead at once) and the demo's own events.

use std::collections::VecDeque;
use std::time::{Duration, Instant, SystemTime};

use crate::app::App;
use crate::app::timeline::Stopped;
use crate::model::split_brain::{BeliefChange, Overlap, SplitBrain};

/// Lines kept per node pane.
const LOG_LINES: usize = 50;
/// Lines kept in the demo's event list.
const EVENT_LINES: usize = 100;
/// Kills and pauses kept for the timeline.
const STOPS_KEPT: usize = 64;

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Proc {
    Running,
    Paused,
    Killed,
    Exited(Option<i32>),
}

#[derive(Clone, Debug)]
pub(crate) struct NodeView {
    pub id: String,
    pub proc_: Proc,
    /// The node's own belief, as it last printed it.
    pub belief: String,
    pub log: VecDeque<String>,
    /// Lines of `log` scrolled back from the newest (the wheel on its pane).
    pub scroll: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DemoAction {
    Pick(usize),
    Kill,
    PauseResume,
    Restart,
}

/// The demo's part of the state; the dashboard's (`App`) is the loop's, passed in where a
/// function reads it.
#[derive(Clone, Debug)]
pub(crate) struct Demo {
    pub nodes: Vec<NodeView>,
    pub selected: usize,
    /// The election the nodes take part in, as the dashboard names it.
    pub election: String,
    /// What the demo runs on, for the title.
    pub store: String,
    /// A leader was killed or paused at this instant: time until the dashboard shows another.
    pub failing_over: Option<(Instant, String)>,
    /// The last failover timed, shown until the election's next change, with the election
    /// as it left it (`Mark`).
    pub last_failover: Option<(String, Mark)>,
    /// The nodes' beliefs, as overlaps of believed leadership.
    pub split: SplitBrain,
    /// What happened, oldest first: split brains, failovers, the operator's keys.
    pub events: VecDeque<DemoEvent>,
    /// Events noted since the start (`events` keeps only the last ones): what is new since
    /// the dashboard's events view was last given them.
    pub noted: u64,
    /// Each node killed, paused or exited, and until when (oldest first): the timeline
    /// draws a leader's tenure as a gap while it was, though the store still named it.
    pub stops: VecDeque<Stopped>,
}

/// The demo's election at a moment, to tell a later change: its count of changes and its
/// leader on screen.
pub(crate) type Mark = Option<(u64, Option<String>)>;

/// A line of the demo's events.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DemoEvent {
    pub at: SystemTime,
    pub text: String,
    /// `HH:MM:SS.d what happened`.
    pub line: String,
    /// A split brain: shown in the alarm colour.
    pub alarm: bool,
}

impl Demo {
    pub(crate) fn new(ids: &[String], election: &str, store: &str) -> Self {
        Demo {
            nodes: ids
                .iter()
                .map(|id| NodeView {
                    id: id.clone(),
                    proc_: Proc::Running,
                    belief: "starting".into(),
                    log: VecDeque::new(),
                    scroll: 0,
                })
                .collect(),
            selected: 0,
            election: election.to_string(),
            store: store.to_string(),
            failing_over: None,
            last_failover: None,
            split: SplitBrain::default(),
            events: VecDeque::new(),
            noted: 0,
            stops: VecDeque::new(),
        }
    }

    /// `node` stopped leading anything at `at` (`how`: killed, paused, exited).
    pub(crate) fn stop_began(&mut self, node: usize, at: SystemTime, how: &str) {
        let Some(holder) = self.nodes.get(node).map(|n| n.id.clone()) else {
            return;
        };
        self.stop_ended(node, at);
        self.stops.push_back(Stopped {
            election: self.election.clone(),
            holder,
            from: at,
            to: None,
            how: how.to_string(),
        });
        while self.stops.len() > STOPS_KEPT {
            self.stops.pop_front();
        }
    }

    /// `node` runs again at `at` (resumed, restarted).
    pub(crate) fn stop_ended(&mut self, node: usize, at: SystemTime) {
        let Some(id) = self.nodes.get(node).map(|n| n.id.as_str()) else {
            return;
        };
        for s in self.stops.iter_mut() {
            if s.holder == id && s.to.is_none() {
                s.to = Some(at);
            }
        }
    }

    /// Adds a line to the demo's events (and to its log, which outlives the screen).
    pub(crate) fn note(&mut self, at: SystemTime, text: String) {
        tracing::info!("demo: {text}");
        self.push_event(at, text, false);
    }

    fn push_event(&mut self, at: SystemTime, text: String, alarm: bool) {
        self.events.push_back(DemoEvent {
            at,
            line: format!("{} {text}", clock_tenths(at)),
            text,
            alarm,
        });
        self.noted += 1;
        while self.events.len() > EVENT_LINES {
            self.events.pop_front();
        }
    }

    /// A node's belief changed; an overlap that ends is a split brain over, recorded.
    fn believe(&mut self, change: BeliefChange) {
        for o in self.split.apply(&change) {
            // Only overlaps that ended come back, so their length needs no clock.
            let took = secs(o.duration(o.end.unwrap_or(o.start)));
            let (a, b) = (&o.nodes[0], &o.nodes[1]);
            tracing::warn!(
                "demo: split brain: {a} and {b} both believed they led for {took}, from {}",
                clock_tenths(o.start)
            );
            let text = format!("SPLIT BRAIN over: {a} and {b}, {took}");
            self.push_event(o.end.unwrap_or(o.start), text, true);
        }
    }

    /// On the way out: a split brain still going on is logged too, as it will never end here.
    pub(crate) fn log_open_split_brains(&self, now: SystemTime) {
        for o in self.split.open() {
            tracing::warn!(
                "demo: split brain: {} and {} still both believed they led at exit, for {} from {}",
                o.nodes[0],
                o.nodes[1],
                secs(o.duration(now)),
                clock_tenths(o.start)
            );
        }
    }

    /// The node stopped believing anything (killed, exited): it no longer leads.
    pub(crate) fn belief_ended(&mut self, node: usize, at: SystemTime) {
        if let Some(n) = self.nodes.get(node) {
            let node = n.id.clone();
            self.believe(BeliefChange {
                node,
                at,
                leads: false,
            });
        }
    }

    /// The split brain going on at `now`, if any: the longest, and how many more.
    pub(crate) fn split_now(&self, now: SystemTime) -> Option<(&Overlap, usize)> {
        let open = self.split.open();
        open.iter()
            .max_by_key(|o| o.duration(now))
            .map(|o| (o, open.len() - 1))
    }

    /// Whether `node` is one of those in a split brain now.
    pub(crate) fn in_split(&self, node: &str) -> bool {
        self.split
            .open()
            .iter()
            .any(|o| o.nodes.iter().any(|n| n == node))
    }

    /// The leader the dashboard shows for the demo's election.
    pub(crate) fn leader_on_screen<'a>(&self, app: &'a App) -> Option<&'a str> {
        self.election_on_screen(app)
            .and_then(|e| e.leader.as_ref())
            .map(|l| l.id.as_str())
    }

    /// A line a node printed: JSON beliefs become its belief; everything goes to its log.
    pub(crate) fn node_line(&mut self, node: usize, text: &str) {
        let Some(n) = self.nodes.get_mut(node) else {
            return;
        };
        let change = BeliefChange::from_node_line(text).map(|c| BeliefChange {
            node: n.id.clone(),
            ..c
        });
        let short = match serde_json::from_str::<serde_json::Value>(text) {
            Ok(v) => {
                let at = v["at"]
                    .as_str()
                    .and_then(|t| t.get(11..19))
                    .unwrap_or("")
                    .to_string();
                if let Some(b) = v["belief"].as_str() {
                    n.belief = match (b, v["leader"].as_str(), v["error"].as_str()) {
                        ("leader", _, _) => "LEADER".to_string(),
                        ("follower", Some(l), _) => format!("follower of {l}"),
                        ("follower", None, _) => "follower (no leader)".to_string(),
                        ("deposed", _, _) => match v["reason"].as_str() {
                            Some(r) => format!("deposed: {r}"),
                            None => "deposed".to_string(),
                        },
                        (_, _, Some(e)) => format!("no contact: {e}"),
                        (other, _, _) => other.to_string(),
                    };
                    format!("{at} {}", n.belief)
                } else {
                    format!("{at} {}", v["event"].as_str().unwrap_or(text))
                }
            }
            Err(_) => text.to_string(),
        };
        n.log.push_back(short);
        // Scrolled back, the pane keeps showing the same lines.
        if n.scroll > 0 {
            n.scroll += 1;
        }
        while n.log.len() > LOG_LINES {
            n.log.pop_front();
        }
        n.scroll = n.scroll.min(n.log.len());
        if let Some(c) = change {
            self.believe(c);
        }
    }

    /// The nodes a leader can be forced to: those still running, or paused (they lead when
    /// resumed). A killed or exited node would be a leader nobody is.
    pub(crate) fn live_ids(&self) -> Vec<String> {
        self.nodes
            .iter()
            .filter(|n| matches!(n.proc_, Proc::Running | Proc::Paused))
            .map(|n| n.id.clone())
            .collect()
    }

    /// The operator killed `node` at `at`: it believes nothing from then on, and its pane
    /// says when (its last line would otherwise be, say, when it became leader).
    pub(crate) fn killed(&mut self, node: usize, at: SystemTime) {
        self.belief_ended(node, at);
        let Some(n) = self.nodes.get_mut(node) else {
            return;
        };
        n.proc_ = Proc::Killed;
        n.belief = "killed (SIGKILL)".into();
        let id = n.id.clone();
        self.stop_began(node, at, "killed (SIGKILL)");
        self.log_at(node, at, "killed (SIGKILL)");
        self.note(at, format!("{id} killed (SIGKILL)"));
    }

    /// A line in `node`'s pane for what happened to its process, timed like its own lines.
    pub(crate) fn log_at(&mut self, node: usize, at: SystemTime, what: &str) {
        let Some(n) = self.nodes.get_mut(node) else {
            return;
        };
        n.log
            .push_back(format!("{} {what}", crate::model::time::clock(at)));
        // Scrolled back, the pane keeps showing the same lines.
        if n.scroll > 0 {
            n.scroll += 1;
        }
        while n.log.len() > LOG_LINES {
            n.log.pop_front();
        }
        n.scroll = n.scroll.min(n.log.len());
    }

    pub(crate) fn node_exited(&mut self, node: usize, code: Option<i32>, at: SystemTime) {
        self.belief_ended(node, at);
        let Some(n) = self.nodes.get_mut(node) else {
            return;
        };
        // Killed from here: said when it was done, and when.
        if n.proc_ == Proc::Killed {
            return;
        }
        n.proc_ = Proc::Exited(code);
        n.belief = match code {
            Some(c) => format!("exited ({c})"),
            None => "killed".to_string(),
        };
        let what = n.belief.clone();
        self.stop_began(node, at, &what);
        self.log_at(node, at, &what);
    }

    /// Starts the failover clock when the leader on screen is the node being stopped.
    pub(crate) fn stopping(&mut self, app: &App, node: usize, now: Instant) {
        let id = self.nodes.get(node).map(|n| n.id.clone());
        if id.is_some() && self.leader_on_screen(app) == id.as_deref() {
            self.failing_over = id.map(|id| (now, id));
            self.last_failover = None;
        }
    }

    /// The demo's election as the dashboard shows it.
    fn election_on_screen<'a>(&self, app: &'a App) -> Option<&'a crate::model::Election> {
        app.model
            .elections
            .values()
            .find(|e| e.name == self.election)
    }

    /// After the dashboard changed: a new leader on screen (at `app.model.now`) ends the failover
    /// clock; a later change of the election ends the failover's line (it is no longer news).
    pub(crate) fn check_failover(&mut self, app: &App) {
        let mark: Mark = self
            .election_on_screen(app)
            .map(|e| (e.transitions, e.leader.as_ref().map(|l| l.id.clone())));
        if self.last_failover.as_ref().is_some_and(|(_, m)| *m != mark) {
            self.last_failover = None;
        }
        let Some((since, old)) = &self.failing_over else {
            return;
        };
        if let Some(new) = self.leader_on_screen(app)
            && new != old
        {
            let secs = app
                .model
                .now
                .saturating_duration_since(*since)
                .as_secs_f64();
            let text = format!("failover {old} → {new} in {secs:.1} s");
            self.last_failover = Some((text.clone(), mark));
            self.failing_over = None;
            self.note(app.model.wall, text);
        }
    }

    /// The events noted since `since` (a count of `noted`), oldest first, for the
    /// dashboard's events view.
    pub(crate) fn events_since(&self, since: u64) -> impl Iterator<Item = &DemoEvent> {
        let new = usize::try_from(self.noted.saturating_sub(since)).unwrap_or(usize::MAX);
        self.events
            .iter()
            .skip(self.events.len().saturating_sub(new))
    }

    /// The dashboard's split brain alarm for the demo's election follows the nodes' beliefs
    /// (only they know what each believes). Returns whether it changed.
    pub(crate) fn lend_split_brain(&self, app: &mut App) -> bool {
        let split: std::collections::BTreeSet<_> = self
            .split_now(app.model.wall)
            .map(|_| (0, self.election.clone()))
            .into_iter()
            .collect();
        if !app.model.set_split_brain(split) {
            return false;
        }
        crate::app::rows::refresh(app);
        true
    }
}

/// `1.4s`: split brains are short, and tenths are what tell them apart.
pub(super) fn secs(d: Duration) -> String {
    format!("{:.1}s", d.as_secs_f64())
}

/// `HH:MM:SS.d` in UTC, like the nodes' own timestamps.
pub(super) fn clock_tenths(t: SystemTime) -> String {
    let tenths = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.subsec_millis() / 100)
        .unwrap_or(0);
    format!("{}.{tenths}", crate::model::time::clock(t))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Candidate, Election, Scheme, SourceEvent, SourceInfo};
    use std::time::{Duration, SystemTime};

    fn app() -> App {
        App::new(
            vec![SourceInfo::test_sqlite()],
            Instant::now(),
            SystemTime::now(),
        )
    }

    fn demo() -> Demo {
        Demo::new(&["node-1".into(), "node-2".into()], "demo", "sqlite")
    }

    fn lead(app: &mut App, id: &str) {
        let mut e = Election::new(0, "demo".into(), Scheme::SqlLease);
        e.leader = Some(Candidate::plain(id, "demo"));
        crate::app::update(
            app,
            crate::app::Msg::Source(SourceEvent::Elections {
                source: 0,
                elections: vec![e],
            }),
        );
    }

    #[test]
    fn failover_is_timed_from_the_kill_to_the_new_leader_on_screen() {
        let (mut app, mut d) = (app(), demo());
        lead(&mut app, "node-1");
        let t0 = Instant::now();
        d.stopping(&app, 0, t0);
        app.model.now = t0 + Duration::from_secs(3);
        d.check_failover(&app);
        assert!(d.last_failover.is_none(), "same leader still on screen");
        lead(&mut app, "node-2");
        app.model.now = t0 + Duration::from_millis(9_250);
        d.check_failover(&app);
        let shown = |d: &Demo| d.last_failover.as_ref().map(|(t, _)| t.clone());
        assert_eq!(
            shown(&d).as_deref(),
            Some("failover node-1 → node-2 in 9.2 s")
        );
        // Redrawn with nothing new, it stays; the election's next change ends it.
        d.check_failover(&app);
        assert!(shown(&d).is_some());
        lead(&mut app, "node-3");
        d.check_failover(&app);
        assert_eq!(shown(&d), None, "not news after a later change");
    }

    fn line(node: &str, at: &str, belief: &str) -> String {
        format!(
            r#"{{"at":"2026-11-22T19:20:{at}Z","node":"{node}","election":"demo","belief":"{belief}"}}"#
        )
    }

    #[test]
    fn two_nodes_leading_at_once_is_a_split_brain_recorded_when_it_ends() {
        let mut d = demo();
        d.node_line(0, &line("node-1", "01.0", "leader"));
        d.node_line(1, &line("node-2", "04.0", "leader"));
        let now = SystemTime::now();
        let (o, more) = d.split_now(now).expect("going on");
        assert_eq!(
            (o.nodes.clone(), more),
            (["node-1".into(), "node-2".into()], 0)
        );
        assert!(d.in_split("node-2") && d.events.is_empty());
        d.node_line(0, &line("node-1", "05.4", "follower"));
        assert!(d.split_now(now).is_none());
        let last = d.events.back().expect("recorded");
        assert_eq!(
            (last.line.as_str(), last.alarm),
            ("19:20:05.4 SPLIT BRAIN over: node-1 and node-2, 1.4s", true)
        );
        assert_eq!(d.split.count(), 1);
        let new: Vec<&str> = d.events_since(0).map(|e| e.text.as_str()).collect();
        assert_eq!(new, ["SPLIT BRAIN over: node-1 and node-2, 1.4s"]);
        assert_eq!(d.events_since(d.noted).count(), 0);
    }

    #[test]
    fn a_killed_leader_believes_nothing_from_the_kill_on() {
        let mut d = demo();
        d.node_line(0, &line("node-1", "01.0", "leader"));
        let kill = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_375_202);
        d.belief_ended(0, kill);
        d.node_line(1, &line("node-2", "04.0", "leader"));
        assert_eq!(d.split.count(), 0, "{:?}", d.split);
    }

    #[test]
    fn beliefs_come_from_the_nodes_json() {
        let mut d = demo();
        d.node_line(1, r#"{"at":"2026-11-22T19:20:05.1Z","node":"node-2","election":"demo","belief":"follower","leader":"node-1"}"#);
        assert_eq!(d.nodes[1].belief, "follower of node-1");
        assert_eq!(
            d.nodes[1].log.back().map(String::as_str),
            Some("19:20:05 follower of node-1")
        );
        d.node_line(1, r#"{"at":"2026-11-22T19:20:06.3Z","node":"node-2","election":"demo","belief":"deposed","reason":"the row now names node-3"}"#);
        assert_eq!(d.nodes[1].belief, "deposed: the row now names node-3");
        d.node_line(
            1,
            r#"{"at":"2026-11-22T19:20:07Z","node":"node-2","election":"demo","belief":"stopped"}"#,
        );
        assert_eq!(d.nodes[1].belief, "stopped");
        assert_eq!(
            d.nodes[1].log.iter().rev().nth(1).map(String::as_str),
            Some("19:20:06 deposed: the row now names node-3"),
            "the reason stays in the pane's lines"
        );
        d.node_exited(1, Some(0), SystemTime::now());
        assert_eq!(d.nodes[1].proc_, Proc::Exited(Some(0)));
    }
}
