//! Command-line interface. Source flags are global so every subcommand takes them.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub use crate::config::parse_duration;
use crate::config::{Config, Flags, Selected, SourceConfig};
use crate::model::Scheme;

#[derive(Debug, Parser)]
#[command(
    name = "electop",
    version,
    about = "A terminal dashboard for leader elections in etcd, ZooKeeper and SQL tables",
    after_help = MAIN_EXAMPLES
)]
pub struct Cli {
    #[command(flatten)]
    pub sources: SourceArgs,
    /// Config file (TOML). Default: the platform config dir's electop/config.toml.
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Where the log goes. Default: the platform data dir's electop/electop.log.
    #[arg(long, global = true, value_name = "FILE")]
    pub log_file: Option<PathBuf>,
    /// Leader changes kept per election (0: no history replay). Default: the config's
    /// history.limit (200) for the dashboard and status; 8 for serve and watch, which show
    /// no history.
    #[arg(long, global = true, value_name = "N")]
    pub history_limit: Option<usize>,
    /// Panic right after the first frame: lets the tests check that the terminal is
    /// restored on a panic.
    #[arg(long, hide = true)]
    pub debug_panic: bool,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Args)]
pub struct SourceArgs {
    /// Read the sources of this config context ([[context]] in the config file; default:
    /// current-context, else the first). `electop contexts` lists them.
    #[arg(long, global = true, value_name = "NAME")]
    pub context: Option<String>,
    /// etcd endpoints, HOST:PORT[,HOST:PORT...] ([v6]:PORT, http:// or https:// also). Replaces
    /// the config file's sources.
    #[arg(long, global = true, value_delimiter = ',', value_name = "HOST:PORT",
          value_parser = crate::config::check_endpoint)]
    pub etcd: Vec<String>,
    /// ZooKeeper ensemble, HOST:PORT[,HOST:PORT...][/chroot]; --prefix is the znode the
    /// elections live under (default /). Repeatable. Replaces the config file's sources.
    #[arg(long, global = true, value_name = "HOST:PORT[/CHROOT]")]
    pub zk: Vec<String>,
    /// ZooKeeper digest authentication: env:VAR or file:PATH holding `user:password` (as
    /// zkCli's `addauth digest`), for nodes whose ACL grants digest users only.
    // A String, checked by config: clap would repeat a bad value, which may be the
    // credentials themselves.
    #[arg(long, global = true, value_name = "env:VAR|file:PATH")]
    pub zk_auth: Option<String>,
    /// Redis server, redis://[user@]host:port[/db] (rediss:// for TLS), its password from
    /// --password-env/-file; --prefix is the lock keys' pattern (leader:*). Repeatable.
    /// Replaces the config file's sources.
    #[arg(long, global = true, value_name = "URL")]
    pub redis: Vec<String>,
    /// Redis TLS (rediss://): the CA certificate (PEM) that signs the server's
    /// tls-cert-file (default: the system's roots).
    #[arg(long, global = true, value_name = "FILE", value_parser = |s: &str| pem_file("--redis-cacert", s))]
    pub redis_cacert: Option<PathBuf>,
    /// Redis TLS: a client certificate (PEM), for tls-auth-clients yes; needs --redis-key.
    #[arg(long, global = true, value_name = "FILE", requires = "redis_key", value_parser = |s: &str| pem_file("--redis-cert", s))]
    pub redis_cert: Option<PathBuf>,
    /// Redis TLS: the client certificate's private key (PEM).
    #[arg(long, global = true, value_name = "FILE", requires = "redis_cert", value_parser = key_file_for("--redis-key"))]
    pub redis_key: Option<PathBuf>,
    /// ZooKeeper TLS: the CA certificate (PEM) that signs the members' certificates; given,
    /// every --zk member is dialled in TLS (give the secureClientPort).
    #[arg(long, global = true, value_name = "FILE", value_parser = |s: &str| pem_file("--zk-cacert", s))]
    pub zk_cacert: Option<PathBuf>,
    /// ZooKeeper TLS: a client certificate (PEM), for ssl.clientAuth=need; needs --zk-key.
    #[arg(long, global = true, value_name = "FILE", requires = "zk_key", value_parser = |s: &str| pem_file("--zk-cert", s))]
    pub zk_cert: Option<PathBuf>,
    /// ZooKeeper TLS: the client certificate's private key (PEM).
    #[arg(long, global = true, value_name = "FILE", requires = "zk_cert", value_parser = key_file_for("--zk-key"))]
    pub zk_key: Option<PathBuf>,
    /// Key prefix the elections live under; repeat for several.
    #[arg(long, global = true, value_name = "P")]
    pub prefix: Vec<String>,
    /// How the elections are stored; guessed from the keys (etcd) or the catalog (SQL)
    /// when omitted.
    #[arg(long, global = true, value_enum)]
    pub scheme: Option<SchemeArg>,
    /// etcd-lease-key: prefix of the candidate registry (`<registry><name>/<id>`).
    #[arg(long, global = true, value_name = "P")]
    pub registry: Option<String>,
    /// SQL database with election tables: postgres://, mysql:// or sqlite://PATH; repeatable.
    /// Without --scheme or --preset, the tables electop knows are found in its catalog.
    #[arg(long, global = true, value_name = "URL")]
    pub sql: Vec<String>,
    /// A well-known project's layout (list them with `electop presets`): a SQL table, which
    /// sets the scheme, table and columns, Patroni's keys in etcd (--prefix: the
    /// namespace, default /service/), or Kafka's controller or Hadoop HA's active node in
    /// ZooKeeper (kafka-zk, hadoop-ha, with --zk).
    #[arg(long, global = true, value_enum, value_name = "NAME")]
    pub preset: Option<crate::presets::Preset>,
    /// SQL: the election table (default leaderlock / service_election).
    #[arg(long, global = true, value_name = "NAME")]
    pub table: Option<String>,
    /// etcd: the user, when etcd has authentication on (password from --password-env/-file).
    #[arg(long, global = true, value_name = "NAME")]
    pub user: Option<String>,
    /// Read the password (SQL, or etcd's --user) from this environment variable.
    #[arg(long, global = true, value_name = "VAR")]
    pub password_env: Option<String>,
    /// Read the password (SQL, or etcd's --user) from the first line of this file.
    #[arg(long, global = true, value_name = "FILE")]
    pub password_file: Option<PathBuf>,
    /// sql-heartbeat: how long after last_seen_active a leader is deposed.
    #[arg(long, global = true, value_parser = parse_duration, value_name = "DURATION")]
    pub heartbeat_timeout: Option<Duration>,
    /// SQL: how often to poll (default 500ms).
    #[arg(long, global = true, value_parser = parse_duration, value_name = "DURATION")]
    pub poll: Option<Duration>,
    /// Refuse every admin action.
    #[arg(long, global = true)]
    pub read_only: bool,
    /// etcd TLS: the CA certificate (PEM) the members' certificates are signed by. Any TLS
    /// flag turns TLS on for host:port endpoints; https:// endpoints always use it.
    #[arg(long, global = true, value_name = "FILE", value_parser = cacert_file)]
    pub cacert: Option<PathBuf>,
    /// etcd TLS: a client certificate (PEM), for etcd's --client-cert-auth; needs --key.
    #[arg(long, global = true, value_name = "FILE", requires = "key", value_parser = cert_file)]
    pub cert: Option<PathBuf>,
    /// etcd TLS: the client certificate's private key (PEM).
    #[arg(long, global = true, value_name = "FILE", requires = "cert", value_parser = key_file)]
    pub key: Option<PathBuf>,
    /// etcd TLS: do not check the server's certificate (labs only: encrypted, not
    /// authenticated).
    #[arg(long, global = true)]
    pub insecure_skip_tls_verify: bool,
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
    let path = PathBuf::from(s);
    crate::pem::certificates("--cacert", &path)?;
    Ok(path)
}

