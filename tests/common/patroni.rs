//! A throwaway Patroni cluster (Debian's `patroni` 3.0.2 with PostgreSQL 15) on loopback,
//! its DCS the test's etcd through the `etcd3:` section (Patroni talks to etcd 3.4 through
//! etcd's v3 JSON gateway).
//!
//! Each member has its own data dir, REST port and PostgreSQL port under one temp dir.
//! Patroni refuses to run as root, so under root it runs as `postgres` (setuid in the child:
//! the `Child` is Patroni itself). Patroni starts PostgreSQL detached from itself, so
//! stopping a member means killing both by PID: Patroni's, then the postmaster's from the
//! data dir's `postmaster.pid`. Dropping the cluster kills every member that way.
//!
//! Timing: `ttl` 10 s, `loop_wait` 1 s, `retry_timeout` 4 s (Patroni wants
//! `loop_wait + 2 * retry_timeout <= ttl`), so a killed primary's leader key expires within
//! 10 s and a replica takes it within about a second after.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use super::scratch::Scratch;
use serde_json::Value;

use super::POLL_INTERVAL;
use super::postgres::{PG_BIN, log_tail, run_as, server_owner};

/// Patroni's leader key TTL in the test clusters, seconds.
pub const TTL_S: u64 = 10;
/// Bootstrap (initdb) and a replica's base backup on a busy machine.
pub const READY_TIMEOUT: Duration = Duration::from_secs(120);

/// A row of `patronictl list -f json`.
#[derive(Clone, Debug, PartialEq)]
pub struct Listed {
    pub name: String,
    /// `Leader`, `Replica`, `Sync Standby`...
    pub role: String,
    pub state: String,
    pub timeline: Option<i64>,
    /// `Lag in MB`; absent for the leader, `unknown` when Patroni cannot tell.
    pub lag_mb: Option<Value>,
}

struct Member {
    name: String,
    config: PathBuf,
    data_dir: PathBuf,
    log: PathBuf,
    child: Option<Child>,
}

pub struct PatroniCluster {
    dir: Scratch,
    scope: String,
    etcd: String,
    owner: Option<(u32, u32)>,
    members: Vec<Member>,
}

impl PatroniCluster {
    /// Starts `members` (name, tagged nofailover) in scope `scope` under namespace
    /// `/service/`: the first bootstraps and leads, the others join as replicas. Waits
    /// until `patronictl list` shows every member running with one leader.
    pub fn start(etcd: &str, scope: &str, members: &[(&str, bool)]) -> PatroniCluster {
        let owner = server_owner();
        let dir = super::scratch::with_prefix("electop-patroni-");
        let mut cluster = PatroniCluster {
            dir,
            scope: scope.to_string(),
            etcd: etcd.to_string(),
            owner,
            members: Vec::new(),
        };
        cluster.chown(cluster.dir.path());
        cluster.write_ctl_config();
        for (i, (name, nofailover)) in members.iter().enumerate() {
            cluster.add_member(name, *nofailover);
            let want = i + 1;
            cluster.wait_list(&format!("{want} member(s) running"), READY_TIMEOUT, |l| {
                l.len() == want
                    && l.iter()
                        .all(|m| m.state == "running" || m.state == "streaming")
                    && l.iter().filter(|m| m.role == "Leader").count() == 1
            });
        }
        cluster
    }

    pub fn scope(&self) -> &str {
        &self.scope
    }

    fn chown(&self, path: &Path) {
        if let Some((uid, gid)) = self.owner {
            std::os::unix::fs::chown(path, Some(uid), Some(gid))
                .unwrap_or_else(|e| panic!("chown {}: {e}", path.display()));
        }
    }

    /// A config for `patronictl` alone: the DCS and the scope, no member.
    fn write_ctl_config(&self) {
        let text = format!(
            "scope: {}\nnamespace: /service/\netcd3:\n  hosts: {}\n",
            self.scope, self.etcd
        );
        let path = self.dir.path().join("ctl.yml");
        std::fs::write(&path, text).expect("write ctl.yml");
        self.chown(&path);
    }

    fn add_member(&mut self, name: &str, nofailover: bool) {
        let home = self.dir.path().join(name);
        std::fs::create_dir(&home).expect("member dir");
        self.chown(&home);
        let [rest, pg] = super::free_ports::<2>();
        let config = self.dir.path().join(format!("{name}.yml"));
        std::fs::write(
            &config,
            member_config(self, name, &home, rest, pg, nofailover),
        )
        .expect("write member config");
        self.chown(&config);
        let log = home.join("patroni.log");
        let out = File::create(&log).expect("patroni log");
        let mut cmd = Command::new("patroni");
        cmd.arg(&config)
            .stdin(Stdio::null())
            .stdout(out.try_clone().expect("log fd"))
            .stderr(out);
        for (k, _) in std::env::vars() {
            if k.starts_with("PG") {
                cmd.env_remove(k);
            }
        }
        run_as(&mut cmd, self.owner);
        let child = cmd
            .spawn()
            .expect("run patroni (is the patroni package installed?)");
        self.members.push(Member {
            name: name.to_string(),
            config,
            data_dir: home.join("data"),
            log,
            child: Some(child),
        });
    }

    /// `patronictl -c ctl.yml ARGS`, as the member's user.
    pub fn patronictl(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new("patronictl");
        cmd.arg("-c")
            .arg(self.dir.path().join("ctl.yml"))
            .args(args)
            .stdin(Stdio::null());
        run_as(&mut cmd, self.owner);
        cmd.output().expect("run patronictl")
    }

