//! The stores and schemes under test (the matrix's columns), each as a `Cell`: one election
//! of one scenario in one store, with the source flags every view and participant uses and
//! what the store can and cannot show by design.

use std::cell::Cell as Counter;
use std::path::Path;
use std::time::Duration;

use crate::common::electop::command;
use crate::common::node::Node;
use crate::common::scratch::{self, Scratch};
use crate::common::sqlstore::Store as SqlStore;
use crate::common::zk_campaigners::{ZkClient, ZkParticipant};
use crate::participants::Participant;
use crate::servers::{ETCD, KUBE, MARIADB, POSTGRES, REDIS_EVENTS, REDIS_POLL, ZK};

/// The stores and schemes, named as the tests are (`<scenario>::<kind>`).
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    etcd_election,
    etcd_lease_key,
    sql_lease_sqlite,
    sql_heartbeat_sqlite,
    sql_lease_postgres,
    zookeeper,
    /// ZooKeeper with kazoo `Election` participants (Debian's python3-kazoo).
    zookeeper_kazoo,
    redis_events,
    redis_poll,
    pg_advisory,
    mysql_lock,
    /// Kubernetes Leases, `electop node` participants (client-go's algorithm).
    kubernetes,
}

const ZK_PREFIX: &str = "/conformance";

/// The TTL, term, session timeout or lock TTL every cell's participants use.
pub const TTL: Duration = Duration::from_secs(2);

impl Kind {
    /// How a release reaches a reader: as its own step in the store's order, or only as the
    /// difference of two polls.
    pub fn polls(self) -> bool {
        matches!(
            self,
            Kind::sql_lease_sqlite
                | Kind::sql_heartbeat_sqlite
                | Kind::sql_lease_postgres
                | Kind::redis_poll
                | Kind::pg_advisory
                | Kind::mysql_lock
        )
    }

    /// Whether the participants wait in a line the store keeps, so a release hands over
    /// in one step (the next in line holds it at once).
    pub fn has_line(self) -> bool {
        matches!(
            self,
            Kind::etcd_election
                | Kind::zookeeper
                | Kind::zookeeper_kazoo
                | Kind::pg_advisory
                | Kind::mysql_lock
        )
    }

    /// The store's TCP port, where it has a server (SQLite is a file).
    pub fn server_port(self) -> Option<u16> {
        match self {
            Kind::etcd_election | Kind::etcd_lease_key => Some(ETCD.with(|e| e.client_port())),
            Kind::sql_lease_postgres | Kind::pg_advisory => Some(POSTGRES.with(|p| p.port())),
            Kind::zookeeper | Kind::zookeeper_kazoo => Some(ZK.with(|z| z.client_port())),
            Kind::redis_events => Some(REDIS_EVENTS.with(|r| r.port())),
            Kind::redis_poll => Some(REDIS_POLL.with(|r| r.port())),
            Kind::mysql_lock => Some(MARIADB.with(|m| m.port())),
            Kind::kubernetes => Some(KUBE.with(|k| k.server.port())),
            Kind::sql_lease_sqlite | Kind::sql_heartbeat_sqlite => None,
        }
    }
}

/// One election of one scenario in one store: the flags that reach it, its participants.
pub struct Cell {
    pub kind: Kind,
    pub home: Scratch,
    /// The election's name as every view shows it.
    pub election: String,
    /// Source flags, `--scheme` included; the same for status, watch, serve and node.
    pub source: Vec<String>,
    /// Extra `node` flags (timing, `--create-table`).
    node_flags: Vec<String>,
    started: Counter<usize>,
    pub sqlite: Option<SqlStore>,
    /// The members the participants reach (etcd, ZooKeeper), where not those of `source`.
    participants_via: Option<String>,
}

fn strings(s: &[&str]) -> Vec<String> {
    s.iter().map(|s| s.to_string()).collect()
}

fn ms(d: Duration) -> String {
    format!("{}ms", d.as_millis())
}

