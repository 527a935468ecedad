//! Database errors, typed where they happen: the variant decides what the source does next
//! (retry soon, or stay down until someone acts), and its text is what the operator reads:
//! what is wrong, what to do, and never the password.

use std::time::Duration;

use super::SqlSettings;

/// How a failure should be handled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SqlErrorKind {
    /// The server or the network to it may come back: retry.
    Transient,
    /// The table, the columns, a permission or a setting is wrong: retrying will not help
    /// until someone acts.
    Lasting,
    /// The password (or user) was refused.
    Auth,
    /// TLS failed: a refused certificate, a server without TLS, an unreadable CA file.
    Tls,
}

impl SqlErrorKind {
    /// Waiting will not make it go away.
    pub(crate) fn is_lasting(self) -> bool {
        self != SqlErrorKind::Transient
    }
}

/// A failure of a SQL source, already in the operator's words.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SqlError {
    /// The server did not take the connection (refused, reset, no route).
    #[error("{0}")]
    Unreachable(String),
    #[error("cannot connect to {place}: no answer within {timeout:?}")]
    ConnectTimeout { place: String, timeout: Duration },
    #[error("{place}: the poll got no answer within {timeout:?}")]
    PollTimeout { place: String, timeout: Duration },
    /// A poll's rows could not be read; the next poll may be whole.
    #[error("{place}: reading the poll: {why}")]
    PollFailed { place: String, why: String },
    /// The server is there but cannot serve now (starting, shutting down, full).
    #[error("{0}")]
    Unavailable(String),
    /// The table, a column or the deadline's type is not what the scheme needs.
    #[error("{0}")]
    Schema(String),
    #[error("{0}")]
    Permission(String),
    #[error("{0}")]
    BadDatabase(String),
    /// The URL, the password source or the SQLite file cannot work as given.
    #[error("{0}")]
    Settings(String),
    #[error("{0}")]
    Auth(String),
    #[error("{0}")]
    Tls(String),
    /// Another kind of server holds the URL's port (Redis, etcd, another database).
    #[error("{0}")]
    WrongServer(String),
    /// Any other refusal by the database: a retry would meet it again.
    #[error("{0}")]
    Database(String),
}

impl SqlError {
    /// Final for a read that answers once (`status`): waiting will not help, or the server
    /// did not take the connection (refused, reset, no route).
    pub(crate) fn ends_one_shot(&self) -> bool {
        matches!(self, SqlError::Unreachable(_)) || self.kind().is_lasting()
    }

    pub(crate) fn kind(&self) -> SqlErrorKind {
        use SqlError::*;
        match self {
            Unreachable(_)
            | ConnectTimeout { .. }
            | PollTimeout { .. }
            | PollFailed { .. }
            | Unavailable(_) => SqlErrorKind::Transient,
            Schema(_) | Permission(_) | BadDatabase(_) | Settings(_) | WrongServer(_)
            | Database(_) => SqlErrorKind::Lasting,
            Auth(_) => SqlErrorKind::Auth,
            Tls(_) => SqlErrorKind::Tls,
        }
    }

    /// A sqlx error, typed by its variant and the database's error code.
    pub(crate) fn from_sqlx(e: &sqlx::Error, s: &SqlSettings, url: &str) -> SqlError {
        let where_ = s.url.redacted();
        if let Some(tls) = super::tls::describe(e, s.dialect, url, &where_) {
            return SqlError::Tls(scrub(&tls, url));
        }
        match e {
            sqlx::Error::Database(db) => {
                let code = db.code().map(|c| c.to_string()).unwrap_or_default();
                from_database(&code, &scrub(db.message(), url), s)
            }
            sqlx::Error::Io(io) => SqlError::Unreachable(format!(
                "cannot connect to {where_}: {}; is the server running and reachable?",
                io_words(io)
            )),
            sqlx::Error::PoolTimedOut => SqlError::Unreachable(format!(
                "cannot connect to {where_}: timed out; is the server running and reachable?"
            )),
            sqlx::Error::PoolClosed | sqlx::Error::WorkerCrashed => {
                SqlError::Unavailable(format!("{where_}: {}", scrub(&e.to_string(), url)))
            }
            _ => SqlError::Database(format!("{where_}: {}", scrub(&e.to_string(), url))),
        }
    }
}

/// What the network said, without the OS's error number.
fn io_words(io: &std::io::Error) -> String {
    use std::io::ErrorKind::*;
    match io.kind() {
        ConnectionRefused => "connection refused".into(),
        ConnectionReset => "connection reset".into(),
        _ => io.to_string(),
    }
}

