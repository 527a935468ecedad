//! The source flags of the command line, merged with the config file: which sources are
//! shown, from the flags when any is given, else from the config (its context), else all of
//! a local etcd; the flags that apply to every source (`--read-only`, TLS) applied to the
//! config's too. `cli` parses the flags (clap only) and hands them over as [`Flags`].

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{
    Config, DbUrl, EtcdSource, RedisSource, Selected, SourceConfig, SqlColumns, SqlSource, SqlSpec,
    ZkSource,
};
use crate::model::{Scheme, StoreKind};
use crate::presets::{KnownTable, Preset};

/// A table electop knows, found in the catalog of a `--sql` database given without
/// `--scheme` or `--preset` (looked up at connect, by the commands, before the sources are
/// resolved).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FoundTable {
    /// The `--sql` URL as given.
    pub url: String,
    pub known: KnownTable,
    /// How many known tables that database holds, this one included.
    pub of: Vec<String>,
}

/// A `--sql` database given without `--scheme` or `--preset` whose catalog could not be
/// read (it refused the connection, did not answer): its source looks once it answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unreached {
    /// The `--sql` URL as given.
    pub url: String,
    /// Why it could not be looked at.
    pub error: String,
}

/// A store's own source flag and TLS files (`--redis URL`, `--redis-cacert`...), as given,
/// with what a message says of them: what the checks and the demo read of a store without
/// naming it (Redis's; ZooKeeper's are still read by name). Made by the store's section.
pub struct OwnFlags<'a> {
    pub store: StoreKind,
    /// The flag that gives its sources (`--redis`), and their addresses as given.
    pub flag: &'static str,
    pub sources: &'a [String],
    /// What its TLS flags start with (`--redis-`), and the files given with them.
    pub tls_prefix: &'static str,
    pub cacert: Option<&'a Path>,
    pub cert: Option<&'a Path>,
    pub key: Option<&'a Path>,
    /// What is said when etcd's TLS flags are given where only this store is read.
    pub not_etcd_tls: &'static str,
    /// What is said when its TLS flags are given where none of its sources is read (`what`
    /// was given instead).
    pub tls_not_for: fn(what: &str) -> String,
    /// Another of its flags given (`--kubeconfig`), which needs one of its sources read.
    pub other: Option<&'static str>,
    /// The file its sources are read from (`--kubeconfig`), when given.
    pub file: Option<&'a Path>,
}

impl OwnFlags<'_> {
    /// A CA or a client certificate is given (the key comes with the certificate).
    pub fn tls_given(&self) -> bool {
        self.cacert.is_some() || self.cert.is_some()
    }
}

/// The source flags as given (see `electop --help` for each).
#[derive(Clone, Debug, Default)]
pub struct Flags {
    pub context: Option<String>,
    pub etcd: Vec<String>,
    /// ZooKeeper connect strings, `HOST:PORT[,HOST:PORT...][/chroot]`.
    pub zk: Vec<String>,
    /// Where the ZooKeeper digest credentials are (`--zk-auth`), for every ZooKeeper source.
    pub zk_auth: Option<String>,
    /// Redis servers, `redis://[user@]host:port[/db]`; `--prefix` is their key pattern.
    pub redis: Vec<String>,
    /// TLS to Redis (`--redis-cacert`, `--redis-cert`, `--redis-key`), for every
    /// `rediss://` source.
    pub redis_cacert: Option<PathBuf>,
    pub redis_cert: Option<PathBuf>,
    pub redis_key: Option<PathBuf>,
    /// Kubernetes clusters by kubeconfig context (`""`: the current one), with the
    /// kubeconfig file, the namespaces (none: every one) and a label selector.
    pub kube: Vec<String>,
    pub kubeconfig: Option<PathBuf>,
    pub namespace: Vec<String>,
    pub selector: Option<String>,
    /// TLS to ZooKeeper (`--zk-cacert`, `--zk-cert`, `--zk-key`), for every ZooKeeper source.
    pub zk_cacert: Option<PathBuf>,
    pub zk_cert: Option<PathBuf>,
    pub zk_key: Option<PathBuf>,
    pub prefix: Vec<String>,
    pub scheme: Option<Scheme>,
    pub registry: Option<String>,
    pub sql: Vec<String>,
    pub preset: Option<Preset>,
    pub table: Option<String>,
    pub user: Option<String>,
    pub password_env: Option<String>,
    pub password_file: Option<PathBuf>,
    pub heartbeat_timeout: Option<Duration>,
    pub poll: Option<Duration>,
    pub read_only: bool,
    pub cacert: Option<PathBuf>,
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    pub insecure_skip_tls_verify: bool,
    /// What the catalogs of the `--sql` databases held, when neither `--scheme` nor
    /// `--preset` says what to read there.
    pub found: Vec<FoundTable>,
    /// The `--sql` databases whose catalogs could not be read then, each with why.
    pub unreached: Vec<Unreached>,
}

