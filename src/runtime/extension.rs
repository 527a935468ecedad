//! What may surround the dashboard in the one TUI loop: extra event sources, keys taken
//! before the dashboard's, extra panes, and something to stop on the way out. The demo is
//! one (its nodes' output, their keys and panes); the plain dashboard runs with [`Plain`].
//! Being the same loop, pacing, view requests, admin actions, the bars, the events view,
//! help and mouse work the same with or without one.

use std::future::Future;
use std::time::Duration;

use crossterm::event::{KeyEvent, MouseEvent};
use ratatui::Frame;

use crate::app::App;
use crate::ui;

pub trait Extension {
    /// What the extension's own sources produce (a line a node printed, a child that ended).
    type Input;

    /// Sets up the dashboard's state before the first frame (keys for the help, a question
    /// before quitting).
    fn init(&mut self, _app: &mut App) {}

    /// The next input. Cancel-safe: the loop drops it when something else comes first. A
    /// source that ended must wait forever, not return at once, or the loop would spin.
    fn next(&mut self) -> impl Future<Output = Self::Input>;

    /// Applies an input; whether the screen changed.
    fn on_input(&mut self, app: &mut App, input: Self::Input) -> bool;

    /// A key, before the dashboard sees it: `Some(changed)` when the extension took it.
    fn on_key(&mut self, _app: &mut App, _key: KeyEvent) -> Option<bool> {
        None
    }

    /// A click or the wheel (on whatever the extension drew there); whether the screen changed.
    fn on_mouse(&mut self, app: &mut App, m: MouseEvent) -> bool {
        super::on_mouse(app, m)
    }

    /// Just before a frame, after the clock moved: what the extension reads from the
    /// dashboard (a new leader ends a failover) or lends it (an alarm only it can see).
    fn before_draw(&mut self, _app: &mut App) {}

    /// The whole frame: the dashboard, and the extension's panes around it.
    fn draw(&self, app: &App, frame: &mut Frame) {
        ui::view(app, frame);
    }

    /// Rows of the elections table as drawn: the lease refreshes follow the rows in view.
    fn table_rows(&self, app: &App) -> usize {
        ui::table_rows(app.size.0, app.size.1)
    }

    /// How often the extension's panes move with time alone (`None`: they do not).
    fn tick_interval(&self, _app: &App, _fast: Duration) -> Option<Duration> {
        None
    }

    /// After quitting (admin actions finished), before the terminal is given back: stop what
    /// the extension started.
    fn shutdown(&mut self, _app: &App) -> impl Future<Output = ()> {
        async {}
    }
}

/// The plain dashboard: nothing around it.
pub struct Plain;

impl Extension for Plain {
    type Input = std::convert::Infallible;

    fn next(&mut self) -> impl Future<Output = Self::Input> {
        std::future::pending()
    }

    fn on_input(&mut self, _app: &mut App, input: Self::Input) -> bool {
        match input {}
    }
}
