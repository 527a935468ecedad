//! etcd-election (Go `concurrency`, Node `etcd3`, `etcdctl elect`): a resign deletes the
//! leader's key; a re-election or force-leader deposes sessions first (why:
//! `backend::etcd::admin::depose`).

use super::{EtcdStep, Op, Readback, hold_secs};
use crate::admin::{ActionKind, Check, Compare, Gist, Key, Plan, leader, step};
use crate::model::{Candidate, Election};

/// What the deposed may still believe, from their leases as seen: election clients learn
/// their session ended at their next keep-alive, a third of the TTL in (as measured with
/// etcdctl elect, Go concurrency and Node etcd3: tests/campaigners/MEASUREMENTS.md; the
/// figures stay there, not in the dialog). The hold outlasts it, so never beside another.
fn belief_note(deposed: &[Candidate]) -> String {
    let longest = deposed
        .iter()
        .filter_map(|c| c.ttl.map(|d| (d.granted_ms + 999) / 1000))
        .max();
    match longest {
        Some(secs) => format!(
            "The deposed may believe they still lead for up to {} s (a third of their {secs} s \
             lease: until their next keep-alive), never beside another leader.",
            (secs + 2) / 3
        ),
        None => "The deposed may believe they still lead until their next keep-alive (a third \
                 of their lease's TTL), never beside another leader."
            .to_string(),
    }
}

/// The granted TTL of `c`'s lease as seen, in whole seconds.
fn ttl_secs(c: &Candidate) -> Option<i64> {
    c.ttl.map(|d| (d.granted_ms + 999) / 1000)
}

/// `ids` for a gist line, which must stay short: a long line is counted, not listed (the
/// details list them all).
fn few(ids: &[&str]) -> String {
    match ids {
        [] => "nobody".into(),
        [one] => (*one).to_string(),
        [a, b] => format!("{a} and {b}"),
        [a, b, c] => format!("{a}, {b} and {c}"),
        [a, rest @ ..] => format!("{a} and the {} after it", rest.len()),
    }
}

/// The gist's gap of a deposing plan: no leader while the deposed keys are held (how long,
/// from their TTLs as seen, as [`hold_secs`] counts the hold the plan grants).
fn held_gap(deposed: &[Candidate]) -> String {
    let whose = match deposed {
        [one] => format!("{}'s key is", one.id),
        many => {
            let ids: Vec<&str> = many.iter().map(|c| c.id.as_str()).collect();
            format!("the keys of {} are", few(&ids))
        }
    };
    let ttls: Option<Vec<i64>> = deposed
        .iter()
        .filter(|c| c.lease.is_some_and(|l| l != 0))
        .map(ttl_secs)
        .collect();
    match ttls {
        Some(ttls) if !ttls.is_empty() => {
            format!("No leader for {} s, while {whose} held.", hold_secs(&ttls))
        }
        _ => format!("No leader while {whose} held (a third of their TTL + 2 s)."),
    }
}

/// The gist's belief of a deposed leader: until its next keep-alive, never beside `next`.
fn believes(leader: &Candidate, next: &str) -> String {
    match ttl_secs(leader) {
        Some(secs) => format!(
            "{} may believe it still leads for up to {} s, never beside {next}.",
            leader.id,
            (secs + 2) / 3
        ),
        None => format!(
            "{} may believe it still leads until its next keep-alive, never beside {next}.",
            leader.id
        ),
    }
}

