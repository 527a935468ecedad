//! electop: a terminal dashboard for leader elections.
//!
//! Data flows one way: a backend task per source reads the store and sends
//! [`model::SourceEvent`]s; the runtime owns the [`app::App`] state and feeds it events and
//! key actions through `update`; [`ui::view`] draws the state. Admin actions and lease
//! refresh requests go back to the backends as [`backend::Command`]s.

#![warn(unreachable_pub)]

pub mod admin;
pub mod app;
pub mod backend;
pub mod cli;
pub mod commands;
pub mod config;

mod demo;
mod logging;
pub mod model;
mod node;
mod output;
mod pem;
mod presets;
pub mod runtime;
pub mod state;
pub mod supervise;
pub mod ui;
