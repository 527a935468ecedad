//! SQL sources, checked once, here: the URL's dialect and TLS parameters, the table and
//! column names, the heartbeat timeout. The backends, the admin actions and the nodes take
//! the checked [`SqlSource`] and never check it again.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use super::duration::duration_opt;
use super::sql_names::{BadIdent, Dialect, Ident};
use super::sql_tls::TlsConfigError;
use crate::model::{Scheme, Server};
use crate::presets::Preset;

/// Reads a password from an environment variable or the first line of a file; `None` when
/// neither is configured. The error names where it looked, never the password.
pub fn read_password(env: Option<&str>, file: Option<&Path>) -> Result<Option<String>, String> {
    match (env, file) {
        (Some(var), _) => std::env::var(var).map(Some).map_err(|_| {
            format!("password_env `{var}` is not set: export it or give the password another way")
        }),
        (None, Some(path)) => std::fs::read_to_string(path)
            .map(|t| Some(t.lines().next().unwrap_or("").to_string()))
            .map_err(|e| format!("cannot read password_file {}: {e}", path.display())),
        (None, None) => Ok(None),
    }
}

/// A database URL that may hold a password: shown and logged only without it.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct DbUrl(pub String);

impl DbUrl {
    /// `scheme://user@host:port/db`, or the path for SQLite; never the password.
    pub fn redacted(&self) -> String {
        match url::Url::parse(&self.0) {
            Ok(u) if u.scheme() == "sqlite" => {
                let rest = self.0.split_once(':').map(|(_, r)| r).unwrap_or("");
                format!("sqlite:{}", rest.split('?').next().unwrap_or(""))
            }
            Ok(u) if u.has_host() => {
                let user = if u.username().is_empty() {
                    String::new()
                } else {
                    format!("{}@", u.username())
                };
                let port = u.port().map(|p| format!(":{p}")).unwrap_or_default();
                format!(
                    "{}://{user}{}{port}{}",
                    u.scheme(),
                    u.host_str().unwrap_or(""),
                    u.path()
                )
            }
            // No host: not a URL electop reads (`user:secret@/path` parses, as scheme `user`).
            _ => without_password(&self.0),
        }
    }
}

/// A value that is no URL, as given but for what may be a password: `user:secret@host`
/// shows as `user@host`.
fn without_password(s: &str) -> String {
    let (scheme, rest) = match s.split_once("://") {
        Some((scheme, rest)) => (format!("{scheme}://"), rest),
        None => (String::new(), s),
    };
    match rest.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split(':').next().unwrap_or("");
            format!("{scheme}{user}@{host}")
        }
        None => s.to_string(),
    }
}

/// What to write instead of `raw`, when it looks like a path to a SQLite file.
fn sqlite_hint(raw: &str) -> String {
    let path_like = !raw.contains("://")
        && !raw.contains('@')
        && (raw.starts_with(['/', '.'])
            || [".db", ".sqlite", ".sqlite3", ".db3"]
                .iter()
                .any(|ext| raw.ends_with(ext)));
    match path_like {
        true => format!(": for the SQLite file {raw} write sqlite://{raw}"),
        false => match raw.split_once("://") {
            Some((scheme, _)) => format!(", not {scheme}://"),
            None => String::new(),
        },
    }
}

impl std::fmt::Debug for DbUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.redacted())
    }
}

/// Column names of an election table; the defaults are the articles' own.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SqlColumns {
    /// The election's name: `key` (sql-lease) / `anchor` (sql-heartbeat).
    #[serde(default, alias = "anchor")]
    pub key: Option<String>,
    /// The leader's id: `leader_id` / `service_id`.
    #[serde(default, alias = "service_id")]
    pub leader_id: Option<String>,
    /// The deadline: `valid_until` / `last_seen_active`.
    #[serde(default, alias = "last_seen_active")]
    pub valid_until: Option<String>,
}

