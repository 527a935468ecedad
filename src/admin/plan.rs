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

/// What the etcd-election tests measured (tests/election_clients.rs, 16 runs per client and
/// action; see tests/campaigners/MEASUREMENTS.md), stated in every deposing confirmation:
/// a third of the TTL (the clients' keep-alive interval) plus up to 0.5 s.
const MEASURED: &str = "Clients may believe they still lead for up to 19998 ms after this, never \
    beside another leader (measured, 16 runs each: etcdctl elect 19998 ms with its 60 s TTL, Go \
    concurrency 1459 ms and Node etcd3 1098 ms with a 3 s TTL; two leaders at once: 0 ms).";

/// Why the deposed keys are held rather than deleted: election clients learn that their
/// session ended only at their next keep-alive, and one still waiting in line is told
/// "elected" as soon as the keys ahead of it go.
fn deposed_note(deposed: &[Candidate]) -> String {
    let who: Vec<&str> = deposed.iter().map(|c| c.id.as_str()).collect();
    let (its, it, keys) = if who.len() == 1 {
        (
            "its session ends",
            "it may believe it leads until its",
            "its key keeps its",
        )
    } else {
        (
            "their sessions end",
            "they may believe they lead until their",
            "their keys keep their",
        )
    };
    format!(
        "{}: {its} now, but {it} next keep-alive (up to a third of the lease TTL); {keys} \
         place in line until then, so nobody else is elected before.",
        who.join(", ")
    )
}

/// How long the deposed keys will be held, from the TTLs as seen (the action re-reads them).
fn hold_text(deposed: &[Candidate]) -> String {
    let owned = deposed.iter().filter(|c| c.lease.is_some_and(|l| l != 0));
    let granted: Option<Vec<i64>> = owned
        .map(|c| c.ttl.as_ref().map(|d| (d.granted_ms + 999) / 1000))
        .collect();
    match granted {
        Some(ttls) if !ttls.is_empty() => format!(
            "the hold lasts {} s: a third of the longest TTL, {} s, + 2 s",
            crate::backend::etcd::admin::depose::hold_secs(&ttls),
            ttls.iter().max().copied().unwrap_or(0)
        ),
        _ => "the hold lasts a third of the longest TTL + 2 s".to_string(),
    }
}

/// The steps of ending sessions first (`backend::etcd::admin::depose`), as the CLI prints them.
fn depose_writes(deposed: &[Candidate]) -> Vec<String> {
    let checks: Vec<String> = deposed
        .iter()
        .map(|c| {
            let lease = c.lease.unwrap_or(0);
            format!(
                "create_revision({}) == {} and lease == {lease:x}",
                c.key, c.create_revision
            )
        })
        .collect();
    let keys: Vec<&str> = deposed.iter().map(|c| c.key.as_str()).collect();
    let leases: Vec<String> = deposed
        .iter()
        .filter_map(|c| c.lease.filter(|l| *l != 0))
        .map(|l| format!("{l:x}"))
        .collect();
    let mut writes = vec![format!(
        "txn: check {}; then put {} on a new hold lease (same value, same place in line)",
        checks.join(", "),
        keys.join(", ")
    )];
    if !leases.is_empty() {
        writes.push(format!(
            "revoke lease {} ({})",
            leases.join(", "),
            hold_text(deposed)
        ));
    }
    writes
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
                vec![format!(
                    "txn: if create_revision({}) == {} then delete {}",
                    l.key, l.create_revision, l.key
                )],
                vec![
                    format!(
                        "{} keeps its session and lease; the next in line becomes leader.",
                        l.id
                    ),
                    format!(
                        "Election clients (Go concurrency, Node etcd3, etcdctl elect) do not notice a \
                         resign (etcd issue #11777): if {} is one, it does not notice it was deposed \
                         and may go on acting as leader beside the next one. Force a re-election \
                         instead (R, or electop reelect): it ends {}'s session first.",
                        l.id, l.id
                    ),
                ],
            )
        }
        (Scheme::EtcdElection, ActionKind::Reelect) => {
            let l = leader(e)?;
            l.lease.filter(|l| *l != 0).ok_or_else(|| {
                format!("{} holds a key without a lease: there is no session to end; resign (S) deletes the key", l.id)
            })?;
            let next = e
                .candidates
                .get(1)
                .map(|c| c.id.clone())
                .unwrap_or_else(|| "nobody (the line is empty)".into());
            let mut writes = depose_writes(std::slice::from_ref(l));
            writes.push(format!(
                "the hold ends: etcd deletes {}; {next} leads",
                l.key
            ));
            (
                writes,
                vec![deposed_note(std::slice::from_ref(l)), MEASURED.to_string()],
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
            let mut writes = depose_writes(ahead);
            writes.push(format!(
                "the hold ends: etcd deletes their keys; {target} leads"
            ));
            let removed: Vec<&str> = ahead.iter().map(|c| c.id.as_str()).collect();
            (
                writes,
                vec![
                    format!("Removes from the line: {}.", removed.join(", ")),
                    deposed_note(ahead),
                    MEASURED.to_string(),
                ],
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Election;

    fn line(ids: &[&str]) -> Election {
        let mut e = Election::new(0, "jobs".into(), Scheme::EtcdElection);
        e.candidates = ids
            .iter()
            .enumerate()
            .map(|(i, id)| Candidate {
                id: id.to_string(),
                raw_id: id.as_bytes().to_vec(),
                key: format!("/e/jobs/{:x}", 0x10 + i),
                raw_key: format!("/e/jobs/{:x}", 0x10 + i).into_bytes(),
                lease: Some(0x10 + i as i64),
                create_revision: 5 + i as i64,
                mod_revision: 5 + i as i64,
                stamp: None,
                ttl: None,
            })
            .collect();
        e.leader = e.candidates.first().cloned();
        e
    }

    fn plan_of(kind: ActionKind, ids: &[&str]) -> Plan {
        plan(&AdminRequest {
            source: 0,
            source_name: "etcd".into(),
            kind,
            seen: line(ids),
        })
        .expect("a plan")
    }

    #[test]
    fn etcd_election_resign_warns_that_clients_do_not_notice() {
        let notes = plan_of(ActionKind::Resign, &["node-a", "node-b"])
            .notes
            .join(" ");
        for client in ["Go concurrency", "Node etcd3", "etcdctl elect"] {
            assert!(notes.contains(client), "{notes}");
        }
        assert!(
            notes.contains("do not notice")
                && notes.contains("Force a re-election instead (R, or electop reelect)")
        );
    }

    #[test]
    fn etcd_election_deposing_ends_sessions_first_and_states_the_measured_bound() {
        let re = plan_of(ActionKind::Reelect, &["node-a", "node-b"]);
        assert_eq!(re.writes.len(), 3, "{:?}", re.writes);
        assert!(re.writes[0].contains("hold lease") && re.writes[1].contains("revoke lease 10"));
        assert!(re.writes[2].ends_with("node-b leads"));
        let target = ActionKind::ForceLeader {
            target: "node-c".into(),
        };
        let fl = plan_of(target, &["node-a", "node-b", "node-c"]);
        assert!(
            fl.writes[1].starts_with("revoke lease 10, 11"),
            "{:?}",
            fl.writes
        );
        assert!(fl.notes[0].contains("Removes from the line: node-a, node-b."));
        for notes in [re.notes, fl.notes] {
            assert!(
                notes.iter().any(|n| n.contains("up to 19998 ms")),
                "{notes:?}"
            );
        }
    }
}
