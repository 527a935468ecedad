//! The source flags every subcommand takes (global), under headings of their own in the
//! help: which stores to read ("Sources"), the credentials ("Authentication") and TLS. Each
//! has a one-line help for `-h` and the full text for `--help`; the rarely used ones are
//! listed by `--help` only, so `-h` fits a screen.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::SchemeArg;
use crate::config::{Config, Flags, Selected, SourceConfig, parse_duration};
use crate::model::Scheme;

pub(super) const SOURCES: &str = "Sources";
pub(super) const AUTH: &str = "Authentication";
pub(super) const TLS: &str = "TLS";

#[derive(Debug, Args)]
pub struct SourceArgs {
    /// Read the sources of this config context.
    ///
    /// [[context]] in the config file; default: current-context, else the first. `electop
    /// contexts` lists them.
    #[arg(long, global = true, value_name = "NAME", help_heading = SOURCES)]
    pub context: Option<String>,
    /// etcd endpoints, HOST:PORT[,HOST:PORT...].
    ///
    /// Also [v6]:PORT, http:// or https://. Replaces the config file's sources.
    #[arg(long, global = true, value_delimiter = ',', value_name = "HOST:PORT",
          value_parser = crate::config::check_endpoint, help_heading = SOURCES)]
    pub etcd: Vec<String>,
    /// ZooKeeper ensemble, HOST:PORT[,...][/chroot].
    ///
    /// HOST:PORT[,HOST:PORT...][/chroot], without zk:// in front; --prefix is the znode the
    /// elections live under (default /). Repeatable. Replaces the config file's sources.
    #[arg(long, global = true, value_name = "HOST:PORT", help_heading = SOURCES)]
    pub zk: Vec<String>,
    /// Redis server, redis://[user@]host:port[/db].
    ///
    /// rediss:// for TLS; the password from --password-env/-file; --prefix is the lock
    /// keys' pattern (leader:*). Repeatable. Replaces the config file's sources.
    #[arg(long, global = true, value_name = "URL", help_heading = SOURCES)]
    pub redis: Vec<String>,
    /// Kubernetes Leases, kubeconfig's current context.
    ///
    /// --kube=CONTEXT reads another of its contexts. The kubeconfig is $KUBECONFIG, else
    /// ~/.kube/config, else, in a pod, its service account; --namespace and --selector narrow what is read (every namespace but
    /// kube-node-lease's node heartbeats by default). Repeatable. Replaces the config
    /// file's sources.
    #[arg(long, global = true, value_name = "CONTEXT", num_args = 0..=1, require_equals = true,
          default_missing_value = "", help_heading = SOURCES)]
    pub kube: Vec<String>,
    /// Kubernetes: the kubeconfig file (default $KUBECONFIG, ~/.kube/config).
    #[arg(long, global = true, value_name = "FILE", help_heading = SOURCES, hide_short_help = true)]
    pub kubeconfig: Option<PathBuf>,
    /// Kubernetes: a namespace to read (default: all). Repeatable.
    #[arg(long, short = 'n', global = true, value_name = "NS", help_heading = SOURCES,
          hide_short_help = true)]
    pub namespace: Vec<String>,
    /// Kubernetes: a label selector (app=web,tier!=cache), as kubectl's -l.
    #[arg(long, global = true, value_name = "LABELS", help_heading = SOURCES,
          hide_short_help = true)]
    pub selector: Option<String>,
    /// SQL database: postgres://, mysql://, sqlite://.
    ///
    /// A database with election tables or session locks: postgres://, mysql:// or
    /// sqlite://PATH (the file /tmp/e.db is sqlite:///tmp/e.db); repeatable. Without
    /// --scheme or --preset, the tables electop knows are found in its catalog.
    #[arg(long, global = true, value_name = "URL", help_heading = SOURCES)]
    pub sql: Vec<String>,
    /// Key prefix the elections live under.
    ///
    /// etcd: a key prefix; ZooKeeper: a znode; Redis: a key pattern. Repeat for several.
    #[arg(long, global = true, value_name = "P", help_heading = SOURCES)]
    pub prefix: Vec<String>,
    /// How the elections are stored (default: found).
    ///
    /// Guessed from the keys (etcd) or the catalog (SQL) when omitted. etcd-election, etcd-
    /// lease-key and patroni are etcd's; sql-lease, sql-heartbeat, pg-advisory and mysql-
    /// lock are --sql's. ZooKeeper's and Redis's layouts are found by themselves.
    #[arg(long, global = true, value_enum, value_name = "SCHEME", hide_possible_values = true,
          help_heading = SOURCES)]
    pub scheme: Option<SchemeArg>,
    /// A well-known project's layout (`presets`).
    ///
    /// `electop presets` lists them: a SQL table, which sets the scheme, table and columns
    /// (shedlock, oban, orchestrator); Patroni's keys in etcd (patroni; --prefix: the
    /// namespace, default /service/); Kafka's controller or Hadoop HA's active node in
    /// ZooKeeper (kafka-zk, hadoop-ha, with --zk).
    #[arg(long, global = true, value_enum, value_name = "NAME", hide_possible_values = true,
          help_heading = SOURCES, hide_short_help = true)]
    pub preset: Option<crate::presets::Preset>,
    /// Refuse every admin action.
    #[arg(long, global = true, help_heading = SOURCES)]
    pub read_only: bool,
    /// etcd-lease-key: the candidate registry's prefix.
    ///
    /// The candidates are read from `<registry><name>/<id>`.
    #[arg(long, global = true, value_name = "P", help_heading = SOURCES, hide_short_help = true)]
    pub registry: Option<String>,
    /// SQL: the election table.
    ///
    /// Default leaderlock (sql-lease) or service_election (sql-heartbeat).
    #[arg(long, global = true, value_name = "NAME", help_heading = SOURCES, hide_short_help = true)]
    pub table: Option<String>,
    /// sql-heartbeat: when a silent leader is deposed.
    ///
    /// How long after last_seen_active a leader is deposed.
    #[arg(long, global = true, value_parser = parse_duration, value_name = "DURATION",
          help_heading = SOURCES, hide_short_help = true)]
    pub heartbeat_timeout: Option<Duration>,
    /// SQL: how often to poll (default 500ms).
    #[arg(long, global = true, value_parser = parse_duration, value_name = "DURATION",
          help_heading = SOURCES, hide_short_help = true)]
    pub poll: Option<Duration>,
    /// etcd: the user, when etcd has authentication on.
    ///
    /// Its password from --password-env or --password-file.
    #[arg(long, global = true, value_name = "NAME", help_heading = AUTH, hide_short_help = true)]
    pub user: Option<String>,
    /// The password (SQL, Redis, etcd's --user) from VAR.
    ///
    /// Read from this environment variable.
    #[arg(long, global = true, value_name = "VAR", help_heading = AUTH, hide_short_help = true)]
    pub password_env: Option<String>,
    /// The password from the first line of FILE.
    ///
    /// The password of --sql, --redis or etcd's --user.
    #[arg(long, global = true, value_name = "FILE", help_heading = AUTH, hide_short_help = true)]
    pub password_file: Option<PathBuf>,
    /// ZooKeeper digest auth: env:VAR or file:PATH.
    ///
    /// Where `user:password` is (as zkCli's `addauth digest`), for nodes whose ACL grants
    /// digest users only. Needs --zk or a ZooKeeper source in the config.
    // A String, checked by config: clap would repeat a bad value, which may be the
    // credentials themselves.
    #[arg(long, global = true, value_name = "env:VAR|file:PATH", help_heading = AUTH,
          hide_short_help = true)]
    pub zk_auth: Option<String>,
    /// etcd TLS: the CA certificate (PEM).
    ///
    /// The CA the members' certificates are signed by. Any etcd TLS flag turns TLS on for
    /// host:port endpoints; https:// endpoints always use it.
    #[arg(long, global = true, value_name = "FILE", value_parser = cacert_file,
          help_heading = TLS, hide_short_help = true)]
    pub cacert: Option<PathBuf>,
    /// etcd TLS: a client certificate (PEM).
    ///
    /// For etcd's --client-cert-auth; needs --key.
    #[arg(long, global = true, value_name = "FILE", requires = "key", value_parser = cert_file,
          help_heading = TLS, hide_short_help = true)]
    pub cert: Option<PathBuf>,
    /// etcd TLS: the client certificate's private key (PEM).
    #[arg(long, global = true, value_name = "FILE", requires = "cert", value_parser = key_file,
          help_heading = TLS, hide_short_help = true)]
    pub key: Option<PathBuf>,
    /// etcd TLS: do not check the server's certificate.
    ///
    /// Labs only: encrypted, not authenticated.
    #[arg(long, global = true, help_heading = TLS, hide_short_help = true)]
    pub insecure_skip_tls_verify: bool,
    /// ZooKeeper TLS: the CA certificate (PEM).
    ///
    /// The CA that signs the members' certificates; given, every --zk member is dialled in
    /// TLS (give the secureClientPort).
    #[arg(long, global = true, value_name = "FILE", value_parser = |s: &str| pem_file("--zk-cacert", s),
          help_heading = TLS, hide_short_help = true)]
    pub zk_cacert: Option<PathBuf>,
    /// ZooKeeper TLS: a client certificate (PEM).
    ///
    /// For ssl.clientAuth=need; needs --zk-key.
    #[arg(long, global = true, value_name = "FILE", requires = "zk_key", value_parser = |s: &str| pem_file("--zk-cert", s),
          help_heading = TLS, hide_short_help = true)]
    pub zk_cert: Option<PathBuf>,
    /// ZooKeeper TLS: the client certificate's private key (PEM).
    #[arg(long, global = true, value_name = "FILE", requires = "zk_cert", value_parser = key_file_for("--zk-key"),
          help_heading = TLS, hide_short_help = true)]
    pub zk_key: Option<PathBuf>,
    /// Redis TLS (rediss://): the CA certificate (PEM).
    ///
    /// The CA that signs the server's tls-cert-file (default: the system's roots).
    #[arg(long, global = true, value_name = "FILE", value_parser = |s: &str| pem_file("--redis-cacert", s),
          help_heading = TLS, hide_short_help = true)]
    pub redis_cacert: Option<PathBuf>,
    /// Redis TLS: a client certificate (PEM).
    ///
    /// For tls-auth-clients yes; needs --redis-key.
    #[arg(long, global = true, value_name = "FILE", requires = "redis_key", value_parser = |s: &str| pem_file("--redis-cert", s),
          help_heading = TLS, hide_short_help = true)]
    pub redis_cert: Option<PathBuf>,
    /// Redis TLS: the client certificate's private key (PEM).
    #[arg(long, global = true, value_name = "FILE", requires = "redis_cert", value_parser = key_file_for("--redis-key"),
          help_heading = TLS, hide_short_help = true)]
    pub redis_key: Option<PathBuf>,
    /// Not a flag: the tables found in the `--sql` databases' catalogs when neither
    /// `--scheme` nor `--preset` names one (filled in by the commands at connect).
    #[arg(skip)]
    pub found: Vec<crate::config::FoundTable>,
    /// Not a flag: the `--sql` databases whose catalogs could not be read, with why.
    #[arg(skip)]
    pub unreached: Vec<crate::config::Unreached>,
}

