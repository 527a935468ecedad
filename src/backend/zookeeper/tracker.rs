//! The elections of one ZooKeeper source as last read, and the leader changes between two
//! reads of an election's znode, decided by the shared [`change`] rule. Pure: the follow
//! task reads, this decides.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Instant, SystemTime};

use super::deposed::DeposedSessions;
use super::layout::Znode;
use super::sessions::Listing;
use super::single::Layout;
use crate::admin::audit_tail::Done;
use crate::backend::{ForcedMark, ForcedMarks, change};
use crate::model::{Candidate, Cause, Election, Event, EventKind, SessionCheck, SourceId};

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
    /// Admin actions about to change an election (ours, or another electop's from the audit
    /// log): the change they make is recorded as forced.
    pub(crate) forced: ForcedMarks,
    /// The sessions of holders an admin action removed, followed until they are gone.
    pub(crate) deposed: DeposedSessions,
    /// The leader each election lost last, for an action learnt after its change.
    removed: BTreeMap<String, Candidate>,
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
            forced: ForcedMarks::default(),
            deposed: DeposedSessions::default(),
            removed: BTreeMap::new(),
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
            self.record_change(&mut e, None, None, at, out);
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
        self.back_in_line(&mut e);
        // The leader's node went: an admin action's, if one said it was about to.
        let removed = before
            .as_ref()
            .filter(|b| !e.candidates.iter().any(|c| c.raw_key == b.raw_key));
        let forced = removed.and_then(|_| self.forced.take(&name, Instant::now()));
        if let Some(r) = removed {
            self.removed.insert(name.clone(), r.clone());
            if forced.is_some() {
                self.depose(&mut e, r);
            }
        }
        self.record_change(&mut e, before.as_ref(), forced, at, out);
        self.elections.insert(name, e.clone());
        out.changed.push(e);
    }

    /// The leader change between `before` and `e.leader`, if any, into `e`'s history and
    /// the events. The revision is the zxid that created the new leader's node.
    fn record_change(
        &self,
        e: &mut Election,
        before: Option<&Candidate>,
        forced: Option<(Cause, String)>,
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
        let forced_now = forced.is_some();
        let recorded = change.record(e, forced, (Some(at), revision), self.history_limit);
        let forced = forced_now;
        let mut ev = recorded.event(&self.source_name, &e.name, false);
        if let Some(d) = e.deposed.as_ref().filter(|_| forced) {
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
        out.events.push(ev);
    }
}

/// Deposed holders: who an admin action removed while its session lives on.
impl ZkTracker {
    /// `c`, the leader an admin action removed, is deposed in `e`: its client may still
    /// believe it leads while its session lives, which the next check of the members says.
    fn depose(&mut self, e: &mut Election, c: &Candidate) {
        let Some(session) = c.stamp.as_deref().and_then(session_id) else {
            return;
        };
        if e.candidates.iter().any(|x| x.stamp == c.stamp) {
            return;
        }
        e.deposed = Some(Box::new(c.clone()));
        e.deposed_session = Some(SessionCheck::Checking);
        self.deposed.follow(&e.name, session, None);
    }

    /// A deposed holder whose session holds a node in the election again is back in line:
    /// it knows where it stands.
    fn back_in_line(&mut self, e: &mut Election) {
        let back = e
            .deposed
            .as_ref()
            .is_some_and(|d| e.candidates.iter().any(|c| c.stamp == d.stamp));
        if back {
            e.deposed = None;
            e.deposed_session = None;
            self.deposed.forget(&e.name);
        }
    }

    /// An admin action changes `name` (`None`: ours did not after all). One learnt after its
    /// change was recorded (another electop's, from the audit log) relabels that change and
    /// deposes the leader it removed: the election to send, when it did.
    pub(crate) fn forced(
        &mut self,
        name: &str,
        mark: Option<ForcedMark>,
        now: Instant,
        wall: SystemTime,
    ) -> Option<Election> {
        let before = mark.as_ref().and_then(|m| m.before.clone());
        let e = self.elections.get_mut(name);
        let mut e = self.forced.note_on(name, e, mark, now, wall)?;
        if let Some(r) = self.removed.get(name).cloned()
            && before.as_deref() == Some(r.id.as_str())
        {
            self.depose(&mut e, &r);
        }
        self.elections.insert(name.to_string(), e.clone());
        Some(e)
    }

