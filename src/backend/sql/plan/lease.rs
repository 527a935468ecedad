//! sql-lease (gabihodoroaga/leaderelection): the holder's term ends at its deadline; a forced leader gets a term
//! as long as the one seen.

use super::{self as sql, Deadlines, Words};
use crate::admin::{ActionKind, Plan};
use crate::backend::sql::SqlTarget;
use crate::model::Election;

/// A term for a forced leader when none was observed.
const DEFAULT_TERM_MS: i64 = 15_000;

pub(super) fn plan(e: &Election, kind: &ActionKind, t: &SqlTarget) -> Result<Plan, String> {
    let h = sql::holder(e)?;
    let term = h
        .ttl
        .map(|t| t.granted_ms)
        .filter(|g| *g > 0)
        .unwrap_or(DEFAULT_TERM_MS);
    let deadlines = Deadlines {
        resign_ms: 0,
        force_ms: term,
    };
    let words = Words {
        hold: format!("a {} term its renewals extend", sql::secs(term)),
        renew: "renewal",
    };
    let mut p = sql::statement_plan(e, kind, t, deadlines, &words)?;
    p.notes.push(match kind {
        ActionKind::Reelect => "Every participant's next attempt races for the free row.".into(),
        ActionKind::Resign => format!(
            "{}'s term is over at once; the next attempt by anyone takes it.",
            h.id
        ),
        ActionKind::ForceLeader { target } => format!(
            "{target} holds the row for {term} ms; its next renewal keeps it, the others stay \
             followers."
        ),
    });
    Ok(p)
}
