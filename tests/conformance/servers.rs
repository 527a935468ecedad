//! One server per store for the whole binary, started when a cell first needs it and
//! stopped when the binary exits (a `static` is never dropped, so an `atexit` hook drops
//! each one, which kills it and removes its data).

use std::sync::{LazyLock, Mutex, MutexGuard};

use crate::common::etcd::EtcdServer;
use crate::common::etcd_cluster::EtcdCluster;
use crate::common::kube::KubeServer;
use crate::common::mariadb::MariaDb;
use crate::common::postgres::Postgres;
use crate::common::redis::RedisServer;
use crate::common::zookeeper::ZkServer;
use crate::common::zookeeper_ensemble::ZkEnsemble;

/// A server kept for the binary's life; `None` once the exit hook has dropped it.
pub struct Shared<S: 'static> {
    cell: LazyLock<Mutex<Option<S>>>,
}

impl<S: Send + 'static> Shared<S> {
    pub const fn new(start: fn() -> Mutex<Option<S>>) -> Shared<S> {
        Shared {
            cell: LazyLock::new(start),
        }
    }

    /// The server, started on first use; `f` runs with it locked (keep it short: other
    /// cells wait).
    pub fn with<R>(&'static self, f: impl FnOnce(&S) -> R) -> R {
        let guard = self.lock();
        f(guard.as_ref().expect("the server is already stopped"))
    }

    fn lock(&'static self) -> MutexGuard<'static, Option<S>> {
        let guard = self.cell.lock().unwrap_or_else(|e| e.into_inner());
        register_exit(self as *const Self as usize, move || {
            drop(self.take_for_exit())
        });
        guard
    }

    fn take_for_exit(&'static self) -> Option<S> {
        match self.cell.try_lock() {
            Ok(mut g) => g.take(),
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner().take(),
            // Held by a thread still running at exit: left as it is.
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }
}

type Hook = Box<dyn FnOnce() + Send>;

static HOOKS: Mutex<Vec<(usize, Hook)>> = Mutex::new(Vec::new());

/// Registers `stop` once per server (`key`: the address of its static).
fn register_exit(key: usize, stop: impl FnOnce() + Send + 'static) {
    let mut hooks = HOOKS.lock().unwrap_or_else(|e| e.into_inner());
    if hooks.iter().any(|(k, _)| *k == key) {
        return;
    }
    if hooks.is_empty() {
        // SAFETY: registers a plain function with no arguments; libtest ends the process
        // with `exit`, which runs it once.
        unsafe { libc::atexit(run_exit_hooks) };
    }
    hooks.push((key, Box::new(stop)));
}

extern "C" fn run_exit_hooks() {
    let hooks = std::mem::take(&mut *HOOKS.lock().unwrap_or_else(|e| e.into_inner()));
    for (_, stop) in hooks {
        stop();
    }
}

pub static ETCD: Shared<EtcdServer> = Shared::new(|| Mutex::new(Some(EtcdServer::start())));
pub static POSTGRES: Shared<Postgres> = Shared::new(|| {
    let pg = Postgres::start();
    // gabihodoroaga/leaderelection's table, there before any observer starts.
    pg.psql(
        "CREATE TABLE leaderlock (key text PRIMARY KEY, leader_id text NOT NULL, \
         valid_until timestamp NOT NULL); GRANT ALL ON leaderlock TO tester",
    );
    Mutex::new(Some(pg))
});
pub static ZK: Shared<ZkServer> = Shared::new(|| {
    let zk = ZkServer::start();
    // `ruok` says imok before the server serves; `srvr` names its mode once it does. A
    // cell's observers start from a serving server, as against any running ensemble.
    let port = zk.client_port();
    crate::common::wait_until("ZooKeeper serves", crate::common::T, || {
        crate::common::zookeeper::mode(port).as_deref() == Some("standalone")
    });
    Mutex::new(Some(zk))
});
/// Keyspace notifications on: every command is an event.
pub static REDIS_EVENTS: Shared<RedisServer> =
    Shared::new(|| Mutex::new(Some(RedisServer::start("KEA", None))));
/// Keyspace notifications off: electop polls.
pub static REDIS_POLL: Shared<RedisServer> =
    Shared::new(|| Mutex::new(Some(RedisServer::start("", None))));
pub static MARIADB: Shared<MariaDb> = Shared::new(|| {
    let db = MariaDb::start();
    // The line of waiting sessions is read from this plugin's table.
    db.sql("INSTALL SONAME 'metadata_lock_info';");
    Mutex::new(Some(db))
});
/// A kube-apiserver, with the admin's kubeconfig every cell reads it by.
pub struct Kube {
    pub server: KubeServer,
    pub kubeconfig: std::path::PathBuf,
    _dir: crate::common::scratch::Scratch,
}

pub static KUBE: Shared<Kube> = Shared::new(|| {
    let server = KubeServer::start();
    let dir = crate::common::scratch::tempdir();
    let kubeconfig = server.kubeconfig(dir.path());
    Mutex::new(Some(Kube {
        server,
        kubeconfig,
        _dir: dir,
    }))
});
/// Three etcd members, for the cells of a member frozen (started healthy).
pub static ETCD_CLUSTER: Shared<EtcdCluster> =
    Shared::new(|| Mutex::new(Some(EtcdCluster::start(3))));
/// Three ZooKeeper members (started with a quorum and one leader).
pub static ZK_ENSEMBLE: Shared<ZkEnsemble> = Shared::new(|| Mutex::new(Some(ZkEnsemble::start(3))));
