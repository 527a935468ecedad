//! Database errors as an operator should read them: what is wrong, what to do, and never
//! the password.

use super::SqlSettings;

/// Never let a password through: drop anything that repeats the connection URL.
pub(crate) fn scrub(msg: &str, url: &str) -> String {
    let mut out = msg.replace(url, "<database URL>");
    if let Ok(u) = url::Url::parse(url)
        && let Some(p) = u.password()
        && !p.is_empty()
    {
        let plain = percent_encoding::percent_decode_str(p).decode_utf8_lossy();
        out = out.replace(p, "***").replace(plain.as_ref(), "***");
    }
    out
}

/// A database error as the operator should read it: what is wrong and what to do.
pub(crate) fn describe(e: &sqlx::Error, s: &SqlSettings, url: &str) -> String {
    let where_ = s.url.redacted();
    let table = &s.table;
    let msg = scrub(&e.to_string(), url);
    if let Some(tls) = super::tls::describe(e, s.dialect, url, &where_) {
        return scrub(&tls, url);
    }
    match e {
        sqlx::Error::Database(db) => {
            let code = db.code().map(|c| c.to_string()).unwrap_or_default();
            let text = scrub(db.message(), url);
            let lower = text.to_ascii_lowercase();
            match code.as_str() {
                "28P01" | "28000" => format!(
                    "{where_}: authentication failed ({text}); check the user and password (URL, password_env or password_file)"
                ),
                "42P01" | "42S02" => format!(
                    "table {table} does not exist in {where_}; create it or name the right one with --table"
                ),
                "42501" => format!(
                    "{where_}: permission denied on table {table} ({text}); GRANT SELECT ON {table} to this user"
                ),
                "42000" if lower.contains("denied") => format!(
                    "{where_}: permission denied on table {table} ({text}); GRANT SELECT ON {table} to this user"
                ),
                "3D000" | "42000" if lower.contains("database") => {
                    format!("{where_}: {text}; check the database name in the URL")
                }
                _ if lower.contains("no such table") => format!(
                    "table {table} does not exist in {where_}; create it or name the right one with --table"
                ),
                _ if lower.contains("no such column") || code == "42703" || code == "42S22" => {
                    format!(
                        "{where_}: a column of {table} is missing ({text}); set the column names in the config"
                    )
                }
                _ => format!("{where_}: {text}"),
            }
        }
        sqlx::Error::Io(io) => {
            format!("cannot connect to {where_}: {io}; is the server running and reachable?")
        }
        sqlx::Error::PoolTimedOut => {
            format!("cannot connect to {where_}: timed out; is the server running and reachable?")
        }
        _ => format!("{where_}: {msg}"),
    }
}
