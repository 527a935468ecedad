//! Plain data every other layer speaks: elections, their holders, leader changes and the
//! events the backends report. No IO, no UI, no tokio: it is what `status --json` prints and
//! what the TUI draws.

mod cause;
mod election;
mod escape;
mod event;
pub(crate) mod format;
pub mod marks;
mod scheme;
pub mod split_brain;
pub(crate) mod time;
pub mod timeline;
mod wrap;

pub use election::{
    Candidate, Cause, Deadline, Election, History, HistoryEntry, Hold, MemberInfo, Note, Scheme,
    SessionCheck, SourceId,
};
pub use escape::{
    SHOWN_MAX, cut_display, cut_middle, escape_bytes, shown, truncate_display, unescape,
};
pub use event::{
    ConnState, Event, EventKind, HistoryGap, MemberStatus, SourceEvent, SourceInfo, SourceNotice,
};
pub use scheme::{Facts, Held, Kept, Line, Renewal, Server, StoreKind};
pub use wrap::{display_width, wrap_display};
