//! An `etcd-election` participant (the Rust etcd election article; the same keys as etcd's election API and
//! `etcdctl elect`): one key `<election>/<lease hex>` on its own lease; the lowest
//! create_revision leads. Unlike Go's `concurrency.Election`, it watches the whole line, its
//! own key included, and reads who is first in the same txn that checks its key is still the
//! one it put: an operator's resign (key deleted) is noticed at once, even by a candidate
//! still waiting, which joins the line again at its end instead of taking the keys ahead
//! going away for its election.

use anyhow::Context;
use anyhow::Result;
use etcd_client::{
    Client, Compare, CompareOp, GetOptions, PutOptions, SortOrder, SortTarget, Txn, TxnOp,
    WatchOptions,
};
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
    let dir = format!("{}{}/", cfg.prefix, args.election);
    sessions(
        t,
        report,
        &stop,
        async |r: &Reporter, kept: &mut Option<i64>| {
            session(cfg, &dir, args, t, r, &stop, kept).await
        },
    )
    .await
}

async fn session(
    cfg: &EtcdSource,
    dir: &str,
    args: &Options,
    t: Timing,
    report: &Reporter,
    stop: &CancellationToken,
    kept: &mut Option<i64>,
) -> Result<Ended> {
    let limit = t.call_limit();
    let (mut client, mut lease) = super::lease::connect(cfg, t, *kept).await?;
    *kept = Some(lease.id);
    let key = format!("{dir}{:x}", lease.id);
    let mut watch = within(
        limit,
        "a watch",
        client.watch(dir, Some(WatchOptions::new().with_prefix())),
    )
    .await?;
    let mut tick = tokio::time::interval(t.renew);
    tick.tick().await;
    // Our key's create revision while it is in the line; `None` until we (re)join.
    let mut joined: Option<i64> = None;
    let mut removed = false;
    loop {
        if joined.is_none() {
            match join(&mut client, &lease, &key, &args.id).await? {
                Join::LeaseLost => return Ok(Ended::LeaseLost),
                Join::In(rev) => {
                    if removed {
                        // Our lease lives on, so nobody ended our session: an operator
                        // deleted our key (a resign).
                        report.depose("my key was deleted (resigned by an operator)");
                        report.say(&format!(
                            "my key was deleted from the line: joined it again at revision {rev}"
                        ));
                    }
                    joined = Some(rev);
                    removed = false;
                }
                // Wait for our lease to end (the next keep-alive says so), then start over.
                Join::Held => {
                    report.depose("my key was moved off my lease: an operator is ending my session")
                }
            }
        }
        if let Some(rev) = joined {
            match first_in_line(&mut client, &lease, dir, &key, rev).await? {
                Line::Gone => {
                    joined = None;
                    removed = true;
                    continue;
                }
                // Ours for as long as our lease surely lives.
                Line::Ours => report.lead(lease.until),
                // Our own old key, held by an operator: nobody leads until it goes.
                Line::Behind(leader) if leader == args.id => {
                    report.believe(Belief::Follower { leader: None })
                }
                Line::Behind(leader) => report.believe(Belief::Follower {
                    leader: Some(leader),
                }),
            }
        }
        match super::lease::next_wake(stop, &mut tick, &mut lease, &mut watch).await? {
            Wake::Look => {}
            Wake::LeaseLost => return Ok(Ended::LeaseLost),
            Wake::Stop => {
                report.believe(Belief::Stopped);
                resign(&mut client, &lease, &key).await;
                report.say("resigned");
                return Ok(Ended::Stopped);
            }
        }
    }
}

/// Deletes our key (not one an operator holds), and ends the session so nobody waits for
/// its TTL; bounded.
async fn resign(client: &mut Client, lease: &Lease, key: &str) {
    let mine = Txn::new()
        .when([Compare::lease(key, CompareOp::Equal, lease.id)])
        .and_then([TxnOp::delete(key, None)]);
    let _ = tokio::time::timeout(RESIGN_LIMIT, client.txn(mine)).await;
    lease.revoke(client).await;
}

enum Join {
    /// In line, with our key's create revision.
    In(i64),
    /// Our key is there on another lease: an operator's force re-election or force-leader
    /// holds it while it ends our session (see `backend::etcd::admin::depose`). Putting it
    /// back on our lease would undo that.
    Held,
    LeaseLost,
}

/// Joins the line with our key unless it is there already (a session that took up its
/// lease again).
async fn join(client: &mut Client, lease: &Lease, key: &str, id: &str) -> Result<Join> {
    let txn = Txn::new()
        .when([Compare::create_revision(key, CompareOp::Equal, 0)])
        .and_then([TxnOp::put(
            key,
            id,
            Some(PutOptions::new().with_lease(lease.id)),
        )])
        .or_else([TxnOp::get(key, None)]);
    let Some(resp) = lease.txn(client, txn).await? else {
        return Ok(Join::LeaseLost);
    };
    if resp.succeeded() {
        let rev = resp.header().map(|h| h.revision());
        return rev
            .map(Join::In)
            .context("etcd answered a txn without a header");
    }
    let kv = first_kv(&resp).context("our key vanished while we joined")?;
    Ok(if kv.lease() == lease.id {
        Join::In(kv.create_revision())
    } else {
        Join::Held
    })
}

/// Where we stand in the line.
enum Line {
    /// Our key is gone, put again, or moved off our lease: it is not ours in the line.
    Gone,
    Ours,
    /// Behind the leader named.
    Behind(String),
}

/// Who is first in line, read in the same txn that checks our key is still the one we put
/// (same create revision, on our lease): a candidate removed from the line while it waited must never
/// take the keys ahead going away for its election.
async fn first_in_line(
    client: &mut Client,
    lease: &Lease,
    dir: &str,
    key: &str,
    rev: i64,
) -> Result<Line> {
    let first = GetOptions::new()
        .with_prefix()
        .with_sort(SortTarget::Create, SortOrder::Ascend)
        .with_limit(1);
    let txn = Txn::new()
        .when([
            Compare::create_revision(key, CompareOp::Equal, rev),
            Compare::lease(key, CompareOp::Equal, lease.id),
        ])
        .and_then([TxnOp::get(dir, Some(first))]);
    let Some(resp) = lease.txn(client, txn).await? else {
        return Ok(Line::Gone);
    };
    if !resp.succeeded() {
        return Ok(Line::Gone);
    }
    Ok(match first_kv(&resp) {
        Some(kv) if kv.key() == key.as_bytes() => Line::Ours,
        Some(kv) => Line::Behind(escape_bytes(kv.value())),
        // Not possible while our key is there; read again to be sure.
        None => Line::Gone,
    })
}
