//! An `etcd-election` participant (seed 001; the same keys as etcd's election API and
//! `etcdctl elect`): one key `<election>/<lease hex>` on its own lease; the lowest
//! create_revision leads. Unlike Go's `concurrency.Election`, it watches its own key, so an
//! operator's resign (key deleted) is noticed at once and it rejoins the line.

use anyhow::Result;
use etcd_client::{
    Compare, CompareOp, GetOptions, PutOptions, SortOrder, SortTarget, Txn, TxnOp, WatchOptions,
};
use tokio_util::sync::CancellationToken;

use super::lease::Wake;
use super::{Belief, Ended, RESIGN_LIMIT, Reporter, Timing, within};
use crate::cli::NodeArgs;
use crate::config::EtcdSource;
use crate::model::escape_bytes;

pub async fn run(
    cfg: &EtcdSource,
    args: &NodeArgs,
    t: Timing,
    report: &Reporter,
    stop: CancellationToken,
) -> Result<()> {
    let dir = format!("{}{}/", cfg.prefix, args.election);
    super::sessions(
        t,
        report,
        &stop,
        async |r: &Reporter, kept: &mut Option<i64>| {
            session(cfg, &dir, args, t, r, &stop, kept).await
        },
    )
    .await
}

async fn session(
    cfg: &EtcdSource,
    dir: &str,
    args: &NodeArgs,
    t: Timing,
    report: &Reporter,
    stop: &CancellationToken,
    kept: &mut Option<i64>,
) -> Result<Ended> {
    let limit = t.call_limit();
    let (mut client, mut lease) = super::lease::connect(cfg, t, *kept).await?;
    *kept = Some(lease.id);
    let key = format!("{dir}{:x}", lease.id);
    let mut watch = within(
        limit,
        "a watch",
        client.watch(dir, Some(WatchOptions::new().with_prefix())),
    )
    .await?;
    let mut tick = tokio::time::interval(t.renew);
    tick.tick().await;
    loop {
        // Join the line if our key is not there (first time, or an operator deleted it).
        let join = Txn::new()
            .when([Compare::create_revision(key.clone(), CompareOp::Equal, 0)])
            .and_then([TxnOp::put(
                key.clone(),
                args.id.clone(),
                Some(PutOptions::new().with_lease(lease.id)),
            )]);
        if lease.txn(&mut client, join).await?.is_none() {
            return Ok(Ended::LeaseLost);
        }
        let opts = GetOptions::new()
            .with_prefix()
            .with_sort(SortTarget::Create, SortOrder::Ascend)
            .with_limit(1);
        let first = within(limit, "a read", client.get(dir, Some(opts))).await?;
        match first.kvs().first() {
            // Ours for as long as our lease surely lives.
            Some(kv) if kv.key() == key.as_bytes() => report.lead(lease.until),
            Some(kv) => report.believe(Belief::Follower {
                leader: Some(escape_bytes(kv.value())),
            }),
            None => report.believe(Belief::Follower { leader: None }),
        }
        match super::lease::next_wake(stop, &mut tick, &mut lease, &mut watch).await? {
            Wake::Look => {}
            Wake::LeaseLost => return Ok(Ended::LeaseLost),
            Wake::Stop => {
                // Resign: delete our key, and end the session so nobody waits for its TTL.
                let _ = tokio::time::timeout(RESIGN_LIMIT, client.delete(key.clone(), None)).await;
                lease.revoke(&mut client).await;
                report.say("resigned");
                return Ok(Ended::Stopped);
            }
        }
    }
}
