//! The config file's parse errors, pointed at the line at fault. A `[[source]]` is read
//! through its `kind` tag, which leaves serde no position inside the table: an unknown key
//! there is reported at the table's header. The key's own line is found here instead.

/// The error as toml renders it, but for an unknown field reported at a table header:
/// then at the field's own line.
pub(super) fn describe(text: &str, e: &toml::de::Error) -> String {
    let rendered = e.to_string().trim_end().to_string();
    let Some(field) = unknown_field(e.message()) else {
        return rendered;
    };
    let Some(span) = e.span() else {
        return rendered;
    };
    match field_line(text, span.start, field) {
        Some((line, column, source)) => render(line, column, source, field.len(), e.message()),
        None => rendered,
    }
}

/// `unknown field `X`, expected ...` -> `X`.
fn unknown_field(message: &str) -> Option<&str> {
    let rest = message.strip_prefix("unknown field `")?;
    rest.split_once('`').map(|(field, _)| field)
}

/// The line (1-based), column (1-based) and text of `field`'s key in the table whose header
/// is at byte `at`; `None` when `at` is no table header or the key is not found in it.
fn field_line<'a>(text: &'a str, at: usize, field: &str) -> Option<(usize, usize, &'a str)> {
    let line_start = text[..at.min(text.len())].rfind('\n').map_or(0, |i| i + 1);
    let first = text[..line_start].matches('\n').count();
    let mut lines = text[line_start..].lines().enumerate();
    let (_, header) = lines.next()?;
    if !header.trim_start().starts_with('[') {
        return None;
    }
    for (i, line) in lines {
        let body = line.trim_start();
        if body.starts_with('[') {
            return None;
        }
        let indent = line.len() - body.len();
        let key = body
            .strip_prefix(field)
            .or_else(|| body.strip_prefix(&format!("\"{field}\"")))
            .or_else(|| body.strip_prefix(&format!("'{field}'")));
        if key.is_some_and(|rest| rest.trim_start().starts_with(['=', '.'])) {
            return Some((first + i + 1, indent + 1, line));
        }
    }
    None
}

/// As toml draws it: the position, the line with the key underlined, the message.
fn render(line: usize, column: usize, source: &str, width: usize, message: &str) -> String {
    let gutter = " ".repeat(line.to_string().len());
    format!(
        "TOML parse error at line {line}, column {column}\n{gutter} |\n{line} | {source}\n\
         {gutter} | {}{}\n{message}",
        " ".repeat(column - 1),
        "^".repeat(width.max(1))
    )
}

#[cfg(test)]
mod tests {
    use super::super::Config;

    fn error(text: &str) -> String {
        let e = Config::parse(text, std::path::Path::new("x.toml")).expect_err("invalid");
        e.to_string()
    }

    #[test]
    fn an_unknown_key_in_a_source_is_shown_on_its_own_line() {
        let text = "[ui]\ntick_ms = 100\n\n[[source]]\nname = \"a\"\nkind = \"sql\"\n\
                    url = \"sqlite:///x.db\"\n  tabel = \"x\"\n\n[[source]]\nkind = \"etcd\"\n";
        let shown = error(text);
        assert!(
            shown.contains(
                "TOML parse error at line 8, column 3\n  |\n8 |   tabel = \"x\"\n  |   ^^^^^\n\
                 unknown field `tabel`"
            ),
            "{shown}"
        );
    }

    #[test]
    fn an_unknown_key_elsewhere_is_where_toml_says() {
        let shown = error("[ui]\ntick_ms = 100\ncolour = 1\n");
        assert!(
            shown.contains(
                "line 3, column 1\n  |\n3 | colour = 1\n  | ^^^^^^\nunknown field `colour`"
            ),
            "{shown}"
        );
    }
}
