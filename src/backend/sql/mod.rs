//! The SQL backend: election tables polled with one query per table per poll, which also
//! reads the database's clock; rows are diffed into the same events the etcd backend sends.
//! Leader changes seen are kept on disk. PostgreSQL, MySQL/MariaDB and SQLite go through
//! sqlx's `Any` driver; their differences live in [`dialect`].

pub mod admin;
mod dial;
pub(crate) mod dialect;
mod discover;
pub(crate) mod errors;
mod follow;
pub(crate) mod heartbeat;
pub(crate) mod lease;
mod participant;
mod plan;
mod poll;
mod schema;
mod store;
mod tls;
pub(crate) mod tracker;
mod unfound;
mod wrong;

pub(crate) use dial::{connect, create_table_if_missing, open};
pub use discover::find_tables;
pub(crate) use errors::SqlError;
pub(crate) use errors::describe;
pub(crate) use schema::{Schema, check_schema};

use std::path::PathBuf;
use std::time::Duration;

use self::dialect::{Dialect, Ident};
use super::{Backend, BackendFuture, BackendIo, BackendOptions};
use crate::config::{DbUrl, SqlSource};
use crate::model::{Scheme, SourceId, SourceInfo, SourceNotice};

pub use self::plan::{DEADLINE, Row, Statement};
pub use self::store::{Sql, SqlTarget};
pub use crate::config::Columns;

/// What differs between the two SQL schemes; each lives in its own file.
pub trait SqlScheme: Send + Sync {
    fn scheme(&self) -> Scheme;
    fn columns(&self) -> &Columns;
    /// SQL for the milliseconds left of the holder's term, from the quoted deadline column
    /// and its declared type.
    fn remaining_ms(&self, d: Dialect, stamp: &str, stamp_type: &str) -> String;
    /// The full term when the scheme fixes it (the heartbeat timeout).
    fn term_ms(&self) -> Option<i64>;
}

pub use crate::config::SqlConfigError;

/// A SQL source's settings, checked.
pub struct SqlSettings {
    pub dialect: Dialect,
    pub url: DbUrl,
    pub table: Ident,
    pub scheme: Box<dyn SqlScheme>,
    pub poll: Duration,
    pub password_env: Option<String>,
    pub password_file: Option<PathBuf>,
}

impl SqlSettings {
    /// The backend's view of a source the config checked.
    pub fn new(cfg: &SqlSource) -> SqlSettings {
        let c = cfg.checked();
        let columns = Columns {
            key: c.key.clone(),
            holder: c.holder.clone(),
            stamp: c.stamp.clone(),
        };
        let scheme: Box<dyn SqlScheme> = match c.heartbeat_timeout {
            Some(timeout) => Box::new(heartbeat::SqlHeartbeat {
                columns,
                timeout_ms: timeout.as_millis() as i64,
            }),
            None => Box::new(lease::SqlLease { columns }),
        };
        SqlSettings {
            dialect: c.dialect,
            url: cfg.url.clone(),
            table: c.table.clone(),
            scheme,
            poll: c.poll,
            password_env: cfg.password_env.clone(),
            password_file: cfg.password_file.clone(),
        }
    }

    /// The URL with the password from the environment or file put in, for connecting only.
    fn connect_url(&self) -> Result<String, String> {
        let password = crate::config::read_password(
            self.password_env.as_deref(),
            self.password_file.as_deref(),
        )?;
        let Some(password) = password else {
            return Ok(self.url.0.clone());
        };
        let mut url = url::Url::parse(&self.url.0)
            .map_err(|e| format!("database URL {}: {e}", self.url.redacted()))?;
        url.set_password(Some(&password)).map_err(|()| {
            format!(
                "database URL {} cannot carry a password",
                self.url.redacted()
            )
        })?;
        Ok(url.to_string())
    }

    /// The poll: the database's clock and every election's row; `checking` for change
    /// (see [`Dialect::poll_query`]).
    pub fn poll_query(&self, stamp_type: &str, checking: bool) -> String {
        self.keyed_poll_query(stamp_type, "", 0, checking)
    }

    /// The poll of only the rows whose key is one of `keys` bound values (none: every row),
    /// for a command asking for one election (`history ELECTION`): a read of its row by the
    /// key's index, not of the 10,000 others. A key column of an integer type is compared
    /// as text (PostgreSQL refuses an integer compared with a text value). A keyed poll
    /// never checks for change: its parameters are the keys, and it is a one-shot read.
    pub fn keyed_poll_query(
        &self,
        stamp_type: &str,
        key_type: &str,
        keys: usize,
        checking: bool,
    ) -> String {
        let d = self.dialect;
        let c = self.scheme.columns();
        let stamp = d.quote(&c.stamp);
        let mut table = d.quote(&self.table);
        if keys > 0 {
            let key = match key_type.to_ascii_lowercase().contains("int") {
                true => d.as_text(&d.quote(&c.key)),
                false => d.quote(&c.key),
            };
            let params: Vec<String> = (1..=keys).map(|i| d.param(i)).collect();
            table = format!("{table} WHERE {key} IN ({})", params.join(", "));
        }
        d.poll_query(
            [
                &d.as_text(&d.quote(&c.key)),
                &d.as_text(&d.quote(&c.holder)),
                &self.scheme.remaining_ms(d, &stamp, stamp_type),
                &d.as_text(&stamp),
            ],
            &table,
            checking && keys == 0,
        )
    }

    pub fn source_name(&self) -> String {
        format!("{} {}", self.url.redacted(), self.table)
    }
}

