//! Admin actions on etcd elections: the plan's transactions, whose compares hold what the
//! operator saw (revisions, values, leases), so a store that changed since is left untouched.

use std::time::Duration;

use etcd_client::{Client, GetOptions, SortOrder, SortTarget};

use super::plan::{EtcdStep, Readback, hex_list};
use crate::admin::{AdminRequest, Outcome, Plan, changed_since};
use crate::backend::plan;
use crate::config::EtcdSource;
use crate::model::escape_bytes;

pub(crate) mod depose;
mod walk;

use walk::Walked;

pub(crate) async fn execute(cfg: &EtcdSource, req: &AdminRequest, timeout: Duration) -> Outcome {
    let plan = match plan(req) {
        Ok(p) => p,
        Err(reason) => return Outcome::Refused { reason },
    };
    let steps = match plan.steps_of::<EtcdStep>() {
        Ok(steps) => steps,
        Err(why) => {
            return Outcome::Refused {
                reason: format!("{} is not an etcd scheme: {why}", req.seen.scheme),
            };
        }
    };
    // Members in order, so a dead first member does not fail the action.
    let (mut client, endpoint) =
        match super::dial::connect_any(cfg, 0, timeout, super::dial::Pings::Never).await {
            Ok((client, i)) => (client, cfg.endpoints.get(i).cloned().unwrap_or_default()),
            Err(e) => {
                return Outcome::Failed {
                    error: e.to_string(),
                };
            }
        };
    let failed = |e: etcd_client::Error| Outcome::Failed {
        error: format!("etcd {endpoint}: {e}"),
    };
    let walked = match tokio::time::timeout(timeout * 2, walk::walk(&mut client, &steps)).await {
        Ok(Ok(w)) => w,
        Ok(Err(e)) => return failed(e),
        Err(_) => {
            return Outcome::Failed {
                error: format!(
                    "etcd {endpoint}: no answer within {:?}; if the action's txn was applied, \
                     look at the election before trying again",
                    timeout * 2
                ),
            };
        }
    };
    // Revokes are bounded on their own (`depose::revoke_all`), never by the deadline above:
    // once keys are held, the sessions must be ended or reported as not ended.
    let unrevoked = match &walked {
        Walked::Written { revoke, .. } if !revoke.is_empty() => {
            depose::revoke_all(&client, revoke, timeout).await
        }
        _ => Vec::new(),
    };
    if let Walked::Written {
        hold: Some((_, secs)),
        ..
    } = walked
        && !unrevoked.is_empty()
    {
        return unrevoked_outcome(&unrevoked.join("; "), secs);
    }
    // What was written stands even when it cannot be read back: say so, not "failed".
    let now = match tokio::time::timeout(timeout, readback(&mut client, &plan)).await {
        Ok(Ok(now)) => now,
        Ok(Err(e)) => format!("it could not be read back: {e}"),
        Err(_) => "it could not be read back in time".to_string(),
    };
    outcome(&plan, &steps, walked, &now)
}

fn outcome(plan: &Plan, steps: &[&EtcdStep], walked: Walked, now: &str) -> Outcome {
    match walked {
        Walked::Changed(why) => Outcome::Changed {
            detail: changed_since(&format!(
                "the store is not as shown{}; {now}",
                because(&why)
            )),
        },
        Walked::Written {
            hold: Some((lease, secs)),
            ..
        } => {
            let revoked = steps.iter().find_map(|s| match s {
                EtcdStep::Revoke { leases, owners } => Some((hex_list(leases), owners.join(", "))),
                _ => None,
            });
            let (leases, owners) =
                revoked.unwrap_or_else(|| ("(none: no leases)".into(), "-".into()));
            Outcome::Done {
                detail: format!(
                    "revoked lease {leases} of {owners}: sessions end; the keys are held on \
                     lease {lease:x} for {secs} s so they are told first, then {}",
                    plan.then.as_deref().unwrap_or("they go")
                ),
            }
        }
        Walked::Written { hold: None, .. } => Outcome::Done {
            detail: format!("{}; {now}", plan.writes().join("; ")),
        },
    }
}

/// The keys are held but a session could not be ended: the operator must finish it.
fn unrevoked_outcome(errors: &str, hold_secs: i64) -> Outcome {
    Outcome::Failed {
        error: format!(
            "the deposed keys are held for {hold_secs} s, but their sessions could not be ended \
             ({errors}): revoke those leases (etcdctl lease revoke ID) before the hold ends, or \
             their owners will not notice they were deposed"
        ),
    }
}

/// " (why)", or nothing when there is no more to say.
fn because(why: &str) -> String {
    if why.is_empty() {
        String::new()
    } else {
        format!(" ({why})")
    }
}

/// What the store holds now where the action wrote (nothing to say when the plan names
/// nothing of etcd's to read).
async fn readback(client: &mut Client, plan: &Plan) -> Result<String, etcd_client::Error> {
    match plan.readback_of::<Readback>() {
        Some(Readback::Line(k)) => line_now(client, &k.raw).await,
        Some(Readback::Key(k)) => key_now(client, &k.raw).await,
        None => Ok(String::new()),
    }
}

/// The election's directory for etcd-election keys: the leader key up to its last `/`.
fn election_dir(key: &[u8]) -> Vec<u8> {
    match key.iter().rposition(|b| *b == b'/') {
        Some(i) => key[..=i].to_vec(),
        None => key.to_vec(),
    }
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
