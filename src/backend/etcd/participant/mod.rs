//! `electop node` on etcd: a participant of the election API (campaign, keep-alive,
//! observe) or of a lease key (create-if-absent, watch for its delete).

mod election;
mod lease;
mod lease_key;

use anyhow::Result;
use tokio_util::sync::CancellationToken;

use crate::config::EtcdSource;
use crate::model::Scheme;
use crate::node::{Belief, Options, Reporter, Timing};

/// Takes part in `scheme`'s election on `cfg` until stopped.
pub(crate) async fn run(
    cfg: &EtcdSource,
    scheme: Scheme,
    args: &Options,
    t: Timing,
    report: &Reporter,
    stop: CancellationToken,
) -> Result<()> {
    match scheme {
        Scheme::EtcdElection => election::run(cfg, args, t, report, stop).await,
        Scheme::EtcdLeaseKey => lease_key::run(cfg, args, t, report, stop).await,
        Scheme::Patroni => {
            anyhow::bail!("Patroni's members are Patroni itself: electop node does not join them")
        }
        other => anyhow::bail!("scheme {other} needs --sql URL"),
    }
}

/// How an etcd participant's session ended.
enum Ended {
    /// Asked to stop; it resigned.
    Stopped,
    /// Its lease expired or was revoked: start over with a new one.
    LeaseLost,
}

/// Runs sessions until stopped: a new one (new lease) after a lease ends, another after a
/// pause when the store cannot be reached. The lease outlives a lost connection: the next
/// session takes it up again if it is still alive, so a short outage costs no leadership.
async fn sessions(
    t: Timing,
    report: &Reporter,
    stop: &CancellationToken,
    mut session: impl AsyncFnMut(&Reporter, &mut Option<i64>) -> Result<Ended>,
) -> Result<()> {
    let mut lease = None;
    loop {
        match session(report, &mut lease).await {
            Ok(Ended::Stopped) => return Ok(()),
            Ok(Ended::LeaseLost) => {
                lease = None;
                // Revoked by an operator (a forced re-election) or expired: our key went with it.
                report.depose("my lease ended (revoked or expired)");
                report.say("my lease ended (expired or revoked): starting over with a new one")
            }
            Err(e) => {
                report.believe(Belief::NoContact {
                    error: super::error::in_words(&e),
                });
                tokio::select! {
                    _ = tokio::time::sleep(t.retry) => {}
                    _ = stop.cancelled() => return Ok(()),
                }
            }
        }
    }
}
