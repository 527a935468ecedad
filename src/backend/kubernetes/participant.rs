//! `electop node` on Kubernetes: client-go's `leaderelection` with a LeaseLock, written from
//! its algorithm, so it campaigns in the same election as client-go's own candidates.
//!
//! - Every retry period (`--retry`, 2 s), try to acquire or renew: read the Lease (create it
//!   when missing); a holder other than us whose record was seen to change less than a lease
//!   duration ago (on our clock, never from its renewTime) keeps it; otherwise write us as
//!   holder on the resourceVersion read (acquire and renew times now; one more transition
//!   when the holder changes), which the server refuses with 409 if anyone wrote meanwhile.
//! - The leader renews every retry period, and believes it leads until its renew deadline
//!   (two thirds of the duration, client-go's 10 s of 15 s) passes without a renewal
//!   accepted; a renewal that reads another holder deposes it at once (a write that lost a
//!   race, 409, is tried again at the next retry).
//! - SIGINT/SIGTERM release as client-go's `ReleaseOnCancel` does: no holder, a 1 s duration.

use std::time::{Duration, Instant, SystemTime};

use anyhow::{Result, bail};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::PostParams;
use tokio_util::sync::CancellationToken;

use super::client::Cluster;
use crate::config::KubeSource;
use crate::node::{Belief, Options, RESIGN_LIMIT, Reporter, Timing, term};

/// What one try found.
enum Tried {
    /// The Lease is ours, as of a write sent at `sent`.
    Ours { sent: Instant },
    /// Another holder keeps it.
    Other(Option<String>),
    /// Our write lost a race (409): someone wrote in between; read again at the next try.
    Conflict,
}

struct Candidate {
    api: kube::Api<Lease>,
    name: String,
    id: String,
    t: Timing,
    /// The record as last read, and when (our clock) it was seen to change.
    observed: Option<(LeaseSpec, Instant)>,
    leading: bool,
}

/// Takes part in the Lease election `args.election` (`namespace/name`, or a name in the
/// source's one namespace, else `default`) until stopped.
pub(super) async fn run(
    cfg: &KubeSource,
    args: &Options,
    t: Timing,
    report: &Reporter,
    stop: CancellationToken,
) -> Result<()> {
    let (ns, name) = lease_of(cfg, &args.election)?;
    let cluster = Cluster::new(cfg, t.call_limit())
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    report.say(&format!(
        "campaigning for lease {ns}/{name} on {} as client-go does (duration {:?}, renew \
         deadline {:?}, retry {:?})",
        cluster.server,
        t.ttl,
        renew_deadline(t),
        t.retry
    ));
    let mut c = Candidate {
        api: cluster.leases(Some(&ns)),
        name,
        id: args.id.clone(),
        t,
        observed: None,
        leading: false,
    };
    loop {
        let started = Instant::now();
        // Every call must end while our lead could still be ours.
        let tried = tokio::select! {
            r = tokio::time::timeout(t.call_limit(), c.try_acquire_or_renew()) => r,
            _ = stop.cancelled() => return c.release(report).await,
        };
        c.believe(tried, report, &cluster.server, &ns)?;
        let wait = if c.leading { t.renew } else { t.retry };
        tokio::select! {
            _ = tokio::time::sleep_until((started + wait).into()) => {}
            _ = stop.cancelled() => return c.release(report).await,
        }
    }
}

/// client-go's default renew deadline is two thirds of the duration (10 s of 15 s).
fn renew_deadline(t: Timing) -> Duration {
    t.ttl * 2 / 3
}

/// The namespace and name of the Lease `election` names.
fn lease_of(cfg: &KubeSource, election: &str) -> Result<(String, String)> {
    use crate::config::Usage;
    let (ns, name) = match election.split_once('/') {
        Some((ns, name)) => (ns.to_string(), name.to_string()),
        None => match cfg.namespaces.as_slice() {
            [only] => (only.clone(), election.to_string()),
            _ => ("default".to_string(), election.to_string()),
        },
    };
    let label = |s: &str| {
        !s.is_empty()
            && s.len() <= 253
            && s.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
    };
    if !label(&ns) || !label(&name) {
        return Err(Usage(format!(
            "--election {election}: a Lease is namespace/name, each lower-case letters, digits, \
             `-` and `.` (like kube-system/my-controller)"
        ))
        .into());
    }
    Ok((ns, name))
}

