//! The elections of one ZooKeeper source as last read, and the leader changes between two
//! reads of an election's znode, recorded by the shared election [`Book`]. Pure: the follow
//! task reads, this decides.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::time::{Instant, SystemTime};

use super::deposed::DeposedSessions;
use super::layout::Znode;
use super::sessions::Listing;
use super::single::Layout;
use crate::backend::ForcedMark;
use crate::backend::book::{Book, Step, When};
use crate::backend::change::Changes;
use crate::model::{Candidate, Cause, Election, Event, EventKind, SessionCheck, SourceId};

pub(crate) struct ZkTracker {
    source: SourceId,
    prefix: String,
    /// By name; an election whose candidates all went stays, without a leader.
    elections: BTreeMap<String, Election>,
    /// The znode path of each election, to re-read them all after a reconnect.
    parents: BTreeMap<String, String>,
    /// Recipes' lines, or a preset's single holder.
    layout: Layout,
    /// The shared decision, forced marks and history; a deposed holder is its session.
    book: Book,
    /// The sessions of holders an admin action removed, followed until they are gone.
    pub(crate) deposed: DeposedSessions,
    /// The nodes of each election's znode (by its path) as last known, which each watch
    /// event steps on in the store's order (`steps.rs`).
    nodes: HashMap<String, Vec<Znode>>,
}

/// How many other nodes of a leaving leader's session are looked at to tell a deleted node
/// (the session lives on) from an ended session.
const HELD_NODES_CHECKED: usize = 8;