// The TLS files are checked while parsing, so a bad one is a usage error (exit 2) that names
// the file before anything connects.
fn cacert_file(s: &str) -> Result<PathBuf, String> {
    pem_file("--cacert", s)
}

fn cert_file(s: &str) -> Result<PathBuf, String> {
    pem_file("--cert", s)
}

fn key_file(s: &str) -> Result<PathBuf, String> {
    key_file_for("--key")(s)
}

fn pem_file(flag: &str, s: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(s);
    crate::pem::certificates(flag, &path)?;
    Ok(path)
}

fn key_file_for(flag: &'static str) -> impl Fn(&str) -> Result<PathBuf, String> + Clone {
    move |s| {
        let path = PathBuf::from(s);
        crate::pem::private_key(flag, &path)?;
        Ok(path)
    }
}

impl SourceArgs {
    /// Whether any flag naming a source is given (`--etcd`, `--zk`, `--redis`, `--sql`).
    pub fn names_a_source(&self) -> bool {
        !(self.etcd.is_empty()
            && self.zk.is_empty()
            && self.sql.is_empty()
            && self.redis.is_empty()
            && self.kube.is_empty())
    }

    /// The flags as given, for the config to merge.
    pub fn flags(&self) -> Flags {
        Flags {
            context: self.context.clone(),
            etcd: self.etcd.clone(),
            zk: self.zk.clone(),
            zk_auth: self.zk_auth.clone(),
            redis: self.redis.clone(),
            redis_cacert: self.redis_cacert.clone(),
            redis_cert: self.redis_cert.clone(),
            redis_key: self.redis_key.clone(),
            kube: self.kube.clone(),
            kubeconfig: self.kubeconfig.clone(),
            namespace: self.namespace.clone(),
            selector: self.selector.clone(),
            zk_cacert: self.zk_cacert.clone(),
            zk_cert: self.zk_cert.clone(),
            zk_key: self.zk_key.clone(),
            prefix: self.prefix.clone(),
            scheme: self.scheme.map(Scheme::from),
            registry: self.registry.clone(),
            sql: self.sql.clone(),
            preset: self.preset,
            table: self.table.clone(),
            user: self.user.clone(),
            password_env: self.password_env.clone(),
            password_file: self.password_file.clone(),
            heartbeat_timeout: self.heartbeat_timeout,
            poll: self.poll,
            read_only: self.read_only,
            cacert: self.cacert.clone(),
            cert: self.cert.clone(),
            key: self.key.clone(),
            insecure_skip_tls_verify: self.insecure_skip_tls_verify,
            found: self.found.clone(),
            unreached: self.unreached.clone(),
        }
    }

    /// The sources to show (merged in `config::Flags`).
    pub fn resolve(&self, config: &Config) -> Result<Vec<SourceConfig>, String> {
        self.flags().resolve(config)
    }

    /// [`Self::resolve`], with the context the sources came from.
    pub fn select(&self, config: &Config) -> Result<Selected, String> {
        self.flags().select(config)
    }

    /// The sources of context `name`, as `:ctx NAME` switches to them.
    pub fn context_sources(
        &self,
        config: &Config,
        name: &str,
    ) -> Result<Vec<SourceConfig>, String> {
        self.flags().context_sources(config, name)
    }
}
