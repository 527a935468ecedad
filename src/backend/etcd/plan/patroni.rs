//! Patroni: admin goes through Patroni's own protocol. A switchover is a request in the
//! `failover` key, written as `patronictl switchover` writes it through etcd, which Patroni's
//! leader carries out (it demotes itself and releases the leader key; the candidate
//! promotes). electop never deletes Patroni's keys: Patroni would not notice a removed leader
//! key before its next loop, and may take it straight back.

use super::{EtcdStep, Op, Readback};
use crate::admin::{ActionKind, Check, Compare, Gist, Key, Plan, leader, step};
use crate::model::{Election, escape_bytes};

/// The `failover` key's value for a switchover from `leader` to `member`, as Patroni's
/// `manual_failover` writes it (compact JSON).
pub(super) fn failover_value(leader: &str, member: &str) -> String {
    serde_json::json!({ "leader": leader, "member": member }).to_string()
}

/// The failover key of the election whose leader key is `leader_key` (`<scope>/leader`).
fn failover_key(leader_key: &[u8]) -> Key {
    let dir = leader_key.strip_suffix(b"leader").unwrap_or(leader_key);
    let raw = [dir, b"failover"].concat();
    Key {
        shown: escape_bytes(&raw),
        raw,
    }
}

/// Who may be switched to: a member other than the leader, not tagged `nofailover`.
fn check_target(e: &Election, target: &str) -> Result<(), String> {
    let l = leader(e)?;
    if l.id == target {
        return Err(format!("{target} already leads {}", e.name));
    }
    let member = e
        .member(target)
        .ok_or_else(|| format!("{target} is not a member of {}", e.name))?;
    if member.nofailover {
        return Err(format!(
            "{target} is tagged nofailover: Patroni never promotes it"
        ));
    }
    Ok(())
}

pub(super) fn plan(e: &Election, kind: &ActionKind) -> Result<Plan, String> {
    let target = match kind {
        ActionKind::ForceLeader { target } => target,
        ActionKind::Reelect => {
            return Err(
                "Patroni picks its leader itself: a re-election would mean deleting its leader \
                 key, which electop does not do; use force-leader (a Patroni switchover) instead"
                    .into(),
            );
        }
        ActionKind::Resign => {
            return Err(
                "Patroni has no resign of its own that electop could ask for: use force-leader \
                 MEMBER (a Patroni switchover, which demotes the leader)"
                    .into(),
            );
        }
    };
    check_target(e, target)?;
    let l = leader(e)?;
    let failover = failover_key(&l.raw_key);
    let seen = e.notes.iter().find(|n| n.name == "failover");
    let value = failover_value(&l.id, target);
    let compares = vec![
        Compare {
            key: Key::of(l),
            check: Check::Value(l.raw_id.clone(), l.id.clone()),
        },
        Compare {
            key: Key::of(l),
            check: Check::ModRevision(l.mod_revision),
        },
        Compare {
            key: failover.clone(),
            check: seen.map_or(Check::Absent, |n| Check::ModRevision(n.mod_revision)),
        },
    ];
    Ok(Plan {
        summary: String::new(),
        gist: Gist {
            next: format!("{target} leads once Patroni has switched over (it may refuse)."),
            gap: format!(
                "No leader while {} demotes itself and {target} promotes.",
                l.id
            ),
            deposed: Some(format!(
                "{} demotes itself: Patroni's own switchover, nothing deleted.",
                l.id
            )),
        },
        steps: vec![step(EtcdStep::Txn {
            compares,
            then: vec![Op::Put {
                key: failover.clone(),
                value: value.clone().into_bytes(),
                shown: value,
                lease: 0,
            }],
        })],
        then: Some(format!(
            "Patroni's leader {} demotes itself and releases the leader key; {target} promotes",
            l.id
        )),
        notes: vec![
            format!(
                "A Patroni switchover, as `patronictl switchover --leader {} --candidate {target}` \
                 requests it; electop deletes none of Patroni's keys.",
                l.id
            ),
            "Patroni may refuse (e.g. the candidate lags too far); the failover key is then reset \
             and the leader stays."
                .into(),
        ],
        reelect_instead: false,
        readback: std::sync::Arc::new(Readback::Key(failover)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Candidate, MemberInfo, Scheme};

    fn election() -> Election {
        let mut e = Election::new(0, "demo".into(), Scheme::Patroni);
        e.leader = Some(Candidate {
            id: "n1".into(),
            raw_id: b"n1".to_vec(),
            key: "/service/demo/leader".into(),
            raw_key: b"/service/demo/leader".to_vec(),
            lease: Some(7),
            create_revision: 9,
            mod_revision: 9,
            stamp: None,
            ttl: None,
        });
        for (id, nofailover) in [("n1", false), ("n2", false), ("n3", true)] {
            e.members.push(MemberInfo {
                id: id.into(),
                nofailover,
                ..MemberInfo::default()
            });
        }
        e
    }

    #[test]
    fn a_switchover_writes_the_failover_key_as_patronictl_does() {
        let e = election();
        assert_eq!(
            failover_value("n1", "n2"),
            r#"{"leader":"n1","member":"n2"}"#
        );
        let to = ActionKind::ForceLeader {
            target: "n2".into(),
        };
        let p = plan(&e, &to).expect("possible");
        let writes = p.writes().join("\n");
        assert!(writes.contains("/service/demo/failover"), "{writes}");
        assert!(
            writes.contains(r#"{"leader":"n1","member":"n2"}"#),
            "{writes}"
        );
        let Some(EtcdStep::Txn { compares, .. }) = p.steps[0].downcast_ref() else {
            panic!("a txn")
        };
        let checks: Vec<&Check> = compares.iter().map(|c| &c.check).collect();
        assert_eq!(
            checks,
            [
                &Check::Value(b"n1".to_vec(), "n1".into()),
                &Check::ModRevision(9),
                &Check::Absent
            ]
        );
        assert!(p.notes[0].contains("patronictl switchover --leader n1 --candidate n2"));
    }

    #[test]
    fn reelect_resign_and_impossible_targets_are_refused_with_the_reason() {
        let e = election();
        let refuse = |kind: ActionKind| plan(&e, &kind).expect_err("refused");
        assert!(refuse(ActionKind::Reelect).contains("force-leader"));
        assert!(refuse(ActionKind::Resign).contains("switchover"));
        let to = |t: &str| ActionKind::ForceLeader { target: t.into() };
        assert!(refuse(to("n3")).contains("nofailover"));
        assert!(refuse(to("n9")).contains("not a member"));
        assert!(refuse(to("n1")).contains("already leads"));
    }
}
