//! Shared helpers for integration tests. Each test file does `mod common;`.
//!
//! Not every test file uses every helper, hence the allows.
#![allow(dead_code, unused_imports)]

pub mod alert_rules;
pub mod campaigners;
pub mod certs;
pub mod electop;
pub mod etcd;
pub mod etcd_cluster;
pub mod http;
pub mod kube;
pub mod lines;
pub mod mariadb;
pub mod metric_names;
pub mod mysql_lock;
pub mod node;
pub mod outage;
pub mod patroni;
pub mod pki;
pub mod postgres;
pub mod process;
pub mod prometheus;
pub mod proxy;
pub mod redis;
pub mod scratch;
pub mod sqlstore;
pub mod tmux;
pub mod ui;
pub mod zk_campaigners;
pub mod zookeeper;
pub mod zookeeper_ensemble;

pub use etcd::{Campaigner, EtcdServer};

use std::future::Future;
use std::net::TcpListener;
use std::time::{Duration, Instant};

/// How long a test waits for something that should happen (a leader elected, a change
/// seen, a server up) before it fails saying what it waited for. Generous: a deadline,
/// not a measurement (figures belong in the benches).
pub const T: Duration = Duration::from_secs(15);

/// How often `wait_until` and friends poll.
pub const POLL_INTERVAL: Duration = Duration::from_millis(20);

/// A loopback TCP port that was free a moment ago (bind port 0, read, drop).
pub fn free_port() -> u16 {
    free_ports::<1>()[0]
}

/// `N` distinct free loopback ports. All listeners are held until every port
/// has been picked, so the kernel cannot hand out the same port twice.
pub fn free_ports<const N: usize>() -> [u16; N] {
    let listeners: Vec<TcpListener> = (0..N)
        .map(|_| TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0"))
        .collect();
    let mut ports = [0u16; N];
    for (port, listener) in ports.iter_mut().zip(&listeners) {
        *port = listener.local_addr().expect("local_addr").port();
    }
    ports
}

/// Polls `f` every 20 ms until it returns true; panics mentioning `what` after
/// `timeout`.
pub fn wait_until<F: FnMut() -> bool>(what: &str, timeout: Duration, mut f: F) {
    wait_for(
        what,
        timeout,
        || if f() { Ok(()) } else { Err(String::new()) },
    )
}

/// Polls `f` every 20 ms until it gives a value, and returns it; after `timeout` panics
/// mentioning `what` and the last reason `f` gave for waiting on.
pub fn wait_for<R>(what: &str, timeout: Duration, mut f: impl FnMut() -> Result<R, String>) -> R {
    let deadline = Instant::now() + timeout;
    loop {
        let why = match f() {
            Ok(r) => return r,
            Err(why) => why,
        };
        if Instant::now() >= deadline {
            panic!("timed out after {timeout:?} waiting until {what}\n{why}");
        }
        std::thread::sleep(POLL_INTERVAL);
    }
}

/// Async `wait_until`: awaits `f()` every 20 ms (tokio sleep) until it yields
/// true; panics mentioning `what` after `timeout`.
pub async fn wait_until_async<F, Fut>(what: &str, timeout: Duration, mut f: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if f().await {
            return;
        }
        if Instant::now() >= deadline {
            panic!("timed out after {timeout:?} waiting until {what}");
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}
