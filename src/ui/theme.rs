//! Colours in one place. With `NO_COLOR` set, styles keep their bold and reverse but lose
//! their colours; every alarm also has a glyph, so nothing is told by colour alone.

use std::cell::Cell;

use ratatui::style::{Color, Modifier, Style};

thread_local! {
    // Per thread, not global: drawing happens on one thread, and tests drawing in parallel
    // each choose their own.
    static COLOR: Cell<bool> = const { Cell::new(true) };
}

/// Turns colours on or off for drawing on this thread.
pub fn set_color(on: bool) {
    COLOR.with(|c| c.set(on));
}

/// Whether the environment allows colours (<https://no-color.org>: `NO_COLOR` non-empty).
pub fn color_from_env() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

fn paint(s: Style) -> Style {
    if COLOR.with(Cell::get) {
        s
    } else {
        Style {
            fg: None,
            bg: None,
            ..s
        }
    }
}

pub const MIN_WIDTH: u16 = 60;
pub const MIN_HEIGHT: u16 = 16;

pub fn title() -> Style {
    Style::new().add_modifier(Modifier::BOLD)
}

pub fn header() -> Style {
    paint(Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD))
}

pub fn selected() -> Style {
    if COLOR.with(Cell::get) {
        Style::new()
            .bg(Color::DarkGray)
            .add_modifier(Modifier::BOLD)
    } else {
        Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD)
    }
}

pub fn dim() -> Style {
    paint(Style::new().fg(Color::DarkGray))
}

pub fn leader() -> Style {
    paint(Style::new().fg(Color::Green))
}

pub fn no_leader() -> Style {
    paint(Style::new().fg(Color::Red).add_modifier(Modifier::BOLD))
}

pub fn warn() -> Style {
    paint(Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD))
}

/// Something that must not happen, happening (two leaders at once).
pub fn alarm() -> Style {
    paint(
        Style::new()
            .fg(Color::White)
            .bg(Color::Red)
            .add_modifier(Modifier::BOLD),
    )
}

/// A row with an alarm, by its worst: red for what is broken, yellow for what may be.
pub fn alarmed(worst: crate::app::alarm::Alarm) -> Style {
    use crate::app::alarm::Alarm;
    match worst {
        Alarm::SplitBrain | Alarm::NoLeader => paint(Style::new().fg(Color::Red)),
        Alarm::Stale => dim(),
        _ => paint(Style::new().fg(Color::Yellow)),
    }
}

pub fn error() -> Style {
    paint(Style::new().fg(Color::Red))
}

pub fn focused_border() -> Style {
    paint(Style::new().fg(Color::Cyan))
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
    paint(Style::new().fg(c))
}

/// What is shown as of an earlier time: no contact with its store.
pub fn stale() -> Style {
    paint(Style::new().fg(Color::Magenta).add_modifier(Modifier::BOLD))
}

/// The colours holders are drawn in on the timeline: no red (the alarm's, for no leader)
/// and no yellow (forced changes).
const HOLDERS: [Color; 8] = [
    Color::Green,
    Color::Cyan,
    Color::Blue,
    Color::Magenta,
    Color::LightGreen,
    Color::LightCyan,
    Color::LightBlue,
    Color::LightMagenta,
];

/// A holder's colour on the timeline: the same for the same id on every row and every run
/// (FNV-1a of the id, not a random hash).
pub fn holder(id: &str) -> Style {
    let hash = id.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    });
    paint(Style::new().fg(HOLDERS[(hash % HOLDERS.len() as u64) as usize]))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_holder_keeps_its_colour_and_others_differ() {
        super::set_color(true);
        assert_eq!(super::holder("node-a"), super::holder("node-a"));
        let ids = ["node-a", "node-b", "node-c", "node-d"];
        let colours: std::collections::HashSet<_> =
            ids.iter().map(|id| super::holder(id).fg).collect();
        assert!(colours.len() > 1, "{colours:?}");
        assert!(
            !colours.contains(&Some(super::Color::Red)),
            "red is the alarm's"
        );
    }
}
