use std::collections::VecDeque;
use std::time::{Instant, SystemTime};

use serde::{Deserialize, Serialize};

pub use super::scheme::Scheme;

/// Index of a configured source (one etcd prefix or one SQL table) in the order given.
pub type SourceId = usize;

/// A remaining time-to-live as read from the store, counted down locally until the next read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deadline {
    /// The full term (the lease's granted TTL), for drawing how much is left.
    pub granted_ms: i64,
    /// What was left when the store was asked.
    pub remaining_ms: i64,
    /// When it was asked: the countdown runs from here.
    pub read_at: Instant,
}

impl Deadline {
    pub fn remaining_ms_at(&self, now: Instant) -> i64 {
        let elapsed = now.saturating_duration_since(self.read_at).as_millis() as i64;
        (self.remaining_ms - elapsed).max(0)
    }

    /// A deadline from a whole-second TTL reading (etcd truncates: `ttl` means `[ttl, ttl+1)`
    /// seconds are left). A reading the running countdown already agrees with keeps the
    /// countdown, so it ticks smoothly instead of jumping by up to a second at every read.
    pub fn from_seconds(
        ttl_s: i64,
        granted_s: i64,
        now: Instant,
        previous: Option<Deadline>,
    ) -> Self {
        let granted_ms = granted_s.max(ttl_s).max(0) * 1000;
        if let Some(prev) = previous {
            let estimate = prev.remaining_ms_at(now);
            if estimate >= ttl_s * 1000 && estimate < (ttl_s + 1) * 1000 {
                return Deadline {
                    granted_ms,
                    remaining_ms: estimate,
                    read_at: now,
                };
            }
        }
        Deadline {
            granted_ms,
            remaining_ms: (ttl_s.max(0) * 1000 + 500).min(granted_ms.max(500)),
            read_at: now,
        }
    }

    /// Share of the term that is left, 0.0..=1.0.
    pub fn ratio_at(&self, now: Instant) -> f64 {
        if self.granted_ms <= 0 {
            return 0.0;
        }
        (self.remaining_ms_at(now) as f64 / self.granted_ms as f64).clamp(0.0, 1.0)
    }
}

/// One participant as the store holds it: what an admin action compares against.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// The participant's identity (the key's value), escaped for display.
    pub id: String,
    /// The identity's raw bytes, for compare-and-swap.
    pub raw_id: Vec<u8>,
    /// The key (or row key) it is stored under, escaped.
    pub key: String,
    /// The key's raw bytes, for compare-and-swap.
    pub raw_key: Vec<u8>,
    /// etcd lease id; `Some(0)` is a key without a lease, which never expires.
    pub lease: Option<i64>,
    pub create_revision: i64,
    pub mod_revision: i64,
    /// SQL schemes: the deadline column (`valid_until` / `last_seen_active`) as read, which
    /// an admin action compares against.
    pub stamp: Option<String>,
    /// Remaining TTL, once read.
    pub ttl: Option<Deadline>,
}

impl Candidate {
    /// A candidate whose id and key are plain text (their bytes as written), with no lease,
    /// revisions, stamp or TTL yet: what the demo's rows and the tests start from.
    pub fn plain(id: &str, key: &str) -> Candidate {
        Candidate {
            id: id.into(),
            raw_id: id.as_bytes().to_vec(),
            key: key.into(),
            raw_key: key.as_bytes().to_vec(),
            lease: None,
            create_revision: 0,
            mod_revision: 0,
            stamp: None,
            ttl: None,
        }
    }

    /// A key without a lease in an election never expires and blocks everyone behind it.
    pub fn zombie(&self) -> bool {
        self.lease == Some(0)
    }
}

/// Why the leadership changed, as far as the store lets us tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// A leader appeared where there was none.
    Elected,
    /// The leader key was deleted while its lease was still alive.
    Resigned,
    /// A key without a lease was deleted.
    Deleted,
    /// The lease ran out.
    LeaseExpired,
    /// The lease was revoked before it ran out.
    LeaseRevoked,
    /// The lease is gone, but the history replay cannot tell expiry from revocation.
    LeaseEnded,
    /// The leader changed its proclaimed value (etcd `Proclaim`).
    Proclaimed,
    /// Another participant overwrote the leader key or row.
    TakenOver,
    /// The row's term or heartbeat had expired before the change.
    Expired,
    /// An admin action forced this leader (`force-leader`).
    ForcedLeader,
    /// An admin action forced a re-election (`reelect`).
    ForcedReelection,
    /// An admin action made the leader resign (`resign`).
    ForcedResign,
    /// Changes were missed (compacted history) and only the result is known.
    Unknown,
    /// ZooKeeper: the leader's ephemeral node went, and its session holds nothing else
    /// electop sees: the session ended (expired or closed) or the node was deleted, which
    /// ZooKeeper's watch event does not tell apart.
    NodeGone,
    /// A new primary was promoted, as the store's own history records it (Patroni's
    /// `history` key); how the old one left is not recorded there.
    Promoted,
    /// A SQL session lock's holder session ended (closed, terminated or lost), which
    /// released its locks.
    SessionEnded,
}

