//! The config file and every check of what it and the command line give, in one leaf
//! module: it knows only the model's plain types (and the presets' tables, and `pem` to read
//! TLS files), and the command
//! line, the backends and the key map take what it produced. Unknown keys are refused, so a
//! typo is an error that names the key instead of a setting silently ignored.

mod applies;
pub(crate) mod context;
mod duration;
mod endpoint;
mod etcd;
mod flags;
pub(crate) mod keys;
mod kubernetes;
mod lock_names;
mod redis;
pub(crate) mod sql;
mod sql_names;
pub(crate) mod sql_tls;
mod toml_error;
mod ui;
mod zookeeper;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

pub use context::Context;
pub use duration::{parse_duration, parse_size};
pub use endpoint::{EndpointError, check_endpoint};
pub use etcd::EtcdSource;
pub use flags::{Flags, FoundTable, OwnFlags, Unreached};
pub use keys::{KeyOverrides, parse_key};
pub use kubernetes::{KubeSource, NODE_LEASES};
pub use lock_names::{LockHash, LockNaming};
pub use redis::{RedisSource, RedisTarget};
pub use sql::{DbUrl, SqlChecked, SqlColumns, SqlConfigError, SqlSource, SqlSpec, read_password};
pub use sql_names::{BadIdent, Columns, Dialect, Ident};
pub use sql_tls::TlsConfigError;
pub use ui::{HistoryConfig, ServeConfig, UiConfig};
pub use zookeeper::{ZkAuth, ZkSource};

/// The config file, checked: every source's settings can work and has its name, every
/// context names known sources.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Config {
    /// Where it was read from; `None` when there was no file.
    pub path: Option<PathBuf>,
    pub ui: UiConfig,
    pub history: HistoryConfig,
    /// What `electop serve` runs on each change.
    pub serve: ServeConfig,
    /// The elections to show, each named; `--etcd`/`--sql` on the command line replace these.
    pub sources: Vec<SourceConfig>,
    /// Key overrides, e.g. `reelect = "ctrl-r"`.
    pub keys: KeyOverrides,
    /// Named sets of sources; empty when the file defines none.
    pub contexts: Vec<Context>,
    /// The context used without `--context`; the first one when not set.
    pub current_context: Option<String>,
}

/// The file as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    #[serde(default)]
    ui: UiConfig,
    #[serde(default)]
    history: HistoryConfig,
    #[serde(default)]
    serve: ServeConfig,
    #[serde(default, rename = "source")]
    sources: Vec<SourceFile>,
    /// Action name = "key[,key...]".
    #[serde(default)]
    keys: BTreeMap<String, String>,
    #[serde(default, rename = "context")]
    contexts: Vec<Context>,
    #[serde(default, rename = "current-context")]
    current_context: Option<String>,
}

#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
enum SourceFile {
    Etcd(EtcdSource),
    Sql(sql::SqlSourceFile),
    Zookeeper(ZkSource),
    Redis(RedisSource),
    Kubernetes(KubeSource),
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum SourceConfig {
    Etcd(EtcdSource),
    Sql(SqlSource),
    Zookeeper(ZkSource),
    Redis(RedisSource),
    Kubernetes(KubeSource),
}

impl SourceConfig {
    /// Where the source's secrets are said to be can be read now (a variable set, a file
    /// readable), and an etcd user has a password: a mistake in how they are given is a
    /// usage error, said before anything is dialled. What is read goes nowhere.
    pub fn check_secrets(&self) -> Result<(), String> {
        let kind = match self {
            SourceConfig::Etcd(_) => "etcd",
            SourceConfig::Sql(_) => "SQL",
            SourceConfig::Zookeeper(_) => "ZooKeeper",
            SourceConfig::Redis(_) => "Redis",
            SourceConfig::Kubernetes(_) => "Kubernetes",
        };
        let label = match self.name() {
            Some(name) => format!("{kind} source {name}"),
            None => format!("the {kind} source"),
        };
        let at = |e: String| format!("{label}: {e}");
        match self {
            SourceConfig::Etcd(e) => {
                let read = read_password(e.password_env.as_deref(), e.password_file.as_deref());
                match (&e.user, read.map_err(at)?) {
                    (Some(user), None) => Err(at(format!(
                        "etcd user `{user}` needs a password: set password_env or password_file \
                         (--password-env / --password-file)"
                    ))),
                    _ => Ok(()),
                }
            }
            SourceConfig::Sql(s) => {
                read_password(s.password_env.as_deref(), s.password_file.as_deref()).map_err(at)?;
                Ok(())
            }
            SourceConfig::Redis(r) => {
                read_password(r.password_env.as_deref(), r.password_file.as_deref()).map_err(at)?;
                Ok(())
            }
            SourceConfig::Zookeeper(z) => z.digest().map(|_| ()).map_err(at),
            // The kubeconfig's credentials are the client library's to read, at connect.
            SourceConfig::Kubernetes(_) => Ok(()),
        }
    }

