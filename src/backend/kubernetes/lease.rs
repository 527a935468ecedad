//! A Lease as electop reads it: the fields client-go's `leaderelection` writes, as plain
//! data the tracker decides on.

use std::time::SystemTime;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;

/// Leases of the control plane's own elections, and whose they are.
const WELL_KNOWN: &[(&str, &str)] = &[
    (
        "kube-system/kube-controller-manager",
        "kube-controller-manager's leader: the controllers run only there",
    ),
    (
        "kube-system/kube-scheduler",
        "kube-scheduler's leader: pods are scheduled only there",
    ),
    (
        "kube-system/cloud-controller-manager",
        "cloud-controller-manager's leader: the cloud controllers run only there",
    ),
];

/// One Lease, read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Read {
    /// `namespace/name`: the election.
    pub key: String,
    /// `holderIdentity`, unless empty (a release writes it empty).
    pub holder: Option<String>,
    pub duration_s: Option<i32>,
    /// When the holder says it renewed and acquired, on its own clock.
    pub renew: Option<SystemTime>,
    pub acquire: Option<SystemTime>,
    pub transitions: Option<i32>,
    /// 1.31+: the holder a coordinated election asks to take over, when there is one.
    pub preferred: Option<String>,
    pub resource_version: String,
}

impl Read {
    /// The Lease's fields; `None` for an object without a name (never from a server).
    pub(crate) fn of(lease: &Lease) -> Option<Read> {
        let meta = &lease.metadata;
        let name = meta.name.as_deref()?;
        let ns = meta.namespace.as_deref().unwrap_or("default");
        let spec = lease.spec.as_ref();
        let time = |t: Option<&MicroTime>| t.map(|t| SystemTime::from(t.0));
        Some(Read {
            key: format!("{ns}/{name}"),
            holder: spec
                .and_then(|s| s.holder_identity.clone())
                .filter(|h| !h.is_empty()),
            duration_s: spec.and_then(|s| s.lease_duration_seconds),
            renew: time(spec.and_then(|s| s.renew_time.as_ref())),
            acquire: time(spec.and_then(|s| s.acquire_time.as_ref())),
            transitions: spec.and_then(|s| s.lease_transitions),
            preferred: spec
                .and_then(|s| s.preferred_holder.clone())
                .filter(|h| !h.is_empty()),
            resource_version: meta.resource_version.clone().unwrap_or_default(),
        })
    }

    /// The record client-go compares: a change of any of it restarts its countdown.
    pub(crate) fn same_record(&self, other: &Read) -> bool {
        (
            &self.holder,
            self.duration_s,
            self.renew,
            self.acquire,
            self.transitions,
        ) == (
            &other.holder,
            other.duration_s,
            other.renew,
            other.acquire,
            other.transitions,
        )
    }

    /// The namespace and name.
    pub(crate) fn namespace(&self) -> &str {
        self.key.split_once('/').map_or("", |(ns, _)| ns)
    }

    /// What a well-known Lease is for.
    pub(crate) fn known_as(&self) -> Option<&'static str> {
        WELL_KNOWN
            .iter()
            .find(|(k, _)| *k == self.key)
            .map(|(_, what)| *what)
    }
}

/// A wall time as the API writes it (RFC 3339, UTC, whole seconds shown).
pub(crate) fn utc(t: SystemTime) -> String {
    let format =
        time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]Z");
    time::OffsetDateTime::from(t)
        .format(&format)
        .unwrap_or_default()
}
