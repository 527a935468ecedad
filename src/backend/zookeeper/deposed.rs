//! The sessions of deposed holders, followed until they are gone. Pure: the follow task
//! asks the members (`sessions::list`), this decides what that says of each.
//!
//! A session missing from every member's `cons` may only be between two connections (its
//! client moving to another member): it is gone for sure once it has been missing for
//! longer than its negotiated timeout, after which ZooKeeper has expired it. Where a member
//! does not list its sessions, a session missing from the others may be on it: electop
//! cannot tell, and the holder stays shown as such until its session is listed or seen
//! gone, it holds a node in the election again, or this electop stops.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::sessions::Listing;
use crate::model::SessionCheck;

/// Added to a session's timeout before it counts as expired: the server expires sessions
/// at its next tick past the timeout.
const EXPIRY_SLACK: Duration = Duration::from_secs(1);

#[derive(Clone, Debug, PartialEq, Eq)]
struct Followed {
    session: i64,
    /// When a member last listed it, and the timeout it listed.
    listed: Option<(Instant, Option<u64>)>,
    /// When it was first missing from a complete listing (since it was last listed).
    missing_since: Option<Instant>,
}

/// The deposed sessions, by election name.
#[derive(Debug, Default)]
pub(crate) struct DeposedSessions {
    followed: BTreeMap<String, Followed>,
}

impl DeposedSessions {
    /// Follows `session`, deposed in `election`; `listed`: when a member listed it already,
    /// with its timeout.
    pub(crate) fn follow(
        &mut self,
        election: &str,
        session: i64,
        listed: Option<(Instant, Option<u64>)>,
    ) {
        let f = Followed {
            session,
            listed,
            missing_since: None,
        };
        self.followed.insert(election.to_string(), f);
    }

    pub(crate) fn forget(&mut self, election: &str) {
        self.followed.remove(election);
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.followed.is_empty()
    }

    /// What `listing` says of each deposed session: `Some(check)` while it may live,
    /// `None` once it is gone (and no longer followed).
    pub(crate) fn apply(
        &mut self,
        listing: &Listing,
        now: Instant,
    ) -> Vec<(String, Option<SessionCheck>)> {
        let mut out = Vec::new();
        self.followed.retain(|name, f| {
            let check = judge(f, listing, now);
            out.push((name.clone(), check));
            check.is_some()
        });
        out
    }
}

fn judge(f: &mut Followed, listing: &Listing, now: Instant) -> Option<SessionCheck> {
    if let Some(to) = listing.sessions.get(&f.session) {
        f.listed = Some((now, *to));
        f.missing_since = None;
        return Some(SessionCheck::Alive);
    }
    if listing.authoritative {
        // The leader holds every session: not there, it has ended.
        return None;
    }
    // Without a listed timeout, ZooKeeper's largest default (20 ticks of 2 s).
    let timeout = |to: Option<u64>| to.map_or(Duration::from_secs(40), Duration::from_millis);
    if !listing.complete {
        f.missing_since = None;
        // Listed a moment ago: it cannot have expired since.
        let recent = f
            .listed
            .is_some_and(|(at, to)| now.saturating_duration_since(at) <= timeout(to));
        return Some(if recent {
            SessionCheck::Alive
        } else {
            SessionCheck::CannotTell
        });
    }
    let since = *f.missing_since.get_or_insert(now);
    match f.listed {
        // Never listed, and no member has it: it was gone before the first check.
        None => None,
        Some((_, to)) => (now.saturating_duration_since(since) <= timeout(to) + EXPIRY_SLACK)
            .then_some(SessionCheck::Alive),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing(sessions: &[(i64, u64)], complete: bool) -> Listing {
        Listing {
            sessions: sessions.iter().map(|(s, to)| (*s, Some(*to))).collect(),
            complete,
            authoritative: false,
        }
    }

    #[test]
    fn a_listed_session_is_alive_until_missing_for_longer_than_its_timeout() {
        let t0 = Instant::now();
        let mut d = DeposedSessions::default();
        d.follow("jobs", 7, None);
        let alive = |d: &mut DeposedSessions, l: &Listing, t| d.apply(l, t);
        assert_eq!(
            alive(&mut d, &listing(&[(7, 3000)], true), t0),
            [("jobs".to_string(), Some(SessionCheck::Alive))]
        );
        // Missing: moving between members, or dead; alive until its timeout has passed.
        let gone = listing(&[(8, 3000)], true);
        let t1 = t0 + Duration::from_secs(1);
        assert_eq!(alive(&mut d, &gone, t1)[0].1, Some(SessionCheck::Alive));
        assert_eq!(
            alive(&mut d, &gone, t1 + Duration::from_millis(3900))[0].1,
            Some(SessionCheck::Alive)
        );
        assert_eq!(alive(&mut d, &gone, t1 + Duration::from_secs(5))[0].1, None);
        assert!(d.is_empty(), "no longer followed");
    }

    #[test]
    fn a_member_that_does_not_list_leaves_it_untold() {
        let t0 = Instant::now();
        let mut d = DeposedSessions::default();
        d.follow("jobs", 7, None);
        let partial = listing(&[], false);
        assert_eq!(d.apply(&partial, t0)[0].1, Some(SessionCheck::CannotTell));
        // Listed by the members that answer: alive, whoever else is silent.
        let seen = listing(&[(7, 3000)], false);
        assert_eq!(d.apply(&seen, t0)[0].1, Some(SessionCheck::Alive));
        assert_eq!(
            d.apply(&partial, t0 + Duration::from_secs(2))[0].1,
            Some(SessionCheck::Alive),
            "listed within its timeout: it cannot have expired"
        );
        assert_eq!(
            d.apply(&partial, t0 + Duration::from_secs(60))[0].1,
            Some(SessionCheck::CannotTell)
        );
    }

    #[test]
    fn missing_from_the_leaders_dump_is_gone_at_once() {
        let mut d = DeposedSessions::default();
        d.follow("jobs", 7, Some((Instant::now(), Some(3000))));
        let dump = Listing {
            sessions: [(8, None)].into_iter().collect(),
            complete: true,
            authoritative: true,
        };
        assert_eq!(d.apply(&dump, Instant::now())[0].1, None);
    }

    #[test]
    fn never_listed_and_missing_from_every_member_is_gone() {
        let mut d = DeposedSessions::default();
        d.follow("jobs", 7, None);
        assert_eq!(d.apply(&listing(&[], true), Instant::now())[0].1, None);
    }
}