pub(super) fn plan(e: &Election, kind: &ActionKind) -> Result<Plan, String> {
    match kind {
        ActionKind::Resign => resign(e),
        ActionKind::Reelect => {
            let l = leader(e)?;
            l.lease.filter(|l| *l != 0).ok_or_else(|| {
                format!(
                    "{} holds a key without a lease: there is no session to end; resign (S) \
                     deletes the key",
                    l.id
                )
            })?;
            let next = e
                .candidates
                .get(1)
                .map_or("nobody (the line is empty)", |c| c.id.as_str());
            let mut p = depose(std::slice::from_ref(l), None);
            p.then = Some(format!(
                "the hold ends: etcd deletes {}; {next} leads",
                l.key
            ));
            let deposed = std::slice::from_ref(l);
            p.notes = vec![deposed_note(deposed), belief_note(deposed)];
            p.gist = Gist {
                next: match e.candidates.get(1) {
                    Some(c) => format!("{} leads next: it is next in line.", c.id),
                    None => "Nobody leads next: nobody else is in line.".into(),
                },
                gap: held_gap(deposed),
                deposed: Some(believes(l, "another leader")),
            };
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
            let mut p = depose(ahead, Some(&e.candidates[i]));
            p.then = Some(format!(
                "the hold ends: etcd deletes their keys; {target} leads"
            ));
            let removed: Vec<&str> = ahead.iter().map(|c| c.id.as_str()).collect();
            p.notes = vec![
                format!("Removes from the line: {}.", removed.join(", ")),
                deposed_note(ahead),
                belief_note(ahead),
            ];
            let leave = if removed.len() == 1 {
                "leaves"
            } else {
                "leave"
            };
            p.gist = Gist {
                next: format!("{target} leads next; {} {leave} the line.", few(&removed)),
                gap: held_gap(ahead),
                deposed: Some(believes(e.leader.as_ref().unwrap_or(&ahead[0]), target)),
            };
            Ok(p)
        }
    }
}

fn resign(e: &Election) -> Result<Plan, String> {
    let l = leader(e)?;
    let next = e.candidates.iter().find(|c| c.raw_key != l.raw_key);
    let gist = match next {
        Some(n) => Gist {
            next: format!("{} leads next, at once: it is next in line.", n.id),
            gap: "No gap: the key is deleted in one write.".into(),
            deposed: Some(format!(
                "If {} is an election client it does not notice, and may go on leading beside \
                 {}.",
                l.id, n.id
            )),
        },
        None => Gist {
            next: "Nobody leads next: nobody else is in line.".into(),
            gap: "No leader until someone campaigns.".into(),
            deposed: Some(format!(
                "If {} is an election client it does not notice, and may go on leading.",
                l.id
            )),
        },
    };
    Ok(Plan {
        summary: String::new(),
        gist,
        steps: vec![step(EtcdStep::Txn {
            compares: vec![Compare {
                key: Key::of(l),
                check: Check::CreateRevision(l.create_revision),
            }],
            then: vec![Op::Delete(Key::of(l))],
        })],
        then: None,
        notes: vec![
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
        // Election clients do not notice a resign; a re-election ends the session instead.
        reelect_instead: true,
        readback: std::sync::Arc::new(Readback::Line(Key::of(l))),
    })
}

/// Holds the keys of `deposed` (in line order) on a new lease, checking the line as seen
/// (and that `target` is still in it), then ends their sessions.
fn depose(deposed: &[Candidate], target: Option<&Candidate>) -> Plan {
    // Keys without a lease (zombies) have no session to end; they are held all the same.
    let owned: Vec<&Candidate> = deposed
        .iter()
        .filter(|c| c.lease.is_some_and(|l| l != 0))
        .collect();
    let leases: Vec<i64> = owned.iter().filter_map(|c| c.lease).collect();
    let seen_ttls: Option<Vec<i64>> = owned
        .iter()
        .map(|c| c.ttl.as_ref().map(|d| (d.granted_ms + 999) / 1000))
        .collect();
    let mut compares: Vec<Compare> = deposed
        .iter()
        .chain(target)
        .map(|c| Compare {
            key: Key::of(c),
            check: Check::CreateRevision(c.create_revision),
        })
        .collect();
    compares.extend(deposed.iter().map(|c| Compare {
        key: Key::of(c),
        check: Check::Lease(c.lease.unwrap_or(0)),
    }));
    let mut steps = vec![
        step(EtcdStep::GrantHold {
            leases: leases.clone(),
            seen_ttls,
        }),
        step(EtcdStep::Txn {
            compares,
            then: deposed.iter().map(|c| Op::Hold(Key::of(c))).collect(),
        }),
    ];
    if !leases.is_empty() {
        steps.push(step(EtcdStep::Revoke {
            leases,
            owners: owned.iter().map(|c| c.id.clone()).collect(),
        }));
    }
    Plan {
        summary: String::new(),
        gist: Gist::default(),
        steps,
        then: None,
        notes: Vec::new(),
        reelect_instead: false,
        readback: std::sync::Arc::new(Readback::Line(Key::of(target.unwrap_or(&deposed[0])))),
    }
}

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
