//! What an action will do, as one typed plan: the store operations with their compares. Each
//! store builds it for its schemes from the election as seen and the source's settings
//! (`backend::plan`), its steps in the store's own types ([`StoreStep`]); the confirmation
//! (dashboard and CLI) renders it with [`Plan::writes`], in the words each step gives itself,
//! and the store executes the same steps ([`Plan::steps_of`]), so what is shown is what is
//! written.

mod render;
mod step;
pub(super) mod target;

pub use render::compares_in_lines;
pub use step::{Step, StoreStep, StoreValue, step};

use super::{ActionKind, AdminRequest};
use crate::model::{Candidate, Election};

#[derive(Clone, Debug)]
pub struct Plan {
    /// One line: the action on what.
    pub summary: String,
    /// What will happen, in three short lines: what the confirmation shows first.
    pub gist: Gist,
    /// The store operations, in order, each in its store's own type: the confirmation reads
    /// them as [`StoreStep`]s, the store executes them as its own ([`Plan::steps_of`]).
    pub steps: Vec<Step>,
    /// What the store does by itself afterwards (the hold expiring), not a write of ours.
    pub then: Option<String>,
    /// What the operator should know: who notices, who is removed from the line.
    pub notes: Vec<String>,
    /// A re-election would serve better than this action, and the confirmation offers it
    /// (`r`): a resign the participants would not notice.
    pub reelect_instead: bool,
    /// What to read back to say what the store holds after the action (or why it refused),
    /// in the store's own type ([`Plan::readback_of`]).
    pub readback: std::sync::Arc<dyn StoreValue>,
}

/// Plans are the same when every part is, each store's parts by their own equality.
impl PartialEq for Plan {
    fn eq(&self, other: &Plan) -> bool {
        self.summary == other.summary
            && self.gist == other.gist
            && self.steps == other.steps
            && self.then == other.then
            && self.notes == other.notes
            && self.reelect_instead == other.reelect_instead
            && *self.readback == *other.readback
    }
}

impl Eq for Plan {}

/// What an action will do, as the three facts an operator weighs before saying yes: who
/// leads next, how long there is no leader, what the deposed may still believe. Each store's
/// plan builder writes it beside the steps, from the same election as seen, so the short
/// confirmation and the full plan (the details, the execution) never disagree.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Gist {
    /// Who leads next ("node-b leads next: it is next in line.").
    pub next: String,
    /// How long there is no leader ("No leader for 22 s, while node-a's key is held.").
    pub gap: String,
    /// What the deposed may still believe, where it may believe anything.
    pub deposed: Option<String>,
}

impl Gist {
    /// The lines, in order: at most three.
    pub fn lines(&self) -> Vec<&str> {
        [
            Some(self.next.as_str()),
            Some(self.gap.as_str()),
            self.deposed.as_deref(),
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}

/// A key, as sent and as shown.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Key {
    pub raw: Vec<u8>,
    pub shown: String,
}

impl Key {
    pub fn of(c: &Candidate) -> Key {
        Key {
            raw: c.raw_key.clone(),
            shown: c.key.clone(),
        }
    }
}

/// What a compare holds a key (a node) to, as seen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Check {
    CreateRevision(i64),
    ModRevision(i64),
    /// The value, as sent and as shown.
    Value(Vec<u8>, String),
    Lease(i64),
    /// The key does not exist.
    Absent,
}

/// One thing a store's step compares before it writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Compare {
    pub key: Key,
    pub check: Check,
}

/// The election's leader, or why there is none to act on.
pub fn leader(e: &Election) -> Result<&Candidate, String> {
    e.leader
        .as_ref()
        .ok_or_else(|| format!("election {} has no leader to act on", e.name))
}

/// The confirmation's title: the action and the election (the store is said below it).
pub fn title(req: &AdminRequest) -> String {
    let e = &req.seen;
    match &req.kind {
        ActionKind::ForceLeader { target } => format!("Force {target} to lead {}", e.name),
        ActionKind::Reelect => format!("Force a re-election of {}", e.name),
        ActionKind::Resign => match &e.leader {
            Some(l) => format!("Make {} resign as leader of {}", l.id, e.name),
            None => format!("Make the leader of {} resign", e.name),
        },
    }
}

/// One line: the action on what.
pub fn summary(req: &AdminRequest) -> String {
    let (e, store) = (&req.seen, &req.source_name);
    match &req.kind {
        ActionKind::ForceLeader { target } => {
            format!("force {target} as leader of {} ({store})", e.name)
        }
        ActionKind::Reelect => format!("force a re-election of {} ({store})", e.name),
        ActionKind::Resign => format!("resign the leader of {} ({store})", e.name),
    }
}
