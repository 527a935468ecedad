use std::time::{Instant, SystemTime};

use serde::Serialize;

use super::{Cause, Election, Scheme, SourceId};

/// What the screen and `status --json` say about a source.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SourceInfo {
    #[serde(skip)]
    pub id: SourceId,
    /// A short, password-free label: `etcd 127.0.0.1:2379 /elections/`.
    pub name: String,
    /// What tells this source apart from the others on the same store (its prefix).
    pub label: String,
    /// Short handle for `SOURCE/NAME` on the command line: `etcd1`, `sql2`...
    pub short: String,
    pub endpoints: String,
    /// The store it is read from (known before its scheme is detected).
    pub store: super::StoreKind,
    /// `None` until autodetection has looked at the store.
    pub scheme: Option<Scheme>,
    pub read_only: bool,
    /// A store of several members, probed one by one (etcd).
    #[serde(skip)]
    pub clustered: bool,
    /// No leader is the resting state here (a lock between runs): shown as idle, not as an
    /// alarm.
    pub idle_is_normal: bool,
    /// What reading the source found that the operator should settle.
    #[serde(skip)]
    pub notice: Option<SourceNotice>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SourceNotice {
    /// The layout fits no scheme, or two: what was found and the flag that settles it.
    Unsure(String),
    /// Nothing there (yet), and where elections are instead; over once elections appear.
    Empty(String),
    /// What electop looked up to find the source (`--sql URL` alone: the table found in the
    /// catalog): information, not a warning.
    Found(String),
}

impl SourceNotice {
    pub fn text(&self) -> &str {
        match self {
            SourceNotice::Unsure(t) | SourceNotice::Empty(t) | SourceNotice::Found(t) => t,
        }
    }
}

#[cfg(test)]
impl SourceInfo {
    /// An etcd source for unit tests: `etcd1`, prefix `/e/`, election API.
    pub fn test_etcd() -> SourceInfo {
        SourceInfo {
            id: 0,
            name: "etcd x /e/".into(),
            label: "/e/".into(),
            short: "etcd1".into(),
            endpoints: "x".into(),
            store: super::StoreKind::Etcd,
            scheme: Some(Scheme::EtcdElection),
            read_only: false,
            clustered: false,
            idle_is_normal: false,
            notice: None,
        }
    }

    /// A SQLite source for unit tests: `sql1`, sql-lease.
    pub fn test_sqlite() -> SourceInfo {
        SourceInfo {
            id: 0,
            name: "sqlite".into(),
            label: "sqlite".into(),
            short: "sql1".into(),
            endpoints: "x".into(),
            store: super::StoreKind::Sql,
            scheme: Some(Scheme::SqlLease),
            read_only: false,
            clustered: false,
            idle_is_normal: false,
            notice: None,
        }
    }
}

/// Connection state of one source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConnState {
    Connecting,
    Connected,
    /// Unreachable or dropped; the backend retries at `retry_at`. A `lasting` error (a
    /// missing table, a refused password) will not go away by waiting.
    Down {
        error: String,
        retry_at: Instant,
        lasting: bool,
    },
}

/// What happened, for `watch --json` and the screen's event log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    LeaderElected,
    LeaderChanged,
    LeaderLost,
    CandidateJoined,
    CandidateLeft,
    /// Older history is gone from the store; replay starts later.
    HistoryCompacted,
    Connected,
    Disconnected,
    /// The snapshot and history replay are done; what follows is live.
    Synced,
    /// No contact with the source for a while: what is shown may be out of date.
    Stale,
    /// Contact again after being stale.
    Fresh,
    /// A member of the store stopped answering, or answers again; the source carries on
    /// through the others.
    MemberDown,
    MemberUp,
    /// A leader change already reported turned out to be an admin action of another
    /// electop (seen in the audit log): its cause, and by whom.
    Attributed,
    /// An election as it stands when `watch` starts (`to`: its leader, if any), before the
    /// changes that follow.
    Current,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Event {
    #[serde(serialize_with = "super::time::serialize_opt")]
    pub at: Option<SystemTime>,
    pub source: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub election: Option<String>,
    pub kind: EventKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause: Option<Cause>,
    /// `attributed`: the cause the store gave the change before it was found forced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub was: Option<Cause>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<i64>,
    /// Replayed from the store's past revisions rather than seen live.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub replayed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl Event {
    /// An event about a whole source (connection, compaction), not one election.
    pub fn about_source(
        source: String,
        kind: EventKind,
        revision: Option<i64>,
        detail: Option<String>,
    ) -> Event {
        Event {
            at: Some(SystemTime::now()),
            source,
            election: None,
            kind,
            from: None,
            to: None,
            cause: None,
            was: None,
            revision,
            replayed: false,
            detail,
        }
    }
}