impl Cause {
    pub fn as_str(self) -> &'static str {
        match self {
            Cause::Elected => "elected",
            Cause::Resigned => "resigned",
            Cause::Deleted => "deleted",
            Cause::LeaseExpired => "lease_expired",
            Cause::LeaseRevoked => "lease_revoked",
            Cause::LeaseEnded => "lease_ended",
            Cause::Proclaimed => "proclaimed",
            Cause::TakenOver => "taken_over",
            Cause::Expired => "expired",
            Cause::ForcedLeader => "forced_leader",
            Cause::ForcedReelection => "forced_reelection",
            Cause::ForcedResign => "forced_resign",
            Cause::Unknown => "unknown",
            Cause::NodeGone => "node_gone",
            Cause::Promoted => "promoted",
            Cause::SessionEnded => "session_ended",
        }
    }
}

/// One leader change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistoryEntry {
    /// When electop saw it happen; `None` for changes replayed from etcd's past revisions,
    /// which carry no wall-clock time.
    pub at: Option<SystemTime>,
    /// The store revision of the change, where the store has revisions.
    pub revision: Option<i64>,
    pub from: Option<String>,
    pub to: Option<String>,
    pub cause: Cause,
    /// For a forced change: who forced it ("this electop", or another electop seen in the
    /// audit log).
    pub by: Option<String>,
}

/// An election's recent leader changes, oldest first, shared between the copies of the
/// election: a store's tracker keeps one and sends clones to the read model, which replaces
/// its own. Shared, each history is held once at rest instead of twice (for `serve` over
/// many elections that changed, much of its memory; docs/PERFORMANCE.md); a tracker's next
/// change copies it only while the read model still holds the old one, and the read model
/// then drops that.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct History(std::sync::Arc<VecDeque<HistoryEntry>>);

impl std::ops::Deref for History {
    type Target = VecDeque<HistoryEntry>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

/// Writing copies the entries first when another copy of the election shares them (clone
/// on write), so no copy sees another's change.
impl std::ops::DerefMut for History {
    fn deref_mut(&mut self) -> &mut Self::Target {
        std::sync::Arc::make_mut(&mut self.0)
    }
}

impl History {
    /// The entries, copied only if another copy of the election still shares them.
    pub fn into_entries(self) -> VecDeque<HistoryEntry> {
        std::sync::Arc::unwrap_or_clone(self.0)
    }
}

impl From<VecDeque<HistoryEntry>> for History {
    fn from(entries: VecDeque<HistoryEntry>) -> Self {
        History(std::sync::Arc::new(entries))
    }
}

impl FromIterator<HistoryEntry> for History {
    fn from_iter<I: IntoIterator<Item = HistoryEntry>>(iter: I) -> Self {
        History(std::sync::Arc::new(iter.into_iter().collect()))
    }
}

/// An admin action's hold at the head of an etcd-election line, as the views tell it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hold<'a> {
    /// Who leads when the hold ends (the first in line).
    pub next: Option<&'a str>,
    /// The hold lease's time left.
    pub left_ms: Option<i64>,
    /// `re-election`, `forced leader` (or `admin hold` when the history does not say).
    pub action: &'static str,
}

