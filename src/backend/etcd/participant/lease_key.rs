//! An `etcd-lease-key` participant ("Adding leader election to your application using etcd",
//! and "Leader Election using etcd from C#" for the registry): a lease kept alive, a registry entry
//! `<registry><election>/<id>` on it (when a registry is configured), and the leader key
//! taken with `Txn(If version == 0, Then Put(key, id, lease), Else Get(key))`. It watches the
//! key: a delete starts a new race, a put says who leads (including an operator's choice).
//! A leader that sees either says at once that it was deposed, whoever wins the new race.

use anyhow::Result;
use etcd_client::{Client, Compare, CompareOp, PutOptions, Txn, TxnOp};
use tokio_util::sync::CancellationToken;

use super::lease::{Lease, Wake, first_kv};
use super::{Ended, sessions};
use crate::config::EtcdSource;
use crate::model::escape_bytes;
use crate::node::Options;
use crate::node::{Belief, RESIGN_LIMIT, Reporter, Timing, within};

pub(super) async fn run(
    cfg: &EtcdSource,
    args: &Options,
    t: Timing,
    report: &Reporter,
    stop: CancellationToken,
) -> Result<()> {
    sessions(
        t,
        report,
        &stop,
        async |r: &Reporter, kept: &mut Option<i64>| session(cfg, args, t, r, &stop, kept).await,
    )
    .await
}

async fn session(
    cfg: &EtcdSource,
    args: &Options,
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
    // Whether our last look found the key ours: finding it free then means it was deleted.
    let mut led = false;
    loop {
        let Some(now_leads) = look(&mut client, &lease, &key, &args.id, led, report).await? else {
            return Ok(Ended::LeaseLost);
        };
        led = now_leads;
        match super::lease::next_wake(stop, &mut tick, &mut lease, &mut watch).await? {
            Wake::Look => {}
            Wake::LeaseLost => return Ok(Ended::LeaseLost),
            Wake::Stop => {
                report.believe(Belief::Stopped);
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

/// Takes the key if it is free, else reads who holds it, and says what that means; `None`
/// when our lease is gone. `led`: our last look found the key ours, so finding it free now
/// means it was deleted in between (a resign or a forced re-election), and we were deposed
/// even if we win the new race.
async fn look(
    client: &mut Client,
    lease: &Lease,
    key: &str,
    id: &str,
    led: bool,
    report: &Reporter,
) -> Result<Option<bool>> {
    let txn = Txn::new()
        .when([Compare::version(key, CompareOp::Equal, 0)])
        .and_then([TxnOp::put(
            key,
            id,
            Some(PutOptions::new().with_lease(lease.id)),
        )])
        .or_else([TxnOp::get(key, None)]);
    let Some(resp) = lease.txn(client, txn).await? else {
        return Ok(None);
    };
    let holder = if resp.succeeded() {
        if led {
            report.depose("my key was deleted (resign or forced re-election)");
        }
        Some((id.as_bytes().to_vec(), lease.id))
    } else {
        first_kv(&resp).map(|kv| (kv.value().to_vec(), kv.lease()))
    };
    Ok(Some(match holder {
        // Ours when it names us on our lease (an operator's force-leader uses our registry
        // lease), for as long as that lease surely lives.
        Some((v, l)) if v == id.as_bytes() && l == lease.id => {
            report.lead(lease.until);
            true
        }
        Some((v, _)) => {
            let leader = escape_bytes(&v);
            report.depose(&format!("the key names {leader} now"));
            report.believe(Belief::Follower {
                leader: Some(leader),
            });
            false
        }
        None => {
            report.depose("the key is gone");
            report.believe(Belief::Follower { leader: None });
            false
        }
    }))
}
