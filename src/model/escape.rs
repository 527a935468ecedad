//! Keys and values in a store are bytes. They are shown as text with every byte that is not
//! printable UTF-8 escaped as `\xNN` (and `\` itself as `\\`), so nothing is lost and nothing
//! can inject terminal control sequences. Invisible characters that change how the text
//! around them is drawn (bidirectional overrides, zero-width characters, line separators)
//! are escaped as `\u{NNNN}` like control characters, so no key or value can disguise itself
//! or the row beside it.

use std::fmt::Write;

use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};

/// Escapes arbitrary bytes into a printable, lossless string.
pub fn escape_bytes(bytes: &[u8]) -> String {
    // Most keys and values are plain printable ASCII: copied as they are, without looking
    // each character up (that lookup was a visible part of reading a large store).
    if bytes
        .iter()
        .all(|b| (0x20..0x7f).contains(b) && *b != b'\\')
        && let Ok(plain) = std::str::from_utf8(bytes)
    {
        return plain.to_owned();
    }
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                '\r' => out.push_str("\\r"),
                c if must_escape(c) => {
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

/// The bytes [`escape_bytes`] made `shown` from; `None` for text it cannot have made (a
/// cut value, a stray backslash).
pub fn unescape(shown: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(shown.len());
    let mut rest = shown;
    while let Some(at) = rest.find('\\') {
        out.extend_from_slice(&rest.as_bytes()[..at]);
        let after = &rest[at + 1..];
        let (byte_or_char, used) = match after.as_bytes().first()? {
            b'\\' => (Ok(b'\\'), 1),
            b'n' => (Ok(b'\n'), 1),
            b't' => (Ok(b'\t'), 1),
            b'r' => (Ok(b'\r'), 1),
            b'x' => (Ok(u8::from_str_radix(after.get(1..3)?, 16).ok()?), 3),
            b'u' => {
                let body = after.strip_prefix("u{")?;
                let end = body.find('}')?;
                let c = char::from_u32(u32::from_str_radix(&body[..end], 16).ok()?)?;
                (Err(c), end + 3)
            }
            _ => return None,
        };
        match byte_or_char {
            Ok(b) => out.push(b),
            Err(c) => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
        }
        rest = &after[used..];
    }
    out.extend_from_slice(rest.as_bytes());
    Some(out)
}

/// Control characters (Cc), format characters (Cf: U+202E RIGHT-TO-LEFT OVERRIDE and the
/// other bidi controls, zero-width spaces and joiners, U+FEFF, U+00AD...), the line and
/// paragraph separators (U+2028/2029, which a terminal may break a row on), and the Hangul
/// fillers, letters that draw as nothing.
fn must_escape(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_control();
    }
    c.is_control()
        || matches!(
            c.general_category(),
            GeneralCategory::Format
                | GeneralCategory::LineSeparator
                | GeneralCategory::ParagraphSeparator
        )
        || matches!(c, '\u{115f}' | '\u{1160}' | '\u{3164}' | '\u{ffa0}')
}

/// The most of a key or value a person is shown in text output (`status`'s table, `watch`,
/// `history`): a leader value may be megabytes. JSON keeps it whole.
pub const SHOWN_MAX: usize = 256;

/// `s` as a person's text output shows it: whole up to [`SHOWN_MAX`] characters, else cut
/// with its full length said.
pub fn shown(s: &str) -> std::borrow::Cow<'_, str> {
    // A byte count under the limit is a character count under it: no count for most ids.
    match s.len() <= SHOWN_MAX || s.chars().count() <= SHOWN_MAX {
        true => std::borrow::Cow::Borrowed(s),
        false => std::borrow::Cow::Owned(truncate_display(s, SHOWN_MAX)),
    }
}

/// Cuts `s` to at most `max` characters, marking the cut with `…` and the full length, so a
/// huge value read from a store is bounded but says it was cut. Screens use `cut_display`:
/// in a cell or a line the length would take the text's place.
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

