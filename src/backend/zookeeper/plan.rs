//! The plans of admin actions on ZooKeeper elections: one `multi` that deletes exactly the
//! nodes shown (the leader's; for force-leader X, every node ahead of X), each compared on
//! what it was when seen (`election-models.md`, ZooKeeper).
//!
//! Resign and re-election are one write here, on purpose: a recipe's leader cannot be asked
//! to step down (no recipe reads a request), and ZooKeeper has no call that ends another
//! client's session, so the only thing either action can do is delete the leader's node. The
//! next in line then leads; the deposed client does not notice (measured with Curator
//! `LeaderLatch`, `LeaderSelector` and kazoo `Election`: tests/campaigners/MEASUREMENTS.md)
//! and does not re-join by itself. They differ only in the cause recorded.

use super::step::{Multi, Znode};
use crate::admin::{ActionKind, AdminRequest, Check, Compare, Gist, Key, Plan, step};
use crate::model::{Candidate, Scheme};

pub(super) fn plan(req: &AdminRequest) -> Result<Plan, String> {
    let e = &req.seen;
    if e.scheme != Scheme::ZkRecipe {
        return Err(format!("{} is not a scheme of this source", e.scheme));
    }
    let leader = crate::admin::leader(e)?;
    match &req.kind {
        ActionKind::Reelect | ActionKind::Resign => {
            let next = e.candidates.iter().find(|c| c.raw_key != leader.raw_key);
            let mut p = multi(std::slice::from_ref(leader), None);
            p.gist = Gist {
                next: match next {
                    Some(n) => format!("{} leads next: it is next in line.", n.id),
                    None => "Nobody leads next: nobody else is in line.".into(),
                },
                gap: gap(leader, next.map(|n| n.id.as_str())),
                deposed: Some(unnoticed(leader, next.map(|n| n.id.as_str()))),
            };
            p.notes = notes(leader, &[]);
            if req.kind == ActionKind::Resign {
                p.notes.push(
                    "On ZooKeeper a resign is the same write as a re-election: a recipe's \
                     leader cannot be asked to step down, so both delete its node."
                        .into(),
                );
            }
            Ok(p)
        }
        ActionKind::ForceLeader { target } => {
            let i = e
                .candidates
                .iter()
                .position(|c| c.id == *target)
                .ok_or_else(|| format!("{target} is not in the line of {}", e.name))?;
            if i == 0 {
                return Err(format!("{target} already leads {}", e.name));
            }
            let ahead = &e.candidates[..i];
            let x = &e.candidates[i];
            let mut p = multi(ahead, Some(x));
            let removed: Vec<&str> = ahead.iter().map(|c| c.id.as_str()).collect();
            let leave = if removed.len() == 1 {
                "leaves"
            } else {
                "leave"
            };
            p.gist = Gist {
                next: format!("{target} leads next; {} {leave} the line.", few(&removed)),
                gap: gap(leader, Some(target)),
                deposed: Some(unnoticed(leader, Some(target))),
            };
            p.notes = notes(leader, &ahead[1..]);
            p.notes
                .insert(0, format!("Removes from the line: {}.", removed.join(", ")));
            Ok(p)
        }
    }
}

/// Deletes `gone` and keeps `keep` (force-leader's X), all compared on czxid and mzxid.
fn multi(gone: &[Candidate], keep: Option<&Candidate>) -> Plan {
    let compares = gone
        .iter()
        .chain(keep)
        .flat_map(|c| {
            [
                Compare {
                    key: Key::of(c),
                    check: Check::CreateRevision(c.create_revision),
                },
                Compare {
                    key: Key::of(c),
                    check: Check::ModRevision(c.mod_revision),
                },
            ]
        })
        .collect();
    let path = String::from_utf8_lossy(&gone[0].raw_key).into_owned();
    let parent = match path.rfind('/') {
        Some(0) | None => "/".to_string(),
        Some(i) => path[..i].to_string(),
    };
    Plan {
        summary: String::new(),
        gist: Gist::default(),
        steps: vec![step(Multi {
            compares,
            delete: gone.iter().map(Key::of).collect(),
            keep: keep.iter().map(|c| Key::of(c)).collect(),
        })],
        then: None,
        notes: Vec::new(),
        reelect_instead: false,
        readback: std::sync::Arc::new(Znode(parent)),
    }
}

/// The gist's gap: none in the store; the next leads once its client sees the delete.
fn gap(leader: &Candidate, next: Option<&str>) -> String {
    match next {
        Some(n) => format!(
            "No gap in the store: {n} is first once {}'s node is deleted, and leads when its \
             client sees that.",
            leader.id
        ),
        None => "No leader until someone campaigns.".into(),
    }
}

/// The gist's deposed line: the client does not notice, for as long as its session lives.
fn unnoticed(leader: &Candidate, next: Option<&str>) -> String {
    let beside = next.map(|n| format!(" beside {n}")).unwrap_or_default();
    format!(
        "{} does not notice: its client goes on leading{beside} for as long as its session \
         lives.",
        leader.id
    )
}

