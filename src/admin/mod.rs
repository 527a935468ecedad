//! Admin actions: force a leader, force a re-election, resign. Each is a compare-and-swap
//! against the election as the operator saw it, is described before it is confirmed, and is
//! written to the audit log. What each does per scheme is `../shared/design/election-models.md`.
//! What every store shares is here: the request, the plan's shape (what will be written, as
//! steps each store types and words itself) and the outcome; each store builds its plans and
//! executes their steps in its own folder (`backend/<store>/`).

pub(crate) mod audit;
pub(crate) mod audit_tail;
mod plan;

pub use plan::target::Target;
pub use plan::{
    Check, Compare, Gist, Key, Plan, Step, StoreStep, StoreValue, compares_in_lines, leader, step,
    summary, title,
};

use serde::Serialize;

use crate::model::{Election, SourceId};

/// Why forcing `target` as leader of `e` deserves a second thought: it was never seen there
/// (not leading, in line, deposed or in its history), so no participant may renew its term
/// and the election may have no real leader until the term ends. `known`: ids known to be
/// participants from outside the store (the demo's nodes). `None`: nothing to warn of.
pub fn unseen_leader(e: &Election, target: &str, known: &[String]) -> Option<String> {
    if e.has_seen(target) || known.iter().any(|k| k == target) {
        return None;
    }
    Some(format!(
        "{target} was never seen in {}: no participant may renew its term, so {} may have \
         no real leader until that term ends",
        e.name, e.name
    ))
}

/// Why a resign or a re-election cannot be done on `e`: both act on its leader, and with none
/// a write would only touch a holder whose term is over (a SQL row's deadline, moved to now,
/// reported as if a leader had been written). Forcing a leader needs none.
pub fn needs_leader(e: &Election, kind: &ActionKind) -> Result<(), String> {
    let what = match kind {
        ActionKind::ForceLeader { .. } => return Ok(()),
        _ if e.leader.is_some() => return Ok(()),
        ActionKind::Reelect => "re-elect",
        ActionKind::Resign => "resign",
    };
    let over = e
        .candidates
        .first()
        .map(|c| format!(" ({}'s term is over)", c.id))
        .unwrap_or_default();
    Err(format!(
        "{} has no leader{over}, so there is nothing to {what}: the next attempt by any \
         participant takes it (force-leader names one)",
        e.name
    ))
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "action", rename_all = "kebab-case")]
pub enum ActionKind {
    ForceLeader { target: String },
    Reelect,
    Resign,
}

impl ActionKind {
    /// The cause a leader change made by this action is recorded with.
    pub fn cause(&self) -> crate::model::Cause {
        match self {
            ActionKind::ForceLeader { .. } => crate::model::Cause::ForcedLeader,
            ActionKind::Reelect => crate::model::Cause::ForcedReelection,
            ActionKind::Resign => crate::model::Cause::ForcedResign,
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            ActionKind::ForceLeader { .. } => "force-leader",
            ActionKind::Reelect => "reelect",
            ActionKind::Resign => "resign",
        }
    }
}

/// An action and the election as it was seen when the operator asked for it.
#[derive(Clone, Debug)]
pub struct AdminRequest {
    pub source: SourceId,
    pub source_name: String,
    pub kind: ActionKind,
    pub seen: Election,
    /// The source's settings that decide what is written (its table and columns, prefix).
    pub target: Target,
}

/// How an attempted action ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Written; `detail` says what the store holds now.
    Done { detail: String },
    /// The store changed since it was seen: nothing was written.
    Changed { detail: String },
    /// Not possible or not allowed here: nothing was written.
    Refused { reason: String },
    /// The store could not be asked.
    Failed { error: String },
}

impl Outcome {
    pub fn label(&self) -> &'static str {
        match self {
            Outcome::Done { .. } => "done",
            Outcome::Changed { .. } => "changed",
            Outcome::Refused { .. } => "refused",
            Outcome::Failed { .. } => "failed",
        }
    }

    pub fn message(&self) -> &str {
        match self {
            Outcome::Done { detail } | Outcome::Changed { detail } => detail,
            Outcome::Refused { reason } => reason,
            Outcome::Failed { error } => error,
        }
    }
}

/// The one-line text of a store that changed since it was seen.
pub fn changed_since(what: &str) -> String {
    format!("changed since you looked: {what}; nothing was written")
}
