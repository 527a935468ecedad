//! What an action will write, per scheme, for the confirmation and the CLI prompt; or why it
//! cannot be done on what was seen.

use super::{ActionKind, AdminRequest};
use crate::model::{Candidate, Election, Scheme};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// One line: the action on what.
    pub summary: String,
    /// The store operations, as they will be sent.
    pub writes: Vec<String>,
    /// What the operator should know: who notices, who is removed from the line.
    pub notes: Vec<String>,
}

fn leader(e: &Election) -> Result<&Candidate, String> {
    e.leader
        .as_ref()
        .ok_or_else(|| format!("election {} has no leader to act on", e.name))
}

/// The row holder for SQL schemes (the leader, or the holder of an expired term).
fn holder(e: &Election) -> Result<&Candidate, String> {
    e.candidates
        .first()
        .ok_or_else(|| format!("election {} has no row holder to act on", e.name))
}

pub fn plan(req: &AdminRequest) -> Result<Plan, String> {
    let e = &req.seen;
    let store = &req.source_name;
    let summary = match &req.kind {
        ActionKind::ForceLeader { target } => {
            format!("force {target} as leader of {} ({store})", e.name)
        }
        ActionKind::Reelect => format!("force a re-election of {} ({store})", e.name),
        ActionKind::Resign => format!("resign the leader of {} ({store})", e.name),
    };
    let (writes, notes) = match (e.scheme, &req.kind) {
        (Scheme::EtcdElection, ActionKind::Resign) => {
            let l = leader(e)?;
            (
                vec![format!("txn: if create_revision({}) == {} then delete {}", l.key, l.create_revision, l.key)],
                vec![
                    format!("{} keeps its session and lease; the next in line becomes leader.", l.id),
                    "A participant written with etcd's Go concurrency package (or etcdctl elect) does not \
                     notice it was deposed (etcd issue #11777) and may go on acting as leader: force a \
                     re-election (R) to end its session instead."
                        .to_string(),
                ],
            )
        }
        (Scheme::EtcdElection, ActionKind::Reelect) => {
            let l = leader(e)?;
            let lease = l.lease.filter(|l| *l != 0).ok_or_else(|| {
                format!("{} holds a key without a lease: there is no session to end; resign (S) deletes the key", l.id)
            })?;
            let next = e
                .candidates
                .get(1)
                .map(|c| c.id.clone())
                .unwrap_or_else(|| "nobody (the line is empty)".into());
            (
                vec![
                    format!(
                        "txn: check create_revision({}) == {} and lease == {lease:x}",
                        l.key, l.create_revision
                    ),
                    format!("revoke lease {lease:x}"),
                ],
                vec![format!(
                    "{}'s session ends, so every participant notices; next in line: {next}.",
                    l.id
                )],
            )
        }
        (Scheme::EtcdElection, ActionKind::ForceLeader { target }) => {
            let i = e
                .candidates
                .iter()
                .position(|c| c.id == *target)
                .ok_or_else(|| format!("{target} is not in the line of {}", e.name))?;
            if i == 0 {
                return Err(format!("{target} already leads {}", e.name));
            }
            let ahead = &e.candidates[..i];
            let keys: Vec<String> = ahead
                .iter()
                .map(|c| format!("{} (create_revision {})", c.key, c.create_revision))
                .collect();
            let leases: Vec<String> = ahead
                .iter()
                .filter_map(|c| c.lease.filter(|l| *l != 0))
                .map(|l| format!("{l:x}"))
                .collect();
            let mut writes = vec![format!(
                "txn: if each create_revision is unchanged then delete {}",
                keys.join(", ")
            )];
            if !leases.is_empty() {
                writes.push(format!("revoke lease {}", leases.join(", ")));
            }
            let removed: Vec<&str> = ahead.iter().map(|c| c.id.as_str()).collect();
            (
                writes,
                vec![format!(
                    "Removes from the line: {}. Their sessions end, so they notice.",
                    removed.join(", ")
                )],
            )
        }
        (Scheme::EtcdLeaseKey, ActionKind::Reelect | ActionKind::Resign) => {
            let l = leader(e)?;
            let cond = if req.kind == ActionKind::Resign {
                format!(
                    "mod_revision({}) == {} and value == {}",
                    l.key, l.mod_revision, l.id
                )
            } else {
                format!("mod_revision({}) == {}", l.key, l.mod_revision)
            };
            (
                vec![format!("txn: if {cond} then delete {}", l.key)],
                vec![
                    "Candidates watching the key race for it again; the old leader may win."
                        .to_string(),
                ],
            )
        }
        (Scheme::EtcdLeaseKey, ActionKind::ForceLeader { target }) => {
            let entry = e
                .candidates
                .iter()
                .find(|c| c.id == *target && c.lease.is_some_and(|l| l != 0) && Some(c.raw_key.as_slice()) != e.leader.as_ref().map(|l| l.raw_key.as_slice()))
                .ok_or_else(|| {
                    format!("{target} has no registry entry in {}: there is no lease of its to attach the leader key to", e.name)
                })?;
            let lease = entry.lease.unwrap_or(0);
            let (key, cond) = match &e.leader {
                Some(l) if l.id == *target => {
                    return Err(format!("{target} already leads {}", e.name));
                }
                Some(l) => (
                    l.key.clone(),
                    format!("mod_revision({}) == {}", l.key, l.mod_revision),
                ),
                None => (
                    format!("the leader key of {}", e.name),
                    "the key is absent".to_string(),
                ),
            };
            (
                vec![format!(
                    "txn: if {cond} then put {key} = {target} with lease {lease:x} (its registry lease)"
                )],
                vec![format!(
                    "{target} holds the key for as long as its registry lease lives."
                )],
            )
        }
        (Scheme::Patroni, kind) => super::patroni::plan(e, kind)?,
        (Scheme::SqlLease | Scheme::SqlHeartbeat, kind) => {
            let h = holder(e)?;
            let stamp = if e.scheme == Scheme::SqlLease {
                "valid_until"
            } else {
                "last_seen_active"
            };
            let key = if e.scheme == Scheme::SqlLease {
                "key"
            } else {
                "anchor"
            };
            let who = if e.scheme == Scheme::SqlLease {
                "leader_id"
            } else {
                "service_id"
            };
            match kind {
                ActionKind::Reelect => (
                    vec![format!(
                        "DELETE the row WHERE {key} = '{}' AND {who} = '{}'",
                        e.name, h.id
                    )],
                    vec!["Every participant's next attempt races for the free row.".to_string()],
                ),
                ActionKind::Resign => {
                    let to = if e.scheme == Scheme::SqlLease {
                        "the database's now".to_string()
                    } else {
                        "the database's now - timeout - 1s".to_string()
                    };
                    (
                        vec![format!(
                            "UPDATE SET {stamp} = {to} WHERE {key} = '{}' AND {who} = '{}'",
                            e.name, h.id
                        )],
                        vec![format!(
                            "{}'s term is over at once; the next attempt by anyone takes it.",
                            h.id
                        )],
                    )
                }
                ActionKind::ForceLeader { target } => {
                    if *target == h.id {
                        return Err(format!("{target} already holds {}", e.name));
                    }
                    let until = if e.scheme == Scheme::SqlLease {
                        "the database's now + the term"
                    } else {
                        "the database's now"
                    };
                    (
                        vec![format!(
                            "UPDATE SET {who} = '{target}', {stamp} = {until} WHERE {key} = '{}' AND {who} = '{}'",
                            e.name, h.id
                        )],
                        vec![format!(
                            "{target}'s next renewal keeps it; the others stay followers."
                        )],
                    )
                }
            }
        }
    };
    Ok(Plan {
        summary,
        writes,
        notes,
    })
}
