//! The TOML config file: one serde struct per section, unknown keys refused, so a typo is an
//! error that names the key instead of a setting silently ignored.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::model::Scheme;

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub ui: UiConfig,
    #[serde(default)]
    pub history: HistoryConfig,
    /// The elections to show; `--etcd`/`--prefix` on the command line replace these.
    #[serde(default, rename = "source")]
    pub sources: Vec<SourceConfig>,
    /// Key overrides: action name = "key[,key...]", e.g. `reelect = "ctrl-r"`.
    #[serde(default)]
    pub keys: std::collections::BTreeMap<String, String>,
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct UiConfig {
    /// Redraw interval while a countdown is visible, in milliseconds.
    pub tick_ms: u64,
}

impl Default for UiConfig {
    fn default() -> Self {
        UiConfig { tick_ms: 100 }
    }
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct HistoryConfig {
    /// Leader changes kept per election (replayed from etcd and seen live); 0 turns replay off.
    pub limit: usize,
}

impl Default for HistoryConfig {
    fn default() -> Self {
        HistoryConfig { limit: 200 }
    }
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum SourceConfig {
    Etcd(EtcdSource),
    Sql(SqlSource),
}

impl SourceConfig {
    pub fn read_only(&self) -> bool {
        match self {
            SourceConfig::Etcd(e) => e.read_only,
            SourceConfig::Sql(s) => s.read_only,
        }
    }

