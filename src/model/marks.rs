//! What a source's timeline marks beside its leader changes: the stretches the source was
//! down or stale (no contact), and the holders deposed while they may still believe they
//! lead. Kept in the read model as they are seen (`state::marks`), and in the history
//! journal so a later electop shows them too.

use std::time::SystemTime;

/// A past stretch without contact with the source: from its last answer before to its
/// first after. Who led in it is not known as it happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outage {
    pub from: SystemTime,
    pub to: SystemTime,
    /// The connection was lost (said `disconnected`); otherwise it only went unanswered
    /// long enough to be stale.
    pub down: bool,
}

/// A holder an admin action removed while its lease or session lived on: it may have
/// believed it led from `from` (the change that removed it) to `to`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deposed {
    pub election: String,
    pub holder: String,
    pub from: SystemTime,
    /// `None`: still deposed, as of the last read.
    pub to: Option<SystemTime>,
}

/// What an earlier electop's journal says of a source beside its changes, handed to the
/// read model at the start: its outages, its deposed holders, and the stretches no electop
/// watched (between two runs), oldest first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PastMarks {
    pub outages: Vec<Outage>,
    pub deposed: Vec<Deposed>,
    pub unwatched: Vec<super::HistoryGap>,
}

impl PastMarks {
    pub fn is_empty(&self) -> bool {
        self.outages.is_empty() && self.deposed.is_empty() && self.unwatched.is_empty()
    }
}