pub struct SqlBackend {
    info: SourceInfo,
    settings: SqlSettings,
    pub(super) opts: BackendOptions,
    /// `--sql URL` alone, the database not reached to look: the tables are looked up
    /// (`unfound`) once it answers, this its source as configured.
    unresolved: Option<SqlSource>,
}

impl SqlBackend {
    pub fn new(id: SourceId, short: String, cfg: &SqlSource, opts: BackendOptions) -> Self {
        let settings = SqlSettings::new(cfg);
        let unresolved = cfg.unresolved().then(|| cfg.clone());
        let unresolved = unresolved.as_ref();
        // Which table is read is not known yet: the database alone names the source.
        let name = match unresolved {
            Some(_) => settings.url.redacted(),
            None => settings.source_name(),
        };
        let table = match unresolved {
            Some(_) => "(tables not looked up yet)".to_string(),
            None => settings.table.to_string(),
        };
        let info = SourceInfo {
            store: crate::model::StoreKind::Sql,
            id,
            label: format!("{} {table}", settings.dialect.name()),
            endpoints: settings.url.redacted(),
            short,
            name: name.clone(),
            scheme: unresolved.is_none().then(|| settings.scheme.scheme()),
            read_only: cfg.read_only,
            clustered: false,
            idle_is_normal: cfg.preset.is_some_and(|p| p.spec().idle_is_normal),
            notice: cfg.found().map(|t| SourceNotice::Found(t.to_string())),
        };
        SqlBackend {
            info,
            settings,
            opts,
            unresolved: unresolved.cloned(),
        }
    }
}

impl Backend for SqlBackend {
    fn info(&self) -> SourceInfo {
        self.info.clone()
    }

    fn run(self: Box<Self>, io: BackendIo) -> BackendFuture {
        Box::pin(follow::run(*self, io))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{SqlColumns, SqlSpec};

    fn settings(spec: SqlSpec) -> SqlSettings {
        SqlSettings::new(&SqlSource::new(spec).expect("valid"))
    }

    pub(super) fn cfg(url: &str, scheme: Scheme) -> SqlSpec {
        SqlSpec {
            name: None,
            url: DbUrl(url.into()),
            password_env: None,
            password_file: None,
            scheme,
            preset: None,
            table: None,
            columns: SqlColumns::default(),
            timeout: None,
            poll: None,
            read_only: false,
        }
    }

    #[test]
    fn defaults_are_the_articles_names() {
        let s = settings(cfg("postgres://u:pw@h:5432/db", Scheme::SqlHeartbeat));
        let q = s.poll_query("timestamp with time zone", true);
        assert!(
            q.contains("\"service_election\"")
                && q.contains("\"last_seen_active\"")
                && q.contains("+ 20000"),
            "{q}"
        );
        assert_eq!(s.source_name(), "postgres://u@h:5432/db service_election");
    }

    #[test]
    fn a_keyed_poll_reads_the_rows_of_the_keys_bound_alone() {
        let s = settings(cfg("postgres://u:pw@h:5432/db", Scheme::SqlLease));
        // Asked to check for change, a keyed poll does not: its parameters are the keys.
        let q = s.keyed_poll_query("timestamp with time zone", "text", 2, true);
        assert!(
            q.ends_with("WHERE \"key\" IN ($1, $2)") && !q.contains("md5"),
            "{q}"
        );
        let q = s.keyed_poll_query("timestamp with time zone", "integer", 1, false);
        assert!(q.ends_with("WHERE CAST(\"key\" AS TEXT) IN ($1)"), "{q}");
        let whole = s.poll_query("timestamp with time zone", false);
        assert!(!whole.contains("WHERE"), "{whole}");
        let s = settings(cfg("mysql://u@h/db", Scheme::SqlLease));
        let q = s.keyed_poll_query("datetime", "varchar(64)", 1, false);
        assert!(q.ends_with("WHERE `key` IN (?)"), "{q}");
    }

    #[test]
    fn unusable_tls_modes_are_refused() {
        let bad_mode = cfg("postgres://h/db?sslmode=on", Scheme::SqlLease);
        let e = SqlSource::new(bad_mode).expect_err("refused");
        assert!(e.to_string().contains("sslmode=on"), "{e}");
    }

    #[test]
    fn bad_names_and_urls_are_refused_with_the_reason() {
        let mut c = cfg("mysql://u@h/db", Scheme::SqlLease);
        c.table = Some("leader lock".into());
        let e = SqlSource::new(c)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("`leader lock` is not a usable SQL name"), "{e}");
        let e = SqlSource::new(cfg("redis://h", Scheme::SqlLease))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("must start with postgres://"), "{e}");
        let e = SqlSource::new(cfg("sqlite::memory:", Scheme::SqlLease))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("private to one connection"), "{e}");
    }

    #[test]
    fn passwords_come_from_env_and_never_show() {
        let mut c = cfg("postgres://tester@127.0.0.1:5432/db", Scheme::SqlLease);
        c.password_env = Some("ELECTOP_TEST_PW_UNIT".into());
        let s = settings(c.clone());
        assert!(
            s.connect_url()
                .unwrap_err()
                .contains("ELECTOP_TEST_PW_UNIT")
        );
        // SAFETY: this test alone uses this variable.
        unsafe { std::env::set_var("ELECTOP_TEST_PW_UNIT", "p@ss/word") };
        let url = s.connect_url().expect("url");
        assert!(url.contains("tester:p%40ss%2Fword@"), "{url}");
        assert_eq!(
            errors::scrub(&format!("failed: {url} p@ss/word"), &url),
            "failed: <database URL> ***"
        );
        assert!(!format!("{:?}", c.url).contains("p@ss"));
    }
}