impl Cell {
    /// The cell of `scenario` (its number `nth` names the election where a store wants a
    /// number) in `kind`'s store.
    pub fn new(kind: Kind, scenario: &str, nth: u32) -> Cell {
        Cell::build(kind, scenario, nth, None)
    }

    /// The cell on a cluster (etcd, ZooKeeper) whose members are `endpoints` (`a,b,c`),
    /// instead of the one server.
    pub fn in_cluster(kind: Kind, scenario: &str, nth: u32, endpoints: &str) -> Cell {
        Cell::build(kind, scenario, nth, Some(endpoints.to_string()))
    }

    fn build(kind: Kind, scenario: &str, nth: u32, cluster: Option<String>) -> Cell {
        let ttl = ms(TTL);
        let timing = strings(&["--ttl", &ttl, "--renew", "500ms", "--retry", "200ms"]);
        let (election, source, node_flags, sqlite) = match kind {
            Kind::etcd_election => {
                let ep = cluster
                    .clone()
                    .unwrap_or_else(|| ETCD.with(|e| e.endpoint()));
                let src = ["--etcd", &ep, "--scheme", "etcd-election"];
                let src = [&src[..], &["--prefix", "/conf-elect/"]].concat();
                (scenario.to_string(), strings(&src), timing, None)
            }
            Kind::etcd_lease_key => {
                let ep = cluster
                    .clone()
                    .unwrap_or_else(|| ETCD.with(|e| e.endpoint()));
                let src = ["--etcd", &ep, "--scheme", "etcd-lease-key", "--prefix"];
                let src = [&src[..], &["/conf-lead/", "--registry", "/conf-reg/"]].concat();
                (scenario.to_string(), strings(&src), timing, None)
            }
            Kind::sql_lease_sqlite | Kind::sql_lease_postgres => {
                // The table is there before the observers start, as where a service runs.
                let store = match kind {
                    Kind::sql_lease_sqlite => Some(SqlStore::sqlite()),
                    _ => None,
                };
                if let Some(s) = &store {
                    s.create_lease_table("leaderlock");
                }
                let url = match &store {
                    Some(s) => s.url(),
                    None => POSTGRES.with(|p| p.url()),
                };
                let src = strings(&["--sql", &url, "--scheme", "sql-lease", "--poll", "200ms"]);
                let mut flags = timing;
                flags.push("--create-table".into());
                (scenario.to_string(), src, flags, store)
            }
            Kind::sql_heartbeat_sqlite => {
                let store = SqlStore::sqlite();
                store.create_heartbeat_table("service_election");
                let src = [
                    "--sql",
                    &store.url(),
                    "--scheme",
                    "sql-heartbeat",
                    "--heartbeat-timeout",
                    &ttl,
                    "--poll",
                    "200ms",
                ];
                // The article's anchor is a number; the file is this cell's own.
                let t = strings(&["--ttl", &ttl, "--renew", "300ms", "--retry", "200ms"]);
                (nth.to_string(), strings(&src), t, Some(store))
            }
            Kind::zookeeper | Kind::zookeeper_kazoo => {
                let ep = cluster.clone().unwrap_or_else(|| ZK.with(|z| z.endpoint()));
                let src = strings(&["--zk", &ep, "--prefix", ZK_PREFIX]);
                // kazoo's and electop's elections apart, as they share the server.
                let name = match kind {
                    Kind::zookeeper => scenario.to_string(),
                    _ => format!("kazoo-{scenario}"),
                };
                (name, src, timing, None)
            }
            Kind::redis_events | Kind::redis_poll => {
                let url = match kind {
                    Kind::redis_events => REDIS_EVENTS.with(|r| r.url()),
                    _ => REDIS_POLL.with(|r| r.url()),
                };
                let src = strings(&["--redis", &url, "--prefix", "locks:*"]);
                let t = strings(&["--ttl", &ttl, "--retry", "200ms"]);
                (format!("locks:{scenario}"), src, t, None)
            }
            Kind::pg_advisory => {
                let url = POSTGRES.with(|p| p.url());
                let src = ["--sql", &url, "--scheme", "pg-advisory", "--poll", "200ms"];
                let t = strings(&["--renew", "300ms", "--retry", "200ms"]);
                (format!("{}", 7100 + nth), strings(&src), t, None)
            }
            Kind::mysql_lock => {
                let url = MARIADB.with(|m| m.url());
                let src = ["--sql", &url, "--scheme", "mysql-lock", "--poll", "200ms"];
                let t = strings(&["--renew", "300ms", "--retry", "200ms"]);
                (format!("conf.{scenario}"), strings(&src), t, None)
            }
            Kind::kubernetes => {
                let cfg = KUBE.with(|k| k.kubeconfig.display().to_string());
                let src = ["--kube", "--kubeconfig", &cfg, "--namespace", "default"];
                // A Lease's name is a DNS subdomain: no `_`.
                let name = format!("default/{}", scenario.replace('_', "-"));
                (name, strings(&src), timing, None)
            }
        };
        Cell {
            kind,
            home: scratch::tempdir(),
            election,
            source,
            node_flags,
            started: Counter::new(0),
            sqlite,
            participants_via: None,
        }
    }

