//! What electop knows of each scheme, in one table every layer reads: its name, the store
//! it lives in, whether it keeps a line of candidates, what holds the leadership, a
//! participant's timing and how it renews, and the server a session lock needs. A new
//! scheme is one variant and one row here; nothing else in model, ui, app, serve or node
//! matches on it for these facts.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How an election is laid out in its store (`../shared/design/election-models.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scheme {
    /// etcd's election API: one key per candidate, lowest create_revision leads.
    EtcdElection,
    /// One key per election holding the leader id, attached to the leader's lease.
    EtcdLeaseKey,
    /// A `leaderlock(key, leader_id, valid_until)` row per election.
    SqlLease,
    /// A `service_election(anchor, service_id, last_seen_active)` row per election.
    SqlHeartbeat,
    /// Patroni's keys in etcd: `<namespace><scope>/leader` on the leader's lease, members
    /// under `<scope>/members/`.
    Patroni,
    /// A ZooKeeper recipe (Curator `LeaderLatch`/`LeaderSelector`, kazoo `Election`/`Lock`):
    /// one ephemeral sequential znode per candidate, lowest sequence number leads.
    #[serde(rename = "zookeeper")]
    ZkRecipe,
    /// Kafka's ZooKeeper-mode controller: one ephemeral `/controller` znode holds the
    /// controller's broker id; nobody waits in line.
    KafkaZk,
    /// Hadoop HA's `ActiveStandbyElector`: one ephemeral `ActiveStandbyElectorLock` per
    /// nameservice holds the active NameNode; nobody waits in line.
    HadoopHa,
    /// A Redis key set with `SET key token NX PX ms` (redis-py `Lock`, Node `redlock`): the
    /// value is the holder's token, `PTTL` its time left; nobody waits in line.
    RedisLock,
    /// PostgreSQL advisory locks (`pg_advisory_lock`, `pg_try_advisory_lock`): every lock
    /// key is an election, the session holding it leads, the sessions waiting are the line.
    PgAdvisory,
    /// MySQL/MariaDB `GET_LOCK(name)`: every lock name is an election, the connection
    /// holding it leads.
    MysqlLock,
    /// A Kubernetes `coordination.k8s.io/v1` Lease written by client-go's `leaderelection`
    /// (kube-controller-manager, kube-scheduler, controller-runtime): `holderIdentity`
    /// leads, for `leaseDurationSeconds` after a change of the record was last seen;
    /// nobody waits in line.
    #[serde(rename = "k8s-lease")]
    KubeLease,
}

/// The store a scheme's elections live in, as `/metrics` and `status --json` label it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StoreKind {
    Etcd,
    /// SQL tables, and the session locks of a SQL server (read from a `--sql` source).
    Sql,
    Zookeeper,
    Redis,
    Kubernetes,
}

impl StoreKind {
    pub fn label(self) -> &'static str {
        match self {
            StoreKind::Etcd => "etcd",
            StoreKind::Sql => "sql",
            StoreKind::Zookeeper => "zookeeper",
            StoreKind::Redis => "redis",
            StoreKind::Kubernetes => "kubernetes",
        }
    }

    /// One such store, as a message names it: "an etcd", "a Redis".
    pub fn with_article(self) -> &'static str {
        match self {
            StoreKind::Etcd => "an etcd",
            StoreKind::Sql => "a SQL",
            StoreKind::Zookeeper => "a ZooKeeper",
            StoreKind::Redis => "a Redis",
            StoreKind::Kubernetes => "a Kubernetes",
        }
    }
}

/// Whether the store keeps the candidates waiting behind the leader.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Line {
    /// Every candidate is in the store, in order (etcd election keys, znodes, lock waiters).
    Always,
    /// Only when several are seen: a lease key may have a registry of the others beside it.
    WhenSeveral,
    /// The store holds the leader alone (a row, a lock key, a single znode).
    Never,
}

/// What keeps a leader in office, and so what its remaining time means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Held {
    /// A lease or deadline the holder renews (etcd lease, SQL deadline column).
    Term,
    /// A countdown on the key itself that the holder renews (Redis `PTTL`): no lease, and a
    /// key without a countdown is held until it is deleted.
    Expiry,
    /// As long as its session or connection lives (a znode's session, a session lock).
    Session,
}

