//! The elections of one ZooKeeper source as last read, and the leader changes between two
//! reads of an election's znode, decided by the shared [`change`] rule. Pure: the follow
//! task reads, this decides.

use std::collections::{BTreeMap, BTreeSet};
use std::time::SystemTime;

use super::layout::Znode;
use super::single::Layout;
use crate::backend::change;
use crate::model::{Candidate, Cause, Election, Event, SourceId};

pub(crate) struct ZkTracker {
    source: SourceId,
    source_name: String,
    prefix: String,
    history_limit: usize,
    /// By name; an election whose candidates all went stays, without a leader.
    elections: BTreeMap<String, Election>,
    /// The znode path of each election, to re-read them all after a reconnect.
    parents: BTreeMap<String, String>,
    /// Recipes' lines, or a preset's single holder.
    layout: Layout,
}

/// What one read changed: the elections to send and the events they make.
#[derive(Default, Debug)]
pub(crate) struct Applied {
    pub changed: Vec<Election>,
    pub events: Vec<Event>,
}

impl ZkTracker {
    pub(crate) fn new(source: SourceId, name: String, prefix: String, limit: usize) -> Self {
        ZkTracker {
            source,
            source_name: name,
            prefix,
            history_limit: limit.max(1),
            elections: BTreeMap::new(),
            parents: BTreeMap::new(),
            layout: Layout::Recipes,
        }
    }

    /// Reads the elections as `layout` lays them out (a preset's), not as recipes' lines.
    pub(crate) fn with_layout(mut self, layout: Layout) -> Self {
        self.layout = layout;
        self
    }

    /// Every election as it stands.
    pub(crate) fn elections(&self) -> Vec<Election> {
        self.elections.values().cloned().collect()
    }

    /// The first read sets the scene: no history, no events.
    pub(crate) fn load(&mut self, nodes: &[Znode]) -> Vec<Election> {
        for e in self.layout.elections(self.source, &self.prefix, nodes) {
            self.remember(&e, nodes);
            self.elections.insert(e.name.clone(), e);
        }
        self.elections()
    }

    /// A full re-read (after a reconnect: watch events during the gap are lost, ZOOKEEPER-4698):
    /// every election known or found is compared, so what changed meanwhile is reported.
    pub(crate) fn resync(&mut self, nodes: &[Znode], at: SystemTime) -> Applied {
        let mut parents: BTreeSet<String> = self.parents.values().cloned().collect();
        parents.extend(
            nodes
                .iter()
                .filter(|n| self.layout.holds(n))
                .map(|n| n.parent().to_string()),
        );
        let mut out = Applied::default();
        for parent in parents {
            let children: Vec<Znode> = nodes
                .iter()
                .filter(|n| n.parent() == parent)
                .cloned()
                .collect();
            self.apply_into(&parent, &children, at, &mut out);
        }
        out
    }

    /// The children of `parent` as just read (empty when it is gone).
    pub(crate) fn apply(&mut self, parent: &str, children: &[Znode], at: SystemTime) -> Applied {
        let mut out = Applied::default();
        self.apply_into(parent, children, at, &mut out);
        out
    }

    fn remember(&mut self, e: &Election, nodes: &[Znode]) {
        if let Some(parent) = self.layout.parent_of(&self.prefix, &e.name) {
            self.parents.insert(e.name.clone(), parent);
        } else if let Some(leader) = &e.leader
            && let Some(n) = nodes.iter().find(|n| n.path.as_bytes() == leader.raw_key)
        {
            self.parents.insert(e.name.clone(), n.parent().to_string());
        }
    }

    fn apply_into(&mut self, parent: &str, children: &[Znode], at: SystemTime, out: &mut Applied) {
        let name = self.layout.name(&self.prefix, parent);
        let new = self
            .layout
            .election(self.source, &self.prefix, parent, children);
        let Some(old) = self.elections.get(&name) else {
            // Not known and still no candidate there: nothing to say.
            let Some(e) = new else { return };
            // A new election: its first leader is elected now.
            self.remember(&e, children);
            let mut e = e;
            self.record_change(&mut e, None, at, out);
            self.elections.insert(name, e.clone());
            out.changed.push(e);
            return;
        };
        let mut e = old.clone();
        let before = e.leader.take();
        let scheme = self.layout.scheme();
        let fresh = new.unwrap_or_else(|| Election::new(self.source, name.clone(), scheme));
        e.candidates = fresh.candidates;
        e.leader = fresh.leader;
        e.notes = fresh.notes;
        if e.candidates == old.candidates && e.leader == old.leader && e.notes == old.notes {
            return;
        }
        if e.leader.is_some() {
            self.remember(&e, children);
        }
        self.record_change(&mut e, before.as_ref(), at, out);
        self.elections.insert(name, e.clone());
        out.changed.push(e);
    }

