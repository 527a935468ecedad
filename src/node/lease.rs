//! What both etcd participants share: a connection and a lease kept alive, every call
//! bounded so that a node cut off from etcd gives up when its lease could have run out.

use anyhow::{Context, Result};
use etcd_client::{Client, LeaseKeepAliveStream, LeaseKeeper, Txn, TxnResponse, WatchStream};
use tokio_util::sync::CancellationToken;

use super::{RESIGN_LIMIT, Timing, within};
use crate::config::EtcdSource;

pub struct Lease {
    pub id: i64,
    keeper: LeaseKeeper,
    alive: LeaseKeepAliveStream,
    limit: std::time::Duration,
}

/// Connects and takes up the lease `kept` if it is still alive, or grants a new one of
/// `t.ttl`; [`Lease::renew`] keeps it alive.
pub async fn connect(cfg: &EtcdSource, t: Timing, kept: Option<i64>) -> Result<(Client, Lease)> {
    let limit = t.call_limit();
    let (mut client, _) = within(
        limit,
        "a connection",
        crate::backend::etcd::connect::connect_any(cfg, 0, limit),
    )
    .await
    .context("connecting to etcd")?;
    let alive = match kept {
        Some(id) => {
            within(limit, "a lease lookup", client.lease_time_to_live(id, None))
                .await?
                .ttl()
                > 0
        }
        None => false,
    };
    let id = match kept {
        Some(id) if alive => id,
        _ => {
            let grant = client.lease_grant(t.ttl.as_secs() as i64, None);
            within(limit, "a lease grant", grant).await?.id()
        }
    };
    let (keeper, alive) = within(limit, "a keep-alive", client.lease_keep_alive(id)).await?;
    Ok((
        client,
        Lease {
            id,
            keeper,
            alive,
            limit,
        },
    ))
}

impl Lease {
    /// One keep-alive. False when the lease is gone (expired or revoked).
    pub async fn renew(&mut self) -> Result<bool> {
        within(self.limit, "a keep-alive", self.keeper.keep_alive()).await?;
        Ok(
            matches!(within(self.limit, "a keep-alive", self.alive.message()).await?, Some(r) if r.ttl() > 0),
        )
    }

    /// A transaction that writes with this lease, bounded: `None` when etcd says the lease
    /// is gone (start over with a new one), an error when etcd does not answer.
    pub async fn txn(&self, client: &mut Client, txn: Txn) -> Result<Option<TxnResponse>> {
        match tokio::time::timeout(self.limit, client.txn(txn)).await {
            Err(_) => anyhow::bail!("the store did not answer within {:?}", self.limit),
            Ok(Err(e)) if e.to_string().contains("lease not found") => Ok(None),
            Ok(Err(e)) => Err(e.into()),
            Ok(Ok(r)) => Ok(Some(r)),
        }
    }

    /// Ends the lease on the way out, so nobody waits for its TTL; bounded.
    pub async fn revoke(&self, client: &mut Client) {
        let _ = tokio::time::timeout(RESIGN_LIMIT, client.lease_revoke(self.id)).await;
    }
}

/// What woke a participant up.
pub enum Wake {
    /// SIGINT/SIGTERM: resign and go.
    Stop,
    /// The lease is gone: start over.
    LeaseLost,
    /// The watched keys changed, or a renewal went through: look again.
    Look,
}

/// Waits for the next thing to act on: a stop, the renew tick (renewing the lease), or a
/// change on the watch.
pub async fn next_wake(
    stop: &CancellationToken,
    tick: &mut tokio::time::Interval,
    lease: &mut Lease,
    watch: &mut WatchStream,
) -> Result<Wake> {
    tokio::select! {
        _ = stop.cancelled() => Ok(Wake::Stop),
        _ = tick.tick() => Ok(if lease.renew().await? { Wake::Look } else { Wake::LeaseLost }),
        msg = watch.message() => match msg? {
            Some(_) => Ok(Wake::Look),
            None => anyhow::bail!("the watch ended"),
        },
    }
}