/// What the audit log keeps of the leader an action deposes, besides its lease (kept
/// wherever it has one), so that a later electop can tell how long it may still believe it
/// leads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kept {
    /// Nothing more.
    Lease,
    /// Its session (the candidate's stamp, `0x…`): a deposed client goes on believing while
    /// its session lives.
    Session,
    /// Its term's time left (ms, as of the line): a deposed holder goes on believing until
    /// its countdown would have ended.
    TimeLeft,
}

/// How an `electop node` participant renews its term, and in what the term is counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Renewal {
    /// Every renewal of the defaults (or `--renew`); the term rounded up to whole seconds,
    /// as etcd's lease TTLs are.
    Seconds,
    /// Every renewal of the defaults (or `--renew`); the term in milliseconds (a SQL
    /// deadline).
    Millis,
    /// A third of whatever term was asked for (unless `--renew`), in milliseconds: a
    /// ZooKeeper leader confirms its session as often as the client pings, a third of the
    /// session timeout; a Redis leader renews its `PX` every third, as redis-py users and
    /// redlock's examples do.
    Thirds,
}

/// The SQL server whose own locks a scheme reads (a session lock needs its server).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Server {
    /// PostgreSQL, which keeps each session's start (a session lock's stamp).
    Postgres,
    /// MySQL or MariaDB, which keep none (a session lock's stamp is the lock's name).
    MySql,
}

/// One row of the table.
#[derive(Debug)]
pub struct Facts {
    /// The name on the command line, in config files and in JSON.
    pub name: &'static str,
    /// The name in the dashboard's narrow scheme column.
    pub short: &'static str,
    pub store: StoreKind,
    pub line: Line,
    pub held: Held,
    /// An `electop node` participant's defaults: term, renewal, retry (milliseconds).
    pub timing_ms: (u64, u64, u64),
    pub renewal: Renewal,
    /// What an audit line keeps of a deposed leader.
    pub kept: Kept,
    /// The server a session lock is the own lock of; `None`: any of its store's.
    pub server: Option<Server>,
    /// Where an election's name is `GROUP/NAME` within a group of the store's (a Lease's
    /// namespace): what that group is called, as a metric label.
    pub group: Option<&'static str>,
}

use Held::{Expiry, Session, Term};
use Kept::{Lease, TimeLeft};
use Line::{Always, Never, WhenSeveral};
use Renewal::{Millis, Seconds, Thirds};
use Server::{MySql, Postgres};
use StoreKind::{Etcd, Kubernetes, Redis, Sql, Zookeeper};

