//! The elections of one ZooKeeper source as last read, and the leader changes between two
//! reads of an election's znode, decided by the shared [`change`] rule. Pure: the follow
//! task reads, this decides.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::time::SystemTime;

use super::layout::{self, Znode};
use crate::backend::change;
use crate::model::{Candidate, Cause, Election, Event, EventKind, Scheme, SourceId};

pub(crate) struct ZkTracker {
    source: SourceId,
    source_name: String,
    prefix: String,
    history_limit: usize,
    /// By name; an election whose candidates all went stays, without a leader.
    elections: BTreeMap<String, Election>,
    /// The znode path of each election, to re-read them all after a reconnect.
    parents: BTreeMap<String, String>,
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
        }
    }

    /// Every election as it stands.
    pub(crate) fn elections(&self) -> Vec<Election> {
        self.elections.values().cloned().collect()
    }

    /// The first read sets the scene: no history, no events.
    pub(crate) fn load(&mut self, nodes: &[Znode]) -> Vec<Election> {
        for e in layout::elections(self.source, &self.prefix, nodes) {
            self.remember(&e, nodes);
            self.elections.insert(e.name.clone(), e);
        }
        self.elections()
    }

    /// A full re-read (after a reconnect: watch events during the gap are lost, ZOOKEEPER-4698):
    /// every election known or found is compared, so what changed meanwhile is reported,
    /// elections in the zxid order of their changes (as the watch would have told them).
    pub(crate) fn resync(&mut self, nodes: &[Znode], at: SystemTime) -> Applied {
        let mut parents: BTreeSet<String> = self.parents.values().cloned().collect();
        parents.extend(
            nodes
                .iter()
                .filter(|n| layout::recipe(n).is_some())
                .map(|n| n.parent().to_string()),
        );
        let held: HashSet<i64> = nodes.iter().map(|n| n.ephemeral_owner).collect();
        let mut out = Applied::default();
        let mut groups: Vec<(Option<i64>, Vec<Event>)> = Vec::new();
        for parent in parents {
            let children: Vec<Znode> = nodes
                .iter()
                .filter(|n| n.parent() == parent)
                .cloned()
                .collect();
            let mut one = Applied::default();
            self.apply_into(&parent, &children, (at, Seen::Resync(&held)), &mut one);
            out.changed.append(&mut one.changed);
            // The latest zxid seen in an election's change bounds it from below (a deletion's
            // own zxid is not read, only the zxids of the nodes involved).
            let zxid = one.events.iter().filter_map(|e| e.revision).max();
            groups.push((zxid, one.events));
        }
        // Stable: elections whose changes carry no zxid keep their path order, last.
        groups.sort_by_key(|(zxid, _)| zxid.unwrap_or(i64::MAX));
        out.events = groups.into_iter().flat_map(|(_, e)| e).collect();
        out
    }

    /// The children of `parent` as just read (empty when it is gone). `held`: sessions
    /// known to hold a node now (see [`Self::leaving_session`]).
    pub(crate) fn apply(
        &mut self,
        parent: &str,
        children: &[Znode],
        at: SystemTime,
        held: &HashSet<i64>,
    ) -> Applied {
        let mut out = Applied::default();
        self.apply_into(parent, children, (at, Seen::Live(held)), &mut out);
        out
    }

    /// When the leader's node of `parent` is not among `children`: its session, and the
    /// other nodes electop saw that session hold. Whether one of those is still there (read
    /// after the event, so after any session close that took them all) tells a deleted
    /// node from an ended session.
    pub(crate) fn leaving_session(
        &self,
        parent: &str,
        children: &[Znode],
    ) -> Option<(i64, Vec<String>)> {
        let name = layout::election_name(&self.prefix, parent);
        let leader = self.elections.get(&name)?.leader.as_ref()?;
        if children.iter().any(|n| n.path.as_bytes() == leader.raw_key) {
            return None;
        }
        let session = session_of(leader)?;
        let others = self
            .elections
            .values()
            .flat_map(|e| &e.candidates)
            .filter(|c| session_of(c) == Some(session) && c.raw_key != leader.raw_key)
            .map(|c| String::from_utf8_lossy(&c.raw_key).into_owned())
            .collect();
        Some((session, others))
    }

    fn remember(&mut self, e: &Election, nodes: &[Znode]) {
        if let Some(leader) = &e.leader
            && let Some(n) = nodes.iter().find(|n| n.path.as_bytes() == leader.raw_key)
        {
            self.parents.insert(e.name.clone(), n.parent().to_string());
        }
    }

    fn apply_into(
        &mut self,
        parent: &str,
        children: &[Znode],
        (at, seen): (SystemTime, Seen<'_>),
        out: &mut Applied,
    ) {
        let name = layout::election_name(&self.prefix, parent);
        let new = layout::election(self.source, &self.prefix, parent, children);
        let old = self.elections.get(&name);
        if old.is_none() && new.is_none() {
            // Not known and still no candidate there: nothing to say.
            return;
        }
        let mut e = old
            .cloned()
            .unwrap_or_else(|| Election::new(self.source, name.clone(), Scheme::ZkRecipe));
        let old_line = std::mem::take(&mut e.candidates);
        let before = e.leader.take();
        if let Some(fresh) = new {
            e.candidates = fresh.candidates;
            e.leader = fresh.leader;
        }
        if e.candidates == old_line && e.leader == before {
            // Put back as it was: nothing changed.
            e.candidates = old_line;
            e.leader = before;
            self.elections.insert(name, e);
            return;
        }
        if e.leader.is_some() {
            self.remember(&e, children);
        }
        self.elections.insert(name.clone(), e);
        let gone = || self.departure(before.as_ref(), seen);
        let change = self.decide(&name, before.as_ref(), gone);
        let Some(e) = self.elections.get_mut(&name) else {
            return;
        };
        if let Some(change) = change {
            let after = e.leader.as_ref();
            let revision = after
                .map(|c| c.create_revision)
                .or(before.as_ref().map(|c| c.mod_revision));
            let recorded = change.record(e, None, (Some(at), revision), self.history_limit);
            out.events
                .push(recorded.event(&self.source_name, &e.name, false));
        }
        out.events
            .extend(line_events(&self.source_name, e, &old_line, at));
        out.changed.push(e.clone());
    }

    /// The leader change between `before` and the election's leader now, if any.
    fn decide(
        &self,
        name: &str,
        before: Option<&Candidate>,
        gone: impl FnOnce() -> Cause,
    ) -> Option<change::LeaderChange> {
        let after = self.elections.get(name).and_then(|e| e.leader.as_ref());
        // One node is one tenure: the same path created by the same transaction.
        let same_tenure = match (before, after) {
            (Some(b), Some(a)) => b.raw_key == a.raw_key && b.create_revision == a.create_revision,
            _ => false,
        };
        change::decide(
            before.map(|c| c.id.as_str()),
            after.map(|c| c.id.as_str()),
            same_tenure,
            gone,
            // The holder rewrote its own node's data.
            Cause::Proclaimed,
        )
    }

    /// Why the old leader's node went. ZooKeeper's watch event does not say whether its
    /// session ended or someone deleted it; but a session that still holds another node
    /// is alive, so that node was deleted (a resignation, as etcd calls a delete with the
    /// lease alive). Otherwise: gone, cause untold live, and unknown after a gap (other
    /// changes may have come and gone unseen).
    fn departure(&self, old: Option<&Candidate>, seen: Seen<'_>) -> Cause {
        let Some(session) = old.and_then(session_of) else {
            return Cause::Unknown;
        };
        match seen {
            Seen::Live(held) | Seen::Resync(held) if held.contains(&session) => Cause::Resigned,
            Seen::Live(_) => Cause::NodeGone,
            Seen::Resync(_) => Cause::Unknown,
        }
    }
}

