//! A throwaway three-member etcd cluster on loopback, for tests of a member down, quorum
//! lost and a frozen member. Each member has its own data dir and ports; all are killed on
//! drop.

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::scratch::Scratch;

use super::etcd::{SPAWN_FAILED, etcd_command, healthy};
use super::process::{kill_and_reap, log_tail, signal};
use super::{POLL_INTERVAL, free_ports};

const READY_TIMEOUT: Duration = Duration::from_secs(20);

pub struct EtcdCluster {
    dir: Scratch,
    members: Vec<Member>,
    initial_cluster: String,
}

struct Member {
    name: String,
    client_port: u16,
    peer_port: u16,
    child: Option<Child>,
}

impl EtcdCluster {
    /// Starts `n` members and waits (with a deadline) until the cluster is healthy.
    pub fn start(n: usize) -> EtcdCluster {
        let dir = super::scratch::with_prefix("electop-etcd-cluster-");
        let ports = free_ports::<6>();
        let members: Vec<Member> = (0..n.min(3))
            .map(|i| Member {
                name: format!("m{i}"),
                client_port: ports[2 * i],
                peer_port: ports[2 * i + 1],
                child: None,
            })
            .collect();
        let initial_cluster = members
            .iter()
            .map(|m| format!("{}=http://127.0.0.1:{}", m.name, m.peer_port))
            .collect::<Vec<_>>()
            .join(",");
        let mut c = EtcdCluster {
            dir,
            members,
            initial_cluster,
        };
        for i in 0..c.members.len() {
            c.spawn(i);
        }
        c.wait_healthy(&(0..c.members.len()).collect::<Vec<_>>());
        c
    }

    fn spawn(&mut self, i: usize) {
        let dir = self.dir.path().to_path_buf();
        let initial = self.initial_cluster.clone();
        let m = &mut self.members[i];
        m.child = Some(spawn_member(&dir, m, &initial));
    }

    /// `127.0.0.1:PORT` of each member, in order.
    pub fn endpoints(&self) -> Vec<String> {
        self.members
            .iter()
            .map(|m| format!("127.0.0.1:{}", m.client_port))
            .collect()
    }

    pub fn endpoint(&self, i: usize) -> String {
        self.endpoints()[i].clone()
    }

    /// The live members' URLs, for etcdctl.
    fn urls(&self, only: &[usize]) -> String {
        only.iter()
            .map(|i| format!("http://127.0.0.1:{}", self.members[*i].client_port))
            .collect::<Vec<_>>()
            .join(",")
    }

    pub fn kill(&mut self, i: usize) {
        if let Some(mut c) = self.members[i].child.take() {
            kill_and_reap(&mut c);
        }
    }

    /// Starts a killed member again on its data dir.
    pub fn restart(&mut self, i: usize) {
        self.kill(i);
        self.spawn(i);
    }

    pub fn pid(&self, i: usize) -> Option<u32> {
        self.members[i].child.as_ref().map(Child::id)
    }

    /// SIGSTOP (`true`) or SIGCONT (`false`) a member.
    pub fn freeze(&self, i: usize, stop: bool) {
        if let Some(pid) = self.pid(i) {
            signal(if stop { "-STOP" } else { "-CONT" }, &[pid]);
        }
    }

    /// etcdctl against the given members; panics with stderr on failure.
    pub fn etcdctl(&self, via: &[usize], args: &[&str]) -> String {
        let out = Command::new("etcdctl")
            .env("ETCDCTL_API", "3")
            .arg(format!("--endpoints={}", self.urls(via)))
            .args(["--dial-timeout=2s", "--command-timeout=5s"])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run etcdctl");
        assert!(
            out.status.success(),
            "etcdctl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Waits until each of `members` reports healthy.
    pub fn wait_healthy(&self, members: &[usize]) {
        let deadline = Instant::now() + READY_TIMEOUT;
        for i in members {
            loop {
                if healthy(&self.urls(&[*i]), &[]) {
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "etcd member {i} not healthy within {READY_TIMEOUT:?}; log:\n{}",
                    self.log_tail(*i)
                );
                std::thread::sleep(POLL_INTERVAL * 5);
            }
        }
    }

    fn log_path(&self, i: usize) -> PathBuf {
        self.dir
            .path()
            .join(format!("{}.log", self.members[i].name))
    }

    pub fn log_tail(&self, i: usize) -> String {
        log_tail(&self.log_path(i), 30)
    }
}

impl Drop for EtcdCluster {
    fn drop(&mut self) {
        for i in 0..self.members.len() {
            // A frozen member must be woken to die promptly.
            self.freeze(i, false);
            self.kill(i);
        }
    }
}

fn spawn_member(dir: &Path, m: &Member, initial_cluster: &str) -> Child {
    let log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(format!("{}.log", m.name)))
        .expect("member log");
    let client = format!("http://127.0.0.1:{}", m.client_port);
    let peer = format!("http://127.0.0.1:{}", m.peer_port);
    etcd_command(
        &m.name,
        &dir.join(&m.name),
        &client,
        &peer,
        initial_cluster,
        log,
    )
    .args([
        "--initial-cluster-state=new",
        "--initial-cluster-token=electop-test",
        "--heartbeat-interval=50",
        "--election-timeout=500",
    ])
    .spawn()
    .expect(SPAWN_FAILED)
}