/// One election in one source.
#[derive(Clone, Debug, PartialEq)]
pub struct Election {
    pub source: SourceId,
    pub name: String,
    pub scheme: Scheme,
    pub leader: Option<Candidate>,
    /// Everyone in line, leader first.
    pub candidates: Vec<Candidate>,
    /// Leader changes seen (live and replayed).
    pub transitions: u64,
    /// The most recent leader changes, oldest first, bounded by the configured limit.
    pub history: History,
    /// A leader deposed while its lease lives on (a resignation): election clients do not
    /// notice, so it may still believe it leads until that lease ends.
    pub deposed: Option<Box<Candidate>>,
    /// ZooKeeper: what electop knows of the deposed holder's session (its id is the deposed
    /// candidate's `stamp`), which has no lease to count down; `None` elsewhere.
    pub deposed_session: Option<SessionCheck>,
    /// A leader that removed its own key (it resigned, as `etcdctl elect` does on Ctrl-C)
    /// while its lease lives on: it knows it left, so it is no alarm; shown in the detail
    /// until the lease ends or it is back in line.
    pub resigned: Option<Box<Candidate>>,
    /// The key an admin action holds at the head of the line (etcd-election's hold: the
    /// deposed keys moved onto electop's own lease, counted down here), so nobody leads
    /// until that lease ends, when the first of `candidates` is elected.
    pub held: Option<Box<Candidate>>,
    /// A holder the store still names whose term ran out without a renewal (a Lease not
    /// renewed within its duration): nobody leads, and nobody has taken over yet.
    pub expired: Option<Box<Candidate>>,
    /// What the store says of each candidate beyond its key (Patroni's member role, state,
    /// timeline, lag); empty for schemes that keep nothing more.
    pub members: Vec<MemberInfo>,
    /// Other keys of the election worth showing (Patroni's `failover`, `sync`).
    pub notes: Vec<Note>,
    /// The history entry (counted from the newest) an admin action was just found to have
    /// made, and the cause the store gave it: what the `attributed` event tells.
    pub relabelled: Option<(usize, Cause)>,
}

/// What electop knows of a ZooKeeper session it cannot count down: a deposed holder's
/// session lives until its client stops or loses touch, which only the servers know
/// (their `cons` four-letter word lists the sessions connected to each).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SessionCheck {
    /// Not asked yet: the holder was deposed a moment ago.
    Checking,
    /// A member listed it as connected at the last check.
    Alive,
    /// Not every member lists its sessions (`cons` is not in `4lw.commands.whitelist`, or
    /// a member did not answer), and none of those that did listed it.
    CannotTell,
}

impl SessionCheck {
    /// `session 0x… alive`, or what electop cannot say, for every view.
    pub fn describe(self, session: &str) -> String {
        match self {
            SessionCheck::Checking => format!("session {session}, being checked"),
            SessionCheck::Alive => format!("session {session} alive"),
            SessionCheck::CannotTell => format!(
                "session {session}: alive or not, electop cannot tell (allow `cons` in \
                 4lw.commands.whitelist)"
            ),
        }
    }
}

impl SessionCheck {
    /// Short, for a table cell: `session 0x… alive`, `alive?` where electop cannot tell.
    pub fn short(self, session: &str) -> String {
        match self {
            SessionCheck::Checking => format!("session {session}"),
            SessionCheck::Alive => format!("session {session} alive"),
            SessionCheck::CannotTell => format!("session {session} alive?"),
        }
    }
}

impl Election {
    /// A ZooKeeper deposed holder's session in words, long (`short`: for a table cell).
    pub fn deposed_session_text(&self, short: bool) -> Option<String> {
        let check = self.deposed_session?;
        let id = self.deposed.as_ref()?.stamp.as_deref().unwrap_or("?");
        Some(if short {
            check.short(id)
        } else {
            check.describe(id)
        })
    }

    /// The deposed holder's hold on the store, in words: its ZooKeeper session as last
    /// checked, or its lease and what is left of it.
    pub fn deposed_hold(&self, at: Instant) -> Option<String> {
        let d = self.deposed.as_deref()?;
        if let Some(text) = self.deposed_session_text(false) {
            return Some(text);
        }
        if d.lease.is_none() && self.scheme.facts().held == super::Held::Expiry {
            // Held by the key's own countdown (a Redis token): no lease, the countdown when
            // the key was deleted.
            let left = d.ttl.map_or_else(
                || "no expiry".into(),
                |t| super::time::duration_ms(t.remaining_ms_at(at)),
            );
            return Some(format!("its key's PTTL had {left} left"));
        }
        let lease = d.lease.map_or_else(|| "?".into(), |l| format!("{l:x}"));
        let left = d.ttl.map_or_else(
            || "?".into(),
            |t| super::time::duration_ms(t.remaining_ms_at(at)),
        );
        Some(format!("lease {lease} alive, {left} left"))
    }
}

/// One candidate as the store describes it (Patroni's `members/<name>` JSON).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MemberInfo {
    pub id: String,
    pub role: Option<String>,
    pub state: Option<String>,
    pub timeline: Option<i64>,
    /// Bytes of WAL behind the cluster's last known position; `None` for the leader, or
    /// when the member does not say where it is.
    pub lag_bytes: Option<i64>,
    /// Tagged `nofailover`: it never becomes leader.
    pub nofailover: bool,
}

