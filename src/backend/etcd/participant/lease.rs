//! What both etcd participants share: a connection and a lease kept alive, every call
//! bounded so that a node cut off from etcd gives up when its lease could have run out.

use std::time::Instant;

use anyhow::{Context, Result};
use etcd_client::{
    Client, KeyValue, LeaseKeepAliveStream, LeaseKeeper, Txn, TxnOpResponse, TxnResponse,
    WatchStream,
};
use tokio_util::sync::CancellationToken;

use crate::config::EtcdSource;
use crate::node::{RESIGN_LIMIT, Timing, term, within};

pub(super) struct Lease {
    pub id: i64,
    /// Until when the lease surely lives, counted from the request that last granted,
    /// found or renewed it ([`term::lead_until`]); a leader's belief ends then.
    pub until: Option<Instant>,
    keeper: LeaseKeeper,
    alive: LeaseKeepAliveStream,
    limit: std::time::Duration,
}

/// Connects and takes up the lease `kept` if it is still alive, or grants a new one of
/// `t.ttl`; [`Lease::renew`] keeps it alive.
pub(super) async fn connect(
    cfg: &EtcdSource,
    t: Timing,
    kept: Option<i64>,
) -> Result<(Client, Lease)> {
    let limit = t.call_limit();
    let (mut client, _) = within(
        limit,
        "a connection",
        crate::backend::etcd::dial::connect_any(
            cfg,
            0,
            limit,
            crate::backend::etcd::dial::Pings::Never,
        ),
    )
    .await
    .context("connecting to etcd")?;
    let mut found = None;
    if let Some(id) = kept {
        let sent = Instant::now();
        let ttl = within(limit, "a lease lookup", client.lease_time_to_live(id, None))
            .await?
            .ttl();
        if ttl > 0 {
            found = Some((id, until(sent, ttl)));
        }
    }
    let (id, until) = match found {
        Some(found) => found,
        None => {
            let sent = Instant::now();
            let grant = client.lease_grant(t.ttl.as_secs() as i64, None);
            let grant = within(limit, "a lease grant", grant).await?;
            (grant.id(), until(sent, grant.ttl()))
        }
    };
    let (keeper, alive) = within(limit, "a keep-alive", client.lease_keep_alive(id)).await?;
    Ok((
        client,
        Lease {
            id,
            until,
            keeper,
            alive,
            limit,
        },
    ))
}

/// A TTL in etcd's whole seconds, granted in answer to a request sent at `sent`.
fn until(sent: Instant, ttl_secs: i64) -> Option<Instant> {
    term::granted_ms(ttl_secs.saturating_mul(1_000)).and_then(|g| term::lead_until(sent, g))
}

impl Lease {
    /// One keep-alive. False when the lease is gone (expired or revoked).
    pub(super) async fn renew(&mut self) -> Result<bool> {
        let sent = Instant::now();
        within(self.limit, "a keep-alive", self.keeper.keep_alive()).await?;
        match within(self.limit, "a keep-alive", self.alive.message()).await? {
            Some(r) if r.ttl() > 0 => {
                self.until = until(sent, r.ttl());
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// A transaction that writes with this lease, bounded: `None` when etcd says the lease
    /// is gone (start over with a new one), an error when etcd does not answer.
    pub(super) async fn txn(&self, client: &mut Client, txn: Txn) -> Result<Option<TxnResponse>> {
        match tokio::time::timeout(self.limit, client.txn(txn)).await {
            Err(_) => anyhow::bail!("the store did not answer within {:?}", self.limit),
            Ok(Err(e)) if e.to_string().contains("lease not found") => Ok(None),
            Ok(Err(e)) => Err(e.into()),
            Ok(Ok(r)) => Ok(Some(r)),
        }
    }

    /// Ends the lease on the way out, so nobody waits for its TTL; bounded.
    pub(super) async fn revoke(&self, client: &mut Client) {
        let _ = tokio::time::timeout(RESIGN_LIMIT, client.lease_revoke(self.id)).await;
    }
}

/// What woke a participant up.
pub(super) enum Wake {
    /// SIGINT/SIGTERM: resign and go.
    Stop,
    /// The lease is gone: start over.
    LeaseLost,
    /// The watched keys changed, or a renewal went through: look again.
    Look,
}

/// Waits for the next thing to act on: a stop, the renew tick (renewing the lease), or a
/// change on the watch.
pub(super) async fn next_wake(
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

/// The first key-value a txn's range answers hold.
pub(super) fn first_kv(resp: &TxnResponse) -> Option<KeyValue> {
    resp.op_responses().into_iter().find_map(|op| match op {
        TxnOpResponse::Get(g) => g.kvs().first().cloned(),
        _ => None,
    })
}
