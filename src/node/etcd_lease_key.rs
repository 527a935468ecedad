//! An `etcd-lease-key` participant (seeds 000 and 002): a lease kept alive, a registry entry
//! `<registry><election>/<id>` on it (when a registry is configured), and the leader key
//! taken with `Txn(If version == 0, Then Put(key, id, lease), Else Get(key))`. It watches the
//! key: a delete starts a new race, a put says who leads (including an operator's choice).

use anyhow::Result;
use etcd_client::{Compare, CompareOp, PutOptions, Txn, TxnOp};
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
    super::sessions(
        t,
        report,
        &stop,
        async |r: &Reporter, kept: &mut Option<i64>| session(cfg, args, t, r, &stop, kept).await,
    )
    .await
}

async fn session(
    cfg: &EtcdSource,
    args: &NodeArgs,
    t: Timing,
    report: &Reporter,
    stop: &CancellationToken,
    kept: &mut Option<i64>,
) -> Result<Ended> {
    let limit = t.call_limit();
    let (mut client, mut lease) = super::lease::connect(cfg, t, *kept).await?;
    *kept = Some(lease.id);
    let key = format!("{}{}", cfg.prefix, args.election);
    let entry = cfg
        .registry
        .as_ref()
        .map(|r| format!("{r}{}/{}", args.election, args.id));
    if let Some(entry) = &entry {
        let register = client.put(
            entry.clone(),
            args.id.clone(),
            Some(PutOptions::new().with_lease(lease.id)),
        );
        within(limit, "a registration", register).await?;
    }
    let mut watch = within(limit, "a watch", client.watch(key.clone(), None)).await?;
    let mut tick = tokio::time::interval(t.renew);
    tick.tick().await;
    loop {
        let txn = Txn::new()
            .when([Compare::version(key.clone(), CompareOp::Equal, 0)])
            .and_then([TxnOp::put(
                key.clone(),
                args.id.clone(),
                Some(PutOptions::new().with_lease(lease.id)),
            )])
            .or_else([TxnOp::get(key.clone(), None)]);
        let Some(resp) = lease.txn(&mut client, txn).await? else {
            return Ok(Ended::LeaseLost);
        };
        let holder = if resp.succeeded() {
            Some((args.id.as_bytes().to_vec(), lease.id))
        } else {
            resp.op_responses().into_iter().find_map(|op| match op {
                etcd_client::TxnOpResponse::Get(g) => {
                    g.kvs().first().map(|kv| (kv.value().to_vec(), kv.lease()))
                }
                _ => None,
            })
        };
        match holder {
            // Ours when it names us on our lease (an operator's force-leader uses our registry
            // lease), for as long as that lease surely lives.
            Some((v, l)) if v == args.id.as_bytes() && l == lease.id => report.lead(lease.until),
            Some((v, _)) => report.believe(Belief::Follower {
                leader: Some(escape_bytes(&v)),
            }),
            None => report.believe(Belief::Follower { leader: None }),
        }
        match super::lease::next_wake(stop, &mut tick, &mut lease, &mut watch).await? {
            Wake::Look => {}
            Wake::LeaseLost => return Ok(Ended::LeaseLost),
            Wake::Stop => {
                let mine = Txn::new()
                    .when([
                        Compare::value(key.clone(), CompareOp::Equal, args.id.clone()),
                        Compare::lease(key.clone(), CompareOp::Equal, lease.id),
                    ])
                    .and_then([TxnOp::delete(key.clone(), None)]);
                let _ = tokio::time::timeout(RESIGN_LIMIT, client.txn(mine)).await;
                lease.revoke(&mut client).await;
                report.say("resigned");
                return Ok(Ended::Stopped);
            }
        }
    }
}