    /// `patronictl list`, parsed; empty when patronictl fails (e.g. no member yet).
    pub fn list(&self) -> Vec<Listed> {
        let out = self.patronictl(&["list", "-f", "json"]);
        let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap_or_default();
        rows.iter()
            .map(|r| Listed {
                name: r["Member"].as_str().unwrap_or("").to_string(),
                role: r["Role"].as_str().unwrap_or("").to_string(),
                state: r["State"].as_str().unwrap_or("").to_string(),
                timeline: r["TL"].as_i64(),
                lag_mb: r.get("Lag in MB").cloned(),
            })
            .collect()
    }

    /// The leader as `patronictl list` shows it.
    pub fn leader(&self) -> Option<String> {
        let list = self.list();
        list.iter()
            .find(|m| m.role == "Leader")
            .map(|m| m.name.clone())
    }

    /// Polls `patronictl list` until `pred` holds; panics with the members' logs if not.
    pub fn wait_list(
        &self,
        what: &str,
        timeout: Duration,
        pred: impl Fn(&[Listed]) -> bool,
    ) -> Vec<Listed> {
        let deadline = Instant::now() + timeout;
        loop {
            let list = self.list();
            if pred(&list) {
                return list;
            }
            if Instant::now() >= deadline {
                panic!(
                    "patroni: not {what} within {timeout:?}; list: {list:#?}\n{}",
                    self.logs()
                );
            }
            std::thread::sleep(POLL_INTERVAL * 10);
        }
    }

    /// `patronictl switchover --leader FROM --candidate TO --force`; must succeed.
    /// A switchover as an operator makes it. Patroni refuses one while the candidate is not
    /// yet a healthy replica (it says so and still exits 0, as happens on a loaded machine):
    /// then it is asked again once `patronictl list` shows the candidate running.
    pub fn switchover(&self, from: &str, to: &str) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            let out =
                self.patronictl(&["switchover", "--leader", from, "--candidate", to, "--force"]);
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(out.status.success(), "patronictl switchover failed: {text}");
            if !text.contains("failed") {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "Patroni kept refusing the switchover: {text}\n{}",
                self.logs()
            );
            super::wait_until(
                "the candidate is a healthy replica",
                std::time::Duration::from_secs(30),
                || {
                    self.list().iter().any(|m| {
                        m.name == to && matches!(m.state.as_str(), "running" | "streaming")
                    })
                },
            );
        }
    }

    /// Crashes member `name`: SIGKILL to Patroni, then to its postmaster, which Patroni
    /// started detached and would otherwise outlive it.
    pub fn kill(&mut self, name: &str) {
        let m = self
            .members
            .iter_mut()
            .find(|m| m.name == name)
            .unwrap_or_else(|| panic!("no member {name}"));
        kill_member(m);
    }

    /// The tail of every member's Patroni log, for failure messages.
    pub fn logs(&self) -> String {
        self.members
            .iter()
            .map(|m| format!("--- {} ---\n{}", m.name, log_tail(&m.log, 15)))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Drop for PatroniCluster {
    fn drop(&mut self) {
        for m in self.members.iter_mut() {
            kill_member(m);
        }
    }
}

fn kill_member(m: &mut Member) {
    if let Some(mut child) = m.child.take() {
        let _ = child.kill();
        let _ = child.wait();
    }
    if let Some(pid) = postmaster_pid(&m.data_dir) {
        // SAFETY: kill(2) on a pid read from our own member's postmaster.pid.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        // SAFETY: signal 0 only checks that the process exists.
        while unsafe { libc::kill(pid, 0) } == 0 && Instant::now() < deadline {
            std::thread::sleep(POLL_INTERVAL);
        }
    }
}

/// The first line of `postmaster.pid`: the postmaster's process id.
fn postmaster_pid(data_dir: &Path) -> Option<i32> {
    let text = std::fs::read_to_string(data_dir.join("postmaster.pid")).ok()?;
    text.lines().next()?.trim().parse().ok().filter(|p| *p > 0)
}

fn member_config(
    c: &PatroniCluster,
    name: &str,
    home: &Path,
    rest: u16,
    pg: u16,
    nofailover: bool,
) -> String {
    format!(
        "scope: {scope}
namespace: /service/
name: {name}
restapi:
  listen: 127.0.0.1:{rest}
  connect_address: 127.0.0.1:{rest}
etcd3:
  hosts: {etcd}
bootstrap:
  dcs:
    ttl: {TTL_S}
    loop_wait: 1
    retry_timeout: 4
    maximum_lag_on_failover: 1048576
    postgresql:
      use_pg_rewind: false
      parameters:
        wal_level: replica
        hot_standby: 'on'
        max_connections: 20
        shared_buffers: 16MB
  initdb:
  - encoding: UTF8
  pg_hba:
  - local all all trust
  - host replication replicator 127.0.0.1/32 trust
  - host all all 127.0.0.1/32 trust
postgresql:
  listen: 127.0.0.1:{pg}
  connect_address: 127.0.0.1:{pg}
  data_dir: {data}
  bin_dir: {PG_BIN}
  pgpass: {home}/pgpass
  authentication:
    replication:
      username: replicator
      password: rep-pass
    superuser:
      username: postgres
      password: su-pass
  parameters:
    unix_socket_directories: {home}
tags:
  nofailover: {nofailover}
",
        scope = c.scope,
        etcd = c.etcd,
        data = home.join("data").display(),
        home = home.display(),
    )
}
