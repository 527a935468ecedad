//! Changes at a steady rate: leaders of lease-key elections taken over, one put each.

use std::time::Duration;

use etcd_client::{Client, PutOptions};
use futures::StreamExt;

/// The value the `seq`-th change writes, which both watchers must print.
pub fn value(seq: usize) -> String {
    format!("chg-{seq}")
}

/// Puts `rate` changes a second for `secs` seconds onto the `n` lease-key elections under
/// `prefix` (keeping each key's lease). Returns how many were made.
pub async fn run(client: &Client, prefix: &str, leases: &[i64], rate: usize, secs: f64) -> usize {
    let n = leases.len();
    // Ticks of 10 ms carry rate/100 puts each (at least one per tick's share).
    let tick = Duration::from_millis(10);
    let per_tick = (rate / 100).max(1);
    let every = if rate >= 100 {
        tick
    } else {
        Duration::from_secs_f64(1.0 / rate as f64)
    };
    let total = (rate as f64 * secs) as usize;
    let mut interval = tokio::time::interval(every);
    let mut seq = 0;
    while seq < total {
        interval.tick().await;
        let batch: Vec<usize> = (seq..(seq + per_tick).min(total)).collect();
        seq += batch.len();
        futures::stream::iter(batch)
            .map(|s| {
                let mut c = client.clone();
                let e = (s * 7919) % n;
                let opts = PutOptions::new().with_lease(leases[e]);
                async move {
                    c.put(format!("{prefix}e{e:06}"), value(s), Some(opts))
                        .await
                        .expect("change put");
                }
            })
            .buffer_unordered(64)
            .collect::<Vec<()>>()
            .await;
    }
    total
}
