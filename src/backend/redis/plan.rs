//! The plans of admin actions on Redis locks: one Lua script that deletes the lock key only
//! if it still holds the token shown (the holder's own release, done by electop).
//!
//! Resign and re-election are one write here, on purpose: a lock holder cannot be asked to
//! step down (no client reads a request), and Redis has no session to end, so the only thing
//! either can do is delete its key. Whoever tries next takes the lock; the holder is not told
//! and learns it at its next renewal (redis-py `reacquire`/`extend`, `redlock` `extend`, each
//! compared on its token, fail). Force leader X is unavailable: there is no line, and a
//! lock's token belongs to the client that took it.

use crate::admin::{ActionKind, AdminRequest, Gist, Key, Plan, StoreStep, step};
use crate::model::Scheme;

/// One Lua script, atomic on the Redis server: delete `key` if its value is still the
/// token seen (`value` as sent, `shown` as shown), else nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct DelIfValue {
    pub key: Key,
    pub value: Vec<u8>,
    pub shown: String,
}

impl StoreStep for DelIfValue {
    fn line(&self) -> String {
        format!(
            "one Lua script (atomic): if GET {k} == {shown} then DEL {k}, else nothing",
            k = self.key.shown,
            shown = self.shown
        )
    }
}

/// What a Redis plan reads back after it wrote: what this lock key holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct LockKey(pub Key);

pub(super) fn plan(req: &AdminRequest) -> Result<Plan, String> {
    let e = &req.seen;
    if e.scheme != Scheme::RedisLock {
        return Err(format!("{} is not a scheme of this source", e.scheme));
    }
    if let ActionKind::ForceLeader { .. } = &req.kind {
        return Err(format!(
            "force-leader is unavailable on Redis: a lock has no line of candidates, and \
             electop cannot take {} on another client's behalf (the token is that client's \
             own); use reelect and the clients race for it",
            e.name
        ));
    }
    let leader = crate::admin::leader(e)?;
    let key = Key::of(leader);
    let mut notes = vec![format!(
        "{} is not told: it learns it lost the lock only when its next renewal (redis-py \
         reacquire or extend, redlock extend, each compared on its token) fails.",
        leader.id
    )];
    if req.kind == ActionKind::Resign {
        notes.push(
            "On Redis a resign is the same write as a re-election: a lock holder cannot be \
             asked to step down, so both delete its key."
                .into(),
        );
    }
    Ok(Plan {
        summary: String::new(),
        gist: Gist {
            next: "Whoever takes the lock next leads: Redis keeps no line.".into(),
            gap: "No leader until a client's next try to take it.".into(),
            deposed: Some(format!(
                "{} may act as leader until its next renewal fails.",
                leader.id
            )),
        },
        steps: vec![step(DelIfValue {
            key: key.clone(),
            value: leader.raw_id.clone(),
            // The token compared, not the holder's name (an electop node's id).
            shown: crate::model::truncate_display(
                &crate::model::escape_bytes(&leader.raw_id),
                crate::model::SHOWN_MAX,
            ),
        })],
        then: None,
        notes,
        reelect_instead: false,
        readback: std::sync::Arc::new(LockKey(key)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::redis::RedisKeys;
    use crate::model::{Candidate, Election};

    fn req(kind: ActionKind, holder: Option<&str>) -> AdminRequest {
        let mut e = Election::new(0, "leader:jobs".into(), Scheme::RedisLock);
        e.leader = holder.map(|t| Candidate::plain(t, "leader:jobs"));
        e.candidates = e.leader.iter().cloned().collect();
        AdminRequest {
            source: 0,
            source_name: "redis1".into(),
            kind,
            seen: e,
            target: RedisKeys {
                pattern: "leader:*".into(),
            }
            .into(),
        }
    }

    #[test]
    fn reelect_and_resign_delete_the_key_if_it_holds_the_token_shown() {
        let p = plan(&req(ActionKind::Reelect, Some("tok-a"))).expect("a plan");
        assert_eq!(
            p.writes(),
            [
                "one Lua script (atomic): if GET leader:jobs == tok-a then DEL leader:jobs, else nothing"
            ]
        );
        assert!(
            p.gist
                .deposed
                .as_deref()
                .is_some_and(|d| d.contains("tok-a"))
        );
        let r = plan(&req(ActionKind::Resign, Some("tok-a"))).expect("a plan");
        assert_eq!(r.steps, p.steps);
        assert!(r.notes.last().is_some_and(|n| n.contains("same write")));
    }

    #[test]
    fn what_cannot_be_done_says_why() {
        let force = ActionKind::ForceLeader {
            target: "tok-b".into(),
        };
        let e = plan(&req(force, Some("tok-a"))).expect_err("no line");
        assert!(e.contains("force-leader is unavailable on Redis"), "{e}");
        let e = plan(&req(ActionKind::Reelect, None)).expect_err("no leader");
        assert!(e.contains("no leader"), "{e}");
    }
}
