//! The plans of admin actions on session locks. The only write there is, is ending a
//! session: a lock belongs to the session that took it, and only that session can release
//! it (`pg_advisory_unlock`, `RELEASE_LOCK`). Each session is ended in one statement that
//! compares its id and its start, so a reused id is never hit.
//!
//! - reelect: end the holder's session; the server grants the lock to the first in line.
//! - force-leader X: end every session ahead of X in line, holder first, each compared.
//! - resign: unavailable (nobody can release another session's lock), said with why.

use crate::admin::{ActionKind, AdminRequest, Gist, Plan, Step, StoreStep, step};
use crate::config::Dialect;
use crate::model::{Candidate, Election, MemberInfo};

/// End a SQL server session (which frees every lock it holds), in one statement that
/// compares its id and its start, so a reused id is never hit: `pg_terminate_backend` /
/// `KILL`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct EndSession {
    pub dialect: Dialect,
    /// PostgreSQL's pid, MySQL's connection id.
    pub id: i64,
    /// The session's start as the server's compare takes it (opaque: see
    /// [`super::Session::start`]).
    pub start: String,
    /// The start for people (`2024-05-01 10:00:01 UTC`).
    pub started: String,
    /// Who it is on screen (`worker:4242`) and what it is doing (`holder of 42`).
    pub who: String,
    pub role: String,
}

/// What a session-lock plan reads back after it wrote: who holds the lock with this key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Lock(pub String);

/// Ending a session, compared on its id and its start in the same statement.
impl StoreStep for EndSession {
    fn line(&self) -> String {
        let how = match self.dialect {
            Dialect::Postgres => format!(
                "pg_terminate_backend({id}) in one statement only if pid {id} is still the \
                 session whose backend_start is {started}",
                id = self.id,
                started = self.started
            ),
            // MySQL keeps no connection start: `started` is the lock it holds or waits for.
            _ => format!(
                "KILL CONNECTION {id} in one statement only if connection {id} still holds or \
                 waits for {started}",
                id = self.id,
                started = self.started
            ),
        };
        format!("end the session of {} ({}): {how}", self.who, self.role)
    }
}

/// The plan of `req` on a server that speaks `dialect`.
pub(super) fn plan(req: &AdminRequest, dialect: Dialect) -> Result<Plan, String> {
    let e = &req.seen;
    let (ending, next): (Vec<&Candidate>, String) = match &req.kind {
        ActionKind::Resign => return Err(resign_unavailable(dialect)),
        ActionKind::Reelect => {
            let leader = crate::admin::leader(e)?;
            let next = match e.candidates.get(1) {
                Some(c) => format!("{} leads next: it is first in line.", c.id),
                None => "Whoever takes the lock next leads: nobody waits for it.".to_string(),
            };
            (vec![leader], next)
        }
        ActionKind::ForceLeader { target } => {
            let at = e
                .candidates
                .iter()
                .position(|c| c.id == *target || String::from_utf8_lossy(&c.raw_id) == *target)
                .ok_or_else(|| {
                    format!(
                        "{target} is not in line for {}: force-leader can only choose a session \
                         that waits for the lock (see the line)",
                        e.name
                    )
                })?;
            if at == 0 && e.leader.is_some() {
                return Err(format!("{target} already holds {}", e.name));
            }
            let who = &e.candidates[at].id;
            let ahead: Vec<&str> = e.candidates[..at].iter().map(|c| c.id.as_str()).collect();
            let next = format!(
                "{who} leads next: the session(s) ahead of it are ended: {}.",
                ahead.join(", ")
            );
            (e.candidates[..at].iter().collect(), next)
        }
    };
    let steps = ending
        .iter()
        .map(|c| end_step(e, c, dialect))
        .collect::<Result<Vec<_>, _>>()?;
    let names: Vec<&str> = ending.iter().map(|c| c.id.as_str()).collect();
    let mut notes = vec![format!(
        "Ending a session ends its client's connection: {} learn(s) they lost the lock only \
         when they next use that connection, and may act as before until then.",
        names.join(", ")
    )];
    if ending.len() > 1 {
        notes.push(format!(
            "Ends {} sessions, each compared on its id and start; one that changed since it \
             was seen stops the action there.",
            ending.len()
        ));
    }
    Ok(Plan {
        summary: String::new(),
        gist: Gist {
            next,
            gap: "No leader only while the server ends the session and grants the lock.".into(),
            deposed: Some(format!(
                "{} may act as leader until it next uses its connection.",
                names.first().copied().unwrap_or("The holder")
            )),
        },
        steps,
        then: Some("the server grants the lock to the first session in line".into()),
        notes,
        reelect_instead: false,
        readback: std::sync::Arc::new(Lock(e.name.clone())),
    })
}

