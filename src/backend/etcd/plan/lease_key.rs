//! etcd-lease-key: one leader key per election, put with the leader's lease; candidates
//! register under their own leases. Deleting the key starts a race; force-leader puts it
//! with the target's registry lease, so it lives as long as the target does.

use super::{EtcdStep, Op, Readback};
use crate::admin::{ActionKind, Check, Compare, Gist, Key, Plan, leader, step};
use crate::model::{Election, escape_bytes};

pub(super) fn plan(e: &Election, kind: &ActionKind, prefix: &str) -> Result<Plan, String> {
    let target = match kind {
        ActionKind::ForceLeader { target } => target,
        ActionKind::Reelect | ActionKind::Resign => return delete(e, kind),
    };
    let leader_key = match &e.leader {
        Some(l) => Key::of(l),
        None => {
            let raw = [prefix.as_bytes(), e.name.as_bytes()].concat();
            Key {
                shown: escape_bytes(&raw),
                raw,
            }
        }
    };
    let entry = e
        .candidates
        .iter()
        .find(|c| c.id == *target && c.raw_key != leader_key.raw && c.lease.is_some_and(|l| l != 0))
        .ok_or_else(|| {
            format!(
                "{target} has no registry entry in {}, and the leader key needs the lease \
                 from {target}'s entry (so that the key ends when {target} does)",
                e.name
            )
        })?;
    let check = match &e.leader {
        Some(l) if l.id == *target => return Err(format!("{target} already leads {}", e.name)),
        Some(l) => Check::ModRevision(l.mod_revision),
        None => Check::Absent,
    };
    let lease = entry.lease.unwrap_or(0);
    let gist = Gist {
        next: format!("{target} leads at once, on its registry lease {lease:x}."),
        gap: match &e.leader {
            Some(_) => "No gap: the leader key changes hands in one write.".into(),
            None => "No gap: the absent leader key is put in one write.".into(),
        },
        deposed: e.leader.as_ref().map(|l| {
            format!(
                "{} may believe it still leads until it sees the key change.",
                l.id
            )
        }),
    };
    Ok(Plan {
        summary: String::new(),
        gist,
        steps: vec![step(EtcdStep::Txn {
            compares: vec![
                Compare {
                    key: leader_key.clone(),
                    check,
                },
                Compare {
                    key: Key::of(entry),
                    check: Check::CreateRevision(entry.create_revision),
                },
            ],
            then: vec![Op::Put {
                key: leader_key.clone(),
                value: entry.raw_id.clone(),
                shown: entry.id.clone(),
                lease,
            }],
        })],
        then: None,
        notes: vec![format!(
            "{target} holds the key for as long as its registry lease {lease:x} lives."
        )],
        reelect_instead: false,
        readback: std::sync::Arc::new(Readback::Key(leader_key)),
    })
}

/// Re-election and resign both delete the key; resign also checks the leader is who was seen.
fn delete(e: &Election, kind: &ActionKind) -> Result<Plan, String> {
    let l = leader(e)?;
    let mut compares = vec![Compare {
        key: Key::of(l),
        check: Check::ModRevision(l.mod_revision),
    }];
    if *kind == ActionKind::Resign {
        compares.push(Compare {
            key: Key::of(l),
            check: Check::Value(l.raw_id.clone(), l.id.clone()),
        });
    }
    Ok(Plan {
        summary: String::new(),
        gist: Gist {
            next: format!("Whoever puts the key first leads; {} may win again.", l.id),
            gap: "No leader until a candidate puts the key.".into(),
            deposed: Some(format!(
                "{} keeps its lease, and may believe it leads until it sees the key deleted.",
                l.id
            )),
        },
        steps: vec![step(EtcdStep::Txn {
            compares,
            then: vec![Op::Delete(Key::of(l))],
        })],
        then: None,
        notes: vec![
            "Candidates watching the key race for it again; the old leader may win.".to_string(),
        ],
        reelect_instead: false,
        readback: std::sync::Arc::new(Readback::Key(Key::of(l))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::etcd::EtcdTarget;
    use crate::backend::plan;
    use crate::backend::plan_tests::{line, request};
    use crate::model::Scheme;

    #[test]
    fn etcd_lease_key_force_leader_without_a_leader_puts_the_key_under_the_prefix() {
        let mut e = line(&["node-a", "node-b"]);
        e.scheme = Scheme::EtcdLeaseKey;
        e.leader = None;
        let target = EtcdTarget {
            prefix: "/locks/".into(),
        }
        .into();
        let kind = ActionKind::ForceLeader {
            target: "node-b".into(),
        };
        let p = plan(&request(kind, e, target)).expect("a plan");
        assert_eq!(
            p.writes(),
            [
                "txn: if /locks/jobs is absent and create_revision(/e/jobs/11) == 6 then put \
                 /locks/jobs = node-b with lease 11"
            ]
        );
        assert_eq!(
            p.readback_of::<Readback>(),
            Some(&Readback::Key(Key {
                raw: b"/locks/jobs".to_vec(),
                shown: "/locks/jobs".into()
            }))
        );
    }
}