/// Why a SQL source's settings cannot work.
#[derive(Debug, thiserror::Error)]
pub enum SqlConfigError {
    #[error("database URL `{given}` must start with postgres://, mysql:// or sqlite://{hint}")]
    Url { given: String, hint: String },
    #[error(
        "scheme `{0}` is not a SQL scheme; use sql-lease, sql-heartbeat, pg-advisory or mysql-lock"
    )]
    Scheme(Scheme),
    #[error(transparent)]
    Ident(#[from] BadIdent),
    #[error(transparent)]
    Tls(#[from] TlsConfigError),
    #[error(
        "scheme `{0}` reads a server's own locks: pg-advisory needs a postgres:// URL, mysql-lock a mysql:// one"
    )]
    LockDialect(Scheme),
    #[error("the heartbeat timeout must be more than 0")]
    Timeout,
    #[error(
        "an in-memory SQLite database is private to one connection, so no participant's elections can be seen in it; use a file: sqlite:///path/to/elections.db"
    )]
    Memory,
}

impl SqlConfigError {
    /// `url` names no database electop reads; a path is shown how to write it.
    pub fn url(url: &DbUrl) -> SqlConfigError {
        let given = url.redacted();
        let hint = sqlite_hint(&given);
        SqlConfigError::Url { given, hint }
    }
}

/// A SQL source as given (file or flags), a preset's table and columns filled in; not yet
/// checked: [`SqlSource::new`] does that.
#[derive(Clone, Debug, PartialEq)]
pub struct SqlSpec {
    /// What the source is called on screen; `sql1`, `sql2`... when not named.
    pub name: Option<String>,
    pub url: DbUrl,
    pub password_env: Option<String>,
    pub password_file: Option<PathBuf>,
    pub scheme: Scheme,
    /// The project whose table this is; its layout is already applied.
    pub preset: Option<Preset>,
    pub table: Option<String>,
    pub columns: SqlColumns,
    pub timeout: Option<Duration>,
    pub poll: Option<Duration>,
    pub read_only: bool,
}

impl SqlSpec {
    /// Fills in what the preset fixes and the user left out: a table or column given
    /// explicitly stays, since projects let their users rename them.
    pub fn apply_preset(&mut self) -> Result<(), String> {
        let Some(preset) = self.preset else {
            return Ok(());
        };
        let t = preset.sql_table()?;
        let fill = |slot: &mut Option<String>, v: &str| {
            slot.get_or_insert_with(|| v.to_string());
        };
        fill(&mut self.table, t.table);
        fill(&mut self.columns.key, t.key);
        fill(&mut self.columns.leader_id, t.leader);
        fill(&mut self.columns.valid_until, t.stamp);
        if self.timeout.is_none() {
            self.timeout = t.timeout;
        }
        Ok(())
    }
}

/// What checking a [`SqlSpec`] established: the dialect, names safe to quote, the timings
/// with their defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct SqlChecked {
    pub dialect: Dialect,
    pub table: Ident,
    /// The election's name (`key` / `anchor`).
    pub key: Ident,
    /// The leader id (`leader_id` / `service_id`).
    pub holder: Ident,
    /// The deadline (`valid_until` / `last_seen_active`).
    pub stamp: Ident,
    /// sql-heartbeat: how long after the last heartbeat the leader is deposed.
    pub heartbeat_timeout: Option<Duration>,
    pub poll: Duration,
}

/// A SQL source whose settings can work. Only [`SqlSource::new`] makes one, so whoever
/// holds one need not check it again; read the settings as given through `Deref`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(try_from = "SqlSourceFile")]
pub struct SqlSource {
    spec: SqlSpec,
    checked: SqlChecked,
    /// Where `--sql URL` alone found this table (`found leaderlock (sql-lease) in x.db`):
    /// the source's notice. Boxed: a `SourceConfig` is as large as its largest variant.
    found: Option<Box<str>>,
    /// `--sql URL` alone, its catalog not read yet (the database did not answer): the
    /// backend looks for the tables once it does.
    unresolved: bool,
    /// pg-advisory / mysql-lock: names for the locks (`[source.locks]`).
    locks: super::LockNaming,
}