fn resign_unavailable(dialect: Dialect) -> String {
    let unlock = match dialect {
        Dialect::Postgres => "pg_advisory_unlock",
        _ => "RELEASE_LOCK",
    };
    format!(
        "resign is unavailable on a session lock: only the session holding it can release it \
         ({unlock} on its own connection), and no client reads a request to; use reelect, \
         which ends the holder's session"
    )
}

/// Ending `c`'s session, or why it cannot be: its start is hidden from this user.
fn end_step(e: &Election, c: &Candidate, dialect: Dialect) -> Result<Step, String> {
    let id: i64 = String::from_utf8_lossy(&c.raw_id)
        .parse()
        .map_err(|_| format!("{} has no session id electop can end", c.id))?;
    let start = c.stamp.clone().ok_or_else(|| match dialect {
        Dialect::Postgres => format!(
            "{}'s session is hidden from this user (its start cannot be compared, so electop \
             will not end it): GRANT pg_read_all_stats TO the user electop connects as",
            c.id
        ),
        _ => format!(
            "{}'s connection is hidden from this user (PROCESSLIST does not list it, so \
             electop will not end it): GRANT PROCESS ON *.* TO the user electop connects as",
            c.id
        ),
    })?;
    let member = e.members.iter().find(|m| m.id == c.id);
    let role = member
        .and_then(|m: &MemberInfo| m.role.clone())
        .unwrap_or_else(|| "in line".into());
    let started = start
        .parse::<u64>()
        .ok()
        .map(|us| {
            super::tracker::wall(std::time::UNIX_EPOCH + std::time::Duration::from_micros(us))
        })
        .unwrap_or_else(|| start.clone());
    Ok(step(EndSession {
        dialect,
        id,
        start,
        started,
        who: c.id.clone(),
        role: format!("{role} of {}", e.name),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::session_lock::SessionLockTarget;
    use crate::model::Scheme;

    /// On PostgreSQL, as `req`'s target says.
    fn plan(req: &AdminRequest) -> Result<Plan, String> {
        super::plan(req, Dialect::Postgres)
    }

    fn cand(id: &str, pid: i64, start: Option<&str>) -> Candidate {
        let mut c = Candidate::plain(id, "42");
        c.raw_id = pid.to_string().into_bytes();
        c.stamp = start.map(str::to_string);
        c
    }

    fn req(kind: ActionKind) -> AdminRequest {
        let mut e = Election::new(0, "jobs".into(), Scheme::PgAdvisory);
        e.candidates = vec![
            cand("a:1", 1, Some("1700000000000000")),
            cand("b:2", 2, Some("1700000001000000")),
            cand("c:3", 3, Some("1700000002000000")),
        ];
        e.leader = Some(e.candidates[0].clone());
        AdminRequest {
            source: 0,
            source_name: "sql1".into(),
            kind,
            seen: e,
            target: SessionLockTarget {
                dialect: Dialect::Postgres,
            }
            .into(),
        }
    }

    #[test]
    fn reelect_ends_the_holders_session_compared_on_its_start() {
        let p = plan(&req(ActionKind::Reelect)).expect("a plan");
        assert_eq!(p.steps.len(), 1);
        let w = p.writes();
        assert!(
            w[0].starts_with("end the session of a:1 (in line of jobs): pg_terminate_backend(1)")
                && w[0].contains("backend_start is 2023-11-14 22:13:20 UTC"),
            "{w:?}"
        );
        assert!(p.gist.next.starts_with("b:2 leads next"));
        assert!(p.notes[0].contains("next use that connection"));
    }

    #[test]
    fn force_leader_ends_everyone_ahead_and_resign_says_why_not() {
        let force = ActionKind::ForceLeader {
            target: "c:3".into(),
        };
        let p = plan(&req(force)).expect("a plan");
        let ended: Vec<_> = p
            .steps
            .iter()
            .map(|s| match s.downcast_ref::<EndSession>() {
                Some(s) => (s.id, s.start.clone()),
                None => panic!("{s:?}"),
            })
            .collect();
        assert_eq!(
            ended,
            [
                (1, "1700000000000000".to_string()),
                (2, "1700000001000000".to_string())
            ]
        );
        // By pid too.
        let by_pid = ActionKind::ForceLeader { target: "2".into() };
        assert_eq!(plan(&req(by_pid)).expect("a plan").steps.len(), 1);
        let e = plan(&req(ActionKind::Resign)).expect_err("unavailable");
        assert!(
            e.contains("resign is unavailable") && e.contains("pg_advisory_unlock"),
            "{e}"
        );
        let nobody = ActionKind::ForceLeader { target: "z".into() };
        assert!(plan(&req(nobody)).expect_err("no").contains("not in line"));
        let mut hidden = req(ActionKind::Reelect);
        hidden.seen.candidates[0].stamp = None;
        hidden.seen.leader = Some(hidden.seen.candidates[0].clone());
        let e = plan(&hidden).expect_err("hidden");
        assert!(e.contains("GRANT pg_read_all_stats"), "{e}");
    }
}
