//! Deposing etcd-election candidates (force re-election, force-leader) so that no deposed
//! participant is told it leads while another one does.
//!
//! Why this order: election clients (etcd's Go `concurrency`, Node `etcd3`, `etcdctl elect`)
//! wait in `Campaign` on the keys ahead of them only, and learn that their session ended only
//! at their next keep-alive (every third of the lease's TTL). Deleting or revoking the keys
//! ahead of the new leader therefore elects it at once, and also "elects" every removed waiter
//! and leaves the old leader leading in its own mind until its next keep-alive. So:
//!
//! 1. one txn checks every deposed key's create_revision and lease (and the target's
//!    create_revision) as the operator saw them, and moves those keys onto a *hold* lease of
//!    electop's, keeping their values; a key keeps its create_revision when re-put, so the
//!    line does not move and nobody is elected yet;
//! 2. their own leases are revoked: their sessions end, and each owner notices at its next
//!    keep-alive, within a third of its TTL;
//! 3. the hold lease outlives that keep-alive interval (by `HOLD_SLACK_SECS`); when it expires, etcd deletes the held
//!    keys and the next in line is elected, after the deposed were told. The store does this
//!    step itself, so it happens even if electop exits (the CLI does right away).

use etcd_client::{Client, Compare, CompareOp, PutOptions, Txn, TxnOp};

use crate::model::Candidate;

/// Added to a third of the longest deposed TTL: Go's keep-alive loop ticks every 500 ms, the
/// keep-alive takes a round trip, and the client must still act on the answer; measured, the
/// deposed were told up to 0.5 s after a third of their TTL, so 1 s would leave too little.
pub const HOLD_SLACK_SECS: i64 = 2;

pub enum Deposed {
    /// Sessions ended; the held keys go when `hold_lease` expires in `hold_secs`.
    Done {
        revoked: Vec<i64>,
        hold_lease: i64,
        hold_secs: i64,
    },
    /// Not as seen: nothing was written. The text says what differs.
    Changed(String),
    /// The keys are held, but these leases could not be revoked: unless someone revokes them
    /// before the hold ends, their owners will not notice they were deposed.
    Unrevoked { errors: String, hold_secs: i64 },
}

/// How long the deposed keys are held: past the keep-alive interval of the longest lease.
pub fn hold_secs(granted_ttls: &[i64]) -> i64 {
    let longest = granted_ttls.iter().copied().max().unwrap_or(0);
    (longest + 2) / 3 + HOLD_SLACK_SECS
}

/// Ends the sessions of `deposed` (in line order) and holds their keys until their owners
/// must have noticed; `target`, when given, must still be in line as seen.
pub async fn depose(
    client: &mut Client,
    deposed: &[Candidate],
    target: Option<&Candidate>,
) -> Result<Deposed, etcd_client::Error> {
    // Keys without a lease (zombies) have no session to end; they are held all the same.
    let owned: Vec<(&Candidate, i64)> = deposed
        .iter()
        .filter_map(|c| c.lease.filter(|l| *l != 0).map(|l| (c, l)))
        .collect();
    let leases: Vec<i64> = owned.iter().map(|(_, l)| *l).collect();
    let mut ttls = Vec::with_capacity(owned.len());
    for (c, lease) in owned {
        let granted = client.lease_time_to_live(lease, None).await?;
        if granted.ttl() < 0 {
            return Ok(Deposed::Changed(format!(
                "the lease {lease:x} of {} has ended",
                c.id
            )));
        }
        ttls.push(granted.granted_ttl());
    }
    let hold_secs = hold_secs(&ttls);
    let hold_lease = client.lease_grant(hold_secs, None).await?.id();
    if !client
        .txn(hold_txn(deposed, target, hold_lease))
        .await?
        .succeeded()
    {
        // Unused: let it go now rather than at its expiry.
        let _ = client.lease_revoke(hold_lease).await;
        return Ok(Deposed::Changed(String::new()));
    }
    let mut errors = Vec::new();
    for lease in &leases {
        if let Err(e) = revoke(client, *lease).await {
            errors.push(format!("lease {lease:x}: {e}"));
        }
    }
    if !errors.is_empty() {
        return Ok(Deposed::Unrevoked {
            errors: errors.join("; "),
            hold_secs,
        });
    }
    Ok(Deposed::Done {
        revoked: leases,
        hold_lease,
        hold_secs,
    })
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

/// Compares the line as seen, then re-puts each deposed key with its own value on the hold
/// lease, detaching it from the lease that is about to be revoked.
fn hold_txn(deposed: &[Candidate], target: Option<&Candidate>, hold_lease: i64) -> Txn {
    let mut compares: Vec<Compare> = deposed
        .iter()
        .chain(target)
        .map(|c| Compare::create_revision(c.raw_key.clone(), CompareOp::Equal, c.create_revision))
        .collect();
    compares.extend(
        deposed
            .iter()
            .map(|c| Compare::lease(c.raw_key.clone(), CompareOp::Equal, c.lease.unwrap_or(0))),
    );
    let holds: Vec<TxnOp> = deposed
        .iter()
        .map(|c| {
            TxnOp::put(
                c.raw_key.clone(),
                Vec::<u8>::new(),
                Some(PutOptions::new().with_lease(hold_lease).with_ignore_value()),
            )
        })
        .collect();
    Txn::new().when(compares).and_then(holds)
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
