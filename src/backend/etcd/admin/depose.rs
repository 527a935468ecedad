//! Deposing etcd-election candidates (force re-election, force-leader) so that no deposed
//! participant is told it leads while another one does.
//!
//! Why this order: election clients (etcd's Go `concurrency`, Node `etcd3`, `etcdctl elect`)
//! wait in `Campaign` on the keys ahead of them only, and learn that their session ended only
//! at their next keep-alive (every third of the lease's TTL). Deleting or revoking the keys
//! ahead of the new leader therefore elects it at once, and also "elects" every removed waiter
//! and leaves the old leader leading in its own mind until its next keep-alive. So the plan
//! (`plan/election.rs`) is:
//!
//! 1. one txn checks every deposed key's create_revision and lease (and the target's
//!    create_revision) as the operator saw them, and moves those keys onto a *hold* lease of
//!    electop's, keeping their values; a key keeps its create_revision when re-put, so the
//!    line does not move and nobody is elected yet;
//! 2. their own leases are revoked: their sessions end, and each owner notices at its next
//!    keep-alive, within a third of its TTL;
//! 3. the hold lease outlives that keep-alive interval (by `HOLD_SLACK_SECS`); when it
//!    expires, etcd deletes the held keys and the next in line is elected, after the deposed
//!    were told. The store does this step itself, so it happens even if electop exits (the
//!    CLI does right away).
//!
//! This file carries out the steps that take more than one request: granting the hold lease
//! and revoking.

use std::time::Duration;

use etcd_client::Client;

use crate::backend::etcd::plan::hold_secs;

/// A lease to hold the deposed keys on, lasting past the keep-alive interval of `leases` as
/// they are now (their TTLs are read again: the plan was made from what was seen). `Ok(Err)`
/// names a lease that has ended since: the line is not as seen.
pub(crate) async fn grant_hold(
    client: &mut Client,
    leases: &[i64],
) -> Result<Result<(i64, i64), String>, etcd_client::Error> {
    let mut ttls = Vec::with_capacity(leases.len());
    for lease in leases {
        let granted = client.lease_time_to_live(*lease, None).await?;
        if granted.ttl() < 0 {
            return Ok(Err(format!("the lease {lease:x} has ended")));
        }
        ttls.push(granted.granted_ttl());
    }
    let secs = hold_secs(&ttls);
    Ok(Ok((client.lease_grant(secs, None).await?.id(), secs)))
}

/// Revokes every lease, each bounded by `timeout`; the errors, one per lease not revoked.
/// Runs as its own task: once the keys are held, a revoke left undone leaves its owner
/// believing it leads, so an outer deadline or a dropped caller must not cut it short.
pub(crate) async fn revoke_all(client: &Client, leases: &[i64], timeout: Duration) -> Vec<String> {
    let (client, leases) = (client.clone(), leases.to_vec());
    let task = tokio::spawn(async move {
        let mut client = client;
        let mut errors = Vec::new();
        for lease in leases {
            match tokio::time::timeout(timeout, revoke(&mut client, lease)).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => errors.push(format!("lease {lease:x}: {e}")),
                Err(_) => errors.push(format!("lease {lease:x}: no answer within {timeout:?}")),
            }
        }
        errors
    });
    task.await
        .unwrap_or_else(|e| vec![format!("the revoke task failed: {e}")])
}

/// Revokes `lease`, trying twice: once its key is held, a revoke that does not happen leaves
/// its owner believing it leads. Already gone (expired since) ends the session all the same.
async fn revoke(client: &mut Client, lease: i64) -> Result<(), etcd_client::Error> {
    let gone = |e: &etcd_client::Error| e.to_string().contains("not found");
    match client.lease_revoke(lease).await {
        Ok(_) => return Ok(()),
        Err(e) if gone(&e) => return Ok(()),
        Err(_) => {}
    }
    match client.lease_revoke(lease).await {
        Ok(_) => Ok(()),
        Err(e) if gone(&e) => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::hold_secs;

    #[test]
    fn the_hold_outlasts_a_third_of_the_longest_ttl() {
        assert_eq!(hold_secs(&[60]), 22);
        assert_eq!(hold_secs(&[3, 10]), 6);
        assert_eq!(hold_secs(&[2]), 3);
        assert_eq!(hold_secs(&[]), 2, "zombie keys only: just the slack");
    }
}