/// The timings' sources: the Rust etcd election article (keep-alive every 7 s on a 10 s
/// lease); "Adding leader election to your application using etcd" (a 10 s lease kept alive,
/// re-election on the key's delete); kazoo's default 10 s session with heartbeats at a third,
/// the same pace for session locks; redis-py's `Lock` renewed every third of 10 s and
/// redlock's 200 ms `retryDelay`; gabihodoroaga/leaderelection (term 8 s, renew 4 s, retry
/// 2 s); "Leader election using MySQL" (orchestrator: every second, deposed after 20 s);
/// client-go's `leaderelection` defaults as kube-controller-manager runs them (a 15 s lease,
/// tried and renewed every 2 s).
const FACTS: [Facts; 12] = [
    Facts {
        name: "etcd-election",
        short: "election",
        store: Etcd,
        line: Always,
        held: Term,
        timing_ms: (10_000, 7_000, 1_000),
        renewal: Seconds,
        kept: Lease,
        server: None,
        group: None,
    },
    Facts {
        name: "etcd-lease-key",
        short: "lease-key",
        store: Etcd,
        line: WhenSeveral,
        held: Term,
        timing_ms: (10_000, 3_300, 2_000),
        renewal: Seconds,
        kept: Lease,
        server: None,
        group: None,
    },
    Facts {
        name: "sql-lease",
        short: "sql-lease",
        store: Sql,
        line: Never,
        held: Term,
        timing_ms: (8_000, 4_000, 2_000),
        renewal: Millis,
        kept: Lease,
        server: None,
        group: None,
    },
    Facts {
        name: "sql-heartbeat",
        short: "heartbeat",
        store: Sql,
        line: Never,
        held: Term,
        timing_ms: (20_000, 1_000, 1_000),
        renewal: Millis,
        kept: Lease,
        server: None,
        group: None,
    },
    Facts {
        name: "patroni",
        short: "patroni",
        store: Etcd,
        line: Always,
        held: Term,
        timing_ms: (10_000, 3_300, 2_000),
        renewal: Seconds,
        kept: Lease,
        server: None,
        group: None,
    },
    Facts {
        name: "zookeeper",
        short: "zookeeper",
        store: Zookeeper,
        line: Always,
        held: Session,
        timing_ms: (10_000, 3_300, 1_000),
        renewal: Thirds,
        kept: Kept::Session,
        server: None,
        group: None,
    },
    Facts {
        name: "kafka-zk",
        short: "kafka-zk",
        store: Zookeeper,
        line: Never,
        held: Session,
        timing_ms: (10_000, 3_300, 1_000),
        renewal: Seconds,
        kept: Lease,
        server: None,
        group: None,
    },
    Facts {
        name: "hadoop-ha",
        short: "hadoop-ha",
        store: Zookeeper,
        line: Never,
        held: Session,
        timing_ms: (10_000, 3_300, 1_000),
        renewal: Seconds,
        kept: Lease,
        server: None,
        group: None,
    },
    Facts {
        name: "redis-lock",
        short: "redis",
        store: Redis,
        line: Never,
        held: Expiry,
        timing_ms: (10_000, 3_333, 200),
        renewal: Thirds,
        kept: TimeLeft,
        server: None,
        group: None,
    },
    Facts {
        name: "pg-advisory",
        short: "pg-advisory",
        store: Sql,
        line: Always,
        held: Session,
        timing_ms: (10_000, 3_300, 1_000),
        renewal: Seconds,
        kept: Lease,
        server: Some(Postgres),
        group: None,
    },
    Facts {
        name: "mysql-lock",
        short: "mysql-lock",
        store: Sql,
        line: Always,
        held: Session,
        timing_ms: (10_000, 3_300, 1_000),
        renewal: Seconds,
        kept: Lease,
        server: Some(MySql),
        group: None,
    },
    Facts {
        name: "k8s-lease",
        short: "k8s-lease",
        store: Kubernetes,
        line: Never,
        held: Term,
        timing_ms: (15_000, 2_000, 2_000),
        renewal: Seconds,
        kept: TimeLeft,
        server: None,
        group: Some("namespace"),
    },
];

impl Scheme {
    /// Every scheme, in the table's order.
    pub const ALL: [Scheme; 12] = [
        Scheme::EtcdElection,
        Scheme::EtcdLeaseKey,
        Scheme::SqlLease,
        Scheme::SqlHeartbeat,
        Scheme::Patroni,
        Scheme::ZkRecipe,
        Scheme::KafkaZk,
        Scheme::HadoopHa,
        Scheme::RedisLock,
        Scheme::PgAdvisory,
        Scheme::MysqlLock,
        Scheme::KubeLease,
    ];