    pub fn read_only(&self) -> bool {
        match self {
            SourceConfig::Etcd(e) => e.read_only,
            SourceConfig::Sql(s) => s.read_only,
            SourceConfig::Zookeeper(z) => z.read_only,
            SourceConfig::Redis(r) => r.read_only,
            SourceConfig::Kubernetes(k) => k.read_only,
        }
    }

    pub fn set_read_only(&mut self) {
        match self {
            SourceConfig::Etcd(e) => e.read_only = true,
            SourceConfig::Sql(s) => s.set_read_only(),
            SourceConfig::Zookeeper(z) => z.read_only = true,
            SourceConfig::Redis(r) => r.read_only = true,
            SourceConfig::Kubernetes(k) => k.read_only = true,
        }
    }

    /// The scheme the source says its store uses (given, or its preset's); `None` for etcd
    /// when it is left to be guessed from the keys.
    pub fn scheme(&self) -> Option<crate::model::Scheme> {
        match self {
            SourceConfig::Etcd(e) => e.scheme,
            SourceConfig::Sql(s) => Some(s.scheme),
            SourceConfig::Zookeeper(z) => Some(z.scheme()),
            SourceConfig::Redis(_) => Some(crate::model::Scheme::RedisLock),
            SourceConfig::Kubernetes(_) => Some(crate::model::Scheme::KubeLease),
        }
    }

    /// The kind of store the source is read from.
    pub fn store(&self) -> crate::model::StoreKind {
        use crate::model::StoreKind;
        match self {
            SourceConfig::Etcd(_) => StoreKind::Etcd,
            SourceConfig::Sql(_) => StoreKind::Sql,
            SourceConfig::Zookeeper(_) => StoreKind::Zookeeper,
            SourceConfig::Redis(_) => StoreKind::Redis,
            SourceConfig::Kubernetes(_) => StoreKind::Kubernetes,
        }
    }

    /// What an unnamed source is called before its rank among its kind: `etcd1`, `sql1`...
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            SourceConfig::Etcd(_) => "etcd",
            SourceConfig::Sql(_) => "sql",
            SourceConfig::Zookeeper(_) => "zk",
            SourceConfig::Redis(_) => "redis",
            SourceConfig::Kubernetes(_) => "kube",
        }
    }

    /// The store as `--store` names it (a SQL source by its server), and the flag that
    /// gives such a source.
    pub(crate) fn store_flag(&self) -> (&'static str, &'static str) {
        match self {
            SourceConfig::Etcd(_) => ("etcd", "--etcd"),
            SourceConfig::Zookeeper(_) => ("zookeeper", "--zk"),
            SourceConfig::Redis(_) => ("redis", "--redis"),
            SourceConfig::Kubernetes(_) => ("kubernetes", "--kube"),
            SourceConfig::Sql(s) => match s.checked().dialect {
                Dialect::Sqlite => ("sqlite", "--sql"),
                Dialect::Postgres => ("postgres", "--sql"),
                Dialect::MySql => ("mysql", "--sql"),
            },
        }
    }

    /// The source's store, as a message names it.
    pub(crate) fn label(&self) -> &'static str {
        match self {
            SourceConfig::Etcd(_) => "etcd (--etcd)",
            SourceConfig::Zookeeper(_) => "ZooKeeper (--zk)",
            SourceConfig::Redis(_) => "Redis (--redis)",
            SourceConfig::Kubernetes(_) => "Kubernetes (--kube)",
            SourceConfig::Sql(_) => "SQL (--sql)",
        }
    }

    /// The `name` given in the config file (filled in for every source of a loaded file).
    pub fn name(&self) -> Option<&str> {
        match self {
            SourceConfig::Etcd(e) => e.name.as_deref(),
            SourceConfig::Sql(s) => s.name.as_deref(),
            SourceConfig::Zookeeper(z) => z.name.as_deref(),
            SourceConfig::Redis(r) => r.name.as_deref(),
            SourceConfig::Kubernetes(k) => k.name.as_deref(),
        }
    }

    fn set_name(&mut self, name: String) {
        match self {
            SourceConfig::Etcd(e) => e.name = Some(name),
            SourceConfig::Sql(s) => s.set_name(name),
            SourceConfig::Zookeeper(z) => z.name = Some(name),
            SourceConfig::Redis(r) => r.name = Some(name),
            SourceConfig::Kubernetes(k) => k.name = Some(name),
        }
    }
}

