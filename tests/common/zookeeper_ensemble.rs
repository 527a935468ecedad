//! A throwaway ZooKeeper ensemble on loopback (`QuorumPeerMain`, `server.N` lines and `myid`
//! files), for tests of a member down and of a quorum kept or lost. Each member has its own
//! dir, client port and peer/election ports; all are SIGKILLed on drop.

use std::path::PathBuf;
use std::process::Child;
use std::time::{Duration, Instant};

use super::scratch::Scratch;

use super::POLL_INTERVAL;
use super::free_ports;
use super::process::{kill_and_reap, log_tail, signal};
use super::zookeeper::{mode, spawn_java, write_config};

/// How long `start` waits for every member to say leader or follower.
pub const READY_TIMEOUT: Duration = Duration::from_secs(40);
const START_MARKER: &str = "--- electop test harness: starting zookeeper member";

pub struct ZkEnsemble {
    dir: Scratch,
    members: Vec<Member>,
}

struct Member {
    client_port: u16,
    child: Option<Child>,
}

impl ZkEnsemble {
    /// Starts `n` (2 or 3) members and waits until each says it is the leader or a follower,
    /// with exactly one leader. Panics with the members' log tails if not.
    pub fn start(n: usize) -> ZkEnsemble {
        // One `server.N` line would make a standalone server, not an ensemble.
        assert!(
            (2..=3).contains(&n),
            "ZkEnsemble::start takes 2 or 3 members"
        );
        let dir = super::scratch::with_prefix("electop-zk-ensemble-");
        let ports = free_ports::<9>();
        let quorum: Vec<(u16, u16)> = (0..n)
            .map(|i| (ports[3 * i + 1], ports[3 * i + 2]))
            .collect();
        let mut members = Vec::new();
        for i in 0..n {
            let member_dir = dir.path().join(format!("m{}", i + 1));
            write_config(&member_dir, ports[3 * i], &quorum);
            std::fs::write(member_dir.join("data/myid"), format!("{}\n", i + 1))
                .expect("write myid");
            members.push(Member {
                client_port: ports[3 * i],
                child: None,
            });
        }
        let mut e = ZkEnsemble { dir, members };
        for i in 0..n {
            e.spawn(i);
        }
        let all: Vec<usize> = (0..n).collect();
        e.wait_quorum(&all, READY_TIMEOUT);
        e
    }

    fn member_dir(&self, i: usize) -> PathBuf {
        self.dir.path().join(format!("m{}", i + 1))
    }

    fn spawn(&mut self, i: usize) {
        let dir = self.member_dir(i);
        let child = spawn_java(
            &dir.join("zookeeper.log"),
            START_MARKER,
            "org.apache.zookeeper.server.quorum.QuorumPeerMain",
            &dir.join("zoo.cfg"),
        );
        self.members[i].child = Some(child);
    }

    /// `127.0.0.1:PORT` of each member, in order.
    pub fn endpoints(&self) -> Vec<String> {
        self.members
            .iter()
            .map(|m| format!("127.0.0.1:{}", m.client_port))
            .collect()
    }

    /// The connect string of the whole ensemble, as clients take it.
    pub fn connect_string(&self) -> String {
        self.endpoints().join(",")
    }

    pub fn pid(&self, i: usize) -> Option<u32> {
        self.members[i].child.as_ref().map(Child::id)
    }

    /// SIGKILL member `i` (no-op if down).
    pub fn kill(&mut self, i: usize) {
        if let Some(mut c) = self.members[i].child.take() {
            signal("-CONT", &[c.id()]);
            kill_and_reap(&mut c);
        }
    }

    /// Starts a killed member again on its data dir.
    pub fn restart(&mut self, i: usize) {
        self.kill(i);
        self.spawn(i);
    }

    /// SIGSTOP (`true`) or SIGCONT (`false`) a member.
    pub fn freeze(&self, i: usize, stop: bool) {
        if let Some(pid) = self.pid(i) {
            signal(if stop { "-STOP" } else { "-CONT" }, &[pid]);
        }
    }

    /// What `srvr` says member `i` is ("leader", "follower"), None if it does not serve.
    pub fn mode(&self, i: usize) -> Option<String> {
        mode(self.members[i].client_port)
    }

    /// Waits until each of `members` says leader or follower and exactly one says leader.
    /// Panics with their log tails after `timeout`.
    pub fn wait_quorum(&self, members: &[usize], timeout: Duration) {
        let deadline = Instant::now() + timeout;
        loop {
            let modes: Vec<Option<String>> = members.iter().map(|i| self.mode(*i)).collect();
            let serving = modes
                .iter()
                .all(|m| matches!(m.as_deref(), Some("leader" | "follower")));
            let leaders = modes
                .iter()
                .filter(|m| m.as_deref() == Some("leader"))
                .count();
            if serving && leaders == 1 {
                return;
            }
            if Instant::now() >= deadline {
                let logs: Vec<String> = members
                    .iter()
                    .map(|i| format!("member {i} log:\n{}", self.log_tail(*i)))
                    .collect();
                panic!(
                    "no ZooKeeper quorum of members {members:?} within {timeout:?} \
                     (modes {modes:?})\n{}",
                    logs.join("\n")
                );
            }
            std::thread::sleep(POLL_INTERVAL * 5);
        }
    }

    pub fn log_tail(&self, i: usize) -> String {
        log_tail(&self.member_dir(i).join("zookeeper.log"), 30)
    }
}

impl Drop for ZkEnsemble {
    fn drop(&mut self) {
        for i in 0..self.members.len() {
            self.kill(i);
        }
    }
}