impl MemberInfo {
    /// `replica running TL 2 lag 0 B nofailover`, for the screen.
    pub fn summary(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        parts.extend(self.role.clone());
        parts.extend(self.state.clone());
        parts.extend(self.timeline.map(|t| format!("TL {t}")));
        parts.extend(self.lag_bytes.map(|l| format!("lag {l} B")));
        if self.nofailover {
            parts.push("nofailover".into());
        }
        parts.join(" ")
    }
}

/// A key beside the leader and the line, as last read: shown when `text` is not empty, and
/// compared against (its mod revision) by admin actions that write it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Note {
    /// What the key is: `failover`, `sync`.
    pub name: String,
    pub text: String,
    #[serde(skip)]
    pub raw_key: Vec<u8>,
    pub mod_revision: i64,
}

impl Election {
    pub fn new(source: SourceId, name: String, scheme: Scheme) -> Self {
        Election {
            source,
            name,
            scheme,
            leader: None,
            candidates: Vec::new(),
            transitions: 0,
            history: History::default(),
            deposed: None,
            deposed_session: None,
            resigned: None,
            held: None,
            expired: None,
            members: Vec::new(),
            notes: Vec::new(),
            relabelled: None,
        }
    }

    /// Another electop's admin action turned out to have removed the holder that looked
    /// resigned: it did not remove its own key, so it may still believe it leads.
    pub fn resigned_was_deposed(&mut self, before: Option<&str>) {
        if self
            .resigned
            .as_ref()
            .is_some_and(|r| before.is_none_or(|b| b == r.id))
        {
            self.deposed = self.resigned.take();
        }
    }

    /// How many candidates wait behind the leader (the line is leader first), or `None`
    /// where the store keeps no line: a SQL row holds the leader alone, and a lease key with
    /// nobody beside its leader may have no registry to list the others.
    pub fn waiting(&self) -> Option<usize> {
        if !self.scheme.has_line(self.candidates.len()) {
            return None;
        }
        let leads = usize::from(self.leader.is_some() && !self.candidates.is_empty());
        Some(self.candidates.len() - leads)
    }

    pub fn member(&self, id: &str) -> Option<&MemberInfo> {
        self.members.iter().find(|m| m.id == id)
    }

    /// When the election last lost its leader, if it has none now.
    pub fn no_leader_since(&self) -> Option<std::time::SystemTime> {
        if self.leader.is_some() {
            return None;
        }
        self.last_change()
            .filter(|h| h.to.is_none())
            .and_then(|h| h.at)
    }

    /// Nothing left in the store: no leader, nobody in line, nobody deposed, nothing held.
    pub fn is_empty(&self) -> bool {
        self.leader.is_none()
            && self.candidates.is_empty()
            && self.deposed.is_none()
            && self.held.is_none()
    }

