//! The tokio side: the running sources (a store task each), the one dashboard loop that owns
//! the interaction state and the read model, and the snapshot `status` and the admin verbs
//! read. Each job in its own file:
//!
//! - [`sources`]: the store tasks, their channels, admin actions under way, the audit follower;
//! - [`tui`]: the dashboard loop (the demo runs the same loop through an [`Extension`]);
//! - [`input`]: keys and the mouse into messages, and the dashboard's effects carried out;
//! - [`pacing`]: when a frame is due;
//! - [`snapshot`]: every source read once into a [`crate::state::ReadModel`];
//! - [`context_switch`]: `:ctx NAME`, new sources under the same loop.

pub(crate) mod context_switch;
mod extension;
mod input;
mod pacing;
mod snapshot;
mod sources;
mod tui;

pub use context_switch::ContextSwitch;
pub use extension::{Extension, Plain};
pub(crate) use input::{dashboard_mouse, on_mouse};
pub use snapshot::{Snapshot, collect, collect_status, collect_stopping};
pub use sources::Sources;
pub use tui::run_tui;
pub(crate) use tui::tui_loop;