impl ZkTracker {
    pub(crate) fn new(source: SourceId, name: String, prefix: String, limit: usize) -> Self {
        ZkTracker {
            source,
            prefix,
            elections: BTreeMap::new(),
            parents: BTreeMap::new(),
            layout: Layout::Recipes,
            book: Book::new(name, limit, Some(same_session)),
            deposed: DeposedSessions::default(),
            nodes: HashMap::new(),
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
        for n in nodes.iter().filter(|n| self.layout.holds(n)) {
            let parent = n.parent().to_string();
            self.nodes.entry(parent).or_default().push(n.clone());
        }
        for e in self.layout.elections(self.source, &self.prefix, nodes) {
            self.remember(&e);
            self.elections.insert(e.name.clone(), e);
        }
        self.elections()
    }

    /// A full re-read (after a reconnect: watch events during the gap are lost, ZOOKEEPER-4698):
    /// every election known or found is compared, so what changed meanwhile is reported,
    /// elections in the zxid order of their changes (as the watch would have told them).
    pub(crate) fn resync(&mut self, nodes: &[Znode], at: SystemTime) -> Changes {
        let mut parents: BTreeSet<String> = self.parents.values().cloned().collect();
        parents.extend(
            nodes
                .iter()
                .filter(|n| self.layout.holds(n))
                .map(|n| n.parent().to_string()),
        );
        let held: HashSet<i64> = nodes.iter().map(|n| n.ephemeral_owner).collect();
        // Grouped once: looking each parent's children up in all the nodes made a resync
        // of 10,000 elections 10,000 passes over 40,000 nodes.
        let mut by_parent: std::collections::HashMap<&str, Vec<Znode>> = Default::default();
        for n in nodes {
            by_parent.entry(n.parent()).or_default().push(n.clone());
        }
        let mut out = Changes::default();
        let mut groups: Vec<(Option<i64>, Vec<Event>)> = Vec::new();
        for parent in parents {
            let children = by_parent.remove(parent.as_str()).unwrap_or_default();
            let mut one = Changes::default();
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
    /// known to hold a node now (see [`Self::deleted_leader_session`]).
    pub(crate) fn apply(
        &mut self,
        parent: &str,
        children: &[Znode],
        at: SystemTime,
        held: &HashSet<i64>,
    ) -> Changes {
        let mut out = Changes::default();
        self.apply_into(parent, children, (at, Seen::Live(held)), &mut out);
        out
    }

    /// When the node `deleted` (from a watch event) is the leader's of `parent`: its
    /// session, and the other nodes electop saw that session hold. Whether one of those is
    /// still there (read after the event, so after any session close that took them all)
    /// tells a deleted node from an ended session.
    pub(crate) fn deleted_leader_session(
        &self,
        parent: &str,
        deleted: &str,
    ) -> Option<(i64, Vec<String>)> {
        let name = self.layout.name(&self.prefix, parent);
        let leader = self.elections.get(&name)?.leader.as_ref()?;
        if leader.raw_key != deleted.as_bytes() {
            return None;
        }
        let session = session_of(leader)?;
        let others = self
            .elections
            .values()
            .flat_map(|e| &e.candidates)
            .filter(|c| session_of(c) == Some(session) && c.raw_key != leader.raw_key)
            // A few are enough to tell (the caller checks each in turn); one session may
            // hold every node of 10,000 elections, and this runs at each leader change.
            .take(HELD_NODES_CHECKED)
            .map(|c| String::from_utf8_lossy(&c.raw_key).into_owned())
            .collect();
        Some((session, others))
    }

    /// Where election `e` lives, to re-read it after a reconnect: fixed by the layout, or
    /// the parent of its leader's node (a candidate's key is its node's path). Not found by
    /// looking the leader up among the nodes: `load` does this for every election, and a
    /// search of all the nodes each time made the first read quadratic.
    fn remember(&mut self, e: &Election) {
        if let Some(parent) = self.layout.parent_of(&self.prefix, &e.name) {
            self.parents.insert(e.name.clone(), parent);
        } else if let Some(leader) = &e.leader
            && let Ok(path) = std::str::from_utf8(&leader.raw_key)
        {
            let parent = match path.rfind('/') {
                Some(0) | None => "/",
                Some(i) => &path[..i],
            };
            self.parents.insert(e.name.clone(), parent.to_string());
        }
    }

    fn apply_into(
        &mut self,
        parent: &str,
        children: &[Znode],
        (at, seen): (SystemTime, Seen<'_>),
        out: &mut Changes,
    ) {
        self.keep_nodes(parent, children);
        let name = self.layout.name(&self.prefix, parent);
        let new = self
            .layout
            .election(self.source, &self.prefix, parent, children);
        let Some(old) = self.elections.get(&name) else {
            // Not known and still no candidate there: nothing to say.
            let Some(e) = new else { return };
            // A new election: its first leader is elected now.
            self.remember(&e);
            let mut e = e;
            self.record_change(&mut e, (None, Cause::Unknown), at, out);
            out.events
                .extend(line_events(self.book.source_name(), &e, &[], at));
            self.elections.insert(name, e.clone());
            out.changed.push(e);
            return;
        };
        let mut e = old.clone();
        let before = e.leader.take();
        let old_line = std::mem::take(&mut e.candidates);
        let scheme = self.layout.scheme();
        let fresh = new.unwrap_or_else(|| Election::new(self.source, name.clone(), scheme));
        e.candidates = fresh.candidates;
        e.leader = fresh.leader;
        e.notes = fresh.notes;
        if e.candidates == old.candidates && e.leader == old.leader && e.notes == old.notes {
            return;
        }
        if e.leader.is_some() {
            self.remember(&e);
        }
        let gone = self.departure(before.as_ref(), seen);
        self.record_change(&mut e, (before.as_ref(), gone), at, out);
        out.events
            .extend(line_events(self.book.source_name(), &e, &old_line, at));
        self.elections.insert(name, e.clone());
        out.changed.push(e);
    }

    /// The leader change between `before` and `e.leader`, if any, into `e`'s history and
    /// the events. The revision is the zxid that created the new leader's node. A leader
    /// whose node an admin action removed is deposed while its session may live (its client
    /// is not told): its session is followed until it is gone.
    fn record_change(
        &mut self,
        e: &mut Election,
        (before, gone): (Option<&Candidate>, Cause),
        at: SystemTime,
        out: &mut Changes,
    ) {
        let after = e.leader.as_ref();
        // One node is one tenure: the same path created by the same transaction.
        let same_tenure = match (before, after) {
            (Some(b), Some(a)) => b.raw_key == a.raw_key && b.create_revision == a.create_revision,
            _ => false,
        };
        let revision = after
            .map(|c| c.create_revision)
            .or(before.map(|c| c.mod_revision));
        // Its node gone from the line, and its session known.
        let removed = before.filter(|b| {
            session_of(b).is_some() && !e.candidates.iter().any(|c| c.raw_key == b.raw_key)
        });
        let step = Step {
            before,
            same_tenure,
            gone,
            // The holder rewrote its own node's data.
            in_place: Cause::Proclaimed,
            may_lead: removed.is_some(),
            when: When::live(at).at_revision(revision),
        };
        let o = self.book.apply(e, step, out);
        if o.back.is_some() {
            e.deposed_session = None;
            self.deposed.forget(&e.name);
        }
        if let Some(d) = &o.deposed
            && let Some(session) = session_of(d)
        {
            e.deposed_session = Some(SessionCheck::Checking);
            self.deposed.follow(&e.name, session, None);
        }
        if let (true, Some(d), Some(ev)) = (o.forced, e.deposed.as_ref(), out.events.last_mut()) {
            let session = d.stamp.as_deref().unwrap_or("?");
            let deposed = format!(
                "{} deposed: its client is not told and may go on leading while its session \
                 {session} lives",
                d.id
            );
            ev.detail = Some(match ev.detail.take() {
                Some(by) => format!("{by}; {deposed}"),
                None => deposed,
            });
        }
    }
}

impl ZkTracker {
    /// Why the old leader's node went.impl ZkTracker {
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

/// Deposed holders: who an admin action removed while its session lives on.
impl ZkTracker {
    /// What the members said of the deposed sessions: the elections whose deposed holder
    /// changed, and an event for each whose session is gone.
    pub(crate) fn sessions_listed(&mut self, listing: &Listing, now: Instant) -> Changes {
        let mut out = Changes::default();
        for (name, check) in self.deposed.apply(listing, now) {
            let Some(e) = self.elections.get_mut(&name) else {
                continue;
            };
            if check.is_some() && e.deposed_session == check {
                continue;
            }
            e.deposed_session = check;
            if check.is_none()
                && let Some(d) = e.deposed.take()
            {
                let session = d.stamp.as_deref().unwrap_or("?");
                let why = format!("deposed {}: its session {session} is gone", d.id);
                let mut ev = Event::about_source(
                    self.book.source_name().to_string(),
                    EventKind::CandidateLeft,
                    None,
                    Some(why),
                );
                ev.election = Some(name.clone());
                ev.from = Some(d.id.clone());
                out.events.push(ev);
            }
            out.changed.push(e.clone());
        }
        out
    }
}

/// A session id as ZooKeeper prints it (`0x…`).
pub(super) fn session_id(hex: &str) -> Option<i64> {
    u64::from_str_radix(hex.strip_prefix("0x")?, 16)
        .ok()
        .map(|s| s as i64)
}

/// How a read came: from a watch event, or from a full re-read after a gap; each with the
/// sessions known to hold a node as of that read.
#[derive(Clone, Copy)]
enum Seen<'a> {
    Live(&'a HashSet<i64>),
    Resync(&'a HashSet<i64>),
}

/// Whether two candidates are nodes of the same session (a deposed holder back in line).
fn same_session(a: &Candidate, b: &Candidate) -> bool {
    a.stamp.is_some() && a.stamp == b.stamp
}

/// The session holding a candidate's node, from its `0x…` stamp.
fn session_of(c: &Candidate) -> Option<i64> {
    session_id(c.stamp.as_deref()?)
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
        was: None,
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

mod audited;
mod restore;
mod steps;

impl crate::backend::forced::Marks for ZkTracker {
    fn book(&mut self) -> &mut crate::backend::book::Book {
        &mut self.book
    }

    fn forced(
        &mut self,
        name: &str,
        mark: Option<ForcedMark>,
        now: Instant,
        wall: SystemTime,
    ) -> Option<Election> {
        let e = self.elections.get_mut(name);
        let (mut e, deposed) = self
            .book
            .forced(name, e, mark, (now, wall), |r| session_of(r).is_some())?;
        if let Some(session) = deposed.as_ref().and_then(session_of) {
            e.deposed_session = Some(SessionCheck::Checking);
            self.deposed.follow(name, session, None);
        }
        self.elections.insert(name.to_string(), e.clone());
        Some(e)
    }
}

#[cfg(test)]
mod tests;