fn cert_file(s: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(s);
    crate::pem::certificates("--cert", &path)?;
    Ok(path)
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

/// How `status` prints.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    #[default]
    Table,
    Wide,
    Json,
}

const MAIN_EXAMPLES: &str = "Examples:
  electop                                   the dashboard on a local etcd (127.0.0.1:2379)
  electop --etcd 10.0.0.5:2379 --prefix /elections/
  electop --zk zk1:2181,zk2:2181 --prefix /election
  electop --sql postgres://app@db/app --scheme sql-lease --password-env PGPASSWORD
  electop status                            every election once, as a table
  electop watch                             one line per leader change
  electop demo                              three nodes electing a leader on SQLite

In the dashboard: / filters, : runs a command (:sort, :events), ? lists every key.";

const SERVE_EXAMPLES: &str = "Examples:
  electop --etcd 127.0.0.1:2379 --prefix /svc/ serve
  electop --context prod serve --listen 0.0.0.0:9477 --bearer-token-file /etc/electop/token
  electop serve --on-change 'logger -t electop' --webhook http://127.0.0.1:8080/hook
  curl -s 127.0.0.1:9477/metrics | promtool check metrics";

const STATUS_EXAMPLES: &str = "Examples:
  electop status                            aligned table (never cut when piped)
  electop status -o wide                    also the scheme and the leader's key
  electop status -o json | jq '.elections[] | select(.leader == null) | .name'
  electop --sql sqlite://elections.db --scheme sql-lease status