    pub fn set_read_only(&mut self) {
        match self {
            SourceConfig::Etcd(e) => e.read_only = true,
            SourceConfig::Sql(s) => s.read_only = true,
        }
    }
}

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
            Ok(u) => {
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
            Err(_) => "<unparsable database URL>".to_string(),
        }
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

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SqlSource {
    /// `postgres://user@host:port/db`, `mysql://user@host:port/db` or `sqlite://PATH`.
    pub url: DbUrl,
    /// Read the password from this environment variable instead of the URL.
    #[serde(default)]
    pub password_env: Option<String>,
    /// Read the password from the first line of this file instead of the URL.
    #[serde(default)]
    pub password_file: Option<PathBuf>,
    /// `sql-lease` or `sql-heartbeat`.
    pub scheme: Scheme,
    /// Table name (`name` or `schema.name`); default `leaderlock` / `service_election`.
    #[serde(default)]
    pub table: Option<String>,
    #[serde(default)]
    pub columns: SqlColumns,
    /// sql-heartbeat: how long after `last_seen_active` the leader is deposed, e.g. "20s".
    #[serde(default, deserialize_with = "duration_opt")]
    pub timeout: Option<std::time::Duration>,
    /// Poll interval, e.g. "500ms".
    #[serde(default, deserialize_with = "duration_opt")]
    pub poll: Option<std::time::Duration>,
    #[serde(default)]
    pub read_only: bool,
}

fn duration_opt<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<std::time::Duration>, D::Error> {
    let s = String::deserialize(d)?;
    crate::cli::parse_duration(&s)
        .map(Some)
        .map_err(serde::de::Error::custom)
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct EtcdSource {
    /// `host:port` of each etcd member.
    pub endpoints: Vec<String>,
    /// Key prefix the elections live under.
    #[serde(default)]
    pub prefix: String,
    /// `etcd-election` or `etcd-lease-key`; guessed from the keys when absent.
    #[serde(default)]
    pub scheme: Option<Scheme>,
    /// etcd-lease-key only: prefix of the candidate registry, `<registry><name>/<id>`.
    #[serde(default)]
    pub registry: Option<String>,
    /// Refuse admin actions on this source.
    #[serde(default)]
    pub read_only: bool,
    /// etcd user, when etcd has authentication enabled.
    #[serde(default)]
    pub user: Option<String>,
    /// The user's password from this environment variable...
    #[serde(default)]
    pub password_env: Option<String>,
    /// ...or from the first line of this file.
    #[serde(default)]
    pub password_file: Option<PathBuf>,
    /// TLS: the CA certificate(s), PEM, that sign the members' certificates.
    #[serde(default)]
    pub cacert: Option<PathBuf>,
    /// TLS: the client certificate, PEM, for etcd's `--client-cert-auth`; needs `key`.
    #[serde(default)]
    pub cert: Option<PathBuf>,
    /// TLS: the client certificate's private key, PEM.
    #[serde(default)]
    pub key: Option<PathBuf>,
    /// TLS without checking the server's certificate: encrypted, not authenticated (labs).
    #[serde(default)]
    pub insecure_skip_tls_verify: bool,
}

impl EtcdSource {
    /// TLS is on for an `https://` endpoint, or for any endpoint once a TLS setting is
    /// given (then a bare `host:port` means TLS, as with etcdctl).
    pub fn uses_tls(&self, endpoint: &str) -> bool {
        if endpoint.starts_with("https://") {
            return true;
        }
        !endpoint.starts_with("http://") && self.tls_configured()
    }

    fn tls_configured(&self) -> bool {
        self.cacert.is_some()
            || self.cert.is_some()
            || self.key.is_some()
            || self.insecure_skip_tls_verify
    }

    /// The TLS settings can work: files readable PEM, cert and key given together and
    /// matching, no plain `http://` endpoint beside them. `dashes` is "--" when the settings
    /// came from flags, "" from the config file, so the message names what the user wrote.
    pub fn check_tls(&self, dashes: &str) -> Result<(), String> {
        match (&self.cert, &self.key) {
            (Some(cert), None) => {
                return Err(format!(
                    "{dashes}cert {} needs {dashes}key: the client certificate's private key",
                    cert.display()
                ));
            }
            (None, Some(key)) => {
                return Err(format!(
                    "{dashes}key {} needs {dashes}cert: the client certificate it belongs to",
                    key.display()
                ));
            }
            (Some(cert), Some(key)) => crate::pem::check_identity(dashes, cert, key)?,
            (None, None) => {}
        }
        if let Some(ca) = &self.cacert {
            crate::pem::certificates(&format!("{dashes}cacert"), ca)?;
        }
        if self.tls_configured()
            && let Some(plain) = self.endpoints.iter().find(|e| e.starts_with("http://"))
        {
            return Err(format!(
                "endpoint {plain} is plain text but TLS settings are given: write https:// (or host:port)"
            ));
        }
        Ok(())
    }

    /// Connection options: timeouts, keep-alives and, with a user, its password.
    pub fn connect_options(
        &self,
        timeout: std::time::Duration,
    ) -> Result<etcd_client::ConnectOptions, String> {
        let mut o = etcd_client::ConnectOptions::new()
            .with_connect_timeout(timeout)
            .with_timeout(timeout)
            .with_keep_alive(
                std::time::Duration::from_secs(2),
                std::time::Duration::from_secs(2),
            );
        if let Some(user) = &self.user {
            let password = read_password(self.password_env.as_deref(), self.password_file.as_deref())?
                .ok_or_else(|| format!("etcd user `{user}` needs a password: set password_env or password_file (--password-env / --password-file)"))?;
            o = o.with_user(user.clone(), password);
        }
        Ok(o)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("config file {path} is not valid: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("config file {path}: {message}")]
    Invalid { path: PathBuf, message: String },
}

impl Config {
    /// The default config file: `$XDG_CONFIG_HOME/electop/config.toml` on Linux.
    pub fn default_path() -> Option<PathBuf> {
        directories::ProjectDirs::from("", "", "electop")
            .map(|d| d.config_dir().join("config.toml"))
    }

    /// Loads `path`; a missing default file is an empty config, a missing explicit one an error.
    pub fn load(path: Option<&Path>) -> Result<Config, ConfigError> {
        let (path, explicit) = match path {
            Some(p) => (p.to_path_buf(), true),
            None => match Self::default_path() {
                Some(p) => (p, false),
                None => return Ok(Config::default()),
            },
        };
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if !explicit && e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Config::default());
            }
            Err(source) => return Err(ConfigError::Read { path, source }),
        };
        Self::parse(&text, &path)
    }

    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let config: Config = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_path_buf(),
            message: e.to_string().trim_end().to_string(),
        })?;
        config.validate().map_err(|message| ConfigError::Invalid {
            path: path.to_path_buf(),
            message,
        })?;
        Ok(config)
    }

    fn validate(&self) -> Result<(), String> {
        crate::app::keys::KeyMap::with_overrides(&self.keys)?;
        for (i, s) in self.sources.iter().enumerate() {
            match s {
                SourceConfig::Etcd(e) => {
                    if e.endpoints.is_empty() {
                        return Err(format!(
                            "[[source]] #{}: `endpoints` is empty; give at least one \"host:port\"",
                            i + 1
                        ));
                    }
                    if let Some(scheme) = e.scheme
                        && !matches!(scheme, Scheme::EtcdElection | Scheme::EtcdLeaseKey)
                    {
                        return Err(format!(
                            "[[source]] #{}: scheme `{scheme}` is not an etcd scheme; use etcd-election or etcd-lease-key",
                            i + 1
                        ));
                    }
                    e.check_tls("")
                        .map_err(|m| format!("[[source]] #{}: {m}", i + 1))?;
                    if e.registry.is_some() && e.scheme == Some(Scheme::EtcdElection) {
                        return Err(format!(
                            "[[source]] #{}: `registry` only applies to scheme etcd-lease-key",
                            i + 1
                        ));
                    }
                }
                SourceConfig::Sql(q) => {
                    crate::backend::sql::SqlSettings::from_config(q)
                        .map_err(|e| format!("[[source]] #{}: {e}", i + 1))?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_example_parses() {
        let text = include_str!("../config.example.toml");
        let c = Config::parse(text, Path::new("config.example.toml")).expect("example parses");
        assert!(!c.sources.is_empty());
    }

    #[test]
    fn unknown_keys_are_named() {
        let err = Config::parse("[ui]\ntick = 5\n", Path::new("x.toml")).expect_err("typo");
        let msg = err.to_string();
        assert!(msg.contains("unknown field `tick`"), "{msg}");
        assert!(msg.contains("x.toml"), "{msg}");
    }

    #[test]
    fn tls_keys_are_checked_when_the_config_loads() {
        let dir = tempfile::tempdir().expect("tempdir");
        let etcd =
            |extra: &str| format!("[[source]]\nkind = \"etcd\"\nendpoints = [\"a:1\"]\n{extra}");
        let key = dir.path().join("client-key.pem");
        let text = etcd(&format!("key = \"{}\"\n", key.display()));
        let msg = Config::parse(&text, Path::new("x.toml"))
            .expect_err("key without cert")
            .to_string();
        assert!(
            msg.contains("needs cert") && msg.contains("client-key.pem"),
            "{msg}"
        );

        let notes = dir.path().join("notes.txt");
        std::fs::write(&notes, "not PEM").expect("write");
        let text = etcd(&format!("cacert = \"{}\"\n", notes.display()));
        let msg = Config::parse(&text, Path::new("x.toml"))
            .expect_err("not PEM")
            .to_string();
        assert!(msg.contains("cacert") && msg.contains("notes.txt"), "{msg}");

        let text = "[[source]]\nkind = \"etcd\"\nendpoints = [\"http://a:1\"]\ninsecure_skip_tls_verify = true\n";
        let msg = Config::parse(text, Path::new("x.toml"))
            .expect_err("plain text with TLS")
            .to_string();
        assert!(msg.contains("http://a:1"), "{msg}");

        let text = etcd("insecure_skip_tls_verify = true\n");
        let c = Config::parse(&text, Path::new("x.toml")).expect("valid");
        let SourceConfig::Etcd(e) = &c.sources[0] else {
            panic!("etcd")
        };
        assert!(e.uses_tls("a:1") && e.uses_tls("https://a:1") && !e.uses_tls("http://a:1"));
    }

    #[test]
    fn a_wrong_scheme_for_etcd_is_explained() {
        let text = "[[source]]\nkind = \"etcd\"\nendpoints = [\"a:1\"]\nscheme = \"sql-lease\"\n";
        let msg = Config::parse(text, Path::new("x.toml"))
            .expect_err("bad")
            .to_string();
        assert!(msg.contains("not an etcd scheme"), "{msg}");
        let text = "[[source]]\nkind = \"etcd\"\nendpoints = []\n";
        let msg = Config::parse(text, Path::new("x.toml"))
            .expect_err("bad")
            .to_string();
        assert!(msg.contains("endpoints"), "{msg}");
    }
}
