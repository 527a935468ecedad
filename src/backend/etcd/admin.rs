//! Admin actions on etcd elections: transactions whose compares hold what the operator saw
//! (revisions, values, leases), so a store that changed since is left untouched.

use std::time::Duration;

use etcd_client::{
    Client, Compare, CompareOp, GetOptions, PutOptions, SortOrder, SortTarget, Txn, TxnOp,
};

use crate::admin::{ActionKind, AdminRequest, Outcome, changed_since, plan};
use crate::config::EtcdSource;
use crate::model::{Candidate, Scheme, escape_bytes};

pub async fn execute(cfg: &EtcdSource, req: &AdminRequest, timeout: Duration) -> Outcome {
    if let Err(reason) = plan(req) {
        return Outcome::Refused { reason };
    }
    let fut = async {
        // Members in order, so a dead first member does not fail the action.
        let (mut client, i) = super::connect::connect_any(cfg, 0, timeout)
            .await
            .map_err(|e| e.to_string())?;
        let endpoint = cfg.endpoints.get(i).map_or("?", String::as_str);
        run(cfg, &mut client, req)
            .await
            .map_err(|e| format!("etcd {endpoint}: {e}"))
    };
    match tokio::time::timeout(timeout * 2, fut).await {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(error)) => Outcome::Failed { error },
        Err(_) => Outcome::Failed {
            error: format!(
                "etcd {}: no answer within {:?}",
                cfg.endpoints.join(","),
                timeout * 2
            ),
        },
    }
}

fn leader(req: &AdminRequest) -> Result<&Candidate, Outcome> {
    req.seen.leader.as_ref().ok_or_else(|| Outcome::Refused {
        reason: format!("election {} has no leader", req.seen.name),
    })
}

/// The election's directory for etcd-election keys: the leader key up to its last `/`.
fn election_dir(key: &[u8]) -> Vec<u8> {
    match key.iter().rposition(|b| *b == b'/') {
        Some(i) => key[..=i].to_vec(),
        None => key.to_vec(),
    }
}