    pub fn home(&self) -> &Path {
        self.home.path()
    }

    /// The source flags with the store's port replaced by `port` (a proxy in front of it).
    pub fn source_via(&self, port: u16) -> Vec<String> {
        let from = format!(":{}", self.kind.server_port().expect("a server"));
        let to = format!(":{port}");
        if self.kind == Kind::kubernetes {
            // The server is the kubeconfig's: a copy of it names the proxy.
            let text = KUBE
                .with(|k| std::fs::read_to_string(&k.kubeconfig))
                .expect("read");
            let via = self.home().join(format!("kubeconfig-via-{port}"));
            std::fs::write(&via, text.replace(&from, &to)).expect("write the kubeconfig");
            let mut src = self.source.clone();
            src[2] = via.display().to_string();
            return src;
        }
        let via: Vec<String> = self.source.iter().map(|s| s.replace(&from, &to)).collect();
        assert_ne!(
            via, self.source,
            "the port {from} appears in {:?}",
            self.source
        );
        via
    }

    /// Participants started from now on reach the store through `endpoints` only (`a,b`):
    /// the live members of a cluster.
    pub fn participants_via(&mut self, endpoints: &str) {
        self.participants_via = Some(endpoints.to_string());
    }

    /// The source flags of a participant: the cell's, with its members where it has them.
    fn participant_source(&self) -> Vec<String> {
        let Some(eps) = &self.participants_via else {
            return self.source.clone();
        };
        let mut src = self.source.clone();
        let at = src.iter().position(|f| f == "--etcd" || f == "--zk");
        src[at.expect("an etcd or ZooKeeper source") + 1] = eps.clone();
        src
    }

    /// A participant `id` of this cell's election: kazoo's on `zookeeper_kazoo`, else
    /// `electop node`.
    pub fn participant(&self, id: &str) -> Participant {
        if self.kind != Kind::zookeeper_kazoo {
            return Participant::Electop(self.node(id));
        }
        let ep = match &self.participants_via {
            Some(eps) => eps.clone(),
            None => ZK.with(|z| z.endpoint()),
        };
        let path = format!("{ZK_PREFIX}/{}", self.election);
        let session = TTL.as_millis() as u32;
        Participant::Kazoo(ZkParticipant::start(
            ZkClient::Kazoo,
            &ep,
            &path,
            id,
            session,
        ))
    }

    /// `electop node --json` as `id` in this cell's election.
    pub fn node(&self, id: &str) -> Node {
        let n = self.started.get();
        self.started.set(n + 1);
        let stderr_path = self.home().join(format!("{id}.{n}.stderr"));
        let mut cmd = command(self.home());
        cmd.args(self.participant_source());
        if matches!(self.kind, Kind::zookeeper | Kind::zookeeper_kazoo) {
            cmd.args(["node", "--store", "zookeeper"]);
        } else if self.kind == Kind::kubernetes {
            cmd.args(["node", "--store", "kubernetes"]);
        } else {
            cmd.arg("node");
        }
        cmd.args(["--election", &self.election, "--id", id, "--json"])
            .args(&self.node_flags);
        Node::spawn(&mut cmd, id, &self.election, stderr_path)
    }
}