Exit codes: 0 every source was read; 3 some were, and each one that was not is named on
stderr and in the output (table: `etcd1: DOWN: why`; JSON: sources[].state \"down\" and
.error); 1 no source could be read (nothing on stdout); 2 a usage or config mistake.
A refused connection is final at once; a store that does not answer is named after
--timeout.";

const WATCH_EXAMPLES: &str = "Examples:
  electop watch                             23:01:02.345 etcd1 jobs leader a → b (lease_expired) ttl 9.5s
  electop watch --json | jq -c 'select(.kind == \"leader_changed\")'
  electop --prefix /elections/ watch | grep --line-buffered jobs";

const FORCE_EXAMPLES: &str = "Examples:
  electop force-leader jobs node-b          asks before writing
  electop force-leader etcd2/jobs node-b -y --expect-leader node-a";

const REELECT_EXAMPLES: &str = "Examples:
  electop reelect jobs
  electop --sql sqlite://e.db --scheme sql-lease reelect jobs -y";

const RESIGN_EXAMPLES: &str = "Examples:
  electop resign jobs
  electop resign sql1/jobs -y --expect-leader node-a";

const NODE_EXAMPLES: &str = "Examples:
  electop --etcd 127.0.0.1:2379 --scheme etcd-election node --election /e/jobs --id node-1
  electop --sql sqlite://e.db --scheme sql-lease node --election jobs --id node-1 --create-table
  electop --zk 127.0.0.1:2181 --prefix /election node --election jobs --id node-1 --ttl 6s
  electop --redis redis://127.0.0.1:6379 --prefix 'locks:*' node --election locks:jobs --id node-1";

const DEMO_EXAMPLES: &str = "Examples:
  electop demo                              on an embedded SQLite file
  electop demo --store etcd --spawn-etcd    on a throwaway local etcd
  electop demo --store zookeeper --spawn-zookeeper   on a throwaway local ZooKeeper
  electop demo --store redis --spawn-redis  on a throwaway local redis-server
  electop demo --ttl 2s --renew 500ms       faster failovers";

const PRESETS_EXAMPLES: &str = "Examples:
  electop presets                           the presets and the table each reads
  electop --sql postgres://app@db/app --preset shedlock
  electop --etcd db1:2379 --preset patroni
  electop --zk zk1:2181/kafka --preset kafka-zk
  electop --zk zk1:2181 --preset hadoop-ha";

const CONTEXTS_EXAMPLES: &str = "Examples:
  electop --config ~/.config/electop/config.toml contexts
  electop --context prod                    the dashboard on the context prod
  electop --context staging status          ... or once, as a table";

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SchemeArg {
    EtcdElection,
    EtcdLeaseKey,
    SqlLease,
    SqlHeartbeat,
    Patroni,
    /// PostgreSQL advisory locks (with --sql postgres://...): no table needed.
    PgAdvisory,
    /// MySQL/MariaDB GET_LOCK (with --sql mysql://...): no table needed.
    MysqlLock,
}

impl From<SchemeArg> for Scheme {
    fn from(s: SchemeArg) -> Scheme {
        match s {
            SchemeArg::EtcdElection => Scheme::EtcdElection,
            SchemeArg::EtcdLeaseKey => Scheme::EtcdLeaseKey,
            SchemeArg::SqlLease => Scheme::SqlLease,
            SchemeArg::SqlHeartbeat => Scheme::SqlHeartbeat,
            SchemeArg::Patroni => Scheme::Patroni,
            SchemeArg::PgAdvisory => Scheme::PgAdvisory,
            SchemeArg::MysqlLock => Scheme::MysqlLock,
        }
    }
}

