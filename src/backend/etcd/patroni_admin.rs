//! A Patroni switchover, written as `patronictl switchover` writes it through etcd: the
//! `failover` key = `{"leader":A,"member":X}`, guarded by the leader key as seen (value and
//! mod revision) and by the `failover` key as seen. Patroni's leader carries it out.

use etcd_client::{Client, Compare, CompareOp, Txn, TxnOp};

use crate::admin::patroni::{check_target, failover_key, failover_note, failover_value};
use crate::admin::{Outcome, changed_since};
use crate::model::{Election, escape_bytes};

pub async fn switchover(
    client: &mut Client,
    e: &Election,
    target: &str,
) -> Result<Outcome, etcd_client::Error> {
    if let Err(reason) = check_target(e, target) {
        return Ok(Outcome::Refused { reason });
    }
    let Some(l) = e.leader.as_ref() else {
        return Ok(Outcome::Refused {
            reason: format!("{} has no leader", e.name),
        });
    };
    let key = failover_key(&l.raw_key);
    let failover_cmp = match failover_note(e) {
        Some(n) => Compare::mod_revision(key.clone(), CompareOp::Equal, n.mod_revision),
        None => Compare::version(key.clone(), CompareOp::Equal, 0),
    };
    let value = failover_value(&l.id, target);
    let txn = Txn::new()
        .when([
            Compare::value(l.raw_key.clone(), CompareOp::Equal, l.raw_id.clone()),
            Compare::mod_revision(l.raw_key.clone(), CompareOp::Equal, l.mod_revision),
            failover_cmp,
        ])
        .and_then([TxnOp::put(key.clone(), value.clone(), None)]);
    if client.txn(txn).await?.succeeded() {
        return Ok(Outcome::Done {
            detail: format!(
                "{} = {value}: Patroni's leader {} hands over to {target} (a Patroni switchover)",
                escape_bytes(&key),
                l.id
            ),
        });
    }
    let now = client.get(l.raw_key.clone(), None).await?;
    let leader_now = match now.kvs().first() {
        Some(kv) => format!(
            "the leader key holds {} (mod_revision {})",
            escape_bytes(kv.value()),
            kv.mod_revision()
        ),
        None => "the cluster has no leader".to_string(),
    };
    Ok(Outcome::Changed {
        detail: changed_since(&format!(
            "{leader_now}, or a switchover was requested meanwhile"
        )),
    })
}