impl Cell {
    /// How the views name participant `node`: its id, but for MySQL's GET_LOCK the
    /// connection (`conn:N`), which the node says when it connects (the latest one).
    pub fn shown(&self, p: &mut Participant) -> String {
        let id = p.id().to_string();
        let Some(node) = p.node().filter(|_| self.kind == Kind::mysql_lock) else {
            return id;
        };
        crate::common::wait_for("the node names its connection", crate::common::T, || {
            node.pump();
            let conn = node
                .events()
                .filter_map(|e| e.strip_prefix("my connection is "))
                .last()
                .map(String::from);
            conn.ok_or_else(|| node.dump())
        })
    }
}

/// Whether the leader a view shows is participant `id`: a session-lock scheme shows the
/// session too (`id:pid`, `id (conn N)`), which the participant's id starts.
pub fn names(shown: &str, id: &str) -> bool {
    shown == id
        || shown
            .strip_prefix(id)
            .is_some_and(|rest| !rest.starts_with(char::is_alphanumeric))
}

/// Writes a lock key as a service's own client does (`redis-cli`, `etcdctl`), for steps a
/// few ms apart that no participant could time: a release then another's acquire.
pub struct Writer<'a> {
    cell: &'a Cell,
    key: String,
}

impl<'a> Writer<'a> {
    pub fn new(cell: &'a Cell) -> Writer<'a> {
        let key = match cell.kind {
            Kind::etcd_lease_key => format!("/conf-lead/{}", cell.election),
            _ => cell.election.clone(),
        };
        Writer { cell, key }
    }

    /// The key it writes.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The lock taken by `id` for a minute.
    pub fn acquire(&mut self, id: &str) {
        self.run(&[self.acquire_cmd(id)]);
    }

    /// A delete, then `id`'s acquire right after (one connection for Redis).
    pub fn release_then_acquire(&mut self, id: &str) {
        let del = match self.cell.kind {
            Kind::etcd_lease_key => vec!["del".to_string(), self.key.clone()],
            _ => vec!["DEL".to_string(), self.key.clone()],
        };
        let acquire = self.acquire_cmd(id);
        self.run(&[del, acquire]);
    }

    fn acquire_cmd(&self, id: &str) -> Vec<String> {
        match self.cell.kind {
            Kind::etcd_lease_key => {
                let out = ETCD.with(|e| e.etcdctl_stdout(&["lease", "grant", "60"]));
                let lease = out
                    .split_whitespace()
                    .nth(1)
                    .expect("a lease id")
                    .to_string();
                strings(&["put", &format!("--lease={lease}"), &self.key, id])
            }
            _ => strings(&["SET", &self.key, id, "NX", "PX", "60000"]),
        }
    }

    fn run(&self, cmds: &[Vec<String>]) {
        match self.cell.kind {
            Kind::etcd_lease_key => {
                for c in cmds {
                    let c: Vec<&str> = c.iter().map(String::as_str).collect();
                    ETCD.with(|e| e.etcdctl_stdout(&c));
                }
            }
            _ => {
                let port = self.cell.kind.server_port().expect("a server").to_string();
                let script: String = cmds.iter().map(|c| c.join(" ") + "\n").collect();
                let mut child = std::process::Command::new("redis-cli")
                    .args(["-p", &port])
                    .stdin(std::process::Stdio::piped())
                    .stdout(std::process::Stdio::piped())
                    .spawn()
                    .expect("run redis-cli");
                use std::io::Write;
                let mut stdin = child.stdin.take().expect("stdin");
                stdin
                    .write_all(script.as_bytes())
                    .expect("write to redis-cli");
                drop(stdin);
                let out = child.wait_with_output().expect("redis-cli");
                let said = String::from_utf8_lossy(&out.stdout);
                assert!(said.contains("OK"), "redis-cli {script:?} said {said:?}");
            }
        }
    }
}
