//! Admin on Patroni goes through Patroni's own protocol: a switchover is a request in the
//! `failover` key, written as `patronictl switchover` writes it, which Patroni's leader
//! carries out (it demotes itself and releases the leader key; the candidate promotes).
//! electop never deletes Patroni's keys: Patroni would not notice a removed leader key
//! before its next loop, and may take it straight back.

use super::ActionKind;
use crate::model::{Election, Note};

/// The `failover` key's value for a switchover from `leader` to `member`, as Patroni's
/// `manual_failover` writes it (compact JSON).
pub fn failover_value(leader: &str, member: &str) -> String {
    serde_json::json!({ "leader": leader, "member": member }).to_string()
}

/// The `failover` key as last read, if present.
pub fn failover_note(e: &Election) -> Option<&Note> {
    e.notes.iter().find(|n| n.name == "failover")
}

/// The failover key of the election whose leader key is `leader_key` (`<scope>/leader`).
pub fn failover_key(leader_key: &[u8]) -> Vec<u8> {
    let dir = leader_key.strip_suffix(b"leader").unwrap_or(leader_key);
    [dir, b"failover"].concat()
}

/// Who may be switched to: a member other than the leader, not tagged `nofailover`.
pub fn check_target(e: &Election, target: &str) -> Result<(), String> {
    let leader = e.leader.as_ref().ok_or_else(|| {
        format!(
            "{} has no leader: a switchover needs one to hand over",
            e.name
        )
    })?;
    if leader.id == target {
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

pub fn plan(e: &Election, kind: &ActionKind) -> Result<(Vec<String>, Vec<String>), String> {
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
    let l = e.leader.as_ref().ok_or("no leader")?;
    let key = crate::model::escape_bytes(&failover_key(&l.raw_key));
    let guard = match failover_note(e) {
        Some(n) => format!("mod_revision({key}) == {}", n.mod_revision),
        None => format!("{key} is absent"),
    };
    Ok((
        vec![format!(
            "txn: if value({0}) == {1} and mod_revision({0}) == {2} and {guard} then put {key} = {3}",
            l.key,
            l.id,
            l.mod_revision,
            failover_value(&l.id, target)
        )],
        vec![
            format!(
                "A Patroni switchover, as `patronictl switchover --leader {} --candidate {target}` \
                 requests it: Patroni's leader demotes itself and releases the leader key, then \
                 {target} promotes. electop deletes none of Patroni's keys.",
                l.id
            ),
            "Patroni may refuse (e.g. the candidate lags too far); the failover key is then reset \
             and the leader stays."
                .into(),
        ],
    ))
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
        assert_eq!(
            failover_key(b"/service/demo/leader"),
            b"/service/demo/failover"
        );
        let (writes, notes) = plan(
            &e,
            &ActionKind::ForceLeader {
                target: "n2".into(),
            },
        )
        .expect("possible");
        assert!(
            writes[0].contains("/service/demo/failover is absent"),
            "{writes:?}"
        );
        assert!(
            writes[0].contains("mod_revision(/service/demo/leader) == 9"),
            "{writes:?}"
        );
        assert!(
            notes[0].contains("patronictl switchover --leader n1 --candidate n2"),
            "{notes:?}"
        );
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
