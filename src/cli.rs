//! Command-line interface. Source flags are global so every subcommand takes them; in each
//! subcommand's help its own flags come first, the source, authentication, TLS and config
//! flags after, under headings of their own.

pub mod habits;
mod help;
mod serve;
mod sources;

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub use crate::config::parse_duration;
use crate::model::Scheme;
pub use serve::{LogFormat, ServeArgs};
pub use sources::SourceArgs;

/// The heading of the flags about electop itself: its config file, its log, its memory.
const GENERAL: &str = "Config and logging";

#[derive(Debug, Parser)]
#[command(
    name = "electop",
    version,
    about = help::ABOUT,
    long_about = help::LONG_ABOUT,
    after_help = help::MAIN,
    after_long_help = help::MAIN_LONG
)]
pub struct Cli {
    #[command(flatten)]
    pub sources: SourceArgs,
    /// Config file (TOML).
    ///
    /// Default: the platform config dir's electop/config.toml; `electop config example` prints
    /// one with every key.
    #[arg(long, global = true, value_name = "FILE", help_heading = GENERAL)]
    pub config: Option<PathBuf>,
    /// Where the log goes.
    ///
    /// Default: the platform data dir's electop/electop.log.
    #[arg(long, global = true, value_name = "FILE", help_heading = GENERAL)]
    pub log_file: Option<PathBuf>,
    /// Leader changes kept per election.
    ///
    /// 0: no history replay. Default: the config's history.limit (200) for the dashboard
    /// and status; 8 for serve; watch, which prints what happens from now on, replays none
    /// unless this is given.
    #[arg(long, global = true, value_name = "N", help_heading = GENERAL)]
    pub history_limit: Option<usize>,
    /// Panic right after the first frame: lets the tests check that the terminal is
    /// restored on a panic.
    #[arg(long, hide = true)]
    pub debug_panic: bool,
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// How `status` prints.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// Aligned columns, cut to fit only on a terminal.
    #[default]
    Table,
    /// More columns (the scheme, the leader's key), cut only past 256 characters.
    Wide,
    /// {"sources":[...],"elections":[...]}.
    Json,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SchemeArg {
    /// etcd: the concurrency package's elections (etcdctl elect, Go, jetcd).
    EtcdElection,
    /// etcd: one key per election, held by a lease.
    EtcdLeaseKey,
    /// SQL: a row per election holding the leader until a term ends.
    SqlLease,
    /// SQL: a row per election the leader refreshes (last_seen_active).
    SqlHeartbeat,
    /// etcd: Patroni's leader key.
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

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print every election once and exit.
    ///
    /// Exit 0 every source read, 3 some read (the others named, with why), 1 none.
    #[command(after_help = help::STATUS, after_long_help = help::STATUS_LONG)]
    Status {
        /// How to print: table, wide or json.
        ///
        /// table: aligned, cut to fit only on a terminal; wide: more columns (the scheme,
        /// the leader's key), cut only past 256 characters; json: every value whole.
        #[arg(
            short = 'o',
            long,
            value_name = "FORMAT",
            value_enum,
            default_value_t,
            hide_possible_values = true
        )]
        output: OutputFormat,
        /// Same as -o json.
        #[arg(long, conflicts_with = "output")]
        json: bool,
        /// etcd: also replay past leader changes.
        ///
        /// Each election's past leader changes (history, CHG) are replayed before printing;
        /// implied by an explicit --history-limit. Without it, only the current state is
        /// read, which stays quick however deep the store's history is.
        #[arg(long)]
        history: bool,
        /// How long to wait for the stores.
        #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = parse_duration)]
        timeout: Duration,
    },
    /// Who led each election when: tenures, gaps and a summary.
    ///
    /// From the history every source keeps (etcd's own, the journal electop writes for
    /// the others). Exit 0 every source read, 3 some read (the others named), 1 none.
    #[command(after_help = help::HISTORY, after_long_help = help::HISTORY_LONG)]
    History {
        /// NAME, or SOURCE/NAME; default: every election.
        #[arg(value_name = "ELECTION")]
        election: Option<String>,
        /// Start: 24h or 90m ago, or RFC 3339.
        ///
        /// A duration before now (30s, 90m, 1h, 24h) or an RFC 3339 time.
        #[arg(long, value_name = "WHEN", default_value = "1h", value_parser = crate::model::timeline::parse_when)]
        since: crate::model::timeline::When,
        /// End, as --since (default: now).
        #[arg(long, value_name = "WHEN", value_parser = crate::model::timeline::parse_when)]
        until: Option<crate::model::timeline::When>,
        /// One JSON document instead of the table.
        ///
        /// {"since","until","elections":[{name, source_id, leader, segments, summary...}]}:
        /// what /api/v1/history answers.
        #[arg(long)]
        json: bool,
        /// How long to wait for the stores.
        #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = parse_duration)]
        timeout: Duration,
    },
    /// Print leader changes as they happen, one per line.
    #[command(after_help = help::WATCH, after_long_help = help::WATCH_LONG)]
    Watch {
        /// One JSON object per line.
        #[arg(long)]
        json: bool,
        /// Only the changes, not how each election stands.
        ///
        /// No line per election for how it stands when each source is read (`kind:
        /// current`).
        #[arg(long)]
        changes_only: bool,
    },
    /// Serve metrics, status and events over HTTP, with hooks.
    ///
    /// What the dashboard sees, headless: Prometheus metrics, readiness, the status
    /// document and the event stream; hooks run on each leader change. Stops cleanly on
    /// SIGTERM or Ctrl-C.
    #[command(after_help = help::SERVE, after_long_help = help::SERVE_LONG)]
    Serve(ServeArgs),
    /// Make ID the leader of ELECTION.
    ///
    /// A compare-and-swap against what is read first.
    #[command(after_help = help::FORCE, after_long_help = help::FORCE_LONG)]
    ForceLeader {
        /// NAME, or SOURCE/NAME with several sources.
        ///
        /// SOURCE as in status: etcd1, sql1...
        #[arg(value_name = "ELECTION")]
        election: String,
        /// The participant to make the leader.
        ///
        /// Its id as status shows it (LEADER, CANDIDATES).
        #[arg(value_name = "ID")]
        id: String,
        /// Write ID even if it was never seen there.
        ///
        /// Not leading, in line or in its history: nobody may renew its term.
        #[arg(long)]
        allow_unseen: bool,
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// Force a re-election of ELECTION.
    #[command(after_help = help::REELECT, after_long_help = help::REELECT_LONG)]
    Reelect {
        /// NAME, or SOURCE/NAME with several sources.
        #[arg(value_name = "ELECTION")]
        election: String,
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// Make ELECTION's leader resign.
    #[command(after_help = help::RESIGN, after_long_help = help::RESIGN_LONG)]
    Resign {
        /// NAME, or SOURCE/NAME with several sources.
        #[arg(value_name = "ELECTION")]
        election: String,
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// Take part in an election as a real participant.
    ///
    /// It runs the scheme's own algorithm, as the store's client libraries do.
    #[command(after_help = help::NODE, after_long_help = help::NODE_LONG)]
    Node(NodeArgs),
    /// Nodes electing a leader, beside the dashboard.
    ///
    /// Three (or --nodes) participants on a store of their own, to watch failovers.
    #[command(after_help = help::DEMO, after_long_help = help::DEMO_LONG)]
    Demo(DemoArgs),
    /// List the presets (--preset) and what each reads.
    ///
    /// Each project's table or keys, and how electop reads it.
    #[command(after_help = help::PRESETS)]
    Presets,
    /// List the config file's contexts and their sources.
    ///
    /// [[context]] in the config file; * marks the one used without --context.
    #[command(after_help = help::CONTEXTS)]
    Contexts,
    /// Print an example config file, every key explained.
    #[command(after_help = help::CONFIG)]
    Config {
        #[command(subcommand)]
        action: ConfigAction,
    },
    /// Print a shell completion script.
    #[command(after_help = help::COMPLETIONS)]
    Completions {
        /// The shell to complete in.
        #[arg(value_name = "SHELL")]
        shell: clap_complete::Shell,
    },
}

/// What `electop config` does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Subcommand)]
pub enum ConfigAction {
    /// Print the example config: every key, its default and what it does.
    Example,
}

/// The store `demo --store` and `node --store` name: those the demo runs itself, then each
/// store that offers its own from its folder (`backend::DEMOS`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DemoStore {
    #[default]
    Sqlite,
    Etcd,
    Postgres,
    Mysql,
    Zookeeper,
    /// A store's own demo, with its name and flags.
    Own(crate::backend::demo::Offer),
}

impl DemoStore {
    /// The source flag that points at this store, as a message asks for it.
    pub fn source_flag(self) -> &'static str {
        match self {
            DemoStore::Etcd => "--etcd HOST:PORT",
            DemoStore::Zookeeper => "--zk HOST:PORT",
            DemoStore::Sqlite => "--sql sqlite:///PATH",
            DemoStore::Postgres => "--sql postgres://...",
            DemoStore::Mysql => "--sql mysql://...",
            DemoStore::Own(o) => o.facts().source_flag,
        }
    }
}

