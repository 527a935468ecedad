//! The SQL schemes' one statement per action, in the source's dialect, on its configured
//! table and columns. The WHERE holds the row's key and holder as seen, never its deadline:
//! the leader renews that every few seconds, and an action confirmed after a renewal must
//! still apply to the leader that was shown (`election-models.md`).

mod heartbeat;
mod lease;
mod step;

pub use step::{DEADLINE, Row, Statement};

use super::SqlTarget;
use crate::admin::{ActionKind, AdminRequest, Gist, Plan, step};
use crate::model::{Candidate, Election, Scheme};

/// The plan of `req` on a SQL source whose table and columns are `t`.
pub(crate) fn plan_for(req: &AdminRequest, t: &SqlTarget) -> Result<Plan, String> {
    let e = &req.seen;
    match e.scheme {
        Scheme::SqlLease => lease::plan(e, &req.kind, t),
        Scheme::SqlHeartbeat => heartbeat::plan(e, &req.kind, t),
        scheme => Err(format!("{scheme} is not a scheme of this source")),
    }
}

/// Where the two SQL schemes differ: the deadlines they write.
pub(super) struct Deadlines {
    /// Resign sets the deadline to now plus this (0 or less: over).
    pub resign_ms: i64,
    /// Force-leader sets it to now plus this.
    pub force_ms: i64,
}

/// How each scheme words its gist: how long a forced leader holds the row by the write
/// alone, and what the holder's periodic write is called.
pub(super) struct Words {
    /// How the forced leader keeps the row: "a 15 s term its renewals extend".
    pub hold: String,
    /// "renewal", "heartbeat".
    pub renew: &'static str,
}

/// `ms` as seconds, for a gist ("15 s", "2.5 s").
pub(super) fn secs(ms: i64) -> String {
    if ms % 1000 == 0 {
        format!("{} s", ms / 1000)
    } else {
        format!("{:.1} s", ms as f64 / 1000.0)
    }
}

/// The gist of a SQL action: the row is the leadership, taken by whoever writes it next.
fn gist(holder: &str, kind: &ActionKind, w: &Words) -> Gist {
    let renew = w.renew;
    let freed = Gist {
        next: String::new(),
        gap: "No leader until the next attempt by anyone.".into(),
        deposed: Some(format!(
            "{holder} may believe it still leads until its next {renew}."
        )),
    };
    match kind {
        ActionKind::Reelect => Gist {
            next: format!("Whoever tries first takes the row; {holder} may win again."),
            ..freed
        },
        ActionKind::Resign => Gist {
            next: format!("The next attempt by anyone takes the row; {holder} may win it back."),
            ..freed
        },
        ActionKind::ForceLeader { target } => Gist {
            next: format!("{target} holds the row at once: {}.", w.hold),
            gap: "No gap: the row changes hands in one statement.".into(),
            deposed: Some(format!(
                "{holder} may believe it still leads until its next {renew} fails."
            )),
        },
    }
}

/// The row holder (the leader, or the holder of an expired term).
pub(super) fn holder(e: &Election) -> Result<&Candidate, String> {
    e.candidates
        .first()
        .ok_or_else(|| format!("election {} has no row holder to act on", e.name))
}

pub(super) fn statement_plan(
    e: &Election,
    kind: &ActionKind,
    t: &SqlTarget,
    deadlines: Deadlines,
    words: &Words,
) -> Result<Plan, String> {
    let h = holder(e)?;
    let d = t.dialect;
    let c = &t.columns;
    let table = d.quote(&t.table);
    let key = d.as_text(&d.quote(&c.key));
    let who = d.quote(&c.holder);
    let who_text = d.as_text(&who);
    let stamp = d.quote(&c.stamp);
    let numeric = h
        .stamp
        .as_deref()
        .is_some_and(|s| s.trim().parse::<f64>().is_ok());
    let id = String::from_utf8_lossy(&h.raw_id).into_owned();
    let p = |i| d.param(i);
    let (sql, binds, deadline) = match kind {
        ActionKind::Reelect => (
            format!(
                "DELETE FROM {table} WHERE {key} = {} AND {who_text} = {}",
                p(1),
                p(2)
            ),
            vec![e.name.clone(), id],
            None,
        ),
        ActionKind::Resign => (
            format!(
                "UPDATE {table} SET {stamp} = {DEADLINE} WHERE {key} = {} AND {who_text} = {}",
                p(1),
                p(2)
            ),
            vec![e.name.clone(), id],
            Some((deadlines.resign_ms, numeric)),
        ),
        ActionKind::ForceLeader { target } => {
            if *target == h.id {
                return Err(format!("{target} already holds {}", e.name));
            }
            (
                format!(
                    "UPDATE {table} SET {who} = {}, {stamp} = {DEADLINE} WHERE {key} = {} AND {who_text} = {}",
                    p(1),
                    p(2),
                    p(3)
                ),
                vec![target.clone(), e.name.clone(), id],
                Some((deadlines.force_ms, numeric)),
            )
        }
    };
    Ok(Plan {
        summary: String::new(),
        gist: gist(&h.id, kind, words),
        steps: vec![step(Statement {
            sql,
            binds,
            deadline,
            expect_rows: 1,
        })],
        then: None,
        notes: Vec::new(),
        reelect_instead: false,
        readback: std::sync::Arc::new(Row(e.name.clone())),
    })
}