impl std::ops::Deref for SqlSource {
    type Target = SqlSpec;

    fn deref(&self) -> &SqlSpec {
        &self.spec
    }
}

impl SqlSource {
    pub fn new(spec: SqlSpec) -> Result<SqlSource, SqlConfigError> {
        let checked = check(&spec)?;
        Ok(SqlSource {
            spec,
            checked,
            found: None,
            unresolved: false,
            locks: Default::default(),
        })
    }

    /// The names given to a session-lock source's locks.
    pub fn locks(&self) -> &super::LockNaming {
        &self.locks
    }

    pub(crate) fn set_locks(&mut self, locks: super::LockNaming) {
        self.locks = locks;
    }

    pub fn checked(&self) -> &SqlChecked {
        &self.checked
    }

    /// Admin actions off; nothing checked depends on it.
    pub fn set_read_only(&mut self) {
        self.spec.read_only = true;
    }

    /// What the catalog lookup of `--sql URL` alone found, said beside the source.
    pub fn found(&self) -> Option<&str> {
        self.found.as_deref()
    }

    pub(crate) fn set_found(&mut self, text: String) {
        self.found = Some(text.into_boxed_str());
    }

    /// Whether the tables to read are still to be looked up (see [`Self::found_table`]).
    pub fn unresolved(&self) -> bool {
        self.unresolved
    }

    pub(crate) fn set_unresolved(&mut self) {
        self.unresolved = true;
    }

    /// This unresolved source reading `table`, found in its catalog, as `scheme` (or the
    /// preset's): what it would have been had the database answered at start.
    pub fn found_table(
        &self,
        scheme: Scheme,
        preset: Option<crate::presets::Preset>,
        table: &str,
    ) -> Result<SqlSource, String> {
        let mut spec = self.spec.clone();
        spec.scheme = scheme;
        spec.preset = preset;
        spec.table = Some(table.to_string());
        spec.apply_preset()?;
        let mut src = SqlSource::new(spec).map_err(|e| format!("--sql: {e}"))?;
        src.locks = self.locks.clone();
        Ok(src)
    }

    pub(crate) fn set_name(&mut self, name: String) {
        self.spec.name = Some(name);
    }

    /// The same source with another heartbeat timeout (a node's own `--ttl`), checked.
    pub fn with_timeout(&self, timeout: Duration) -> Result<SqlSource, SqlConfigError> {
        let mut spec = self.spec.clone();
        spec.timeout = Some(timeout);
        SqlSource::new(spec)
    }
}

fn check(cfg: &SqlSpec) -> Result<SqlChecked, SqlConfigError> {
    let dialect = Dialect::from_url(&cfg.url.0).ok_or_else(|| SqlConfigError::url(&cfg.url))?;
    if dialect == Dialect::Sqlite
        && (cfg.url.0.contains(":memory:") || cfg.url.0.contains("mode=memory"))
    {
        return Err(SqlConfigError::Memory);
    }
    super::sql_tls::check(&cfg.url.0, dialect)?;
    let (table, key, holder, stamp) = match cfg.scheme {
        Scheme::SqlLease => ("leaderlock", "key", "leader_id", "valid_until"),
        Scheme::SqlHeartbeat => (
            "service_election",
            "anchor",
            "service_id",
            "last_seen_active",
        ),
        // No table: the server's own locks. The names stay unused, valid defaults.
        lock if lock.is_session_lock() => {
            let wants = lock.facts().server.map(|server| match server {
                Server::Postgres => Dialect::Postgres,
                Server::MySql => Dialect::MySql,
            });
            if wants.is_some_and(|w| w != dialect) {
                return Err(SqlConfigError::LockDialect(cfg.scheme));
            }
            ("leaderlock", "key", "leader_id", "valid_until")
        }
        other => return Err(SqlConfigError::Scheme(other)),
    };
    let heartbeat_timeout = match cfg.scheme {
        Scheme::SqlHeartbeat => {
            let timeout = cfg.timeout.unwrap_or(Duration::from_secs(20));
            if timeout.is_zero() {
                return Err(SqlConfigError::Timeout);
            }
            Some(timeout)
        }
        _ => None,
    };
    let c = &cfg.columns;
    Ok(SqlChecked {
        dialect,
        table: Ident::table(cfg.table.as_deref().unwrap_or(table))?,
        key: Ident::column(c.key.as_deref().unwrap_or(key))?,
        holder: Ident::column(c.leader_id.as_deref().unwrap_or(holder))?,
        stamp: Ident::column(c.valid_until.as_deref().unwrap_or(stamp))?,
        heartbeat_timeout,
        poll: cfg
            .poll
            .unwrap_or(Duration::from_millis(500))
            .max(Duration::from_millis(50)),
    })
}

