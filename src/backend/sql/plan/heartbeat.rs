//! sql-heartbeat: the holder is alive while its last heartbeat is younger than the timeout;
//! resigning backdates the heartbeat past it, a forced leader gets a fresh one.

use super::{self as sql, Deadlines, Words};
use crate::admin::{ActionKind, Plan};
use crate::backend::sql::SqlTarget;
use crate::model::Election;

pub(super) fn plan(e: &Election, kind: &ActionKind, t: &SqlTarget) -> Result<Plan, String> {
    let h = sql::holder(e)?;
    let timeout = t.heartbeat_ms.unwrap_or(20_000);
    // A second past the timeout, so every participant's clock reads it as dead.
    let deadlines = Deadlines {
        resign_ms: -(timeout + 1_000),
        force_ms: 0,
    };
    let words = Words {
        hold: format!("its heartbeats keep it ({} timeout)", sql::secs(timeout)),
        renew: "heartbeat",
    };
    let mut p = sql::statement_plan(e, kind, t, deadlines, &words)?;
    p.notes.push(match kind {
        ActionKind::Reelect => "Every participant's next attempt races for the free row.".into(),
        ActionKind::Resign => format!(
            "{}'s heartbeat reads as older than the {timeout} ms timeout; the next attempt by \
             anyone takes the row.",
            h.id
        ),
        ActionKind::ForceLeader { target } => {
            format!("{target}'s next heartbeat keeps the row; the others stay followers.")
        }
    });
    Ok(p)
}