impl Flags {
    /// `--sql` without `--scheme` (a SQL one) or `--preset`: the tables to read are looked
    /// up in each database's catalog.
    pub fn sql_to_find(&self) -> bool {
        !self.sql.is_empty()
            && self.preset.is_none()
            && !self
                .scheme
                .is_some_and(|s| s.is_sql() || s.is_session_lock())
    }

    /// The sources to show: from the flags when any is given, else from the config (its
    /// context), else all of a local etcd.
    pub fn resolve(&self, config: &Config) -> Result<Vec<SourceConfig>, String> {
        self.select(config).map(|s| s.sources)
    }

    /// [`Self::resolve`], with the context the sources came from.
    pub fn select(&self, config: &Config) -> Result<Selected, String> {
        let flags_given = !self.etcd.is_empty()
            || !self.zk.is_empty()
            || !self.redis.is_empty()
            || !self.kube.is_empty()
            || !self.prefix.is_empty()
            || !self.sql.is_empty()
            || self.preset.is_some_and(|p| p.etcd_namespace().is_some());
        if flags_given && let Some(name) = &self.context {
            return Err(format!(
                "--context {name} reads the config file's sources, which --etcd/--zk/--redis/--prefix/--sql replace: give one or the other"
            ));
        }
        let chosen = config.select(self.context.as_deref())?;
        let sources = self.resolve_sources(&chosen.sources)?;
        Ok(Selected {
            context: chosen.context.filter(|_| !flags_given),
            sources,
        })
    }

    /// The sources of context `name`, with the flags that apply to config sources
    /// (`--read-only`, TLS) applied: what `:ctx NAME` switches to.
    pub fn context_sources(
        &self,
        config: &Config,
        name: &str,
    ) -> Result<Vec<SourceConfig>, String> {
        let chosen = config.select(Some(name))?;
        self.resolve_sources(&chosen.sources)
    }

    fn resolve_sources(&self, configured: &[SourceConfig]) -> Result<Vec<SourceConfig>, String> {
        self.check_applies(configured)?;
        let scheme = self.scheme;
        let sql_scheme = self.sql_scheme(scheme)?;
        let etcd_scheme = scheme.filter(|s| !s.is_sql() && !s.is_session_lock());
        let etcd_preset = self.preset.filter(|p| p.etcd_namespace().is_some());
        let etcd_given = !self.etcd.is_empty() || self.prefix_is_etcd() || etcd_preset.is_some();
        let flags_given = etcd_given
            || !self.sql.is_empty()
            || !self.zk.is_empty()
            || !self.redis.is_empty()
            || !self.kube.is_empty();
        let mut sources = Vec::new();
        if etcd_given || (!flags_given && configured.is_empty()) {
            sources.extend(self.etcd_sources(etcd_scheme, etcd_preset));
        }
        sources.extend(self.zk_sources()?);
        sources.extend(self.redis_sources()?);
        sources.extend(super::kubernetes::sources(self)?);
        if let Some(scheme) = sql_scheme {
            for url in &self.sql {
                sources.push(SourceConfig::Sql(self.sql_source(url, scheme)?));
            }
        } else if self.sql_to_find() {
            for url in &self.sql {
                sources.extend(self.found_sources(url)?);
            }
        }
        if !flags_given {
            sources = if configured.is_empty() {
                sources
            } else {
                configured.to_vec()
            };
        }
        for s in sources.iter_mut() {
            self.apply_to(s)?;
        }
        Ok(sources)
    }

