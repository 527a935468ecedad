//! What an action will do, as one typed plan: the store operations with their compares. Each
//! store builds it for its schemes from the election as seen and the source's settings
//! (`backend::plan`); the confirmation (dashboard and CLI) renders it with [`Plan::writes`],
//! and the store executes the same steps, so what is shown is what is written.

mod render;
pub(super) mod target;

use crate::config::Dialect;

use super::{ActionKind, AdminRequest};
use crate::model::{Candidate, Election};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// One line: the action on what.
    pub summary: String,
    /// What will happen, in three short lines: what the confirmation shows first.
    pub gist: Gist,
    /// The store operations, in order.
    pub steps: Vec<Step>,
    /// What the store does by itself afterwards (the hold expiring), not a write of ours.
    pub then: Option<String>,
    /// What the operator should know: who notices, who is removed from the line.
    pub notes: Vec<String>,
    /// What to read back to say what the store holds after the action (or why it refused).
    pub readback: Readback,
}

/// What an action will do, as the three facts an operator weighs before saying yes: who
/// leads next, how long there is no leader, what the deposed may still believe. Each store's
/// plan builder writes it beside the steps, from the same election as seen, so the short
/// confirmation and the full plan (the details, the execution) never disagree.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Gist {
    /// Who leads next ("node-b leads next: it is next in line.").
    pub next: String,
    /// How long there is no leader ("No leader for 22 s, while node-a's key is held.").
    pub gap: String,
    /// What the deposed may still believe, where it may believe anything.
    pub deposed: Option<String>,
}

