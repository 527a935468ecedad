//! The follow task's side of admin actions and deposed holders: the audit log read at the
//! first read, the deposed holders' sessions checked, an action's mark applied; and whether
//! a leader whose node went still has its session.

use std::time::{Duration, Instant};

use zookeeper_client::Client;

use super::{Follow, Stop};
use crate::backend::zookeeper::sessions;

impl Follow {
    /// The admin actions taken on this source before electop started (from the audit log):
    /// the holders they removed, deposed while their session may live, and the changes
    /// this first read saw (`seen`) labelled as theirs.
    pub(super) async fn audited(
        &mut self,
        seen: &mut super::Changes,
        actions: Vec<crate::admin::audit_tail::Done>,
    ) {
        if actions.is_empty() {
            return;
        }
        let listing = if actions.iter().any(|d| d.before_session.is_some()) {
            sessions::list(&self.b.cfg.endpoints, self.probe_timeout()).await
        } else {
            sessions::Listing::default()
        };
        self.tracker
            .audited(&actions, &listing, Instant::now(), seen);
    }

    /// `cons` is cheap but a member may be slow: a check must not hold up the follow for
    /// long, and the next comes within a second anyway.
    fn probe_timeout(&self) -> Duration {
        self.b.opts.request_timeout.min(Duration::from_secs(2))
    }

    /// Asks the members whether the deposed holders' sessions live on, while there are any.
    pub(super) async fn check_deposed(&mut self) -> Result<(), Stop> {
        if self.tracker.deposed.is_empty() {
            return Ok(());
        }
        let listing = sessions::list(&self.b.cfg.endpoints, self.probe_timeout()).await;
        let applied = self.tracker.sessions_listed(&listing, Instant::now());
        self.tell(applied).await
    }

    /// When the leader's node went (`leaving`: its session and other nodes it held): its
    /// session, if one of those is still there (so the session lives and the node was
    /// deleted). Read after the event, so a session close that took all its nodes at once
    /// is already applied.
    pub(super) async fn still_held(
        &self,
        client: &Client,
        (session, others): (i64, Vec<String>),
    ) -> Result<std::collections::HashSet<i64>, Stop> {
        let mut held = std::collections::HashSet::new();
        for path in &others {
            let stat = tokio::time::timeout(self.b.opts.request_timeout, client.check_stat(path));
            match stat.await {
                Err(_) => return Err(self.timeout().into()),
                Ok(Ok(Some(s))) if s.ephemeral_owner == session => {
                    held.insert(session);
                    break;
                }
                Ok(Ok(_)) => {}
                Ok(Err(e)) => return Err(self.client_err(e, path).into()),
            }
        }
        Ok(held)
    }
}