    /// This scheme's row of the table.
    pub fn facts(self) -> &'static Facts {
        &FACTS[self as usize]
    }

    pub fn as_str(self) -> &'static str {
        self.facts().name
    }

    pub fn store(self) -> StoreKind {
        self.facts().store
    }

    /// Read from ZooKeeper (a recipe's line, or a single holder).
    pub fn is_zookeeper(self) -> bool {
        self.store() == StoreKind::Zookeeper
    }

    /// A change's place in the store's own order as the store's tools print it: etcd's
    /// revision, ZooKeeper's zxid (every ZooKeeper scheme: Kafka's and Hadoop's too).
    pub fn revision_text(self, revision: i64) -> String {
        match self.store() {
            StoreKind::Zookeeper => format!("zxid 0x{:x}", revision as u64),
            _ => format!("rev {revision}"),
        }
    }

    /// Rows of a SQL table (lease or heartbeat).
    pub fn is_sql(self) -> bool {
        self.store() == StoreKind::Sql && self.facts().held == Held::Term
    }

    /// A lock held by a SQL server's session (no table): read from a `--sql` source.
    pub fn is_session_lock(self) -> bool {
        self.store() == StoreKind::Sql && self.facts().held == Held::Session
    }

    /// Whether the store shows a line of candidates, given how many are seen.
    pub fn has_line(self, candidates: usize) -> bool {
        match self.facts().line {
            Line::Always => true,
            Line::WhenSeveral => candidates > 1,
            Line::Never => false,
        }
    }

    /// A participant's defaults: term, renewal, retry.
    pub fn timing(self) -> (Duration, Duration, Duration) {
        let (t, r, q) = self.facts().timing_ms;
        let ms = Duration::from_millis;
        (ms(t), ms(r), ms(q))
    }
}

impl std::fmt::Display for Scheme {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_zookeeper_scheme_counts_in_zxids() {
        for s in Scheme::ALL {
            let text = s.revision_text(0x1_0000_002a);
            let zxid = text == "zxid 0x10000002a";
            assert_eq!(zxid, s.is_zookeeper(), "{s}: {text}");
            assert!(zxid || text == "rev 4294967338", "{s}: {text}");
        }
    }

    /// The table is in the enum's order, and each name reads back as its scheme.
    #[test]
    fn every_scheme_has_its_own_row_and_its_name_round_trips() {
        for s in Scheme::ALL {
            assert_eq!(Scheme::ALL[s as usize], s);
            let json = format!("\"{}\"", s.as_str());
            let back: Scheme = serde_json::from_str(&json).expect("a scheme name");
            assert_eq!(back, s);
        }
    }

    /// What an audit line keeps of a deposed leader besides its lease: a recipe's session,
    /// a Redis lock's time left.
    #[test]
    fn the_audit_keeps_a_session_or_a_time_left_where_the_deposed_believe_by_it() {
        for s in Scheme::ALL {
            let kept = match s {
                Scheme::ZkRecipe => Kept::Session,
                Scheme::RedisLock | Scheme::KubeLease => Kept::TimeLeft,
                _ => Kept::Lease,
            };
            assert_eq!(s.facts().kept, kept, "{s}");
        }
    }

    /// The facts that stand where a scheme was once matched by name: a participant's
    /// renewal (a third of the term for a ZooKeeper recipe and a Redis lock, milliseconds
    /// for SQL tables, whole seconds elsewhere), a Redis key's own countdown, and the server
    /// each session lock needs.
    #[test]
    fn renewal_countdown_and_server_are_each_schemes_own() {
        for s in Scheme::ALL {
            let renewal = match s {
                Scheme::ZkRecipe | Scheme::RedisLock => Renewal::Thirds,
                Scheme::SqlLease | Scheme::SqlHeartbeat => Renewal::Millis,
                _ => Renewal::Seconds,
            };
            assert_eq!(s.facts().renewal, renewal, "{s}");
            assert_eq!(
                s.facts().held == Held::Expiry,
                s == Scheme::RedisLock,
                "{s}"
            );
            let server = match s {
                Scheme::PgAdvisory => Some(Server::Postgres),
                Scheme::MysqlLock => Some(Server::MySql),
                _ => None,
            };
            assert_eq!(s.facts().server, server, "{s}");
            assert_eq!(server.is_some(), s.is_session_lock(), "{s}");
        }
    }

    #[test]
    fn the_kinds_of_sql_scheme_are_told_apart() {
        assert!(Scheme::SqlLease.is_sql() && !Scheme::SqlLease.is_session_lock());
        assert!(Scheme::PgAdvisory.is_session_lock() && !Scheme::PgAdvisory.is_sql());
        assert_eq!(Scheme::RedisLock.store().label(), "redis");
        assert!(!Scheme::RedisLock.has_line(3));
        assert!(Scheme::EtcdLeaseKey.has_line(2) && !Scheme::EtcdLeaseKey.has_line(1));
    }
}