impl Gist {
    /// The lines, in order: at most three.
    pub fn lines(&self) -> Vec<&str> {
        [
            Some(self.next.as_str()),
            Some(self.gap.as_str()),
            self.deposed.as_deref(),
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}

/// A key, as sent and as shown.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Key {
    pub raw: Vec<u8>,
    pub shown: String,
}

impl Key {
    pub fn of(c: &Candidate) -> Key {
        Key {
            raw: c.raw_key.clone(),
            shown: c.key.clone(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Check {
    CreateRevision(i64),
    ModRevision(i64),
    /// The value, as sent and as shown.
    Value(Vec<u8>, String),
    Lease(i64),
    /// The key does not exist.
    Absent,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Compare {
    pub key: Key,
    pub check: Check,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    Delete(Key),
    /// Put `value` with `lease`.
    Put {
        key: Key,
        value: Vec<u8>,
        shown: String,
        lease: i64,
    },
    /// Re-put the key with its own value on the hold lease: same create_revision, so it keeps
    /// its place in line, but detached from the lease about to be revoked.
    Hold(Key),
}

/// A SQL statement; `sql` holds [`DEADLINE`] where the deadline value goes, written at
/// execution time for the deadline column's declared type (read from the schema then).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Statement {
    pub sql: String,
    pub binds: Vec<String>,
    /// The database's now plus this many ms, for [`DEADLINE`]; `numeric` when the seen stamp
    /// was a number (SQLite rows written as Unix seconds).
    pub deadline: Option<(i64, bool)>,
    /// Rows that mean done; fewer mean the row changed since it was seen.
    pub expect_rows: u64,
}

/// Where a statement's deadline value goes.
pub const DEADLINE: &str = "{deadline}";

impl Statement {
    /// The SQL as sent, with the deadline written by `now_plus` (ms, numeric) -> SQL.
    pub fn sql_with(&self, now_plus: impl Fn(i64, bool) -> String) -> String {
        match self.deadline {
            Some((ms, numeric)) => self.sql.replace(DEADLINE, &now_plus(ms, numeric)),
            None => self.sql.clone(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Grant a lease to hold deposed keys: a third of the longest TTL of `leases` (re-read
    /// when executing) plus slack. `seen_ttls` are the granted TTLs as seen, for the text.
    GrantHold {
        leases: Vec<i64>,
        seen_ttls: Option<Vec<i64>>,
    },
    /// All compares hold, or nothing is written and the action reports a change.
    Txn {
        compares: Vec<Compare>,
        then: Vec<Op>,
    },
    /// End these sessions; `owners` for the text.
    Revoke {
        leases: Vec<i64>,
        owners: Vec<String>,
    },
    Statement(Statement),
    /// One ZooKeeper `multi`: all of it or nothing. ZooKeeper cannot compare a node's czxid
    /// or mzxid inside a multi, only its data version; so `compares` (czxid and mzxid of
    /// each node, as seen) are checked in one read just before, and the multi then deletes
    /// `delete` and checks `keep`, each at the data version that read found. The read and
    /// the multi are not one atomic step: what the multi still catches is any node deleted
    /// or written since the read; what it cannot is a node deleted and made again at the
    /// same path in between, which a sequential name never is (its number comes from the
    /// parent's child count, which only grows), only a node made by hand under that name.
    ZkMulti {
        compares: Vec<Compare>,
        delete: Vec<Key>,
        keep: Vec<Key>,
    },
    /// One Lua script, atomic on the Redis server: delete `key` if its value is still the
    /// token seen (`value` as sent, `shown` as shown), else nothing.
    RedisDelIfValue {
        key: Key,
        value: Vec<u8>,
        shown: String,
    },
    /// End a SQL server session (which frees every lock it holds), in one statement that
    /// compares its id and its start, so a reused id is never hit.
    EndSession(EndSession),
}

/// A session to end, as seen: `pg_terminate_backend` / `KILL`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EndSession {
    pub dialect: crate::config::Dialect,
    /// PostgreSQL's pid, MySQL's connection id.
    pub id: i64,
    /// The session's start as the server's compare takes it (opaque: see
    /// `backend::session_lock::Session::start`).
    pub start: String,
    /// The start for people (`2024-05-01 10:00:01 UTC`).
    pub started: String,
    /// Who it is on screen (`worker:4242`) and what it is doing (`holder of 42`).
    pub who: String,
    pub role: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Readback {
    /// Who leads the etcd-election that this key is in.
    Line(Key),
    /// What this etcd key holds.
    Key(Key),
    /// The SQL row of this election.
    Row(String),
    /// Who leads the ZooKeeper election whose znode is this path.
    Znode(String),
    /// Who holds the SQL session lock with this key now.
    Lock(String),
}

/// Added to a third of the longest deposed TTL: Go's keep-alive loop ticks every 500 ms, the
/// keep-alive takes a round trip, and the client must still act on the answer; measured, the
/// deposed were told too long after a third of their TTL for 1 s to be enough
/// (docs/PERFORMANCE.md).
pub const HOLD_SLACK_SECS: i64 = 2;

/// How long the deposed keys are held: past the keep-alive interval of the longest lease.
pub fn hold_secs(granted_ttls: &[i64]) -> i64 {
    let longest = granted_ttls.iter().copied().max().unwrap_or(0);
    (longest + 2) / 3 + HOLD_SLACK_SECS
}

/// The election's leader, or why there is none to act on.
pub fn leader(e: &Election) -> Result<&Candidate, String> {
    e.leader
        .as_ref()
        .ok_or_else(|| format!("election {} has no leader to act on", e.name))
}

/// The confirmation's title: the action and the election (the store is said below it).
pub fn title(req: &AdminRequest) -> String {
    let e = &req.seen;
    match &req.kind {
        ActionKind::ForceLeader { target } => format!("Force {target} to lead {}", e.name),
        ActionKind::Reelect => format!("Force a re-election of {}", e.name),
        ActionKind::Resign => match &e.leader {
            Some(l) => format!("Make {} resign as leader of {}", l.id, e.name),
            None => format!("Make the leader of {} resign", e.name),
        },
    }
}

/// One line: the action on what.
pub fn summary(req: &AdminRequest) -> String {
    let (e, store) = (&req.seen, &req.source_name);
    match &req.kind {
        ActionKind::ForceLeader { target } => {
            format!("force {target} as leader of {} ({store})", e.name)
        }
        ActionKind::Reelect => format!("force a re-election of {} ({store})", e.name),
        ActionKind::Resign => format!("resign the leader of {} ({store})", e.name),
    }
}
