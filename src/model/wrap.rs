//! Text wrapped to a width, whole: what is too long for one line goes on the next, never cut.
//! The dialogs wrap their lines here rather than in the widget, so the app can count them
//! (to bound a scroll) without a terminal.

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// Columns `s` takes on a terminal.
pub fn display_width(s: &str) -> usize {
    s.width()
}

/// `text` over as many lines as it takes at `width` columns, broken between words (a word
/// wider than a line is broken inside it); lines after the first start with `indent`. Every
/// character of `text` is in the result, in order, but the spaces a break replaces.
pub fn wrap_display(text: &str, width: usize, indent: &str) -> Vec<String> {
    let width = width.max(display_width(indent) + 8);
    let body = text.trim_start_matches(' ');
    let mut lines = Vec::new();
    let mut line = text[..text.len() - body.len()].to_string();
    // Nothing but the indent on the line yet: no space before the next word.
    let mut fresh = true;
    for (i, word) in body.split(' ').enumerate() {
        let mut sep = usize::from(i > 0 && !fresh);
        if !fresh && display_width(&line) + sep + display_width(word) > width {
            lines.push(std::mem::replace(&mut line, indent.to_string()));
            fresh = true;
            sep = 0;
        }
        if sep == 1 {
            line.push(' ');
        }
        let mut rest = word;
        while display_width(&line) + display_width(rest) > width {
            let room = width.saturating_sub(display_width(&line));
            let (head, tail) = split_at_width(rest, room);
            line.push_str(head);
            lines.push(std::mem::replace(&mut line, indent.to_string()));
            rest = tail;
        }
        line.push_str(rest);
        fresh &= rest.is_empty();
    }
    lines.push(line);
    lines
}

/// `s` split so the head takes at most `cols` columns, and at least one character.
fn split_at_width(s: &str, cols: usize) -> (&str, &str) {
    let mut used = 0;
    for (i, c) in s.char_indices() {
        used += c.width().unwrap_or(0);
        if used > cols && i > 0 {
            return s.split_at(i);
        }
    }
    (s, "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_wrap_between_words_and_keep_every_word() {
        let text = "  txn: if create_revision(/e/jobs/11) == 5 and lease(/e/jobs/11) == 11";
        let lines = wrap_display(text, 32, "    ");
        assert!(lines.iter().all(|l| display_width(l) <= 32), "{lines:?}");
        assert_eq!(lines[0], "  txn: if");
        assert_eq!(lines[1], "    create_revision(/e/jobs/11)");
        let words = |s: &str| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
        assert_eq!(words(&lines.join(" ")), words(text));
    }

    #[test]
    fn a_word_wider_than_the_line_is_broken_not_cut() {
        let key = "/registry/a-very-long-key-name-that-goes-on-and-on";
        let lines = wrap_display(key, 20, "");
        assert!(lines.iter().all(|l| display_width(l) <= 20), "{lines:?}");
        assert_eq!(lines.concat(), key);
        assert_eq!(wrap_display("short", 20, ""), ["short"]);
        assert_eq!(wrap_display("", 20, ""), [""]);
        let wide = wrap_display("選挙のリーダーは誰ですか", 10, "");
        assert!(wide.iter().all(|l| display_width(l) <= 10), "{wide:?}");
        assert_eq!(wide.concat(), "選挙のリーダーは誰ですか");
    }
}
