//! One rig per store: a throwaway server loaded with `n` elections, the change the churn
//! makes, and the store's own tools to time beside electop.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::common::EtcdServer;
use crate::common::redis::RedisServer;
use crate::common::sqlstore::Store;
use crate::common::zookeeper::ZkServer;
use crate::lines::Lines;
use crate::{load, procs, zk_load, zk_reads};

/// What the table needs of a store.
pub trait Rig {
    /// electop's source flags for the loaded elections.
    fn args(&self) -> Vec<String>;
    /// Changes a second the churn makes (the figure for this store).
    fn rate(&self) -> usize;
    /// Makes change `seq`; returns the token `watch --json` shows it by.
    async fn change(&self, seq: usize) -> String;
    /// The store's own tool reading what `status` reads: its name and one run's wall time.
    fn tool_status(&self) -> (&'static str, Duration);
    /// The store's own watch, printing each change's token, if it has one.
    fn tool_watch(&self) -> Option<(&'static str, Lines)>;
    /// What else `status` must ask the store that its tool's read does not, timed from the
    /// bench's own client: the part of `status` the store's answers set.
    async fn status_asks_more(&self) -> Option<(&'static str, Duration)> {
        None
    }
}

/// The value the `seq`-th change writes.
pub fn value(seq: usize) -> String {
    format!("chg-{seq}")
}

/// The election a change goes to: a stride through them all, so none changes twice in a run.
fn pick(seq: usize, n: usize) -> usize {
    (seq * 7919) % n
}

pub struct Etcd {
    pub server: EtcdServer,
    client: etcd_client::Client,
    leases: Vec<i64>,
}

const ETCD_PREFIX: &str = "/b/lk/";

impl Etcd {
    /// `n` lease-key elections, a lease shared by 100 keys (the issue's `status` figure);
    /// etcd restarted after the load unless not `restart` (`--etcd-as-loaded`).
    pub fn start(rt: &tokio::runtime::Runtime, n: usize, restart: bool) -> Etcd {
        // etcd's default timing, as it is run: the tests' 10 ms heartbeat doubled the time
        // etcd took to answer a burst of small requests here (100 lease reads: 20-30 ms
        // instead of 11-16), which no client pays against a default etcd.
        let timing = ["--heartbeat-interval=100", "--election-timeout=1000"];
        let mut server = EtcdServer::start_with(&timing.map(String::from));
        let loader = rt.block_on(server.client());
        let leases = rt.block_on(load::load(
            &loader,
            ETCD_PREFIX,
            n,
            load::Layout::LeaseKey,
            load::Leases::Shared,
        ));
        // Restarted before anything is measured: right after a load in transactions of
        // 128 puts, etcd answers lease reads two to three times slower (for minutes; its
        // own Node.js client too), and after a restart, churn or no churn, it does not
        // (docs/PERFORMANCE.md). An operator's etcd was not loaded a minute ago.
        drop(loader);
        if restart {
            server.restart();
        }
        let client = rt.block_on(server.client());
        procs::wait_idle(server.pid(), Duration::from_secs(60));
        Etcd {
            server,
            client,
            leases,
        }
    }
}

impl Rig for Etcd {
    fn args(&self) -> Vec<String> {
        let e = self.server.endpoint();
        [
            "--etcd",
            &e,
            "--prefix",
            ETCD_PREFIX,
            "--scheme",
            "etcd-lease-key",
        ]
        .map(String::from)
        .to_vec()
    }
    fn rate(&self) -> usize {
        1000
    }
    async fn change(&self, seq: usize) -> String {
        let e = pick(seq, self.leases.len());
        let opts = etcd_client::PutOptions::new().with_lease(self.leases[e]);
        let mut c = self.client.clone();
        c.put(format!("{ETCD_PREFIX}e{e:06}"), value(seq), Some(opts))
            .await
            .expect("put");
        value(seq)
    }
    fn tool_status(&self) -> (&'static str, Duration) {
        let mut get = self.server.etcdctl_command();
        let d = procs::time(get.args(["get", "--prefix", ETCD_PREFIX]));
        ("etcdctl get --prefix", d)
    }
    /// Every lease's TTL (`status` shows each leader's), read as electop reads them: one
    /// request each, 64 at a time, on one connection.
    async fn status_asks_more(&self) -> Option<(&'static str, Duration)> {
        use futures::StreamExt;
        let mut distinct = self.leases.clone();
        distinct.sort_unstable();
        distinct.dedup();
        let t = std::time::Instant::now();
        let reads = futures::stream::iter(distinct).map(|l| {
            let mut c = self.client.clone();
            async move { c.lease_time_to_live(l, None).await.expect("lease ttl") }
        });
        reads.buffer_unordered(64).collect::<Vec<_>>().await;
        Some(("the lease reads", t.elapsed()))
    }
    fn tool_watch(&self) -> Option<(&'static str, Lines)> {
        let mut w = self.server.etcdctl_command();
        let l = Lines::start(w.args(["watch", "--prefix", ETCD_PREFIX]));
        Some(("etcdctl watch", l))
    }
}

/// gabihodoroaga/leaderelection's `leaderlock`, in SQLite or PostgreSQL.
pub struct Sql {
    pub store: Store,
    pool: sqlx::AnyPool,
    n: usize,
    pg: bool,
}

impl Sql {
    pub fn start(rt: &tokio::runtime::Runtime, pg: bool, n: usize) -> Sql {
        let store = if pg {
            Store::postgres()
        } else {
            Store::sqlite()
        };
        store.create_lease_table("leaderlock");
        // An hour's lease, written as the library writes it (UTC, no zone).
        let until = if pg {
            "(now() at time zone 'utc') + interval '1 hour'"
        } else {
            "strftime('%Y-%m-%d %H:%M:%f', 'now', '+3600 seconds')"
        };
        let series = if pg {
            format!("generate_series(0, {}) AS i", n - 1)
        } else {
            format!(
                "(WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i + 1 < {n}) SELECT i FROM s)"
            )
        };
        let pad = if pg {
            "lpad(i::text, 6, '0')"
        } else {
            "printf('%06d', i)"
        };
        store.exec(&format!(
            "INSERT INTO leaderlock SELECT 'e' || {pad}, 'node-' || i, {until} FROM {series};"
        ));
        sqlx::any::install_default_drivers();
        let pool = rt
            .block_on(
                sqlx::pool::PoolOptions::<sqlx::Any>::new()
                    .max_connections(4)
                    .connect(&store.url()),
            )
            .expect("connect the SQL churn");
        Sql { store, pool, n, pg }
    }
}

impl Rig for Sql {
    fn args(&self) -> Vec<String> {
        ["--sql", &self.store.url(), "--scheme", "sql-lease"]
            .map(String::from)
            .to_vec()
    }
    fn rate(&self) -> usize {
        100
    }
    async fn change(&self, seq: usize) -> String {
        let e = pick(seq, self.n);
        let sql = if self.pg {
            "UPDATE leaderlock SET leader_id = $1 WHERE key = $2"
        } else {
            "UPDATE leaderlock SET leader_id = ? WHERE key = ?"
        };
        sqlx::query(sql)
            .bind(value(seq))
            .bind(format!("e{e:06}"))
            .execute(&self.pool)
            .await
            .expect("update");
        value(seq)
    }
    fn tool_status(&self) -> (&'static str, Duration) {
        let select = "SELECT * FROM leaderlock;";
        match &self.store {
            Store::Sqlite { path, .. } => {
                let d = procs::time(Command::new("sqlite3").arg(path).arg(select));
                ("sqlite3 SELECT *", d)
            }
            _ => {
                let url = self.store.url();
                let d = procs::time(Command::new("psql").args([&url, "-c", select]));
                ("psql SELECT *", d)
            }
        }
    }
    fn tool_watch(&self) -> Option<(&'static str, Lines)> {
        None
    }
}

/// Curator `LeaderLatch` elections of three candidates; a change adds a candidate and
/// deletes the leader's node (the next candidate leads), so each keeps three.
pub struct Zk {
    pub server: ZkServer,
    client: zookeeper_client::Client,
    n: usize,
}

const ZK_PREFIX: &str = "/b/zk";

impl Zk {
    pub fn start(rt: &tokio::runtime::Runtime, n: usize) -> Zk {
        let server = ZkServer::start();
        let client = rt.block_on(zk_load::connect(&server.endpoint()));
        rt.block_on(zk_load::load(&client, ZK_PREFIX, n));
        procs::wait_idle(server.pid(), Duration::from_secs(60));
        Zk { server, client, n }
    }
}

impl Rig for Zk {
    fn args(&self) -> Vec<String> {
        ["--zk", &self.server.endpoint(), "--prefix", ZK_PREFIX]
            .map(String::from)
            .to_vec()
    }
    fn rate(&self) -> usize {
        100
    }
    async fn change(&self, seq: usize) -> String {
        use zookeeper_client::{Acls, CreateMode};
        let e = pick(seq, self.n);
        let leader = zk_load::leader(&self.client, ZK_PREFIX, e).await;
        // The new candidate first (at the end of the line), then the leader's node: the
        // change's time is the delete's reply.
        let mode = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
        let path = format!("{ZK_PREFIX}/{}/_c_{seq:08x}-latch-", zk_load::election(e));
        self.client
            .create(&path, value(seq).as_bytes(), &mode)
            .await
            .expect("create");
        self.client.delete(&leader, None).await.expect("delete");
        // The next in line leads: the loader's second candidate (each election changes at
        // most once in a run, `pick`).
        format!("node-{e}-1")
    }
    fn tool_status(&self) -> (&'static str, Duration) {
        let (cold, _, _) = zk_reads::floor(&self.server.endpoint(), ZK_PREFIX);
        (
            "Java client, same reads (in-JVM)",
            Duration::from_secs_f64(cold / 1000.0),
        )
    }
    fn tool_watch(&self) -> Option<(&'static str, Lines)> {
        None
    }
}

/// Lock keys `SET key token PX ms`; a change sets a new token.
pub struct Redis {
    pub server: RedisServer,
    conn: redis::aio::MultiplexedConnection,
    n: usize,
    /// `GET` + `PTTL` of every key, as RESP for `redis-cli --pipe`.
    reads: Vec<u8>,
}

const TTL_MS: u64 = 3_600_000;

fn key(i: usize) -> String {
    format!("lock:e{i:06}")
}

fn resp(cmds: impl Iterator<Item = Vec<String>>) -> Vec<u8> {
    let mut out = Vec::new();
    for c in cmds {
        out.extend(format!("*{}\r\n", c.len()).into_bytes());
        for a in c {
            out.extend(format!("${}\r\n{a}\r\n", a.len()).into_bytes());
        }
    }
    out
}

fn pipe(port: u16, input: &[u8]) -> Duration {
    use std::io::Write;
    use std::process::Stdio;
    let t = std::time::Instant::now();
    let mut child = Command::new("redis-cli")
        .args(["-p", &port.to_string(), "--pipe"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("redis-cli --pipe");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(input).expect("write");
    drop(stdin);
    assert!(child.wait().expect("wait").success(), "redis-cli --pipe");
    t.elapsed()
}

impl Redis {
    pub fn start(rt: &tokio::runtime::Runtime, n: usize) -> Redis {
        let server = RedisServer::start("KEA", None);
        let set = (0..n).map(|i| {
            let px = TTL_MS.to_string();
            ["SET", &key(i), &format!("node-{i}"), "PX", &px]
                .map(String::from)
                .to_vec()
        });
        pipe(server.port(), &resp(set));
        let reads = resp((0..n).flat_map(|i| {
            [
                vec!["GET".to_string(), key(i)],
                vec!["PTTL".to_string(), key(i)],
            ]
        }));
        let conn = rt.block_on(async {
            let c = redis::Client::open(server.url()).expect("redis url");
            c.get_multiplexed_async_connection().await.expect("connect")
        });
        Redis {
            server,
            conn,
            n,
            reads,
        }
    }
}

impl Rig for Redis {
    fn args(&self) -> Vec<String> {
        ["--redis", &self.server.url(), "--prefix", "lock:*"]
            .map(String::from)
            .to_vec()
    }
    fn rate(&self) -> usize {
        100
    }
    async fn change(&self, seq: usize) -> String {
        let e = pick(seq, self.n);
        let mut c = self.conn.clone();
        let _: () = redis::cmd("SET")
            .arg(key(e))
            .arg(value(seq))
            .arg("PX")
            .arg(TTL_MS)
            .query_async(&mut c)
            .await
            .expect("set");
        value(seq)
    }
    fn tool_status(&self) -> (&'static str, Duration) {
        let port = self.server.port();
        let scan = procs::time(Command::new("sh").args([
            "-c",
            &format!("redis-cli -p {port} --scan --pattern 'lock:*' | wc -l > /dev/null"),
        ]));
        (
            "redis-cli --scan, GET+PTTL --pipe",
            scan + pipe(port, &self.reads),
        )
    }
    fn tool_watch(&self) -> Option<(&'static str, Lines)> {
        let port = self.server.port().to_string();
        let l = Lines::start(Command::new("redis-cli").args(["-p", &port, "monitor"]));
        Some(("redis-cli monitor", l))
    }
}

/// Where the dashboards keep their config and history: a fresh one per rig.
pub fn home() -> tempfile::TempDir {
    let h = tempfile::tempdir().expect("home");
    let _ = std::fs::create_dir_all(Path::new(h.path()).join("data"));
    h
}

/// A kube-apiserver with `n` Leases in `default`, each held for an hour; the churn writes
/// another holder (a merge patch, as `kubectl patch` sends); kubectl beside it.
pub struct Kube {
    // Stopped when the rig is dropped.
    _server: crate::common::kube::KubeServer,
    api: kube::Api<k8s_openapi::api::coordination::v1::Lease>,
    kubeconfig: std::path::PathBuf,
    _dir: tempfile::TempDir,
    n: usize,
}

fn lease_name(i: usize) -> String {
    format!("e{i:06}")
}

impl Kube {
    pub fn start(rt: &tokio::runtime::Runtime, n: usize) -> Kube {
        use futures::StreamExt;
        // The dev-dependencies bring a second rustls provider: the one electop uses is named.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let server = crate::common::kube::KubeServer::start();
        let dir = tempfile::tempdir().expect("a dir");
        let kubeconfig = server.kubeconfig(dir.path());
        let api = rt.block_on(async {
            let kc = kube::config::Kubeconfig::read_from(&kubeconfig).expect("kubeconfig");
            let opts = kube::config::KubeConfigOptions::default();
            let cfg = kube::Config::from_custom_kubeconfig(kc, &opts)
                .await
                .expect("config");
            let client = kube::Client::try_from(cfg).expect("client");
            kube::Api::namespaced(client, "default")
        });
        rt.block_on(async {
            let now = crate::common::kube::micro_time_now();
            futures::stream::iter(0..n)
                .for_each_concurrent(32, |i| {
                    let (api, now) = (api.clone(), now.clone());
                    async move {
                        let l: k8s_openapi::api::coordination::v1::Lease =
                            serde_json::from_value(serde_json::json!({
                                "metadata": {"name": lease_name(i)},
                                "spec": {"holderIdentity": format!("node-{i}"),
                                         "leaseDurationSeconds": 3600, "acquireTime": now,
                                         "renewTime": now, "leaseTransitions": 0}
                            }))
                            .expect("a Lease");
                        api.create(&kube::api::PostParams::default(), &l)
                            .await
                            .expect("create a Lease");
                    }
                })
                .await
        });
        Kube {
            _server: server,
            api,
            kubeconfig,
            _dir: dir,
            n,
        }
    }

    fn kubectl(&self) -> Command {
        let mut c = Command::new(crate::common::kube::bin("kubectl"));
        c.arg("--kubeconfig").arg(&self.kubeconfig);
        c
    }
}

impl Rig for Kube {
    fn args(&self) -> Vec<String> {
        vec![
            "--kube".into(),
            "--kubeconfig".into(),
            self.kubeconfig.display().to_string(),
        ]
    }
    fn rate(&self) -> usize {
        100
    }
    async fn change(&self, seq: usize) -> String {
        let name = lease_name(pick(seq, self.n));
        let patch = serde_json::json!({"spec": {"holderIdentity": value(seq),
            "renewTime": crate::common::kube::micro_time_now()}});
        self.api
            .patch(
                &name,
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(patch),
            )
            .await
            .expect("patch a Lease");
        value(seq)
    }
    fn tool_status(&self) -> (&'static str, Duration) {
        let mut c = self.kubectl();
        c.args(["get", "leases", "-A", "-o", "json"])
            .stdout(std::process::Stdio::null());
        ("kubectl get leases -A -o json", procs::time(&mut c))
    }
    fn tool_watch(&self) -> Option<(&'static str, Lines)> {
        let mut c = self.kubectl();
        c.args(["get", "leases", "-A", "--watch-only", "--no-headers"])
            .args(["-o", "custom-columns=H:.spec.holderIdentity"]);
        Some(("kubectl get leases -A -w", Lines::start(&mut c)))
    }
}