/// Cuts `s` to at most `max` characters for the screen: as much of the text as fits, its
/// end replaced by `…` when cut (the detail view, `Enter`, shows it whole).
pub fn cut_display(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Cuts `s` to at most `max` characters in its middle, keeping both ends, the start the
/// longer: ids name a host at their start (`pg-primary-2.internal…`) and often a process at
/// their end (`worker-b:10234`, a pod's random suffix).
pub fn cut_middle(s: &str, max: usize) -> String {
    let count = s.chars().count();
    if count <= max {
        return s.to_string();
    }
    let keep = max.saturating_sub(1);
    let tail = keep * 2 / 5;
    let mut out: String = s.chars().take(keep - tail).collect();
    out.push('…');
    out.extend(s.chars().skip(count - tail));
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
    fn what_is_escaped_is_unescaped_to_the_same_bytes() {
        for raw in [
            &b"caf\xe9\xff"[..],
            b"a\xffb\x1b[2J\\",
            b"line\nnext\t\r",
            "leader\u{202e}1-edon\u{202c}".as_bytes(),
            b"plain",
            b"",
        ] {
            assert_eq!(
                unescape(&escape_bytes(raw)).as_deref(),
                Some(raw),
                "{raw:?}"
            );
        }
        for not_made in ["a\\", "a\\q", "a\\x4", "a\\u{110000}", "a\\u{41"] {
            assert_eq!(unescape(not_made), None, "{not_made}");
        }
    }

    #[test]
    fn invisible_format_characters_are_escaped() {
        for (c, shown) in [
            ('\u{202e}', "\\u{202e}"),
            ('\u{202a}', "\\u{202a}"),
            ('\u{202d}', "\\u{202d}"),
            ('\u{2066}', "\\u{2066}"),
            ('\u{2069}', "\\u{2069}"),
            ('\u{200b}', "\\u{200b}"),
            ('\u{200d}', "\\u{200d}"),
            ('\u{200e}', "\\u{200e}"),
            ('\u{200f}', "\\u{200f}"),
            ('\u{2028}', "\\u{2028}"),
            ('\u{2029}', "\\u{2029}"),
            ('\u{feff}', "\\u{feff}"),
            ('\u{61c}', "\\u{61c}"),
            ('\u{ad}', "\\u{ad}"),
            ('\u{2060}', "\\u{2060}"),
            ('\u{e0041}', "\\u{e0041}"),
            ('\u{3164}', "\\u{3164}"),
            ('\u{85}', "\\u{85}"),
        ] {
            let raw = format!("node-{c}a");
            assert_eq!(
                escape_bytes(raw.as_bytes()),
                format!("node-{shown}a"),
                "{c:?}"
            );
        }
    }

    #[test]
    fn a_disguised_id_shows_what_it_holds() {
        // Unescaped, the override draws this id as `leadernode-1`.
        let hostile = "leader\u{202e}1-edon\u{202c}";
        let shown = escape_bytes(hostile.as_bytes());
        assert_eq!(shown, "leader\\u{202e}1-edon\\u{202c}");
        assert!(shown.chars().all(|c| !must_escape(c)), "{shown}");
        // Visible text of other scripts, right-to-left ones included, is left as it is.
        for plain in ["שלום", "مرحبا", "日本語", "ünï", "e\u{301}"] {
            assert_eq!(escape_bytes(plain.as_bytes()), plain);
        }
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

    #[test]
    fn text_output_cuts_a_huge_value_and_says_how_long_it_was() {
        let huge = "v".repeat(1_400_000);
        let cut = shown(&huge);
        assert_eq!(cut.chars().count(), SHOWN_MAX);
        assert!(cut.ends_with("…(1400000 chars)"), "{cut}");
        let ok = "ü".repeat(SHOWN_MAX);
        assert_eq!(shown(&ok), ok, "256 characters in more bytes are whole");
    }

    #[test]
    fn a_cut_in_the_middle_keeps_both_ends() {
        assert_eq!(cut_middle("worker-b:10234", 12), "worker-…0234");
        assert_eq!(cut_middle("worker-b:10234", 14), "worker-b:10234");
        let host = "pg-primary-2.internal.example.com";
        assert_eq!(cut_middle(host, 22), "pg-primary-2.…mple.com");
        assert_eq!(cut_middle("ab", 1), "…");
        assert_eq!(cut_middle("ünïcödé", 4), "ün…é");
    }

    #[test]
    fn a_cut_for_the_screen_keeps_the_text_not_its_length() {
        let id = "payments-worker-7f9c2d-eu-west-1b-0123456"; // 41 characters
        assert_eq!(cut_display(id, 16), "payments-worker…");
        assert_eq!(cut_display(id, 41), id);
        assert_eq!(cut_display(id, 1), "…");
        assert!(!cut_display(&"x".repeat(100_000), 40).contains("chars"));
    }
}