impl Candidate {
    /// One try, as client-go's `tryAcquireOrRenew`.
    async fn try_acquire_or_renew(&mut self) -> Result<Tried, kube::Error> {
        let now = Instant::now();
        let current = match self.api.get_opt(&self.name).await? {
            None => {
                let sent = Instant::now();
                let lease = self.lease(None, SystemTime::now());
                self.api.create(&PostParams::default(), &lease).await?;
                return Ok(Tried::Ours { sent });
            }
            Some(l) => l,
        };
        let spec = current.spec.clone().unwrap_or_default();
        if self.observed.as_ref().is_none_or(|(seen, _)| *seen != spec) {
            self.observed = Some((spec.clone(), now));
        }
        let holder = spec.holder_identity.clone().filter(|h| !h.is_empty());
        let seen_at = self.observed.as_ref().map_or(now, |(_, at)| *at);
        let duration = Duration::from_secs(spec.lease_duration_seconds.unwrap_or(0).max(0) as u64);
        let ours = holder.as_deref() == Some(self.id.as_str());
        if holder.is_some() && !ours && seen_at + duration > now {
            return Ok(Tried::Other(holder));
        }
        let sent = Instant::now();
        let written = self.lease(Some(current), SystemTime::now());
        match self
            .api
            .replace(&self.name, &PostParams::default(), &written)
            .await
        {
            Ok(_) => Ok(Tried::Ours { sent }),
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(Tried::Conflict),
            Err(e) => Err(e),
        }
    }

    /// Our record over `current` (none: a new Lease): acquire time and transitions kept while
    /// we hold it, one more transition when we take it (after a release too, as client-go).
    fn lease(&self, current: Option<Lease>, now: SystemTime) -> Lease {
        let stamp = k8s_openapi::jiff::Timestamp::try_from(now)
            .ok()
            .map(MicroTime);
        let mut lease = current.unwrap_or_else(|| Lease {
            metadata: kube::api::ObjectMeta {
                name: Some(self.name.clone()),
                ..Default::default()
            },
            spec: Some(LeaseSpec {
                lease_transitions: Some(0),
                ..Default::default()
            }),
        });
        let spec = lease.spec.get_or_insert_with(Default::default);
        let ours = spec.holder_identity.as_deref() == Some(self.id.as_str());
        if !ours || spec.acquire_time.is_none() {
            spec.acquire_time = stamp.clone();
        }
        // As client-go: any take by a candidate that did not lead counts, a release's too.
        if !ours && lease.metadata.resource_version.is_some() {
            spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
        }
        spec.holder_identity = Some(self.id.clone());
        spec.lease_duration_seconds = Some(self.t.ttl.as_secs().max(1) as i32);
        spec.renew_time = stamp;
        lease
    }

    /// Says what the try means. Errors only when waiting cannot help (the credentials, a
    /// permission).
    fn believe(
        &mut self,
        tried: Result<Result<Tried, kube::Error>, tokio::time::error::Elapsed>,
        report: &Reporter,
        server: &str,
        ns: &str,
    ) -> Result<()> {
        let Ok(tried) = tried else {
            // A leader keeps its belief until its renew deadline (the reporter ends it).
            if !self.leading {
                let limit = self.t.call_limit();
                let error = format!("the API server did not answer within {limit:?}");
                report.believe(Belief::NoContact { error });
            }
            return Ok(());
        };
        match tried {
            // A leader keeps leading until its renew deadline; a follower waits.
            Ok(Tried::Conflict) => {}
            Ok(Tried::Ours { sent }) => {
                self.leading = true;
                report.lead(term::lead_until(sent, renew_deadline(self.t)));
            }
            Ok(Tried::Other(holder)) => {
                if std::mem::take(&mut self.leading) {
                    let by = holder.as_deref().unwrap_or("someone");
                    report.depose(&format!("the Lease was written over: {by} holds it"));
                }
                report.believe(Belief::Follower { leader: holder });
            }
            Err(e) => {
                let said = super::error::KubeError::from_client(&e, server, "update", Some(ns));
                if matches!(&e, kube::Error::Api(s) if matches!(s.code, 401 | 403)) {
                    bail!("{said}");
                }
                // A leader keeps its belief until its renew deadline (the reporter ends it).
                if !self.leading {
                    report.believe(Belief::NoContact {
                        error: said.to_string(),
                    });
                }
            }
        }
        Ok(())
    }

    /// Asked to stop: a leader writes client-go's release, within a bound.
    async fn release(&mut self, report: &Reporter) -> Result<()> {
        report.believe(Belief::Stopped);
        if !self.leading {
            return Ok(());
        }
        let release = async {
            let mut lease = self.api.get(&self.name).await?;
            let spec = lease.spec.get_or_insert_with(Default::default);
            if spec.holder_identity.as_deref() != Some(self.id.as_str()) {
                return Ok::<_, kube::Error>(());
            }
            let stamp = k8s_openapi::jiff::Timestamp::try_from(SystemTime::now())
                .ok()
                .map(MicroTime);
            spec.holder_identity = Some(String::new());
            spec.lease_duration_seconds = Some(1);
            spec.renew_time = stamp.clone();
            spec.acquire_time = stamp;
            self.api
                .replace(&self.name, &PostParams::default(), &lease)
                .await
                .map(|_| ())
        };
        match tokio::time::timeout(RESIGN_LIMIT, release).await {
            Ok(Ok(())) => report.say("resigned"),
            Ok(Err(e)) => report.say(&format!("could not release the Lease: {e}")),
            Err(_) => report.say("could not release the Lease in time"),
        }
        Ok(())
    }
}