    /// While a key is held at the head of the line: who leads when the hold ends, how long
    /// it has left at `now`, and which action it is (from the change that began it, which
    /// the history holds across processes).
    pub fn hold_at(&self, now: Instant) -> Option<Hold<'_>> {
        let held = self.held.as_deref()?;
        let action = match self.history.back().map(|h| h.cause) {
            Some(Cause::ForcedLeader) => "forced leader",
            Some(Cause::ForcedReelection) => "re-election",
            _ => "admin hold",
        };
        Some(Hold {
            next: self.candidates.first().map(|c| c.id.as_str()),
            left_ms: held.ttl.map(|d| d.remaining_ms_at(now)),
            action,
        })
    }

    /// The leader's remaining lease or term, counted down to `now`.
    pub fn ttl_ms_at(&self, now: Instant) -> Option<i64> {
        self.leader
            .as_ref()
            .and_then(|l| l.ttl)
            .map(|d| d.remaining_ms_at(now))
    }

    /// Whether `id` was ever seen in this election: leading, in line, deposed, or in its
    /// history.
    pub fn has_seen(&self, id: &str) -> bool {
        let held = |c: &Candidate| c.id == id;
        self.leader.iter().chain(&self.candidates).any(held)
            || self.deposed.as_deref().is_some_and(held)
            || self.resigned.as_deref().is_some_and(held)
            || self
                .history
                .iter()
                .any(|h| h.from.as_deref() == Some(id) || h.to.as_deref() == Some(id))
    }

    pub fn has_zombie(&self) -> bool {
        self.candidates.iter().any(Candidate::zombie)
            || self.leader.as_ref().is_some_and(Candidate::zombie)
    }

    pub fn record(&mut self, entry: HistoryEntry, limit: usize) {
        self.transitions += 1;
        let limit = limit.max(1);
        if std::sync::Arc::get_mut(&mut self.history.0).is_none() {
            // Shared with another copy (the read model's, at every change a tracker sees):
            // copy only the entries that stay, into room for the new one. Copying all and
            // then pushing grew the copy at once (it is made exactly as long) and cloned an
            // entry only to drop it.
            let stays = self.history.len().min(limit - 1);
            let skip = self.history.len() - stays;
            let mut copy = VecDeque::with_capacity(stays + 1);
            copy.extend(self.history.iter().skip(skip).cloned());
            copy.push_back(entry);
            self.history = History::from(copy);
            return;
        }
        let history = &mut *self.history;
        history.push_back(entry);
        while history.len() > limit {
            history.pop_front();
        }
    }

    /// The history entry an admin action was just found to have made ([`Self::relabelled`]).
    pub fn relabelled_entry(&self) -> Option<&HistoryEntry> {
        let (i, _) = self.relabelled?;
        self.history.iter().rev().nth(i)
    }

    pub fn last_change(&self) -> Option<&HistoryEntry> {
        self.history.back()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn deadline_counts_down_and_stops_at_zero() {
        let t0 = Instant::now();
        let d = Deadline {
            granted_ms: 10_000,
            remaining_ms: 4_000,
            read_at: t0,
        };
        assert_eq!(d.remaining_ms_at(t0 + Duration::from_millis(1_500)), 2_500);
        assert_eq!(d.remaining_ms_at(t0 + Duration::from_secs(9)), 0);
        assert!((d.ratio_at(t0) - 0.4).abs() < 1e-9);
    }

    #[test]
    fn second_readings_keep_a_consistent_countdown_and_reset_on_keepalive() {
        let t0 = Instant::now();
        let first = Deadline::from_seconds(9, 10, t0, None);
        assert_eq!(first.remaining_ms, 9_500);
        // 300 ms later etcd still says 9: the countdown (9 200) agrees, keep it.
        let t1 = t0 + Duration::from_millis(300);
        let again = Deadline::from_seconds(9, 10, t1, Some(first));
        assert_eq!(again.remaining_ms, 9_200);
        // A keep-alive put it back to 10 s: the reading disagrees, take it.
        let t2 = t0 + Duration::from_millis(2_000);
        let renewed = Deadline::from_seconds(10, 10, t2, Some(again));
        assert_eq!(renewed.remaining_ms, 10_000);
        assert_eq!(renewed.granted_ms, 10_000);
    }

    #[test]
    fn history_is_bounded_but_transitions_count_everything() {
        let mut e = Election::new(0, "x".into(), Scheme::EtcdElection);
        for i in 0..5 {
            e.record(
                HistoryEntry {
                    at: None,
                    revision: Some(i),
                    from: None,
                    to: Some(format!("n{i}")),
                    cause: Cause::Elected,
                    by: None,
                },
                3,
            );
        }
        assert_eq!(e.transitions, 5);
        assert_eq!(e.history.len(), 3);
        assert_eq!(e.history.front().and_then(|h| h.revision), Some(2));
    }

    #[test]
    fn a_copy_of_an_election_keeps_its_history_when_the_other_records() {
        let entry = |i: i64| HistoryEntry {
            at: None,
            revision: Some(i),
            from: None,
            to: Some(format!("n{i}")),
            cause: Cause::Elected,
            by: None,
        };
        let mut tracker = Election::new(0, "x".into(), Scheme::EtcdElection);
        tracker.record(entry(1), 8);
        let shown = tracker.clone();
        tracker.record(entry(2), 8);
        tracker.history[0].by = Some("this electop".into());
        assert_eq!(shown.history.len(), 1);
        assert_eq!(shown.history[0].by, None);
        assert_eq!(tracker.history.len(), 2);

        // Full and shared: the copy keeps the newest, the other keeps what it had.
        let mut full = Election::new(0, "y".into(), Scheme::EtcdElection);
        for i in 0..3 {
            full.record(entry(i), 3);
        }
        let shown = full.clone();
        full.record(entry(3), 3);
        let revisions =
            |e: &Election| -> Vec<i64> { e.history.iter().filter_map(|h| h.revision).collect() };
        assert_eq!(revisions(&full), [1, 2, 3]);
        assert_eq!(revisions(&shown), [0, 1, 2]);
        let shown = full.clone();
        full.record(entry(4), 1);
        assert_eq!(revisions(&full), [4]);
        assert_eq!(revisions(&shown), [1, 2, 3]);
    }
}