/// `electop serve`'s own flags.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Where to listen. Anything but loopback needs --bearer-token-file or
    /// --basic-auth-file.
    #[arg(long, default_value = "127.0.0.1:9477")]
    pub listen: std::net::SocketAddr,
    /// Require `Authorization: Bearer <the file's first line>`.
    #[arg(long, value_name = "FILE")]
    pub bearer_token_file: Option<PathBuf>,
    /// Require HTTP basic auth with the file's first line, `user:password`.
    #[arg(long, value_name = "FILE")]
    pub basic_auth_file: Option<PathBuf>,
    /// Serve HTTPS with this certificate chain (PEM), with --tls-key.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Run CMD (with `sh -c`) for each leader change or alarm: the event as JSON on stdin and
    /// in ELECTOP_KIND, ELECTOP_SOURCE, ELECTOP_ELECTION, ELECTOP_FROM, ELECTOP_TO,
    /// ELECTOP_CAUSE, ELECTOP_AT. One at a time, in order.
    #[arg(long, value_name = "CMD")]
    pub on_change: Option<String>,
    /// POST each event as JSON to URL (http://), with retries. May be given several times.
    /// Without --on-change/--webhook, the config's `[serve]` section says.
    #[arg(long, value_name = "URL")]
    pub webhook: Vec<String>,
    /// How long a hook run or a webhook attempt may take before it is cut off (default 10s,
    /// or `[serve] hook_timeout`).
    #[arg(long, value_parser = parse_duration)]
    pub hook_timeout: Option<Duration>,
    /// Log lines on stderr as text or as JSON objects.
    #[arg(long, value_enum, default_value_t)]
    pub log_format: LogFormat,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print every election once and exit: 0 every source read, 3 some read (the others
    /// named, with why), 1 none.
    #[command(after_help = STATUS_EXAMPLES)]
    Status {
        /// table: aligned, cut to fit only on a terminal; wide: more columns, never cut;
        /// json: {"sources":[...],"elections":[...]}.
        #[arg(short = 'o', long, value_enum, default_value_t)]
        output: OutputFormat,
        /// Same as -o json.
        #[arg(long)]
        json: bool,
        /// etcd: also replay each election's past leader changes (history, CHG) before
        /// printing; implied by an explicit --history-limit. Without it, only the current state
        /// is read, which stays quick however deep the store's history is.
        #[arg(long)]
        history: bool,
        /// How long to wait for the stores.
        #[arg(long, default_value = "5s", value_parser = parse_duration)]
        timeout: Duration,
    },
    /// Print leader changes as they happen, one per line.
    #[command(after_help = WATCH_EXAMPLES)]
    Watch {
        /// One JSON object per line.
        #[arg(long)]
        json: bool,
        /// Only the changes: no line per election for how it stands when each source is
        /// read (`kind: current`).
        #[arg(long)]
        changes_only: bool,
    },
    /// Serve what the dashboard sees, headless: Prometheus metrics, readiness, the status
    /// document and the event stream, and run hooks on each leader change. Stops cleanly on
    /// SIGTERM or Ctrl-C.
    #[command(after_help = SERVE_EXAMPLES)]
    Serve(ServeArgs),
    /// Make ID the leader of ELECTION (compare-and-swap against what is read first).
    #[command(after_help = FORCE_EXAMPLES)]
    ForceLeader {
        /// NAME, or SOURCE/NAME with several sources (SOURCE as in status: etcd1, sql1...).
        election: String,
        id: String,
        /// Write ID even though it was never seen in the election (not leading, in line or
        /// in its history): nobody may renew its term.
        #[arg(long)]
        allow_unseen: bool,
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// Force a re-election of ELECTION.
    #[command(after_help = REELECT_EXAMPLES)]
    Reelect {
        election: String,
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// Make ELECTION's leader resign.
    #[command(after_help = RESIGN_EXAMPLES)]
    Resign {
        election: String,
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// Take part in an election: a real participant of the scheme's algorithm.
    #[command(after_help = NODE_EXAMPLES)]
    Node(NodeArgs),
    /// Three (or --nodes) participants electing a leader, beside the dashboard.
    #[command(after_help = DEMO_EXAMPLES)]
    Demo(DemoArgs),
    /// List the presets (--preset): each project's table and how electop reads it.
    #[command(after_help = PRESETS_EXAMPLES)]
    Presets,
    /// List the config file's contexts ([[context]]) with their sources; * marks the one
    /// used without --context.
    #[command(after_help = CONTEXTS_EXAMPLES)]
    Contexts,
    /// Print a shell completion script, e.g. `electop completions bash > /etc/bash_completion.d/electop`.
    Completions { shell: clap_complete::Shell },
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum DemoStore {
    /// An embedded SQLite file in a temporary directory: no server needed.
    #[default]
    Sqlite,
    /// etcd at --etcd HOST:PORT, or one started with --spawn-etcd.
    Etcd,
    /// PostgreSQL at --sql URL.
    Postgres,
    /// MySQL/MariaDB at --sql URL.
    Mysql,
    /// ZooKeeper at --zk HOST:PORT, or one started with --spawn-zookeeper.
    Zookeeper,
    /// Redis at --redis URL, or one started with --spawn-redis.
    Redis,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Where the election lives.
    #[arg(long, value_enum, default_value_t)]
    pub store: DemoStore,
    /// With --store etcd: start a throwaway local etcd (needs etcd-server installed).
    #[arg(long)]
    pub spawn_etcd: bool,
    /// With --store zookeeper: start a throwaway local ZooKeeper (needs the zookeeper and
    /// openjdk-17-jdk-headless packages).
    #[arg(long)]
    pub spawn_zookeeper: bool,
    /// With --store redis: start a throwaway local redis-server (needs redis-server).
    #[arg(long)]
    pub spawn_redis: bool,
    /// How many participants.
    #[arg(long, default_value_t = 3)]
    pub nodes: usize,
    /// The nodes' lease / term / timeout (default: the scheme's own, from its source article).
    #[arg(long, value_parser = parse_duration)]
    pub ttl: Option<Duration>,
    /// The nodes' renew interval.
    #[arg(long, value_parser = parse_duration)]
    pub renew: Option<Duration>,
    /// The nodes' retry interval.
    #[arg(long, value_parser = parse_duration)]
    pub retry: Option<Duration>,
}

#[derive(Debug, Args)]
pub struct NodeArgs {
    /// The store the election is in, named as `demo --store` names it: checked against the
    /// source flags (--etcd, --sql, --zk, --redis), which say where it is.
    #[arg(long, value_enum)]
    pub store: Option<DemoStore>,
    /// The election to take part in (etcd: the election's key prefix; SQL: the row's key;
    /// ZooKeeper: the election's znode below --prefix; Redis: the lock key).
    #[arg(long)]
    pub election: String,
    /// This participant's id.
    #[arg(long)]
    pub id: String,
    /// One JSON object per belief change.
    #[arg(long)]
    pub json: bool,
    /// Lease TTL (etcd), term (sql-lease), timeout (sql-heartbeat), session timeout (ZooKeeper) or lock TTL (Redis). Default: the scheme's own (its source article's).
    #[arg(long, value_parser = parse_duration)]
    pub ttl: Option<Duration>,
    /// How often the leader renews. Default: the scheme's own (its source article's).
    #[arg(long, value_parser = parse_duration)]
    pub renew: Option<Duration>,
    /// How often a follower tries again. Default: the scheme's own (its source article's).
    #[arg(long, value_parser = parse_duration)]
    pub retry: Option<Duration>,
    /// SQL: create the table if it does not exist (and the SQLite file).
    #[arg(long)]
    pub create_table: bool,
}

#[derive(Debug, Args)]
pub struct AdminArgs {
    /// Only act if this is the leader now.
    #[arg(long, value_name = "ID")]
    pub expect_leader: Option<String>,
    /// Do not ask for confirmation (required when stdin is not a terminal).
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// How long to wait for the store.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub timeout: Duration,
}

impl SourceArgs {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completions_know_every_subcommand() {
        let mut cmd = <Cli as clap::CommandFactory>::command();
        let mut out = Vec::new();
        clap_complete::generate(clap_complete::Shell::Bash, &mut cmd, "electop", &mut out);
        let script = String::from_utf8_lossy(&out);
        for sub in [
            "status",
            "watch",
            "force-leader",
            "reelect",
            "resign",
            "node",
            "demo",
            "contexts",
        ] {
            assert!(script.contains(sub), "{sub} missing from the completions");
        }
    }

    #[test]
    fn tls_flags_reach_every_etcd_source_and_come_in_pairs() {
        let err = Cli::try_parse_from(["electop", "--cert", "/nonexistent/c.pem"])
            .expect_err("unreadable");
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().contains("/nonexistent/c.pem"), "{err}");

        let cli = Cli::parse_from(["electop", "--insecure-skip-tls-verify", "status"]);
        let text = "[[source]]\nkind = \"etcd\"\nendpoints = [\"a:1\"]\n";
        let config = Config::parse(text, std::path::Path::new("x.toml")).expect("valid");
        let sources = cli.sources.resolve(&config).expect("valid");
        let SourceConfig::Etcd(e) = &sources[0] else {
            panic!("etcd")
        };
        assert!(
            e.insecure_skip_tls_verify,
            "the flag reaches a config source"
        );
        assert!(e.uses_tls("a:1"));
    }

    #[test]
    fn preset_patroni_is_an_etcd_source_on_patronis_namespace() {
        let cli = Cli::parse_from(["electop", "--etcd", "a:1", "--preset", "patroni"]);
        let sources = cli.sources.resolve(&Config::default()).expect("valid");
        let [SourceConfig::Etcd(e)] = sources.as_slice() else {
            panic!("one etcd source: {sources:?}")
        };
        assert_eq!(
            (e.scheme, e.prefix.as_str()),
            (Some(Scheme::Patroni), "/service/")
        );
        let cli = Cli::parse_from(["electop", "--preset", "patroni", "--prefix", "/pg/"]);
        let sources = cli.sources.resolve(&Config::default()).expect("valid");
        let [SourceConfig::Etcd(e)] = sources.as_slice() else {
            panic!("one etcd source: {sources:?}")
        };
        assert_eq!(e.prefix, "/pg/", "--prefix is the namespace");
    }

    #[test]
    fn flags_replace_config_sources_one_per_prefix() {
        let cli = Cli::parse_from([
            "electop",
            "--etcd",
            "a:1,b:2",
            "--prefix",
            "/x/",
            "--prefix",
            "/y/",
            "--read-only",
        ]);
        let sources = cli.sources.resolve(&Config::default()).expect("valid");
        assert_eq!(sources.len(), 2);
        let SourceConfig::Etcd(first) = &sources[0] else {
            panic!("etcd first")
        };
        assert_eq!(first.endpoints, ["a:1", "b:2"]);
        assert!(first.read_only);
    }

    #[test]
    fn context_picks_config_sources_and_the_flags_still_apply() {
        let text = "[[source]]\nname = \"a\"\nkind = \"etcd\"\nendpoints = [\"a:1\"]\n\n\
                    [[source]]\nname = \"b\"\nkind = \"etcd\"\nendpoints = [\"b:1\"]\n\n\
                    [[context]]\nname = \"one\"\nsources = [\"a\"]\n\n\
                    [[context]]\nname = \"two\"\nsources = [\"b\", \"a\"]\n";
        let config = Config::parse(text, std::path::Path::new("x.toml")).expect("valid");
        let cli = Cli::parse_from(["electop", "--context", "two", "--read-only"]);
        let sel = cli.sources.select(&config).expect("valid");
        assert_eq!(sel.context.as_deref(), Some("two"));
        let names: Vec<_> = sel.sources.iter().map(|s| s.name()).collect();
        assert_eq!(names, [Some("b"), Some("a")]);
        assert!(sel.sources.iter().all(SourceConfig::read_only));
        let switched = cli.sources.context_sources(&config, "one").expect("one");
        assert!(
            switched.len() == 1 && switched[0].read_only(),
            "{switched:?}"
        );

        let cli = Cli::parse_from(["electop", "--etcd", "c:1", "--context", "two"]);
        let e = cli.sources.select(&config).expect_err("both");
        assert!(e.contains("give one or the other"), "{e}");
        let cli = Cli::parse_from(["electop", "--etcd", "c:1"]);
        let sel = cli.sources.select(&config).expect("flags");
        assert_eq!(sel.context, None, "the flags' sources are no context");
    }
}
