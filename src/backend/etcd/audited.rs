//! What the audit log says about admin actions taken before this electop started, so every
//! view tells what a watching electop would have: a holder an admin removed whose lease
//! lives on is deposed (it may still believe it leads), and the change the action made is
//! labelled with its cause and author, not with what the store alone suggests.

use std::collections::BTreeMap;
use std::time::Instant;

use super::follow::Link;
use super::{EtcdBackend, timed};
use crate::admin::audit_tail::Done;
use crate::model::{Candidate, Deadline, Election};

/// The finished actions on this source, newest last, from the end of the shared audit log.
pub(super) fn actions(backend: &EtcdBackend) -> Vec<Done> {
    crate::backend::forced::audited_actions(&backend.info.name)
}

/// Of the newest action on each election in `elections`, the leader it removed, where that
/// holder is not back in line and its lease is alive now: `(election, holder)`, the holder
/// with its lease's countdown. One lease read per such action.
pub(super) async fn deposed(
    backend: &EtcdBackend,
    link: &mut Link,
    actions: &[Done],
    elections: &[Election],
) -> Vec<(String, Candidate)> {
    let newest: BTreeMap<&str, &Done> = actions.iter().map(|d| (d.election.as_str(), d)).collect();
    let mut found = Vec::new();
    for (name, done) in newest {
        let (Some(id), Some(lease)) = (&done.before, done.before_lease) else {
            continue;
        };
        let Some(e) = elections.iter().find(|e| e.name == name) else {
            continue;
        };
        let held = e
            .leader
            .iter()
            .chain(&e.candidates)
            .any(|c| c.lease == Some(lease));
        if held || e.deposed.is_some() {
            continue;
        }
        let mut leases = link.client.lease_client();
        let read = timed(backend, &link.endpoint, leases.time_to_live(lease, None)).await;
        let Ok(ttl) = read.inspect_err(|e| tracing::debug!(%e, lease, "audit lease read")) else {
            continue;
        };
        if ttl.ttl() <= 0 {
            continue;
        }
        let mut holder = Candidate::plain(id, "");
        holder.lease = Some(lease);
        holder.ttl = Some(Deadline::from_seconds(
            ttl.ttl(),
            ttl.granted_ttl(),
            Instant::now(),
            None,
        ));
        found.push((name.to_string(), holder));
    }
    found
}
