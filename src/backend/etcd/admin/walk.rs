//! Carries out a plan's etcd steps as they are: each plan compare becomes an etcd compare,
//! each op a txn op, so what is written is what the confirmation showed.

use etcd_client::{Client, Compare as EtcdCompare, CompareOp, PutOptions, Txn, TxnOp};

use super::depose;
use crate::admin::{Check, Compare};
use crate::backend::etcd::plan::{EtcdStep, Op};

/// How far a plan got before its revokes (always its last steps).
pub(super) enum Walked {
    /// Written. `hold` is the hold lease and its seconds when keys were held; `revoke` the
    /// leases still to revoke.
    Written {
        hold: Option<(i64, i64)>,
        revoke: Vec<i64>,
    },
    /// Not as seen: nothing was written. The text says what differs, when known.
    Changed(String),
}

pub(super) async fn walk(
    client: &mut Client,
    steps: &[&EtcdStep],
) -> Result<Walked, etcd_client::Error> {
    let mut hold = None;
    let mut revoke = Vec::new();
    for step in steps {
        match step {
            EtcdStep::GrantHold { leases, .. } => match depose::grant_hold(client, leases).await? {
                Ok(h) => hold = Some(h),
                Err(why) => return Ok(Walked::Changed(why)),
            },
            EtcdStep::Txn { compares, then } => {
                let txn = txn(compares, then, hold.map(|(lease, _)| lease));
                if !client.txn(txn).await?.succeeded() {
                    if let Some((lease, _)) = hold {
                        // Unused: let it go now rather than at its expiry.
                        let _ = client.lease_revoke(lease).await;
                    }
                    return Ok(Walked::Changed(String::new()));
                }
            }
            EtcdStep::Revoke { leases, .. } => revoke.extend(leases),
        }
    }
    Ok(Walked::Written { hold, revoke })
}

fn txn(compares: &[Compare], then: &[Op], hold: Option<i64>) -> Txn {
    let compares: Vec<EtcdCompare> = compares
        .iter()
        .map(|c| {
            let k = c.key.raw.clone();
            match &c.check {
                Check::CreateRevision(r) => EtcdCompare::create_revision(k, CompareOp::Equal, *r),
                Check::ModRevision(r) => EtcdCompare::mod_revision(k, CompareOp::Equal, *r),
                Check::Value(v, _) => EtcdCompare::value(k, CompareOp::Equal, v.clone()),
                Check::Lease(l) => EtcdCompare::lease(k, CompareOp::Equal, *l),
                Check::Absent => EtcdCompare::version(k, CompareOp::Equal, 0),
            }
        })
        .collect();
    let ops: Vec<TxnOp> = then
        .iter()
        .map(|o| match o {
            Op::Delete(k) => TxnOp::delete(k.raw.clone(), None),
            Op::Put {
                key, value, lease, ..
            } => TxnOp::put(
                key.raw.clone(),
                value.clone(),
                Some(PutOptions::new().with_lease(*lease)),
            ),
            Op::Hold(k) => TxnOp::put(
                k.raw.clone(),
                Vec::<u8>::new(),
                Some(
                    PutOptions::new()
                        .with_lease(hold.unwrap_or(0))
                        .with_ignore_value(),
                ),
            ),
        })
        .collect();
    Txn::new().when(compares).and_then(ops)
}