/// A backend's report to the runtime. Backends send these over a channel and never touch
/// the screen state themselves.
#[derive(Clone, Debug)]
pub enum SourceEvent {
    /// The source's description changed (e.g. its scheme was detected).
    Info(SourceInfo),
    Conn {
        source: SourceId,
        state: ConnState,
    },
    /// The store's current revision, where the store has one.
    Revision {
        source: SourceId,
        revision: i64,
    },
    /// New state of these elections (inserted or replaced by name).
    Elections {
        source: SourceId,
        elections: Vec<Election>,
    },
    /// A change worth a line in the log and in `watch --json`.
    Happened(Event),
    /// What the source's readers should know about what it shows (leases not read in
    /// time): the source's notice, in `status` and on screen.
    Notice {
        source: SourceId,
        text: String,
    },
    /// The first snapshot is being read: `read` of `total` keys so far (`total` 0: not
    /// known). The elections sent meanwhile are what was read; the source is current only
    /// once connected.
    Loading {
        source: SourceId,
        read: usize,
        total: usize,
        /// What is counted, plural: "keys" (etcd), "znodes" (ZooKeeper).
        what: &'static str,
    },
    /// The initial snapshot and history replay are done: the state is complete.
    Synced {
        source: SourceId,
    },
    /// The store answered a read that needs it to be current (a quorum read, a poll): what
    /// the source shows is true as of `wall`.
    Contact {
        source: SourceId,
        at: Instant,
        wall: SystemTime,
        /// When the next contact is due; later than that (plus a margin) means stale.
        next_within: std::time::Duration,
    },
    /// ZooKeeper: electop's own session (its id as `0x…` and the timeout the server
    /// granted), and since when leader changes are seen: ZooKeeper keeps no history, so it
    /// starts when electop first connects.
    Session {
        source: SourceId,
        id: String,
        timeout: std::time::Duration,
        history_since: SystemTime,
        /// The stretches no electop watched, from electop's own record of earlier runs.
        gaps: Vec<HistoryGap>,
    },
    /// What the source's history journal says an earlier electop saw beside the changes:
    /// outages, deposed holders, and the stretches no electop watched.
    PastMarks {
        source: SourceId,
        marks: super::marks::PastMarks,
    },
    /// The source's history is kept under `key` (its store's name for it): the engine
    /// records there this run from `record` on (its start; none: not recorded, a command
    /// asking for some elections alone), and sends on what an earlier electop saw beside the changes:
    /// `past`, as the store read it with its changes, or (none) read by the engine (etcd,
    /// whose journal holds no changes). Not for the read model.
    Journal {
        source: SourceId,
        key: String,
        record: Option<SystemTime>,
        past: Option<super::marks::PastMarks>,
    },
    /// How each member of a clustered store answers, like `etcdctl endpoint status`.
    Members {
        source: SourceId,
        members: Vec<MemberStatus>,
    },
}

/// A stretch between two runs of electop on a store that keeps no history (ZooKeeper):
/// changes in it were not seen as they came.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HistoryGap {
    /// The last time electop's record shows it watching.
    pub from: SystemTime,
    /// When the next electop connected.
    pub to: SystemTime,
    /// The electop before stopped cleanly and said when; otherwise it was killed or lost
    /// some time after `from`, and the record cannot say when.
    pub stop_recorded: bool,
}

impl HistoryGap {
    /// `not watched from 14:05:00 to 14:09:12`, or where the stop was not recorded, `no
    /// record from …`: electop may have watched a while after its last line.
    pub fn describe(&self) -> String {
        let what = if self.stop_recorded {
            "not watched"
        } else {
            "no record"
        };
        format!("{what} {}", super::time::stretch(self.from, self.to))
    }
}

/// One member of a clustered store, as last probed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MemberStatus {
    pub endpoint: String,
    pub up: bool,
    /// electop reads and watches through this member.
    pub serving: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The member id in hex, as etcdctl prints it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Raft leader of the cluster (as this member sees it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_leader: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raft_term: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub db_size: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// ZooKeeper: the member's mode as `srvr` says it (`leader`, `follower`, `standalone`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// ZooKeeper: request latency min/avg/max as the member counts it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency: Option<String>,
    /// What the probe could not learn and how to allow it (a four-letter word refused).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    #[serde(serialize_with = "super::time::serialize_opt")]
    pub checked_at: Option<SystemTime>,
}

impl MemberStatus {
    /// Not probed yet: down, nothing known.
    pub fn unprobed(endpoint: &str) -> MemberStatus {
        MemberStatus {
            endpoint: endpoint.to_string(),
            up: false,
            serving: false,
            error: None,
            id: None,
            is_leader: None,
            raft_term: None,
            revision: None,
            db_size: None,
            version: None,
            mode: None,
            latency: None,
            note: None,
            checked_at: None,
        }
    }

    /// Members whose health changed since the last round (`before`: who was up); on the
    /// first round, those down. Every clustered store reports member up/down by this.
    pub fn changes<'a>(before: Option<&[bool]>, now: &'a [MemberStatus]) -> Vec<&'a MemberStatus> {
        now.iter()
            .enumerate()
            .filter(|(i, m)| match before {
                Some(b) => b.get(*i).is_some_and(|was| *was != m.up),
                None => !m.up,
            })
            .map(|(_, m)| m)
            .collect()
    }
}

#[cfg(test)]
mod member_tests {
    use super::MemberStatus;

    fn member(up: bool) -> MemberStatus {
        MemberStatus {
            up,
            ..MemberStatus::unprobed("e")
        }
    }

    #[test]
    fn only_changes_are_reported_and_first_the_down_ones() {
        let now = [member(true), member(false)];
        assert_eq!(MemberStatus::changes(None, &now).len(), 1);
        assert!(MemberStatus::changes(Some(&[true, false]), &now).is_empty());
        let flipped = MemberStatus::changes(Some(&[false, false]), &now);
        assert_eq!(flipped.len(), 1);
        assert!(flipped[0].up);
    }
}