/// A mistake in the flags or the config file, found before a store is touched (or by a
/// participant, before it joins): the process ends with exit 2, as clap's own do.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Usage(pub String);

/// The sources one command reads, and the context they came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Selected {
    pub context: Option<String>,
    pub sources: Vec<SourceConfig>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    // Not a `source`: the message holds it already, and `{:#}` would print it twice.
    #[error("cannot read config file {path}: {error}{hint}")]
    Read {
        path: PathBuf,
        error: std::io::Error,
        hint: &'static str,
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
            Err(error) => {
                let hint = match error.kind() {
                    std::io::ErrorKind::NotFound => {
                        " (check the --config path; `electop config example` prints one with every key)"
                    }
                    _ => "",
                };
                return Err(ConfigError::Read { path, error, hint });
            }
        };
        Self::parse(&text, &path)
    }

    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let file: ConfigFile = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_path_buf(),
            message: toml_error::describe(text, &e),
        })?;
        Self::check(file)
            .map_err(|message| ConfigError::Invalid {
                path: path.to_path_buf(),
                message,
            })
            .map(|c| Config {
                path: Some(path.to_path_buf()),
                ..c
            })
    }

    fn check(file: ConfigFile) -> Result<Config, String> {
        let keys = KeyOverrides::parse(&file.keys)?;
        let mut sources = Vec::new();
        for (i, s) in file.sources.into_iter().enumerate() {
            let at = |e: String| format!("[[source]] #{}: {e}", i + 1);
            sources.push(match s {
                SourceFile::Etcd(mut e) => {
                    etcd::check_file_source(&mut e).map_err(at)?;
                    SourceConfig::Etcd(e)
                }
                SourceFile::Sql(q) => SourceConfig::Sql(q.into_source().map_err(at)?),
                SourceFile::Zookeeper(mut z) => {
                    z.check().map_err(at)?;
                    SourceConfig::Zookeeper(z)
                }
                SourceFile::Redis(mut r) => {
                    r.check().map_err(at)?;
                    SourceConfig::Redis(r)
                }
                SourceFile::Kubernetes(k) => {
                    k.check().map_err(at)?;
                    SourceConfig::Kubernetes(k)
                }
            });
            if let Some(name) = sources[i].name() {
                context::check_name(&format!("[[source]] #{}", i + 1), name)?;
            }
        }
        let names = context::source_names(&sources);
        context::check(&names, &file.contexts, file.current_context.as_deref())?;
        for (s, name) in sources.iter_mut().zip(names) {
            s.set_name(name);
        }
        Ok(Config {
            path: None,
            ui: file.ui,
            history: file.history,
            serve: file.serve,
            sources,
            keys,
            contexts: file.contexts,
            current_context: file.current_context,
        })
    }

    /// The sources of context `name`, else of `current-context`, else of the first context;
    /// every source when the file defines no context.
    pub fn select(&self, name: Option<&str>) -> Result<Selected, String> {
        let chosen = name
            .or(self.current_context.as_deref())
            .or(self.contexts.first().map(|c| c.name.as_str()));
        let Some(chosen) = chosen else {
            return Ok(Selected {
                context: None,
                sources: self.sources.clone(),
            });
        };
        let ctx = self
            .contexts
            .iter()
            .find(|c| c.name == chosen)
            .ok_or_else(|| context::unknown(chosen, &self.contexts))?;
        let sources = ctx
            .sources
            .iter()
            .filter_map(|n| self.sources.iter().find(|s| s.name() == Some(n.as_str())))
            .cloned()
            .collect();
        Ok(Selected {
            context: Some(ctx.name.clone()),
            sources,
        })
    }

    /// The context `select(None)` picks.
    pub fn default_context(&self) -> Option<&str> {
        self.current_context
            .as_deref()
            .or(self.contexts.first().map(|c| c.name.as_str()))
    }
}

#[cfg(test)]
mod tests;