    /// `--prefix` is etcd's: given, and not with `--zk` (or `--redis`) alone.
    pub(super) fn prefix_is_etcd(&self) -> bool {
        !self.prefix.is_empty()
            && ((self.zk.is_empty() && self.redis.is_empty()) || !self.etcd.is_empty())
    }

    /// The stores the source flags read, each as a message names what was given, in the
    /// order it lists them: `--etcd` (or the local etcd a `--prefix` or an etcd preset
    /// reads), `--sql`, `--zk`, `--redis`. Empty: no flag gives a source.
    pub(super) fn flag_sources(&self) -> Vec<(StoreKind, &'static str)> {
        let etcd_preset = self.preset.is_some_and(|p| p.etcd_namespace().is_some());
        let etcd = !self.etcd.is_empty() || self.prefix_is_etcd() || etcd_preset;
        [
            (!self.etcd.is_empty(), StoreKind::Etcd, "--etcd"),
            (
                etcd && self.etcd.is_empty(),
                StoreKind::Etcd,
                "etcd (127.0.0.1:2379)",
            ),
            (!self.sql.is_empty(), StoreKind::Sql, "--sql"),
            (!self.zk.is_empty(), StoreKind::Zookeeper, "--zk"),
            (!self.redis.is_empty(), StoreKind::Redis, "--redis"),
            (!self.kube.is_empty(), StoreKind::Kubernetes, "--kube"),
        ]
        .into_iter()
        .filter(|(given, _, _)| *given)
        .map(|(_, kind, named)| (kind, named))
        .collect()
    }

    /// A source the flags give reads `--password-env`/`--password-file` (`--sql`, `--redis`).
    pub(super) fn password_sources(&self) -> bool {
        !self.sql.is_empty() || !self.redis.is_empty()
    }

    /// A source the flags give takes `--prefix` (`--etcd`, `--zk`, `--redis`).
    pub(super) fn prefix_sources(&self) -> bool {
        !self.etcd.is_empty() || !self.zk.is_empty() || !self.redis.is_empty()
    }