/// What the operator must know: who does not notice and why, what electop shows after.
fn notes(leader: &Candidate, waiting: &[Candidate]) -> Vec<String> {
    let session = leader.stamp.as_deref().unwrap_or("?");
    let mut out = vec![
        format!(
            "The deposed client is not told: Curator LeaderLatch fires no notLeader, \
             LeaderSelector stays in takeLeadership, kazoo's Election keeps running its leader \
             function, for as long as {}'s session ({session}) lives. ZooKeeper has no call \
             that ends another client's session, so two clients believe they lead until then.",
            leader.id
        ),
        format!(
            "electop shows {} as deposed, with its session, until that session is gone: stop \
             or restart {}'s process to end it. It does not re-join the line by itself.",
            leader.id, leader.id
        ),
    ];
    if !waiting.is_empty() {
        let ids: Vec<&str> = waiting.iter().map(|c| c.id.as_str()).collect();
        out.push(format!(
            "{} wait(s) in line and lose(s) its place: its client is not told either.",
            ids.join(", ")
        ));
    }
    out
}

/// `ids` for a gist line, which must stay short.
fn few(ids: &[&str]) -> String {
    match ids {
        [] => "nobody".into(),
        [one] => (*one).to_string(),
        [a, b] => format!("{a} and {b}"),
        [a, rest @ ..] => format!("{a} and the {} after it", rest.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::zookeeper::ZkTarget;
    use crate::model::Election;

    fn line(ids: &[&str]) -> Election {
        let mut e = Election::new(0, "jobs".into(), Scheme::ZkRecipe);
        e.candidates = ids
            .iter()
            .enumerate()
            .map(|(i, id)| {
                let path = format!("/election/jobs/_c_u{i}-latch-000000000{i}");
                let mut c = Candidate::plain(id, &path);
                c.create_revision = 0x10 + i as i64;
                c.mod_revision = 0x10 + i as i64;
                c.stamp = Some(format!("0x10{i}"));
                c
            })
            .collect();
        e.leader = e.candidates.first().cloned();
        e
    }

    fn req(kind: ActionKind, ids: &[&str]) -> AdminRequest {
        AdminRequest {
            source: 0,
            source_name: "zk1".into(),
            kind,
            seen: line(ids),
            target: ZkTarget {
                prefix: "/election".into(),
            }
            .into(),
        }
    }

    #[test]
    fn reelect_deletes_the_leader_node_compared_on_its_zxids() {
        let p = plan(&req(ActionKind::Reelect, &["node-a", "node-b"])).expect("a plan");
        assert_eq!(
            p.writes(),
            [
                "read, then one multi: if czxid(/election/jobs/_c_u0-latch-0000000000) == 0x10 \
                 and mzxid(/election/jobs/_c_u0-latch-0000000000) == 0x10 then, at the data \
                 versions read, delete /election/jobs/_c_u0-latch-0000000000"
            ]
        );
        assert_eq!(
            p.readback_of::<Znode>(),
            Some(&Znode("/election/jobs".into()))
        );
        assert_eq!(p.gist.next, "node-b leads next: it is next in line.");
        let deposed = p.gist.deposed.as_deref().expect("a deposed line");
        assert!(deposed.contains("node-a does not notice"), "{deposed}");
        let notes = p.notes.join(" ");
        for said in [
            "LeaderLatch fires no notLeader",
            "LeaderSelector stays in takeLeadership",
            "kazoo's Election keeps running its leader function",
            "no call that ends another client's session",
            "0x100",
        ] {
            assert!(notes.contains(said), "{said}: {notes}");
        }
    }

    #[test]
    fn resign_is_the_same_write_and_says_why() {
        let r = plan(&req(ActionKind::Resign, &["node-a", "node-b"])).expect("a plan");
        let e = plan(&req(ActionKind::Reelect, &["node-a", "node-b"])).expect("a plan");
        assert_eq!(r.steps, e.steps);
        assert!(r.notes.last().is_some_and(|n| n.contains("same write")));
    }

    #[test]
    fn force_leader_deletes_every_node_ahead_and_checks_the_target() {
        let p = plan(&req(
            ActionKind::ForceLeader {
                target: "node-c".into(),
            },
            &["node-a", "node-b", "node-c", "node-d"],
        ))
        .expect("a plan");
        let Some(Multi {
            compares,
            delete,
            keep,
        }) = p.steps[0].downcast_ref()
        else {
            panic!("a multi: {:?}", p.steps);
        };
        assert_eq!(compares.len(), 6, "czxid and mzxid of three nodes");
        let shown = |ks: &[Key]| ks.iter().map(|k| k.shown.clone()).collect::<Vec<_>>();
        assert_eq!(
            shown(delete),
            [
                "/election/jobs/_c_u0-latch-0000000000",
                "/election/jobs/_c_u1-latch-0000000001"
            ]
        );
        assert_eq!(shown(keep), ["/election/jobs/_c_u2-latch-0000000002"]);
        assert_eq!(
            p.gist.next,
            "node-c leads next; node-a and node-b leave the line."
        );
        assert!(p.notes[0].contains("node-a, node-b"));
        let lines = p.writes_in_lines();
        assert_eq!(
            lines[0].last().map(String::as_str),
            Some("  check /election/jobs/_c_u2-latch-0000000002 is still there")
        );
    }

    #[test]
    fn what_cannot_be_done_says_why() {
        let force = |t: &str| ActionKind::ForceLeader { target: t.into() };
        let err = |kind, ids: &[&str]| plan(&req(kind, ids)).expect_err("refused");
        assert!(err(force("node-a"), &["node-a", "node-b"]).contains("already leads"));
        assert!(err(force("node-x"), &["node-a"]).contains("not in the line"));
        assert!(err(ActionKind::Reelect, &[]).contains("no leader"));
    }
}
