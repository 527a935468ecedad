//! Keys and values in a store are bytes. They are shown as text with every byte that is not
//! printable UTF-8 escaped as `\xNN` (and `\` itself as `\\`), so nothing is lost and nothing
//! can inject terminal control sequences.

use std::fmt::Write;

/// Escapes arbitrary bytes into a printable, lossless string.
pub fn escape_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                '\r' => out.push_str("\\r"),
                c if c.is_control() => {
                    let _ = write!(out, "\\u{{{:x}}}", c as u32);
                }
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out
}

/// Cuts `s` to at most `max` characters for the screen, marking the cut with `…` and the
/// full length, so a huge value never floods a pane but the operator knows it was cut.
pub fn truncate_display(s: &str, max: usize) -> String {
    let count = s.chars().count();
    if count <= max {
        return s.to_string();
    }
    let note = format!("…({count} chars)");
    let keep = max.saturating_sub(note.chars().count());
    let mut out: String = s.chars().take(keep).collect();
    out.push_str(&note);
    if out.chars().count() > max {
        out = s.chars().take(max.saturating_sub(1)).collect();
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_utf8_is_unchanged() {
        assert_eq!(escape_bytes("node-a ünï".as_bytes()), "node-a ünï");
    }

    #[test]
    fn invalid_utf8_and_controls_are_escaped() {
        assert_eq!(escape_bytes(b"a\xffb\x1b[2J\\"), "a\\xffb\\u{1b}[2J\\\\");
        assert_eq!(escape_bytes(b"line\nnext"), "line\\nnext");
    }

    #[test]
    fn truncation_marks_the_cut() {
        let long = "x".repeat(1000);
        let cut = truncate_display(&long, 20);
        assert_eq!(cut.chars().count(), 20);
        assert!(cut.ends_with("…(1000 chars)"), "{cut}");
        assert_eq!(truncate_display("short", 20), "short");
        assert_eq!(truncate_display(&long, 3).chars().count(), 3);
    }
}