    /// Each store's own source flag and TLS files, as given.
    pub fn own(&self) -> Vec<OwnFlags<'_>> {
        vec![
            super::redis::own_flags(self),
            super::kubernetes::own_flags(self),
        ]
    }

    /// One etcd source per `--prefix` (the whole keyspace without one), on `--etcd` or the
    /// local default.
    fn etcd_sources(&self, scheme: Option<Scheme>, preset: Option<Preset>) -> Vec<SourceConfig> {
        let endpoints = if self.etcd.is_empty() {
            vec!["127.0.0.1:2379".to_string()]
        } else {
            self.etcd.clone()
        };
        let prefixes = if self.prefix.is_empty() {
            vec![String::new()]
        } else {
            self.prefix.clone()
        };
        prefixes
            .into_iter()
            .map(|prefix| {
                SourceConfig::Etcd(EtcdSource {
                    name: None,
                    endpoints: endpoints.clone(),
                    prefix,
                    scheme,
                    registry: self.registry.clone(),
                    preset,
                    read_only: false,
                    user: self.user.clone(),
                    password_env: self.password_env.clone(),
                    password_file: self.password_file.clone(),
                    cacert: None,
                    cert: None,
                    key: None,
                    insecure_skip_tls_verify: false,
                })
            })
            .collect()
    }

    /// The flags every source of its kind takes: `--read-only`, TLS, presets, `--zk-auth`.
    fn apply_to(&self, s: &mut SourceConfig) -> Result<(), String> {
        if self.read_only {
            s.set_read_only();
        }
        if let SourceConfig::Etcd(e) = s {
            self.apply_tls(e)?;
            e.apply_preset()?;
        }
        if let SourceConfig::Zookeeper(z) = s {
            self.apply_zk_tls(z)?;
        }
        if let SourceConfig::Redis(r) = s {
            self.apply_redis_tls(r)?;
        }
        if let (SourceConfig::Zookeeper(z), Some(auth)) = (&mut *s, &self.zk_auth) {
            z.set_auth(auth)?;
        }
        Ok(())
    }

    /// One source per `--zk` and `--prefix` (`/`, or the preset's parent, without one).
    fn zk_sources(&self) -> Result<Vec<SourceConfig>, String> {
        let preset = self.preset.filter(|p| p.zk_parent().is_some());
        if let Some(p) = preset
            && self.zk.is_empty()
        {
            return Err(format!(
                "--preset {p} needs --zk HOST:PORT[/chroot]: {}",
                p.needs()
            ));
        }
        if let Some(p) = self.preset.filter(|p| p.etcd_namespace().is_some())
            && !self.zk.is_empty()
            && self.etcd.is_empty()
        {
            return Err(format!(
                "--preset {p} is not a ZooKeeper layout: {}; for --zk leave --preset out \
                 (Curator and kazoo lines are found by themselves) or give kafka-zk or hadoop-ha",
                p.needs()
            ));
        }
        let prefixes: Vec<Option<String>> = if self.prefix.is_empty() {
            vec![None]
        } else {
            self.prefix.iter().cloned().map(Some).collect()
        };
        let mut out = Vec::new();
        for connect in &self.zk {
            for prefix in &prefixes {
                let src = ZkSource::from_connect(connect, prefix.clone(), preset).map_err(|e| {
                    let shown = super::zookeeper::without_userinfo(connect);
                    format!("--zk {shown}: {e}")
                })?;
                out.push(SourceConfig::Zookeeper(src));
            }
        }
        Ok(out)
    }

    /// One source per `--redis` and `--prefix` (every key without one), the password from
    /// --password-env/-file.
    fn redis_sources(&self) -> Result<Vec<SourceConfig>, String> {
        let mut out = Vec::new();
        for url in &self.redis {
            let prefixes: Vec<Option<String>> = if self.prefix.is_empty() {
                vec![None]
            } else {
                self.prefix.iter().cloned().map(Some).collect()
            };
            for prefix in prefixes {
                let mut src = RedisSource::from_url(url, prefix)?;
                src.password_env = self.password_env.clone();
                src.password_file = self.password_file.clone();
                src.check()?;
                out.push(SourceConfig::Redis(src));
            }
        }
        Ok(out)
    }

    /// One source per table the catalog of `url` held, each saying where it was found.
    fn found_sources(&self, url: &str) -> Result<Vec<SourceConfig>, String> {
        let found: Vec<&FoundTable> = self.found.iter().filter(|f| f.url == url).collect();
        if self.unreached.iter().any(|u| u.url == url) {
            return self
                .unresolved_source(url)
                .map(|s| vec![SourceConfig::Sql(s)]);
        }
        if found.is_empty() {
            return Err(format!(
                "--sql {}: no election table was looked up there; give --scheme sql-lease or --scheme sql-heartbeat, or --preset ({})",
                DbUrl(url.to_string()).redacted(),
                crate::presets::names()
            ));
        }
        let mut out = Vec::new();
        for f in found {
            let k = &f.known;
            let table = Some(k.table.clone());
            let mut src = self.sql_source_of(url, k.scheme, k.preset, table)?;
            let mut text = format!("found {} ({}) in {}", k.table, k.what(), src.url.redacted());
            if f.of.len() > 1 {
                text.push_str(&format!(
                    ", one source per table found there ({})",
                    f.of.join(", ")
                ));
            }
            src.set_found(text);
            out.push(SourceConfig::Sql(src));
        }
        Ok(out)
    }

    /// The source of a database that could not be looked at: read-only (which table an
    /// action would write is not known), it looks for the tables once it answers.
    fn unresolved_source(&self, url: &str) -> Result<SqlSource, String> {
        let mut src = self.sql_source_of(url, Scheme::SqlLease, None, self.table.clone())?;
        src.set_read_only();
        src.set_unresolved();
        src.set_found(format!(
            "its election tables are looked up in {} once it answers",
            src.url.redacted()
        ));
        Ok(src)
    }

    fn sql_source(&self, url: &str, scheme: Scheme) -> Result<SqlSource, String> {
        self.sql_source_of(url, scheme, self.preset, self.table.clone())
    }

    fn sql_source_of(
        &self,
        url: &str,
        scheme: Scheme,
        preset: Option<Preset>,
        table: Option<String>,
    ) -> Result<SqlSource, String> {
        let mut spec = SqlSpec {
            name: None,
            url: DbUrl(url.to_string()),
            password_env: self.password_env.clone(),
            password_file: self.password_file.clone(),
            scheme,
            preset,
            table,
            columns: SqlColumns::default(),
            timeout: self.heartbeat_timeout,
            poll: self.poll,
            read_only: false,
        };
        spec.apply_preset()?;
        SqlSource::new(spec).map_err(|e| format!("--sql: {e}"))
    }

    /// The scheme of the `--sql` sources: from `--preset` or `--scheme`, which must agree.
    fn sql_scheme(&self, scheme: Option<Scheme>) -> Result<Option<Scheme>, String> {
        let given = scheme.filter(|s| s.is_sql() || s.is_session_lock());
        if let Some(p) = self.preset
            && self.sql.is_empty()
            && p.sql_table().is_ok()
        {
            return Err(format!("--preset {p} is a SQL table: give --sql URL"));
        }
        if self.sql.is_empty() {
            return Ok(given);
        }
        if self.sql_to_find() {
            // The tables come from each database's catalog (`found`).
            return Ok(None);
        }
        crate::presets::sql_scheme(self.preset, given, "--scheme")
            .map(Some)
            .map_err(|e| format!("--sql: {e}"))
    }

    /// The ZooKeeper TLS flags, on every ZooKeeper source, config file's too (as
    /// [`Self::apply_tls`] for etcd).
    fn apply_zk_tls(&self, z: &mut ZkSource) -> Result<(), String> {
        if self.zk_cacert.is_some() {
            z.cacert = self.zk_cacert.clone();
        }
        if self.zk_cert.is_some() || self.zk_key.is_some() {
            z.cert = self.zk_cert.clone();
            z.key = self.zk_key.clone();
        }
        if self.zk_cacert.is_some() || self.zk_cert.is_some() || self.zk_key.is_some() {
            z.check_tls("--zk-")?;
        }
        Ok(())
    }

    /// The Redis TLS flags, on every Redis source, config file's too.
    fn apply_redis_tls(&self, r: &mut RedisSource) -> Result<(), String> {
        if self.redis_cacert.is_some() {
            r.cacert = self.redis_cacert.clone();
        }
        if self.redis_cert.is_some() || self.redis_key.is_some() {
            r.cert = self.redis_cert.clone();
            r.key = self.redis_key.clone();
        }
        if self.redis_cacert.is_some() || self.redis_cert.is_some() || self.redis_key.is_some() {
            r.check_tls("--redis-")?;
        }
        Ok(())
    }

    /// The TLS flags, on every etcd source, config file's too: each flag given replaces
    /// that setting (--cert and --key come as a pair, so a pair is never mixed).
    fn apply_tls(&self, e: &mut EtcdSource) -> Result<(), String> {
        let given = self.cacert.is_some() || self.cert.is_some() || self.insecure_skip_tls_verify;
        if self.cacert.is_some() {
            e.cacert = self.cacert.clone();
        }
        if self.cert.is_some() {
            e.cert = self.cert.clone();
            e.key = self.key.clone();
        }
        e.insecure_skip_tls_verify |= self.insecure_skip_tls_verify;
        if given {
            e.check_tls("--")?;
        }
        Ok(())
    }
}
