//! Carries out a Lease plan as it is (`plan.rs` builds it): the Lease read, its holder
//! compared with the one seen, then written on the resourceVersion read, so a write by
//! anyone in between (a renewal, another electop) is refused by the server with 409 and
//! nothing is changed.

use std::time::{Duration, SystemTime};

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::PostParams;

use super::client::Cluster;
use super::error::KubeError;
use super::plan::{ReplaceLease, Write};
use crate::admin::{AdminRequest, Outcome, changed_since};
use crate::config::KubeSource;

pub(super) async fn execute(cfg: &KubeSource, req: &AdminRequest, timeout: Duration) -> Outcome {
    let plan = match super::plan::plan(req) {
        Ok(p) => p,
        Err(reason) => return Outcome::Refused { reason },
    };
    let step = match plan.only_step_of::<ReplaceLease>() {
        Ok(s) => s,
        Err(why) => {
            return Outcome::Refused {
                reason: format!("{} is not a Lease: {why}", req.seen.scheme),
            };
        }
    };
    let Some((ns, name)) = step.key.shown.split_once('/') else {
        return Outcome::Refused {
            reason: format!("{} is not namespace/name", step.key.shown),
        };
    };
    let failed = |e: KubeError| Outcome::Failed {
        error: e.to_string(),
    };
    let cluster = match Cluster::new(cfg, timeout).await {
        Ok(c) => c,
        Err(e) => return failed(e),
    };
    let api = cluster.leases(Some(ns));
    let within = |e| KubeError::Timeout(cluster.server.clone(), e);
    // A holder renewing between our read and our write (every retry period) is no change
    // of who holds it: read again, a few times, before saying the Lease changed.
    for attempt in 1..=ATTEMPTS {
        let lease = match tokio::time::timeout(timeout, api.get(name)).await {
            Err(_) => return failed(within(timeout)),
            Ok(Err(e)) => {
                return failed(KubeError::from_client(&e, &cluster.server, "get", Some(ns)));
            }
            Ok(Ok(l)) => l,
        };
        let now_held = holder(&lease);
        if now_held != step.seen {
            let now = now_held.as_deref().unwrap_or("nobody");
            return Outcome::Changed {
                detail: changed_since(&format!("{} is held by {now} now", step.key.shown)),
            };
        }
        let written = rewrite(lease, &step.write, SystemTime::now());
        let params = PostParams::default();
        let put = api.replace(name, &params, &written);
        return match tokio::time::timeout(timeout, put).await {
            Err(_) => Outcome::Failed {
                error: format!(
                    "{}; it may or may not have been written: look before trying again",
                    within(timeout)
                ),
            },
            Ok(Err(kube::Error::Api(s))) if s.code == 409 && attempt < ATTEMPTS => continue,
            Ok(Err(kube::Error::Api(s))) if s.code == 409 => Outcome::Changed {
                detail: changed_since(&format!(
                    "{} was written in between (409 Conflict) {ATTEMPTS} times",
                    step.key.shown
                )),
            },
            Ok(Err(e)) => failed(KubeError::from_client(
                &e,
                &cluster.server,
                "update",
                Some(ns),
            )),
            Ok(Ok(l)) => Outcome::Done {
                detail: format!(
                    "{}; {} is held by {} now",
                    plan.writes().join("; "),
                    step.key.shown,
                    holder(&l).unwrap_or_else(|| "nobody".into())
                ),
            },
        };
    }
    unreachable!("the last attempt returns")
}

/// How many times a write that lost a race to a renewal is tried again.
const ATTEMPTS: u32 = 3;

/// The Lease's holder, unless empty.
fn holder(l: &Lease) -> Option<String> {
    let h = l.spec.as_ref()?.holder_identity.clone()?;
    (!h.is_empty()).then_some(h)
}

/// `lease` with `write` applied at `now`, keeping its resourceVersion (the compare).
fn rewrite(mut lease: Lease, write: &Write, now: SystemTime) -> Lease {
    let spec = lease.spec.get_or_insert_with(Default::default);
    let stamp = k8s_openapi::jiff::Timestamp::try_from(now)
        .ok()
        .map(MicroTime);
    spec.renew_time = stamp.clone();
    spec.acquire_time = stamp;
    match write {
        Write::Holder(h) => {
            spec.holder_identity = Some(h.clone());
            spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
            if spec.lease_duration_seconds.is_none() {
                spec.lease_duration_seconds = Some(15);
            }
        }
        Write::Release => {
            spec.holder_identity = Some(String::new());
            spec.lease_duration_seconds = Some(1);
        }
    }
    lease
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::coordination::v1::LeaseSpec;

    #[test]
    fn a_forced_holder_counts_a_transition_and_a_release_is_client_gos() {
        let mut l = Lease::default();
        l.metadata.resource_version = Some("42".into());
        l.spec = Some(LeaseSpec {
            holder_identity: Some("a".into()),
            lease_duration_seconds: Some(15),
            lease_transitions: Some(3),
            ..Default::default()
        });
        let now = SystemTime::now();
        let f = rewrite(l.clone(), &Write::Holder("b".into()), now);
        let s = f.spec.as_ref().expect("spec");
        assert_eq!(
            (s.holder_identity.as_deref(), s.lease_transitions),
            (Some("b"), Some(4))
        );
        assert_eq!(f.metadata.resource_version.as_deref(), Some("42"));
        let r = rewrite(l, &Write::Release, now);
        let s = r.spec.as_ref().expect("spec");
        assert_eq!(
            (s.holder_identity.as_deref(), s.lease_duration_seconds),
            (Some(""), Some(1))
        );
        assert!(holder(&r).is_none());
    }
}
