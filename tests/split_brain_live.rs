//! Split brain from real beliefs: three `electop node --json` on SQLite (sql-lease), the
//! leader paused (SIGSTOP) until another takes over, then resumed. The paused node believes
//! it leads until it runs again and notices, so the two overlap; the belief lines they
//! printed, fed to the split-brain module, must say exactly that and nothing more.

mod common;

use std::time::SystemTime;

use common::node::Node;
use common::sqlstore::Store;
use electop::model::split_brain::{BeliefChange, SplitBrain, overlaps};

use common::T;

/// `electop node --json` on the SQLite table, fast: a 2 s term renewed every 500 ms.
fn start(home: &std::path::Path, url: &str, id: &str) -> Node {
    let mut cmd = common::electop::command(home);
    cmd.args(["--sql", url, "--scheme", "sql-lease", "node"])
        .args(["--election", "jobs", "--id", id, "--json", "--create-table"])
        .args(["--ttl", "2000ms", "--renew", "500ms", "--retry", "300ms"]);
    Node::spawn(&mut cmd, id, "jobs", home.join(format!("{id}.stderr")))
}

/// A node's belief changes, with the wall time each line arrived here.
fn changes(n: &Node) -> impl Iterator<Item = (SystemTime, BeliefChange)> + '_ {
    n.arrived
        .iter()
        .zip(&n.seen)
        .filter_map(|(got, (_, v))| BeliefChange::from_node_line(&v.to_string()).map(|c| (*got, c)))
}

/// The latest belief: whether it leads, and when that line arrived.
fn leads(n: &Node) -> Option<(bool, SystemTime)> {
    changes(n).last().map(|(got, c)| (c.leads, got))
}

fn signal(n: &Node, sig: &str) {
    common::process::signal(sig, &[n.child.id()]);
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
    let home = common::scratch::tempdir();
    let mut nodes: Vec<Node> = ["node-1", "node-2", "node-3"]
        .iter()
        .map(|id| start(home.path(), &store.url(), id))
        .collect();
    let old = wait_for(&mut nodes, "one node leads", |ns| {
        let leading: Vec<usize> = (0..ns.len())
            .filter(|i| leads(&ns[*i]).is_some_and(|(l, _)| l))
            .collect();
        (leading.len() == 1).then(|| leading[0])
    });
    signal(&nodes[old], "-STOP");
    let (new, seen) = wait_for(&mut nodes, "another node takes over", |ns| {
        (0..ns.len())
            .filter(|i| *i != old)
            .find_map(|i| leads(&ns[i]).filter(|(l, _)| *l).map(|(_, got)| (i, got)))
    });
    // Taken before the signal is sent: the node may run and print before `kill` returns.
    let resumed = SystemTime::now();
    signal(&nodes[old], "-CONT");
    wait_for(&mut nodes, "the resumed node notices", |ns| {
        leads(&ns[old]).filter(|(l, _)| !l).map(|_| ())
    });
    // Everything up to here, in the order it arrived, as the demo would have it.
    let mut arrived: Vec<(SystemTime, BeliefChange)> = nodes.iter().flat_map(changes).collect();
    arrived.sort_by_key(|(got, _)| *got);
    let dump: Vec<String> = nodes.iter().map(Node::dump).collect();
    let dump = dump.join("\n");

    let all = overlaps(arrived.iter().map(|(_, c)| c.clone()).collect());
    assert_eq!(all.len(), 1, "one overlap: {all:#?}\n{dump}");
    let o = &all[0];
    assert_eq!(o.nodes, [nodes[old].id.clone(), nodes[new].id.clone()]);
    let takeover = changes(&nodes[new]).filter(|(_, c)| c.leads).last();
    assert_eq!(Some(o.start), takeover.map(|(_, c)| c.at), "{dump}");
    // The first line after its last "leader" one (the term watchdog may speak before the
    // follower line that follows).
    let old_changes: Vec<_> = changes(&nodes[old]).collect();
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
