//! Colours in one place.

use ratatui::style::{Color, Modifier, Style};

pub const MIN_WIDTH: u16 = 60;
pub const MIN_HEIGHT: u16 = 16;

pub fn title() -> Style {
    Style::new().add_modifier(Modifier::BOLD)
}

pub fn header() -> Style {
    Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD)
}

pub fn selected() -> Style {
    Style::new()
        .bg(Color::DarkGray)
        .add_modifier(Modifier::BOLD)
}

pub fn dim() -> Style {
    Style::new().fg(Color::DarkGray)
}

pub fn leader() -> Style {
    Style::new().fg(Color::Green)
}

pub fn no_leader() -> Style {
    Style::new().fg(Color::Red).add_modifier(Modifier::BOLD)
}

pub fn warn() -> Style {
    Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD)
}

/// Something that must not happen, happening (two leaders at once).
pub fn alarm() -> Style {
    Style::new()
        .fg(Color::White)
        .bg(Color::Red)
        .add_modifier(Modifier::BOLD)
}

pub fn error() -> Style {
    Style::new().fg(Color::Red)
}

pub fn focused_border() -> Style {
    Style::new().fg(Color::Cyan)
}

/// Colour of a countdown by how much of the term is left.
pub fn ttl(ratio: f64) -> Style {
    let c = if ratio > 0.5 {
        Color::Green
    } else if ratio > 0.2 {
        Color::Yellow
    } else {
        Color::Red
    };
    Style::new().fg(c)
}

/// What is shown as of an earlier time: no contact with its store.
pub fn stale() -> Style {
    Style::new().fg(Color::Magenta).add_modifier(Modifier::BOLD)
}
