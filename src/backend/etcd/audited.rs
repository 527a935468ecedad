//! What the audit log says about admin actions taken before this electop started, so every
//! view tells what a watching electop would have: a holder an admin removed whose lease
//! lives on is deposed (it may still believe it leads), and the change the action made is
//! labelled with its cause and author, not with what the store alone suggests.

use std::collections::BTreeMap;
use std::time::Instant;

use super::follow::Link;
use super::{EtcdBackend, timed};
use crate::admin::audit_tail::Done;
use crate::model::{Candidate, Deadline, Election, HistoryEntry};

/// The finished actions on this source, newest last, from the end of the shared audit log.
pub(super) fn actions(backend: &EtcdBackend) -> Vec<Done> {
    crate::backend::forced::audited_actions(&backend.info.name)
}

/// A holder an admin action removed that may still believe it leads.
pub(super) struct Deposed {
    pub election: String,
    /// With its lease's countdown.
    pub holder: Candidate,
    /// The change the action made, as the audit log tells it, when its key is still held
    /// and the history read back does not have it: the hold is then told for what it is
    /// (its cause and author), and counted as time without a leader.
    pub told: Option<HistoryEntry>,
}

/// Of the newest action on each election in `elections`, the leader it removed that may
/// still believe it leads.
/// Either its own lease is alive and it is not back in line (a resign), or its key is
/// still held on the action's hold lease (an etcd-election re-election or force-leader
/// moves the deposed keys onto electop's lease until the deposed must have noticed): the
/// hold's lease is then the one counted down. One lease read per such action. The change
/// the action made (its leader to nobody) happened before this start; the history has it.
pub(super) async fn deposed(
    backend: &EtcdBackend,
    link: &mut Link,
    actions: &[Done],
    elections: &[Election],
) -> Vec<Deposed> {
    let newest: BTreeMap<&str, &Done> = actions.iter().map(|d| (d.election.as_str(), d)).collect();
    let mut found = Vec::new();
    for (name, done) in newest {
        let (Some(id), Some(lease)) = (&done.before, done.before_lease) else {
            continue;
        };
        let Some(e) = elections.iter().find(|e| e.name == name) else {
            continue;
        };
        if e.deposed.is_some() {
            continue;
        }
        if e.leader
            .iter()
            .chain(&e.candidates)
            .any(|c| c.lease == Some(lease))
        {
            continue;
        }
        // Its key, named by its lease as etcd-election names keys, on another lease.
        let held = e
            .held
            .as_deref()
            .filter(|c| c.id == *id && held_key(c, lease));
        let counted = held.and_then(|c| c.lease).unwrap_or(lease);
        let mut leases = link.client.lease_client();
        let read = timed(backend, &link.endpoint, leases.time_to_live(counted, None)).await;
        let Ok(ttl) = read.inspect_err(|e| tracing::debug!(%e, counted, "audit lease read")) else {
            continue;
        };
        if ttl.ttl() <= 0 {
            continue;
        }
        let mut holder = match held {
            Some(c) => c.clone(),
            None => Candidate::plain(id, ""),
        };
        holder.lease = Some(counted);
        holder.ttl = Some(Deadline::from_seconds(
            ttl.ttl(),
            ttl.granted_ttl(),
            Instant::now(),
            None,
        ));
        let known = e
            .history
            .back()
            .is_some_and(|h| h.from == done.before && h.to.is_none());
        let told = (held.is_some() && !known).then(|| HistoryEntry {
            at: done.at,
            revision: None,
            from: done.before.clone(),
            to: None,
            cause: done.cause,
            by: Some(done.by.clone()),
        });
        found.push(Deposed {
            election: name.to_string(),
            holder,
            told,
        });
    }
    found
}

/// `c`'s key is the one etcd-election made for lease `lease` (its last segment the lease in
/// hex), held now on another lease.
fn held_key(c: &Candidate, lease: i64) -> bool {
    let last = c.key.rsplit('/').next().unwrap_or_default();
    c.lease.is_some_and(|l| l != lease) && last == format!("{lease:x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_named_by_the_removed_lease_on_another_is_held() {
        let mut c = Candidate::plain("node-a", "/adm/jobs/390da22024880308");
        c.lease = Some(0x390da22024880319);
        assert!(held_key(&c, 0x390da22024880308));
        assert!(!held_key(&c, 0x390da2202488030d), "another key");
        c.lease = Some(0x390da22024880308);
        assert!(
            !held_key(&c, 0x390da22024880308),
            "on its own lease: not held"
        );
    }
}
