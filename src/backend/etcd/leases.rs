//! Lease reads: which leases to keep fresh (what is on screen, or all for `status`/`watch`),
//! when each is due, and whether a deleted key's lease still exists.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use etcd_client::Client;

use super::tracker::{LeaseFate, Tracker};
use super::{EtcdBackend, EtcdError, Stop, send, timed};
use crate::backend::{BackendIo, Command};
use crate::model::{Election, SourceEvent};

/// Candidates of the selected election whose leases are kept fresh.
const SELECTED_LINE: usize = 64;
/// How often due lease reads are looked for.
pub(super) const LEASE_TICK: Duration = Duration::from_millis(250);

pub(super) fn wanted_leases(
    backend: &EtcdBackend,
    tracker: &Tracker,
    visible: &Command,
) -> Vec<i64> {
    if backend.opts.all_leases {
        return tracker.all_leases();
    }
    match visible {
        Command::Visible { names, selected } => {
            tracker.visible_leases(names, selected.as_deref(), SELECTED_LINE)
        }
        Command::Forced { .. } => Vec::new(),
    }
}

/// Asks etcd whether the leases of deleted keys still exist, to tell a resignation (key
/// deleted, lease alive) from a lease that ended.
pub(super) async fn fates(
    backend: &EtcdBackend,
    client: &mut Client,
    leases: Vec<i64>,
) -> Result<HashMap<i64, LeaseFate>, EtcdError> {
    let mut out = HashMap::new();
    for lease in leases {
        let resp = timed(backend, client.lease_time_to_live(lease, None)).await?;
        out.insert(
            lease,
            if resp.ttl() < 0 {
                LeaseFate::Gone
            } else {
                LeaseFate::Alive
            },
        );
    }
    Ok(out)
}

/// Reads the TTL of each lease that is due: never read, read over a third of its term (or a
/// second) ago, or close to running out.
pub(super) async fn refresh_leases(
    backend: &EtcdBackend,
    client: &mut Client,
    tracker: &mut Tracker,
    io: &BackendIo,
    leases: Vec<i64>,
    force: bool,
) -> Result<(), Stop> {
    let now = Instant::now();
    let due: Vec<i64> = leases
        .into_iter()
        .filter(|l| {
            force
                || match tracker.ttl(*l) {
                    None => true,
                    Some(d) => {
                        let age = now.saturating_duration_since(d.read_at).as_millis() as i64;
                        let every = (d.granted_ms / 3).clamp(250, 1000);
                        age >= every || (d.remaining_ms_at(now) < 1500 && age >= 250)
                    }
                }
        })
        .collect();
    if due.is_empty() {
        return Ok(());
    }
    let mut changed: HashMap<String, Election> = HashMap::new();
    let mut seen = HashSet::new();
    for lease in due {
        let resp = timed(backend, client.lease_time_to_live(lease, None)).await?;
        let reading = (resp.ttl() >= 0).then(|| (resp.ttl(), resp.granted_ttl()));
        for e in tracker.set_ttl(lease, reading, Instant::now()) {
            seen.insert(e.name.clone());
            changed.insert(e.name.clone(), e);
        }
    }
    if !changed.is_empty() {
        let elections = changed.into_values().collect();
        send(
            io,
            SourceEvent::Elections {
                source: backend.info.id,
                elections,
            },
        )
        .await?;
    }
    Ok(())
}
