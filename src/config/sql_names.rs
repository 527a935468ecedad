//! SQL names checked when the config loads: the dialect a URL speaks, and table and column
//! names that are safe to quote. The backends add the SQL each dialect writes.

use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    Postgres,
    MySql,
    Sqlite,
}

/// A table or column name that has been checked: ASCII letters, digits and `_`, not starting
/// with a digit, at most 63 characters; a table may be `schema.table`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ident {
    parts: Vec<String>,
}

/// The validated columns of an election table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Columns {
    /// The election's name (`key` / `anchor`).
    pub key: Ident,
    /// The leader id (`leader_id` / `service_id`).
    pub holder: Ident,
    /// The deadline (`valid_until` / `last_seen_active`).
    pub stamp: Ident,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "`{0}` is not a usable SQL name: use letters, digits and _ (not first), at most 63 characters{1}"
)]
pub struct BadIdent(pub String, pub &'static str);

impl Ident {
    fn part(s: &str, whole: &str) -> Result<String, BadIdent> {
        let ok = !s.is_empty()
            && s.len() <= 63
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !s.starts_with(|c: char| c.is_ascii_digit());
        if ok {
            Ok(s.to_string())
        } else {
            Err(BadIdent(whole.to_string(), ""))
        }
    }

    pub fn column(s: &str) -> Result<Ident, BadIdent> {
        Ok(Ident {
            parts: vec![Self::part(s, s)?],
        })
    }

    /// `table` or `schema.table`.
    pub fn table(s: &str) -> Result<Ident, BadIdent> {
        let parts: Vec<&str> = s.split('.').collect();
        if parts.len() > 2 {
            return Err(BadIdent(
                s.to_string(),
                "; a table is `name` or `schema.name`",
            ));
        }
        Ok(Ident {
            parts: parts
                .iter()
                .map(|p| Self::part(p, s))
                .collect::<Result<_, _>>()?,
        })
    }

    pub fn name(&self) -> &str {
        self.parts.last().map(String::as_str).unwrap_or("")
    }

    pub fn schema(&self) -> Option<&str> {
        (self.parts.len() == 2).then(|| self.parts[0].as_str())
    }

    /// `schema` and `table`, or `column`: each checked, to be quoted one by one.
    pub fn parts(&self) -> &[String] {
        &self.parts
    }
}

impl fmt::Display for Ident {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.parts.join("."))
    }
}

impl Dialect {
    pub fn from_url(url: &str) -> Option<Dialect> {
        let scheme = url.split(':').next()?.to_ascii_lowercase();
        match scheme.as_str() {
            "postgres" | "postgresql" => Some(Dialect::Postgres),
            "mysql" | "mariadb" => Some(Dialect::MySql),
            "sqlite" => Some(Dialect::Sqlite),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Dialect::Postgres => "postgres",
            Dialect::MySql => "mysql",
            Dialect::Sqlite => "sqlite",
        }
    }
}