    /// What the members said of the deposed sessions: the elections whose deposed holder
    /// changed, and an event for each whose session is gone.
    pub(crate) fn sessions_listed(&mut self, listing: &Listing, now: Instant) -> Applied {
        let mut out = Applied::default();
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
                    self.source_name.clone(),
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

    /// At start, from the audit log: the holder the newest action on each election removed,
    /// deposed still where a member lists its session (`listing`, one check of them all).
    /// Where none does, it is not shown: nothing says that session still lives.
    pub(crate) fn audited(&mut self, actions: &[Done], listing: &Listing, now: Instant) {
        let newest: BTreeMap<&str, &Done> =
            actions.iter().map(|d| (d.election.as_str(), d)).collect();
        for (name, done) in newest {
            let (Some(id), Some(hex)) = (&done.before, &done.before_session) else {
                continue;
            };
            let Some(session) = session_id(hex) else {
                continue;
            };
            let Some(to) = listing.sessions.get(&session) else {
                continue;
            };
            let Some(e) = self.elections.get_mut(name) else {
                continue;
            };
            let in_line = e.candidates.iter().any(|c| c.stamp.as_deref() == Some(hex));
            if in_line || e.deposed.is_some() {
                continue;
            }
            let mut holder = Candidate::plain(id, "");
            holder.stamp = Some(hex.clone());
            e.deposed = Some(Box::new(holder));
            e.deposed_session = Some(SessionCheck::Alive);
            self.deposed.follow(name, session, Some((now, *to)));
        }
    }
}

/// A session id as ZooKeeper prints it (`0x…`).
fn session_id(hex: &str) -> Option<i64> {
    u64::from_str_radix(hex.strip_prefix("0x")?, 16)
        .ok()
        .map(|s| s as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn a_leader_removed_by_an_admin_action_is_deposed_until_its_session_is_gone() {
        let mut t = tracker();
        let second = node("/election/jobs/b__lock__0000000001", "n2", 11);
        t.load(&[
            node("/election/jobs/a__lock__0000000000", "n1", 10),
            second.clone(),
        ]);
        let ours = ForcedMark {
            cause: Cause::ForcedReelection,
            by: crate::backend::BY_US.into(),
            before: None,
        };
        t.forced.set("jobs".into(), Some(ours), Instant::now());
        let got = t.apply("/election/jobs", &[second], SystemTime::now());
        let e = &got.changed[0];
        assert_eq!(e.deposed.as_ref().map(|d| d.id.as_str()), Some("n1"));
        assert_eq!(e.deposed_session, Some(SessionCheck::Checking));
        let h = e.history.back().expect("a change");
        assert_eq!(h.cause, Cause::ForcedReelection);
        let detail = got.events[0].detail.as_deref().unwrap_or("");
        assert!(
            detail.contains("n1 deposed") && detail.contains("0x10a"),
            "{detail}"
        );
        // Listed alive by the member, then gone from every member past its timeout.
        let now = Instant::now();
        let alive = Listing {
            sessions: [(0x10a, Some(400))].into_iter().collect(),
            complete: true,
            authoritative: false,
        };
        let checked = t.sessions_listed(&alive, now);
        assert_eq!(
            checked.changed[0].deposed_session,
            Some(SessionCheck::Alive)
        );
        assert_eq!(
            checked.changed[0].deposed_session_text(true).as_deref(),
            Some("session 0x10a alive")
        );
        let none = Listing {
            sessions: Default::default(),
            complete: true,
            authoritative: false,
        };
        assert!(t.sessions_listed(&none, now).changed.is_empty(), "not yet");
        let later = now + std::time::Duration::from_secs(2);
        let gone = t.sessions_listed(&none, later);
        assert!(gone.changed[0].deposed.is_none());
        assert_eq!(gone.events[0].kind, EventKind::CandidateLeft);
        assert_eq!(gone.events[0].from.as_deref(), Some("n1"));
    }

    #[test]
    fn a_leader_whose_node_goes_without_an_action_is_not_deposed() {
        let mut t = tracker();
        let second = node("/election/jobs/b__lock__0000000001", "n2", 11);
        t.load(&[
            node("/election/jobs/a__lock__0000000000", "n1", 10),
            second.clone(),
        ]);
        let got = t.apply("/election/jobs", &[second], SystemTime::now());
        assert!(got.changed[0].deposed.is_none());
        // Another electop's action, learnt after the change: relabelled and deposed.
        let theirs = ForcedMark {
            cause: Cause::ForcedResign,
            by: "ops@h (another electop)".into(),
            before: Some("n1".into()),
        };
        let e = t
            .forced("jobs", Some(theirs), Instant::now(), SystemTime::now())
            .expect("relabelled");
        assert_eq!(e.history.back().map(|h| h.cause), Some(Cause::ForcedResign));
        assert_eq!(e.deposed.as_ref().map(|d| d.id.as_str()), Some("n1"));
    }
}
