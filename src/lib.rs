//! electop: a terminal dashboard for leader elections.
//!
//! Data flows one way. A task per source ([`backend`], one folder per store behind
//! [`backend::Store`]) reads the store and sends [`model::SourceEvent`]s; the read model
//! ([`state::ReadModel`]) applies them and works out every election's alarms once. The
//! dashboard keeps its interaction state beside its copy of the read model ([`app::App`]):
//! `update` turns events and keys into a new state and the effects it wants, which the
//! [`runtime`] carries out; [`ui::view`] draws. `status` and `watch` ([`commands`]) read the
//! read model alone. `docs/ARCHITECTURE.md` is the map; `tests/architecture.rs` holds the
//! layers to it.

#![warn(unreachable_pub)]

pub mod admin;
pub mod app;
pub mod backend;
pub mod cli;
pub mod commands;
pub mod config;
pub mod crypto;

mod demo;
mod logging;
pub mod model;
mod node;
mod output;
mod pem;
mod presets;
pub mod runtime;
mod serve;
pub mod serve_hooks;
pub mod state;
pub mod supervise;
pub mod ui;