/// An error the database itself returned, by its SQLSTATE (or, for SQLite, which has
/// none, by its message).
fn from_database(code: &str, text: &str, s: &SqlSettings) -> SqlError {
    let where_ = s.url.redacted();
    let table = &s.table;
    let lower = text.to_ascii_lowercase();
    let missing_table = || {
        SqlError::Schema(format!(
            "table {table} does not exist in {where_}; create it or name the right one with --table"
        ))
    };
    let denied = || {
        SqlError::Permission(format!(
            "{where_}: permission denied on table {table} ({text}); GRANT SELECT ON {table} to this user"
        ))
    };
    match code {
        "28P01" | "28000" => SqlError::Auth(format!(
            "{where_}: authentication failed ({text}); check the user and password (URL, password_env or password_file)"
        )),
        "42P01" | "42S02" => missing_table(),
        "42501" => denied(),
        "42000" if lower.contains("denied") => denied(),
        "3D000" | "42000" if lower.contains("database") => SqlError::BadDatabase(format!(
            "{where_}: {text}; check the database name in the URL"
        )),
        _ if lower.contains("no such table") => missing_table(),
        _ if lower.contains("no such column") || code == "42703" || code == "42S22" => {
            SqlError::Schema(format!(
                "{where_}: a column of {table} is missing ({text}); set the column names in the config"
            ))
        }
        // SQLSTATE classes for connection exceptions, too many connections, a server
        // starting or shutting down. SQLite's numeric codes are never five characters long.
        _ if code.len() == 5 && ["08", "53", "57"].iter().any(|c| code.starts_with(c)) => {
            SqlError::Unavailable(format!("{where_}: {text}"))
        }
        _ => SqlError::Database(format!("{where_}: {text}")),
    }
}

/// A database error as the operator should read it: what is wrong and what to do.
pub(crate) fn describe(e: &sqlx::Error, s: &SqlSettings, url: &str) -> String {
    SqlError::from_sqlx(e, s, url).to_string()
}

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

impl crate::backend::engine::drive::StoreError for SqlError {
    fn failure(&self) -> crate::backend::engine::lifecycle::Failure {
        use crate::backend::engine::lifecycle::Failure;
        match self.kind() {
            SqlErrorKind::Transient => Failure::Transient,
            _ => Failure::Lasting,
        }
    }

    fn ends_one_shot(&self) -> bool {
        SqlError::ends_one_shot(self)
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;
    use crate::model::Scheme;

    /// A database's refusal with a SQLSTATE, as a driver would return it.
    #[derive(Debug, thiserror::Error)]
    #[error("{message}")]
    struct Refusal {
        code: &'static str,
        message: &'static str,
    }

    impl sqlx::error::DatabaseError for Refusal {
        fn message(&self) -> &str {
            self.message
        }
        fn code(&self) -> Option<Cow<'_, str>> {
            Some(Cow::Borrowed(self.code))
        }
        fn as_error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
            self
        }
        fn as_error_mut(&mut self) -> &mut (dyn std::error::Error + Send + Sync + 'static) {
            self
        }
        fn into_error(self: Box<Self>) -> Box<dyn std::error::Error + Send + Sync + 'static> {
            self
        }
        fn kind(&self) -> sqlx::error::ErrorKind {
            sqlx::error::ErrorKind::Other
        }
    }

    const URL: &str = "postgres://u:s3cret@h/db?sslmode=verify-full";

    fn settings() -> SqlSettings {
        let cfg = super::super::tests::cfg(URL, Scheme::SqlLease);
        SqlSettings::new(&crate::config::SqlSource::new(cfg).expect("valid"))
    }

    fn refused(code: &'static str, message: &'static str) -> SqlError {
        let e = sqlx::Error::Database(Box::new(Refusal { code, message }));
        SqlError::from_sqlx(&e, &settings(), URL)
    }

    #[test]
    fn database_codes_decide_the_kind_and_the_words() {
        use SqlErrorKind::*;
        let auth = refused("28P01", "password authentication failed for s3cret");
        assert_eq!(auth.kind(), Auth);
        assert!(
            auth.to_string().contains("authentication failed")
                && !auth.to_string().contains("s3cret"),
            "{auth}"
        );
        let table = refused("42P01", "relation does not exist");
        assert_eq!(table, SqlError::Schema(table.to_string()));
        assert!(
            table
                .to_string()
                .contains("table leaderlock does not exist")
        );
        assert_eq!(refused("42703", "no column").kind(), Lasting);
        assert!(matches!(
            refused("42501", "denied"),
            SqlError::Permission(_)
        ));
        assert!(matches!(
            refused("3D000", "database x"),
            SqlError::BadDatabase(_)
        ));
        assert_eq!(
            refused("57P03", "the database system is starting up").kind(),
            Transient
        );
        assert_eq!(refused("53300", "too many connections").kind(), Transient);
        // A retry would meet an unknown refusal again.
        assert_eq!(refused("22012", "division by zero").kind(), Lasting);
    }

    #[test]
    fn the_words_never_decide_the_kind() {
        use SqlErrorKind::*;
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        let down = SqlError::from_sqlx(&sqlx::Error::Io(refused), &settings(), URL);
        assert_eq!(down.kind(), Transient);
        assert_eq!(
            down.to_string(),
            "cannot connect to postgres://u@h/db: connection refused; \
             is the server running and reachable?"
        );
        assert!(down.ends_one_shot(), "a refusal is final for status");
        let plain = sqlx::Error::Tls("server does not support TLS".into());
        let tls = SqlError::from_sqlx(&plain, &settings(), URL);
        assert_eq!(tls.kind(), Tls);
        // Worded like a passing failure, typed as a lasting one.
        let schema = SqlError::Schema("cannot connect: no answer, timed out".into());
        assert_eq!(schema.kind(), Lasting);
        let timeout = SqlError::ConnectTimeout {
            place: "pg".into(),
            timeout: std::time::Duration::from_secs(2),
        };
        assert_eq!(timeout.kind(), Transient);
        assert_eq!(
            timeout.to_string(),
            "cannot connect to pg: no answer within 2s"
        );
        assert!(SqlErrorKind::Auth.is_lasting() && !SqlErrorKind::Transient.is_lasting());
    }
}