    /// The leader change between `before` and `e.leader`, if any, into `e`'s history and
    /// the events. The revision is the zxid that created the new leader's node.
    fn record_change(
        &self,
        e: &mut Election,
        before: Option<&Candidate>,
        at: SystemTime,
        out: &mut Applied,
    ) {
        let after = e.leader.as_ref();
        // One node is one tenure: the same path created by the same transaction.
        let same_tenure = match (before, after) {
            (Some(b), Some(a)) => b.raw_key == a.raw_key && b.create_revision == a.create_revision,
            _ => false,
        };
        // The old leader's node is gone: its session ended or someone deleted it, which
        // one ZooKeeper does not say here (telling them apart by whether that session
        // lives on is the next step, with the deposed holder).
        let gone = || Cause::Unknown;
        let Some(change) = change::decide(
            before.map(|c| c.id.as_str()),
            after.map(|c| c.id.as_str()),
            same_tenure,
            gone,
            // The holder rewrote its own node's data.
            Cause::Proclaimed,
        ) else {
            return;
        };
        let revision = after
            .map(|c| c.create_revision)
            .or(before.map(|c| c.mod_revision));
        let recorded = change.record(e, None, (Some(at), revision), self.history_limit);
        out.events
            .push(recorded.event(&self.source_name, &e.name, false));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::EventKind;

    fn node(path: &str, data: &str, czxid: i64) -> Znode {
        Znode {
            path: path.into(),
            data: data.as_bytes().to_vec(),
            czxid,
            mzxid: czxid,
            ephemeral_owner: 0x100 + czxid,
        }
    }

    fn tracker() -> ZkTracker {
        ZkTracker::new(0, "zk1".into(), "/election".into(), 10)
    }

    fn kinds(a: &Applied) -> Vec<(EventKind, Option<&str>, Option<&str>)> {
        a.events
            .iter()
            .map(|e| (e.kind, e.from.as_deref(), e.to.as_deref()))
            .collect()
    }

    #[test]
    fn the_first_read_reports_no_change() {
        let mut t = tracker();
        let got = t.load(&[
            node("/election/jobs/a__lock__0000000000", "n1", 10),
            node("/election/jobs/b__lock__0000000001", "n2", 11),
        ]);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].transitions, 0);
        assert_eq!(got[0].leader.as_ref().map(|l| l.id.as_str()), Some("n1"));
    }

    #[test]
    fn the_next_in_line_leads_when_the_leader_node_goes() {
        let mut t = tracker();
        let second = node("/election/jobs/b__lock__0000000001", "n2", 11);
        t.load(&[
            node("/election/jobs/a__lock__0000000000", "n1", 10),
            second.clone(),
        ]);
        let got = t.apply(
            "/election/jobs",
            std::slice::from_ref(&second),
            SystemTime::now(),
        );
        assert_eq!(
            kinds(&got),
            [(EventKind::LeaderChanged, Some("n1"), Some("n2"))]
        );
        assert_eq!(got.events[0].revision, Some(11));
        assert_eq!(got.changed[0].candidates.len(), 1);
        let again = t.apply("/election/jobs", &[second], SystemTime::now());
        assert!(
            again.changed.is_empty() && again.events.is_empty(),
            "nothing new"
        );
        let gone = t.apply("/election/jobs", &[], SystemTime::now());
        assert_eq!(kinds(&gone), [(EventKind::LeaderLost, Some("n2"), None)]);
        assert!(gone.changed[0].is_empty(), "listed, empty");
    }

    #[test]
    fn a_new_waiter_changes_the_line_but_not_the_leader() {
        let mut t = tracker();
        let first = node("/election/jobs/a__lock__0000000000", "n1", 10);
        t.load(std::slice::from_ref(&first));
        let got = t.apply(
            "/election/jobs",
            &[first, node("/election/jobs/c__lock__0000000002", "n3", 12)],
            SystemTime::now(),
        );
        assert!(got.events.is_empty());
        assert_eq!(got.changed[0].candidates.len(), 2);
    }

    #[test]
    fn a_new_election_elects_and_a_resync_finds_what_changed_meanwhile() {
        let mut t = tracker();
        let got = t.apply(
            "/election/new",
            &[node("/election/new/x__lock__0000000000", "n9", 20)],
            SystemTime::now(),
        );
        assert_eq!(kinds(&got), [(EventKind::LeaderElected, None, Some("n9"))]);
        // While away, that election emptied and another appeared.
        let back = t.resync(
            &[node("/election/other/_c_u-latch-0000000003", "m1", 30)],
            SystemTime::now(),
        );
        // In znode path order: /election/new, then /election/other.
        assert_eq!(
            kinds(&back),
            [
                (EventKind::LeaderLost, Some("n9"), None),
                (EventKind::LeaderElected, None, Some("m1")),
            ]
        );
    }
}
