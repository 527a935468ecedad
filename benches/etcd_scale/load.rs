//! Writes elections into etcd the way their clients do, fast: many txns in flight.

use etcd_client::{Client, PutOptions, Txn, TxnOp};
use futures::StreamExt;

/// How the elections are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// etcd's election API: `<prefix><name>/<lease hex>`, two candidates each.
    Election,
    /// One key per election, `<prefix><name>`, its value the leader.
    LeaseKey,
}

/// Which leases the keys hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Leases {
    /// A lease shared by 100 keys (services with one session for all their elections).
    Shared,
    /// One lease per candidate, as election clients hold them.
    PerCandidate,
}

impl Layout {
    pub fn scheme(self) -> &'static str {
        match self {
            Layout::Election => "etcd-election",
            Layout::LeaseKey => "etcd-lease-key",
        }
    }

    pub fn candidates(self) -> usize {
        match self {
            Layout::Election => 2,
            Layout::LeaseKey => 1,
        }
    }
}

/// Leases long enough to outlive the run: an hour, or with a soak
/// (`ELECTOP_BENCH_SOAK_MIN`) an hour past its end. An hour's leases ended a 95-minute soak
/// at its 58th minute: their keys went with them, and the driver's puts on them failed.
fn ttl() -> i64 {
    let soak = std::env::var("ELECTOP_BENCH_SOAK_MIN")
        .ok()
        .and_then(|m| m.parse::<i64>().ok())
        .unwrap_or(0);
    3600 + soak * 60
}
const IN_FLIGHT: usize = 32;

pub async fn grant(client: &Client, n: usize) -> Vec<i64> {
    let ttl = ttl();
    futures::stream::iter(0..n)
        .map(|_| {
            let mut c = client.clone();
            async move { c.lease_grant(ttl, None).await.expect("lease grant").id() }
        })
        .buffer_unordered(IN_FLIGHT)
        .collect()
        .await
}

/// Loads `n` elections under `prefix`; returns each election's leader's lease.
pub async fn load(
    client: &Client,
    prefix: &str,
    n: usize,
    layout: Layout,
    leases: Leases,
) -> Vec<i64> {
    let keys = n * layout.candidates();
    let pool = match leases {
        Leases::Shared => grant(client, keys.div_ceil(100)).await,
        Leases::PerCandidate => grant(client, keys).await,
    };
    let ops: Vec<TxnOp> = (0..keys)
        .map(|k| {
            let (e, c) = (k / layout.candidates(), k % layout.candidates());
            let lease = match leases {
                Leases::Shared => pool[k / 100],
                Leases::PerCandidate => pool[k],
            };
            let key = match layout {
                // Line order is creation order: candidate 0 leads.
                Layout::Election => format!("{prefix}e{e:06}/{lease:x}{c}"),
                Layout::LeaseKey => format!("{prefix}e{e:06}"),
            };
            let opts = PutOptions::new().with_lease(lease);
            TxnOp::put(key, format!("node-{e}-{c}"), Some(opts))
        })
        .collect();
    let leader = |e: usize| {
        let k = e * layout.candidates();
        match leases {
            Leases::Shared => pool[k / 100],
            Leases::PerCandidate => pool[k],
        }
    };
    let leaders = (0..n).map(leader).collect();
    let chunks: Vec<Vec<TxnOp>> = ops.chunks(128).map(<[TxnOp]>::to_vec).collect();
    futures::stream::iter(chunks)
        .map(|chunk| {
            let mut c = client.clone();
            async move {
                c.txn(Txn::new().and_then(chunk)).await.expect("load txn");
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .collect::<Vec<()>>()
        .await;
    leaders
}