/// How a read came: from a watch event, or from a full re-read after a gap; each with the
/// sessions known to hold a node as of that read.
#[derive(Clone, Copy)]
enum Seen<'a> {
    Live(&'a HashSet<i64>),
    Resync(&'a HashSet<i64>),
}

/// The session holding a candidate's node, from its `0x…` stamp.
fn session_of(c: &Candidate) -> Option<i64> {
    let hex = c.stamp.as_deref()?.strip_prefix("0x")?;
    u64::from_str_radix(hex, 16).ok().map(|s| s as i64)
}

/// Candidates whose node joined or left the line (by node path), as events.
fn line_events(source: &str, e: &Election, old: &[Candidate], at: SystemTime) -> Vec<Event> {
    let has = |line: &[Candidate], key: &[u8]| line.iter().any(|c| c.raw_key == key);
    let event = |kind, c: &Candidate, joined: bool| Event {
        at: Some(at),
        source: source.to_string(),
        election: Some(e.name.clone()),
        kind,
        from: (!joined).then(|| c.id.clone()),
        to: joined.then(|| c.id.clone()),
        cause: None,
        // The zxid that created the node (when it left, its last change).
        revision: Some(if joined {
            c.create_revision
        } else {
            c.mod_revision
        }),
        replayed: false,
        detail: c.stamp.as_ref().map(|s| format!("session {s}")),
    };
    let joined = e
        .candidates
        .iter()
        .filter(|c| !has(old, &c.raw_key))
        .map(|c| event(EventKind::CandidateJoined, c, true));
    let left = old
        .iter()
        .filter(|c| !has(&e.candidates, &c.raw_key))
        .map(|c| event(EventKind::CandidateLeft, c, false));
    joined.chain(left).collect()
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

    fn none() -> HashSet<i64> {
        HashSet::new()
    }

    /// Leader changes only (the line's joins and leaves are checked on their own).
    fn leaders(a: &Applied) -> Vec<(EventKind, Option<&str>, Option<&str>)> {
        kinds(a)
            .into_iter()
            .filter(|(k, _, _)| !matches!(k, EventKind::CandidateJoined | EventKind::CandidateLeft))
            .collect()
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

    fn causes(a: &Applied) -> Vec<Option<Cause>> {
        a.events
            .iter()
            .filter(|e| e.cause.is_some())
            .map(|e| e.cause)
            .collect()
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
            &none(),
        );
        assert_eq!(
            kinds(&got),
            [
                (EventKind::LeaderChanged, Some("n1"), Some("n2")),
                (EventKind::CandidateLeft, Some("n1"), None),
            ]
        );
        // Its session holds nothing else: gone, and ZooKeeper does not say why.
        assert_eq!(causes(&got), [Some(Cause::NodeGone)]);
        assert_eq!(got.events[0].revision, Some(11));
        assert_eq!(got.events[1].detail.as_deref(), Some("session 0x10a"));
        assert_eq!(got.changed[0].candidates.len(), 1);
        let again = t.apply("/election/jobs", &[second], SystemTime::now(), &none());
        assert!(
            again.changed.is_empty() && again.events.is_empty(),
            "nothing new"
        );
        let gone = t.apply("/election/jobs", &[], SystemTime::now(), &none());
        assert_eq!(leaders(&gone), [(EventKind::LeaderLost, Some("n2"), None)]);
        assert!(gone.changed[0].is_empty(), "listed, empty");
    }

    /// A session still holding a node elsewhere is alive: its leader node was deleted,
    /// which is a resignation (as etcd calls a delete with the lease alive).
    #[test]
    fn a_leader_node_deleted_while_its_session_lives_is_resigned() {
        let mut t = tracker();
        let mut elsewhere = node("/election/other/x__lock__0000000000", "n1", 12);
        let leader = node("/election/jobs/a__lock__0000000000", "n1", 10);
        elsewhere.ephemeral_owner = leader.ephemeral_owner;
        let second = node("/election/jobs/b__lock__0000000001", "n2", 11);
        t.load(&[leader.clone(), second.clone(), elsewhere.clone()]);
        let children = std::slice::from_ref(&second);
        let (session, others) = t
            .leaving_session("/election/jobs", children)
            .expect("the leader's node went");
        assert_eq!(session, leader.ephemeral_owner);
        assert_eq!(others, [elsewhere.path.clone()]);
        let held = HashSet::from([session]);
        let got = t.apply("/election/jobs", children, SystemTime::now(), &held);
        assert_eq!(causes(&got), [Some(Cause::Resigned)]);
        assert!(t.leaving_session("/election/jobs", children).is_none());
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
            &none(),
        );
        assert_eq!(
            kinds(&got),
            [(EventKind::CandidateJoined, None, Some("n3"))]
        );
        assert_eq!(got.events[0].revision, Some(12), "the zxid that created it");
        assert_eq!(got.changed[0].candidates.len(), 2);
    }

    #[test]
    fn a_new_election_elects_and_a_resync_finds_what_changed_meanwhile() {
        let mut t = tracker();
        let got = t.apply(
            "/election/new",
            &[node("/election/new/x__lock__0000000000", "n9", 20)],
            SystemTime::now(),
            &none(),
        );
        assert_eq!(
            kinds(&got),
            [
                (EventKind::LeaderElected, None, Some("n9")),
                (EventKind::CandidateJoined, None, Some("n9")),
            ]
        );
        // While away, that election emptied and another appeared.
        let back = t.resync(
            &[node("/election/other/_c_u-latch-0000000003", "m1", 30)],
            SystemTime::now(),
        );
        // In zxid order: n9's node (zxid 20) before m1's (30).
        assert_eq!(
            leaders(&back),
            [
                (EventKind::LeaderLost, Some("n9"), None),
                (EventKind::LeaderElected, None, Some("m1")),
            ]
        );
        // Changes of the gap went unseen: only the result is known.
        assert_eq!(causes(&back), [Some(Cause::Unknown), Some(Cause::Elected)]);
    }

    /// Changes found by a re-read are told in the order ZooKeeper made them (zxid), not in
    /// the order of the elections' paths.
    #[test]
    fn a_resync_reports_elections_in_zxid_order() {
        let mut t = tracker();
        t.load(&[
            node("/election/a/x__lock__0000000000", "a1", 10),
            node("/election/b/x__lock__0000000000", "b1", 11),
        ]);
        let back = t.resync(
            &[
                node("/election/a/y__lock__0000000001", "a2", 40),
                node("/election/b/y__lock__0000000001", "b2", 30),
            ],
            SystemTime::now(),
        );
        assert_eq!(
            leaders(&back),
            [
                (EventKind::LeaderChanged, Some("b1"), Some("b2")),
                (EventKind::LeaderChanged, Some("a1"), Some("a2")),
            ]
        );
    }
}