/// `[[source]] kind = "sql"` as written in the file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SqlSourceFile {
    /// What the source is called on screen and in `SOURCE/NAME`.
    #[serde(default)]
    name: Option<String>,
    /// `postgres://user@host:port/db`, `mysql://user@host:port/db` or `sqlite://PATH`.
    url: DbUrl,
    /// Read the password from this environment variable instead of the URL.
    #[serde(default)]
    password_env: Option<String>,
    /// Read the password from the first line of this file instead of the URL.
    #[serde(default)]
    password_file: Option<PathBuf>,
    /// `sql-lease` or `sql-heartbeat`; implied by `preset`.
    #[serde(default)]
    scheme: Option<Scheme>,
    /// A well-known project's table: `shedlock`, `oban` or `orchestrator`.
    #[serde(default)]
    preset: Option<Preset>,
    /// Table name (`name` or `schema.name`); default `leaderlock` / `service_election`.
    #[serde(default)]
    table: Option<String>,
    #[serde(default)]
    columns: SqlColumns,
    /// sql-heartbeat: how long after `last_seen_active` the leader is deposed, e.g. "20s".
    #[serde(default, deserialize_with = "duration_opt")]
    timeout: Option<std::time::Duration>,
    /// Poll interval, e.g. "500ms".
    #[serde(default, deserialize_with = "duration_opt")]
    poll: Option<std::time::Duration>,
    #[serde(default)]
    read_only: bool,
    /// pg-advisory / mysql-lock: names for the locks, by key or hashed from a name.
    #[serde(default)]
    locks: Option<super::LockNaming>,
}

impl SqlSourceFile {
    /// The scheme from the preset or `scheme`, the preset applied, then every setting checked.
    /// Neither given: the tables electop knows are looked up in the database's catalog once
    /// it answers, as for `--sql URL` alone (read-only meanwhile, as there).
    pub(crate) fn into_source(self) -> Result<SqlSource, String> {
        let look_up = self.preset.is_none() && self.scheme.is_none() && self.locks.is_none();
        let scheme = match look_up {
            true => Scheme::SqlLease,
            false => crate::presets::sql_scheme(self.preset, self.scheme, "scheme")?,
        };
        let mut spec = SqlSpec {
            scheme,
            name: self.name,
            url: self.url,
            password_env: self.password_env,
            password_file: self.password_file,
            preset: self.preset,
            table: self.table,
            columns: self.columns,
            timeout: self.timeout,
            poll: self.poll,
            read_only: self.read_only,
        };
        spec.apply_preset()?;
        let mut src = SqlSource::new(spec).map_err(|e| e.to_string())?;
        if let Some(locks) = self.locks {
            if !src.scheme.is_session_lock() {
                return Err(format!(
                    "`locks` names the locks of pg-advisory or mysql-lock, not of {}",
                    src.scheme
                ));
            }
            src.set_locks(locks);
        }
        if look_up {
            src.set_read_only();
            src.set_unresolved();
            src.set_found(format!(
                "no scheme given: its election tables are looked up in {} once it answers",
                src.url.redacted()
            ));
        }
        Ok(src)
    }
}

impl TryFrom<SqlSourceFile> for SqlSource {
    type Error = String;

    fn try_from(f: SqlSourceFile) -> Result<Self, String> {
        f.into_source()
    }
}