impl ValueEnum for DemoStore {
    fn value_variants<'a>() -> &'a [Self] {
        static ALL: std::sync::LazyLock<Vec<DemoStore>> = std::sync::LazyLock::new(|| {
            let own = crate::backend::DEMOS.iter().copied().map(DemoStore::Own);
            [
                DemoStore::Sqlite,
                DemoStore::Etcd,
                DemoStore::Postgres,
                DemoStore::Mysql,
                DemoStore::Zookeeper,
            ]
            .into_iter()
            .chain(own)
            .collect()
        });
        &ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let (name, help) = match self {
            DemoStore::Sqlite => (
                "sqlite",
                "An embedded SQLite file in a temporary directory: no server needed",
            ),
            DemoStore::Etcd => (
                "etcd",
                "etcd at --etcd HOST:PORT, or one started with --spawn-etcd",
            ),
            DemoStore::Postgres => ("postgres", "PostgreSQL at --sql URL"),
            DemoStore::Mysql => ("mysql", "MySQL/MariaDB at --sql URL"),
            DemoStore::Zookeeper => (
                "zookeeper",
                "ZooKeeper at --zk HOST:PORT, or one started with --spawn-zookeeper",
            ),
            DemoStore::Own(o) => (o.facts().name, o.facts().help),
        };
        Some(clap::builder::PossibleValue::new(name).help(help))
    }
}
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Where the election lives (default: SQLite).
    ///
    /// sqlite: an embedded file, no server needed; etcd (--etcd, or --spawn-etcd);
    /// postgres or mysql (--sql URL); zookeeper (--zk, or --spawn-zookeeper); redis
    /// (--redis, or --spawn-redis).
    #[arg(
        long,
        value_name = "STORE",
        value_enum,
        default_value_t,
        hide_possible_values = true,
        hide_default_value = true
    )]
    pub store: DemoStore,
    /// With --store etcd: start a throwaway etcd.
    ///
    /// A local etcd (needs etcd-server installed).
    #[arg(long)]
    pub spawn_etcd: bool,
    /// With --store zookeeper: start a throwaway one.
    ///
    /// A local ZooKeeper (needs the zookeeper and openjdk-17-jdk-headless packages).
    #[arg(long)]
    pub spawn_zookeeper: bool,
    /// With --store redis: start a throwaway one.
    ///
    /// A local redis-server (needs redis-server).
    #[arg(long)]
    pub spawn_redis: bool,
    /// How many participants (1 to 9).
    #[arg(long, value_name = "N", default_value_t = 3,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=9))]
    pub nodes: usize,
    /// The nodes' lease / term / timeout.
    ///
    /// Default: the scheme's own, from its source article.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub ttl: Option<Duration>,
    /// The nodes' renew interval.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub renew: Option<Duration>,
    /// The nodes' retry interval.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub retry: Option<Duration>,
}

