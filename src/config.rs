//! The TOML config file: one serde struct per section, unknown keys refused, so a typo is an
//! error that names the key instead of a setting silently ignored.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::model::Scheme;
use crate::presets::Preset;

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
    /// An election whose leader changed more than this many times in the last minute is
    /// flagged as flapping.
    pub flap_per_min: u32,
    /// At most this many frames a second, however fast the stores change: changes arriving
    /// in between are drawn together.
    pub max_fps: u32,
}

impl UiConfig {
    /// The shortest time between two frames.
    pub fn min_frame(&self) -> std::time::Duration {
        std::time::Duration::from_secs(1) / self.max_fps.clamp(1, 1000)
    }
}

impl Default for UiConfig {
    fn default() -> Self {
        UiConfig {
            tick_ms: 100,
            flap_per_min: 4,
            max_fps: 30,
        }
    }
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct HistoryConfig {
    /// Leader changes kept per election (replayed from etcd and seen live); 0 turns replay off.
    pub limit: usize,
    /// How long an election whose last candidate left stays listed, e.g. "10m".
    #[serde(deserialize_with = "duration")]
    pub retention: std::time::Duration,
}

impl Default for HistoryConfig {
    fn default() -> Self {
        HistoryConfig {
            limit: 200,
            retention: std::time::Duration::from_secs(600),
        }
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

/// A SQL source as the backends take it: the scheme known, a preset's table and columns
/// filled in.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(try_from = "SqlSourceFile")]
pub struct SqlSource {
    pub url: DbUrl,
    pub password_env: Option<String>,
    pub password_file: Option<PathBuf>,
    pub scheme: Scheme,
    /// The project whose table this is; its layout is already applied.
    pub preset: Option<Preset>,
    pub table: Option<String>,
    pub columns: SqlColumns,
    pub timeout: Option<std::time::Duration>,
    pub poll: Option<std::time::Duration>,
    pub read_only: bool,
}

impl SqlSource {
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

/// `[[source]] kind = "sql"` as written in the file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SqlSourceFile {
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
}

impl TryFrom<SqlSourceFile> for SqlSource {
    type Error = String;

    fn try_from(f: SqlSourceFile) -> Result<Self, String> {
        let mut s = SqlSource {
            scheme: crate::presets::sql_scheme(f.preset, f.scheme, "scheme")?,
            url: f.url,
            password_env: f.password_env,
            password_file: f.password_file,
            preset: f.preset,
            table: f.table,
            columns: f.columns,
            timeout: f.timeout,
            poll: f.poll,
            read_only: f.read_only,
        };
        s.apply_preset()?;
        Ok(s)
    }
}

fn duration<'de, D: serde::Deserializer<'de>>(d: D) -> Result<std::time::Duration, D::Error> {
    let s = String::deserialize(d)?;
    crate::cli::parse_duration(&s).map_err(serde::de::Error::custom)
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
    /// A system whose keys electop knows: `patroni` (scheme patroni, prefix `/service/`
    /// unless given). `electop presets` lists them.
    #[serde(default)]
    pub preset: Option<Preset>,
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
    /// Sets the scheme and default prefix of the preset; a scheme given beside it must agree.
    pub fn apply_preset(&mut self) -> Result<(), String> {
        let Some(preset) = self.preset else {
            return Ok(());
        };
        let namespace = preset.etcd_namespace().ok_or_else(|| {
            format!("preset {preset} is a SQL table: it needs a kind = \"sql\" source (--sql URL)")
        })?;
        let scheme = preset.spec().scheme;
        match self.scheme {
            None => self.scheme = Some(scheme),
            Some(s) if s == scheme => {}
            Some(other) => {
                return Err(format!(
                    "preset {preset} reads {preset}'s own layout; scheme {other} contradicts it"
                ));
            }
        }
        if self.prefix.is_empty() {
            self.prefix = namespace.to_string();
        }
        Ok(())
    }

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

/// What is wrong with an etcd endpoint, named before anything is dialled: left alone, a
/// missing port quietly becomes port 80 and a bad one waits out the whole timeout.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EndpointError {
    #[error("an etcd endpoint is empty (a stray comma?); write host:port, e.g. 127.0.0.1:2379")]
    Empty,
    #[error("etcd endpoint `{0}` has no port; write host:port, e.g. {1}:2379")]
    NoPort(String, String),
    #[error("etcd endpoint `{0}`: port `{1}` is not a number from 1 to 65535")]
    BadPort(String, String),
    #[error("etcd endpoint `{0}`: unknown scheme `{1}://`; use http://, https:// or none")]
    Scheme(String, String),
    #[error("etcd endpoint `{0}` has no host before the port; write host:port")]
    NoHost(String),
    #[error("etcd endpoint `{0}`: `{1}` is not a host name or IP address")]
    BadHost(String, String),
    #[error("etcd endpoint `{0}`: an IPv6 address needs brackets, e.g. [{1}]:2379")]
    Ipv6Brackets(String, String),
    #[error("etcd endpoint `{0}`: a user, path or query is not allowed; write host:port")]
    Extra(String),
}

/// Checks one etcd endpoint (`host:port`, `[v6]:port`, `http://host:port` or
/// `https://host:port`) and returns it as the backends get it: trimmed, the scheme in lower
/// case (the etcd client only knows it so), no trailing slash. Used for `--etcd` and the
/// config's `endpoints` alike.
pub fn check_endpoint(raw: &str) -> Result<String, EndpointError> {
    let s = raw.trim();
    // Shown escaped: the endpoint may hold anything, control characters included.
    let shown = esc(s);
    if s.is_empty() {
        return Err(EndpointError::Empty);
    }
    let (scheme, rest) = match s.split_once("://") {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("http") => (Some("http"), rest),
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("https") => (Some("https"), rest),
        Some((scheme, _)) => {
            return Err(EndpointError::Scheme(shown, esc(scheme)));
        }
        None => (None, s),
    };
    // `http://host:port/` is how URLs are often pasted; the slash alone means nothing.
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    if rest.contains(['/', '?', '#', '@']) {
        return Err(EndpointError::Extra(shown));
    }
    let (host, port) = split_host_port(rest, &shown)?;
    check_host(host, &shown)?;
    match port.parse::<u16>() {
        Ok(p) if p > 0 && port.bytes().all(|b| b.is_ascii_digit()) => Ok(match scheme {
            Some(scheme) => format!("{scheme}://{rest}"),
            None => rest.to_string(),
        }),
        _ => Err(EndpointError::BadPort(shown, esc(port))),
    }
}

/// Part of an endpoint as it may be shown: whatever was typed, control characters escaped.
fn esc(s: &str) -> String {
    crate::model::escape_bytes(s.as_bytes())
}

/// `host:port` or `[v6]:port` into host and port; the port may still be garbage.
fn split_host_port<'a>(rest: &'a str, shown: &str) -> Result<(&'a str, &'a str), EndpointError> {
    let no_port = |host: &str| EndpointError::NoPort(shown.to_string(), esc(host));
    if let Some(inner) = rest.strip_prefix('[') {
        let Some((v6, tail)) = inner.split_once(']') else {
            return Err(EndpointError::BadHost(shown.to_string(), esc(rest)));
        };
        if v6.parse::<std::net::Ipv6Addr>().is_err() {
            return Err(EndpointError::BadHost(
                shown.to_string(),
                esc(&format!("[{v6}]")),
            ));
        }
        return match tail.strip_prefix(':') {
            Some("") => Err(no_port(&format!("[{v6}]"))),
            Some(port) => Ok((&rest[..v6.len() + 2], port)),
            None if tail.is_empty() => Err(no_port(&format!("[{v6}]"))),
            None => Err(EndpointError::BadHost(shown.to_string(), esc(rest))),
        };
    }
    if rest.parse::<std::net::Ipv6Addr>().is_ok() {
        return Err(EndpointError::Ipv6Brackets(shown.to_string(), esc(rest)));
    }
    match rest.rsplit_once(':') {
        None => Err(no_port(rest)),
        Some((host, _)) if host.contains(':') => {
            Err(EndpointError::Ipv6Brackets(shown.to_string(), esc(host)))
        }
        Some((host, "")) => Err(no_port(host)),
        Some((host, port)) => Ok((host, port)),
    }
}

/// A bracketed IPv6 address, an IPv4 address, or a DNS name (letters, digits, `-`, `_`,
/// dot-separated labels).
fn check_host(host: &str, shown: &str) -> Result<(), EndpointError> {
    let bad = || EndpointError::BadHost(shown.to_string(), esc(host));
    if host.is_empty() {
        return Err(EndpointError::NoHost(shown.to_string()));
    }
    if host.starts_with('[') {
        return Ok(());
    }
    // A fully qualified name may end in a dot.
    let name = host.strip_suffix('.').unwrap_or(host);
    let labels_ok = name.split('.').all(|l| {
        !l.is_empty()
            && !l.starts_with('-')
            && l.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    });
    // All digits and dots must be a real IPv4 address: `999.1.1.1` is a typo, not a name.
    let numeric = host.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    if !labels_ok || (numeric && host.parse::<std::net::Ipv4Addr>().is_err()) {
        return Err(bad());
    }
    Ok(())
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
        let mut config: Config = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_path_buf(),
            message: e.to_string().trim_end().to_string(),
        })?;
        let invalid = |message| ConfigError::Invalid {
            path: path.to_path_buf(),
            message,
        };
        config.check_endpoints().map_err(invalid)?;
        config.validate().map_err(invalid)?;
        Ok(config)
    }

    /// Every etcd source's endpoints checked, and kept as [`check_endpoint`] returns them.
    fn check_endpoints(&mut self) -> Result<(), String> {
        for (i, s) in self.sources.iter_mut().enumerate() {
            if let SourceConfig::Etcd(e) = s {
                for ep in e.endpoints.iter_mut() {
                    *ep = check_endpoint(ep)
                        .map_err(|err| format!("[[source]] #{}: {err}", i + 1))?;
                }
                e.apply_preset()
                    .map_err(|err| format!("[[source]] #{}: {err}", i + 1))?;
            }
        }
        Ok(())
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
                        && !matches!(
                            scheme,
                            Scheme::EtcdElection | Scheme::EtcdLeaseKey | Scheme::Patroni
                        )
                    {
                        return Err(format!(
                            "[[source]] #{}: scheme `{scheme}` is not an etcd scheme; use etcd-election, etcd-lease-key or patroni",
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

    #[test]
    fn preset_patroni_sets_scheme_and_namespace() {
        let text = "[[source]]\nkind = \"etcd\"\nendpoints = [\"a:1\"]\npreset = \"patroni\"\n";
        let c = Config::parse(text, Path::new("x.toml")).expect("valid");
        let SourceConfig::Etcd(e) = &c.sources[0] else {
            panic!("etcd")
        };
        assert_eq!(
            (e.scheme, e.prefix.as_str()),
            (Some(Scheme::Patroni), "/service/")
        );
        let text = format!("{text}scheme = \"etcd-election\"\n");
        let msg = Config::parse(&text, Path::new("x.toml"))
            .expect_err("contradiction")
            .to_string();
        assert!(msg.contains("contradicts"), "{msg}");
    }

    #[test]
    fn a_preset_sets_scheme_table_and_columns_unless_given() {
        let sql = |extra: &str| {
            let text = format!("[[source]]\nkind = \"sql\"\nurl = \"postgres://h/db\"\n{extra}");
            Config::parse(&text, Path::new("x.toml")).map(|mut c| match c.sources.remove(0) {
                SourceConfig::Sql(s) => s,
                SourceConfig::Etcd(_) => panic!("sql"),
            })
        };
        let s = sql("preset = \"orchestrator\"\n").expect("valid");
        assert_eq!(s.scheme, Scheme::SqlHeartbeat);
        assert_eq!(s.table.as_deref(), Some("active_node"));
        assert_eq!(s.columns.leader_id.as_deref(), Some("hostname"));
        assert_eq!(s.timeout, Some(std::time::Duration::from_secs(5)));
        let s = sql("preset = \"shedlock\"\ntable = \"ops.locks\"\n").expect("valid");
        assert_eq!(
            (s.table.as_deref(), s.columns.valid_until.as_deref()),
            (Some("ops.locks"), Some("lock_until"))
        );
        let msg = sql("preset = \"oban\"\nscheme = \"sql-heartbeat\"\n")
            .expect_err("contradiction")
            .to_string();
        assert!(msg.contains("preset oban is a sql-lease table"), "{msg}");
        let msg = sql("").expect_err("no scheme").to_string();
        assert!(
            msg.contains("needs scheme") && msg.contains("shedlock"),
            "{msg}"
        );
        let msg = sql("preset = \"quartz\"\n")
            .expect_err("unknown")
            .to_string();
        assert!(msg.contains("quartz") && msg.contains("shedlock"), "{msg}");
    }

    #[test]
    fn good_endpoints_pass_normalised() {
        for (given, kept) in [
            ("127.0.0.1:2379", "127.0.0.1:2379"),
            (" etcd-1.internal:2379 ", "etcd-1.internal:2379"),
            ("[::1]:2379", "[::1]:2379"),
            ("http://localhost:2379", "http://localhost:2379"),
            ("https://[fe80::1]:2379/", "https://[fe80::1]:2379"),
            ("HTTPS://etcd_a:1", "https://etcd_a:1"),
            ("etcd.example.com.:2379", "etcd.example.com.:2379"),
        ] {
            assert_eq!(check_endpoint(given).as_deref(), Ok(kept), "{given}");
        }
    }

    #[test]
    fn bad_endpoints_say_what_is_wrong() {
        use EndpointError as E;
        let s = |x: &str| x.to_string();
        for (given, want) in [
            ("", E::Empty),
            ("  ", E::Empty),
            (
                "127.0.0.1:99999",
                E::BadPort(s("127.0.0.1:99999"), s("99999")),
            ),
            ("127.0.0.1:0", E::BadPort(s("127.0.0.1:0"), s("0"))),
            ("a:+5", E::BadPort(s("a:+5"), s("+5"))),
            ("a:http", E::BadPort(s("a:http"), s("http"))),
            ("localhost", E::NoPort(s("localhost"), s("localhost"))),
            ("localhost:", E::NoPort(s("localhost:"), s("localhost"))),
            ("http://h", E::NoPort(s("http://h"), s("h"))),
            ("[::1]", E::NoPort(s("[::1]"), s("[::1]"))),
            ("[::1]:", E::NoPort(s("[::1]:"), s("[::1]"))),
            (":2379", E::NoHost(s(":2379"))),
            ("ftp://a:1", E::Scheme(s("ftp://a:1"), s("ftp"))),
            ("::1", E::Ipv6Brackets(s("::1"), s("::1"))),
            (
                "fe80::1:2379",
                E::Ipv6Brackets(s("fe80::1:2379"), s("fe80::1:2379")),
            ),
            ("a:b:1", E::Ipv6Brackets(s("a:b:1"), s("a:b"))),
            ("[zz]:1", E::BadHost(s("[zz]:1"), s("[zz]"))),
            ("[::1]x:1", E::BadHost(s("[::1]x:1"), s("[::1]x:1"))),
            ("999.1.1.1:1", E::BadHost(s("999.1.1.1:1"), s("999.1.1.1"))),
            ("a b:1", E::BadHost(s("a b:1"), s("a b"))),
            ("a..b:1", E::BadHost(s("a..b:1"), s("a..b"))),
            ("a\u{1b}:1", E::BadHost(s("a\\u{1b}:1"), s("a\\u{1b}"))),
            ("http://u@a:1", E::Extra(s("http://u@a:1"))),
            ("http://a:1/v3", E::Extra(s("http://a:1/v3"))),
        ] {
            assert_eq!(check_endpoint(given), Err(want), "{given:?}");
        }
        let msg = check_endpoint("127.0.0.1:99999")
            .expect_err("bad")
            .to_string();
        assert!(
            msg.contains("127.0.0.1:99999") && msg.contains("65535"),
            "{msg}"
        );
    }

    #[test]
    fn config_endpoints_are_checked() {
        let text = "[[source]]\nkind = \"etcd\"\nendpoints = [\"a:1\", \"localhost\"]\n";
        let msg = Config::parse(text, Path::new("x.toml"))
            .expect_err("bad")
            .to_string();
        assert!(
            msg.contains("x.toml") && msg.contains("#1") && msg.contains("`localhost` has no port"),
            "{msg}"
        );
        let text = "[[source]]\nkind = \"etcd\"\nendpoints = [\" a:1 \"]\n";
        let c = Config::parse(text, Path::new("x.toml")).expect("valid");
        let SourceConfig::Etcd(e) = &c.sources[0] else {
            panic!("etcd")
        };
        assert_eq!(e.endpoints, ["a:1"]);
    }
}
