//! What the shared audit log says of admin actions taken before this electop started (by
//! the CLI, or a dashboard since closed), so a fresh electop shows what the one that acted
//! does: the holder an action removed is deposed while its session may live, and the
//! change this first read sees from it is labelled with the action's cause and author.

use std::collections::BTreeMap;
use std::time::Instant;

use super::{ZkTracker, session_id};
use crate::admin::audit_tail::Done;
use crate::backend::change::Changes;
use crate::backend::zookeeper::sessions::Listing;
use crate::model::{Candidate, Cause, EventKind, SessionCheck};

impl ZkTracker {
    /// At the first read, after [`ZkTracker::restore`] (`seen`: the changes it found): of
    /// the newest action on each election, the holder it removed is deposed unless it is
    /// back in line or `listing` (one check of the members) shows its session gone. Where
    /// no member lists sessions (ZooKeeper answers only `srvr` by default), whether it
    /// lives cannot be told, and it is shown so, as the electop that acted shows it.
    pub(crate) fn audited(
        &mut self,
        actions: &[Done],
        listing: &Listing,
        now: Instant,
        seen: &mut Changes,
    ) {
        let newest: BTreeMap<&str, &Done> =
            actions.iter().map(|d| (d.election.as_str(), d)).collect();
        for (name, done) in newest {
            self.attribute(name, done, seen);
            let (Some(id), Some(hex)) = (&done.before, &done.before_session) else {
                continue;
            };
            let Some(session) = session_id(hex) else {
                continue;
            };
            let (check, listed) = match listing.sessions.get(&session) {
                Some(to) => (SessionCheck::Alive, Some((now, *to))),
                None if !listing.complete && !listing.authoritative => {
                    (SessionCheck::CannotTell, None)
                }
                // Every member answered and none lists it: it has ended.
                None => continue,
            };
            let Some(e) = self.elections.get_mut(name) else {
                continue;
            };
            let in_line = e.candidates.iter().any(|c| c.stamp.as_deref() == Some(hex));
            if in_line || e.deposed.is_some() {
                continue;
            }
            let mut holder = Candidate::plain(id, "");
            holder.stamp = Some(hex.clone());
            e.deposed = Some(Box::new(holder));
            e.deposed_session = Some(check);
            self.deposed.follow(name, session, listed);
            if let Some(c) = seen.changed.iter_mut().find(|c| c.name == name) {
                *c = e.clone();
            }
        }
    }

    /// The change this first read saw in `name` (in `seen`), away from the leader `done`
    /// removed: made by that action, so its cause and author are the action's.
    fn attribute(&mut self, name: &str, done: &Done, seen: &mut Changes) {
        let is_change =
            |k: EventKind| matches!(k, EventKind::LeaderChanged | EventKind::LeaderLost);
        let Some(ev) = seen
            .events
            .iter_mut()
            .find(|ev| ev.election.as_deref() == Some(name) && is_change(ev.kind))
        else {
            return;
        };
        if done.before.is_none() || ev.from != done.before || ev.cause != Some(Cause::Unknown) {
            return;
        }
        // Seen after the action, never before it.
        if let (Some(seen_at), Some(done_at)) = (ev.at, done.at)
            && seen_at < done_at
        {
            return;
        }
        let Some(e) = self.elections.get_mut(name) else {
            return;
        };
        let Some(h) = e.history.back_mut() else {
            return;
        };
        h.cause = done.cause;
        h.by = Some(done.by.clone());
        ev.cause = Some(done.cause);
        ev.detail = Some(crate::backend::change::forced_by(&done.by));
        if let Some(c) = seen.changed.iter_mut().find(|c| c.name == name) {
            *c = e.clone();
        }
    }
}
