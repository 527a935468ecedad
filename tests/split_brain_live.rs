//! Split brain from real beliefs: three `electop node --json` on SQLite (sql-lease), the
//! leader paused (SIGSTOP) until another takes over, then resumed. The paused node believes
//! it leads until it runs again and notices, so the two overlap; the belief lines they
//! printed, fed to the split-brain module, must say exactly that and nothing more.

mod common;

use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::SystemTime;

use common::sqlstore::Store;
use electop::model::split_brain::{BeliefChange, SplitBrain, overlaps};

use common::T;

/// A running node and every line it printed, each with the wall time it arrived here.
struct Node {
    id: String,
    child: Child,
    lines: Receiver<(SystemTime, String)>,
    seen: Vec<(SystemTime, String)>,
}

impl Node {
    fn start(home: &std::path::Path, url: &str, id: &str) -> Node {
        let mut child = common::electop::command(home)
            .args(["--sql", url, "--scheme", "sql-lease", "node"])
            .args(["--election", "jobs", "--id", id, "--json", "--create-table"])
            .args(["--ttl", "2000ms", "--renew", "500ms", "--retry", "300ms"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn electop node");
        let out = child.stdout.take().expect("piped stdout");
        let lines = common::lines::read_lines(out, |l| (l.wall, l.text));
        Node {
            id: id.to_string(),
            child,
            lines,
            seen: Vec::new(),
        }
    }

    fn pump(&mut self) {
        while let Ok(l) = self.lines.try_recv() {
            self.seen.push(l);
        }
    }

    /// The node's belief changes, with the time each arrived.
    fn changes(&self) -> impl Iterator<Item = (SystemTime, BeliefChange)> + '_ {
        self.seen
            .iter()
            .filter_map(|(got, l)| BeliefChange::from_node_line(l).map(|c| (*got, c)))
    }

    /// The latest belief: whether it leads, and when that line arrived.
    fn leads(&self) -> Option<(bool, SystemTime)> {
        self.changes().last().map(|(got, c)| (c.leads, got))
    }

    fn signal(&self, sig: &str) {
        let ok = Command::new("kill")
            .args([sig, &self.child.id().to_string()])
            .status()
            .expect("kill")
            .success();
        assert!(ok, "kill {sig} {}", self.id);
    }

    fn dump(&self) -> String {
        let lines: Vec<&str> = self.seen.iter().map(|(_, l)| l.as_str()).collect();
        format!("{}:\n  {}", self.id, lines.join("\n  "))
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        // A paused process ignores SIGKILL's exit until it runs again.
        let _ = Command::new("kill")
            .args(["-CONT", &self.child.id().to_string()])
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits until `f` finds something in the nodes' lines; panics with every line after `T`.
fn wait_for<R>(nodes: &mut [Node], what: &str, mut f: impl FnMut(&[Node]) -> Option<R>) -> R {
    common::wait_for(what, T, || {
        nodes.iter_mut().for_each(Node::pump);
        f(nodes).ok_or_else(|| {
            let dump: Vec<String> = nodes.iter().map(Node::dump).collect();
            dump.join("\n")
        })
    })
}

#[test]
fn a_paused_leader_and_its_successor_overlap_until_it_notices() {
    let store = Store::sqlite();
    let home = tempfile::tempdir().expect("tempdir");
    let mut nodes: Vec<Node> = ["node-1", "node-2", "node-3"]
        .iter()
        .map(|id| Node::start(home.path(), &store.url(), id))
        .collect();
    let old = wait_for(&mut nodes, "one node leads", |ns| {
        let leading: Vec<usize> = (0..ns.len())
            .filter(|i| ns[*i].leads().is_some_and(|(l, _)| l))
            .collect();
        (leading.len() == 1).then(|| leading[0])
    });
    nodes[old].signal("-STOP");
    let (new, seen) = wait_for(&mut nodes, "another node takes over", |ns| {
        (0..ns.len())
            .filter(|i| *i != old)
            .find_map(|i| ns[i].leads().filter(|(l, _)| *l).map(|(_, got)| (i, got)))
    });
    // Taken before the signal is sent: the node may run and print before `kill` returns.
    let resumed = SystemTime::now();
    nodes[old].signal("-CONT");
    wait_for(&mut nodes, "the resumed node notices", |ns| {
        ns[old].leads().filter(|(l, _)| !l).map(|_| ())
    });
    // Everything up to here, in the order it arrived, as the demo would have it.
    let mut arrived: Vec<(SystemTime, BeliefChange)> =
        nodes.iter().flat_map(Node::changes).collect();
    arrived.sort_by_key(|(got, _)| *got);
    let dump: Vec<String> = nodes.iter().map(Node::dump).collect();
    let dump = dump.join("\n");

    let all = overlaps(arrived.iter().map(|(_, c)| c.clone()).collect());
    assert_eq!(all.len(), 1, "one overlap: {all:#?}\n{dump}");
    let o = &all[0];
    assert_eq!(o.nodes, [nodes[old].id.clone(), nodes[new].id.clone()]);
    let takeover = nodes[new].changes().filter(|(_, c)| c.leads).last();
    assert_eq!(Some(o.start), takeover.map(|(_, c)| c.at), "{dump}");
    // The first line after its last "leader" one (the term watchdog may speak before the
    // follower line that follows).
    let old_changes: Vec<_> = nodes[old].changes().collect();
    let last_lead = old_changes.iter().rposition(|(_, c)| c.leads);
    let noticed = last_lead
        .and_then(|i| old_changes.get(i + 1))
        .map(|(_, c)| c.at);
    assert_eq!(o.end, noticed, "ends when the paused one says so:\n{dump}");
    assert!(o.start <= seen, "dated by the node, before it reached us");
    assert!(
        o.end.is_some_and(|e| e >= resumed),
        "a paused node cannot notice before it runs again:\n{dump}"
    );
    assert!(o.duration(resumed) >= resumed.duration_since(seen).unwrap_or_default());

    // Fed one line at a time as they arrived (the demo's way), the same overlap, reported
    // once, when it ended.
    let mut live = SplitBrain::default();
    let mut reported = Vec::new();
    for (_, c) in &arrived {
        reported.extend(live.apply(c));
    }
    assert_eq!(reported, all);
    assert!(live.open().is_empty());
}