async fn run(
    cfg: &EtcdSource,
    client: &mut Client,
    req: &AdminRequest,
) -> Result<Outcome, etcd_client::Error> {
    let e = &req.seen;
    Ok(match (e.scheme, &req.kind) {
        (Scheme::EtcdElection, ActionKind::Resign) => {
            let l = match leader(req) {
                Ok(l) => l,
                Err(o) => return Ok(o),
            };
            let txn = Txn::new()
                .when([Compare::create_revision(
                    l.raw_key.clone(),
                    CompareOp::Equal,
                    l.create_revision,
                )])
                .and_then([TxnOp::delete(l.raw_key.clone(), None)]);
            if client.txn(txn).await?.succeeded() {
                Outcome::Done {
                    detail: format!("deleted {}; {}", l.key, line_now(client, &l.raw_key).await?),
                }
            } else {
                Outcome::Changed {
                    detail: changed_since(&format!(
                        "{} no longer holds {}; {}",
                        l.id,
                        l.key,
                        line_now(client, &l.raw_key).await?
                    )),
                }
            }
        }
        (Scheme::EtcdElection, ActionKind::Reelect) => {
            let l = match leader(req) {
                Ok(l) => l,
                Err(o) => return Ok(o),
            };
            let lease = l.lease.unwrap_or(0);
            let txn = Txn::new().when([
                Compare::create_revision(l.raw_key.clone(), CompareOp::Equal, l.create_revision),
                Compare::lease(l.raw_key.clone(), CompareOp::Equal, lease),
            ]);
            if !client.txn(txn).await?.succeeded() {
                return Ok(Outcome::Changed {
                    detail: changed_since(&format!(
                        "{} no longer holds {}; {}",
                        l.id,
                        l.key,
                        line_now(client, &l.raw_key).await?
                    )),
                });
            }
            match client.lease_revoke(lease).await {
                Ok(_) => Outcome::Done {
                    detail: format!(
                        "revoked lease {lease:x} of {}; {}",
                        l.id,
                        line_now(client, &l.raw_key).await?
                    ),
                },
                Err(err) if err.to_string().contains("not found") => Outcome::Changed {
                    detail: changed_since(&format!("lease {lease:x} had already ended")),
                },
                Err(err) => return Err(err),
            }
        }
        (Scheme::EtcdElection, ActionKind::ForceLeader { target }) => {
            let Some(i) = e.candidates.iter().position(|c| c.id == *target) else {
                return Ok(Outcome::Refused {
                    reason: format!("{target} is not in the line of {}", e.name),
                });
            };
            let ahead = &e.candidates[..i];
            let compares: Vec<Compare> = e.candidates[..=i]
                .iter()
                .map(|c| {
                    Compare::create_revision(c.raw_key.clone(), CompareOp::Equal, c.create_revision)
                })
                .collect();
            let deletes: Vec<TxnOp> = ahead
                .iter()
                .map(|c| TxnOp::delete(c.raw_key.clone(), None))
                .collect();
            let txn = Txn::new().when(compares).and_then(deletes);
            if !client.txn(txn).await?.succeeded() {
                return Ok(Outcome::Changed {
                    detail: changed_since(&format!(
                        "the line of {} is not as shown; {}",
                        e.name,
                        line_now(client, &e.candidates[i].raw_key).await?
                    )),
                });
            }
            for lease in ahead.iter().filter_map(|c| c.lease).filter(|l| *l != 0) {
                // Already gone is fine: the key is deleted either way.
                let _ = client.lease_revoke(lease).await;
            }
            let removed: Vec<&str> = ahead.iter().map(|c| c.id.as_str()).collect();
            Outcome::Done {
                detail: format!(
                    "removed {} from the line; {}",
                    removed.join(", "),
                    line_now(client, &e.candidates[i].raw_key).await?
                ),
            }
        }
        (Scheme::EtcdLeaseKey, ActionKind::Reelect | ActionKind::Resign) => {
            let l = match leader(req) {
                Ok(l) => l,
                Err(o) => return Ok(o),
            };
            let mut compares = vec![Compare::mod_revision(
                l.raw_key.clone(),
                CompareOp::Equal,
                l.mod_revision,
            )];
            if req.kind == ActionKind::Resign {
                compares.push(Compare::value(
                    l.raw_key.clone(),
                    CompareOp::Equal,
                    l.raw_id.clone(),
                ));
            }
            let txn = Txn::new()
                .when(compares)
                .and_then([TxnOp::delete(l.raw_key.clone(), None)]);
            if client.txn(txn).await?.succeeded() {
                Outcome::Done {
                    detail: format!(
                        "deleted {} (held by {}); candidates race again",
                        l.key, l.id
                    ),
                }
            } else {
                Outcome::Changed {
                    detail: changed_since(&key_now(client, &l.raw_key).await?),
                }
            }
        }
        (Scheme::EtcdLeaseKey, ActionKind::ForceLeader { target }) => {
            let leader_key = match &e.leader {
                Some(l) => l.raw_key.clone(),
                None => [cfg.prefix.as_bytes(), e.name.as_bytes()].concat(),
            };
            let Some(entry) = e.candidates.iter().find(|c| {
                c.id == *target && c.raw_key != leader_key && c.lease.is_some_and(|l| l != 0)
            }) else {
                return Ok(Outcome::Refused {
                    reason: format!(
                        "{target} has no registry entry: no lease to attach the leader key to"
                    ),
                });
            };
            let lease = entry.lease.unwrap_or(0);
            let key_cmp = match &e.leader {
                Some(l) => {
                    Compare::mod_revision(leader_key.clone(), CompareOp::Equal, l.mod_revision)
                }
                None => Compare::version(leader_key.clone(), CompareOp::Equal, 0),
            };
            let txn = Txn::new()
                .when([
                    key_cmp,
                    Compare::create_revision(
                        entry.raw_key.clone(),
                        CompareOp::Equal,
                        entry.create_revision,
                    ),
                ])
                .and_then([TxnOp::put(
                    leader_key.clone(),
                    entry.raw_id.clone(),
                    Some(PutOptions::new().with_lease(lease)),
                )]);
            if client.txn(txn).await?.succeeded() {
                Outcome::Done {
                    detail: format!(
                        "{} = {target} with its registry lease {lease:x}",
                        escape_bytes(&leader_key)
                    ),
                }
            } else {
                Outcome::Changed {
                    detail: changed_since(&key_now(client, &leader_key).await?),
                }
            }
        }
        (Scheme::Patroni, ActionKind::ForceLeader { target }) => {
            super::patroni_admin::switchover(client, e, target).await?
        }
        (scheme, _) => Outcome::Refused {
            reason: format!("{scheme} is not an etcd scheme"),
        },
    })
}

/// Who leads the etcd-election that `key` is in, now.
async fn line_now(client: &mut Client, key: &[u8]) -> Result<String, etcd_client::Error> {
    let dir = election_dir(key);
    let opts = GetOptions::new()
        .with_prefix()
        .with_sort(SortTarget::Create, SortOrder::Ascend)
        .with_limit(1);
    let resp = client.get(dir, Some(opts)).await?;
    Ok(match resp.kvs().first() {
        Some(kv) => format!("leader now {}", escape_bytes(kv.value())),
        None => "no candidates left".to_string(),
    })
}

/// What a lease key holds now.
async fn key_now(client: &mut Client, key: &[u8]) -> Result<String, etcd_client::Error> {
    let resp = client.get(key.to_vec(), None).await?;
    Ok(match resp.kvs().first() {
        Some(kv) => format!(
            "{} now holds {} (mod_revision {})",
            escape_bytes(key),
            escape_bytes(kv.value()),
            kv.mod_revision()
        ),
        None => format!("{} is gone", escape_bytes(key)),
    })
}