impl DemoArgs {
    /// The `--spawn-` flags, each with whether it is given.
    pub fn spawns(&self) -> [(&'static str, bool); 3] {
        [
            ("--spawn-etcd", self.spawn_etcd),
            ("--spawn-zookeeper", self.spawn_zookeeper),
            ("--spawn-redis", self.spawn_redis),
        ]
    }
}

#[derive(Debug, Args)]
pub struct NodeArgs {
    /// The store, as `demo --store` names it.
    ///
    /// sqlite, etcd, postgres, mysql, zookeeper or redis: checked against the source flags
    /// (--etcd, --sql, --zk, --redis), which say where it is.
    #[arg(long, value_name = "STORE", value_enum, hide_possible_values = true)]
    pub store: Option<DemoStore>,
    /// The election to take part in.
    ///
    /// etcd: the election's key prefix; SQL: the row's key; ZooKeeper: the election's znode
    /// below --prefix; Redis: the lock key.
    #[arg(long, value_name = "NAME")]
    pub election: String,
    /// This participant's id.
    #[arg(long, value_name = "ID")]
    pub id: String,
    /// One JSON object per belief change.
    #[arg(long)]
    pub json: bool,
    /// Lease TTL / term / session timeout.
    ///
    /// Lease TTL (etcd), term (sql-lease), timeout (sql-heartbeat), session timeout
    /// (ZooKeeper) or lock TTL (Redis). Default: the scheme's own (its source article's).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub ttl: Option<Duration>,
    /// How often the leader renews.
    ///
    /// Default: the scheme's own (its source article's).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub renew: Option<Duration>,
    /// How often a follower tries again.
    ///
    /// Default: the scheme's own (its source article's).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub retry: Option<Duration>,
    /// SQL: create the table if it does not exist.
    ///
    /// And the SQLite file.
    #[arg(long)]
    pub create_table: bool,
}

#[derive(Debug, Args)]
pub struct AdminArgs {
    /// Only act if this is the leader now.
    #[arg(long, value_name = "ID")]
    pub expect_leader: Option<String>,
    /// Do not ask for confirmation.
    ///
    /// Required when stdin is not a terminal.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// How long to wait for the store.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = parse_duration)]
    pub timeout: Duration,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, SourceConfig};

    /// Every subcommand, positional and flag says what it is, in one line for `-h`.
    #[test]
    fn everything_is_described() {
        let mut cmd = <Cli as clap::CommandFactory>::command();
        cmd.build();
        cmd.clone().debug_assert();
        for sub in std::iter::once(&cmd).chain(cmd.get_subcommands()) {
            let name = sub.get_name();
            assert!(sub.get_about().is_some(), "{name} has no description");
            for arg in sub.get_arguments().filter(|a| !a.is_hide_set()) {
                let id = arg.get_id();
                assert!(arg.get_help().is_some(), "{name} {id} has no description");
                let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
                assert!(!help.contains('\n'), "{name} {id}: -h takes one line");
            }
        }
    }

    #[test]
    fn completions_know_every_subcommand() {
        let mut cmd = <Cli as clap::CommandFactory>::command();
        let mut out = Vec::new();
        clap_complete::generate(clap_complete::Shell::Bash, &mut cmd, "electop", &mut out);
        let script = String::from_utf8_lossy(&out);
        for sub in [
            "status",
            "history",
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
