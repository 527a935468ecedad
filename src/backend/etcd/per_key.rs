//! A prefix whose scheme was not configured, read key by key: a key named like a lease id is
//! a candidate of the etcd-election API in the election named by its parent path, and any
//! other key is a lease-key election of its own. One prefix may hold both side by side
//! (`/svc/jobs/<lease>` beside `/svc/lock/billing` and `/svc/lock/reports`), and two
//! independent locks are never merged into one election, so no change between them is ever
//! reported.
//!
//! The decision reads the key's name only, never its lease: a key keeps its election for its
//! whole life, even while electop's re-election holds it on another lease for a moment.

use super::election::EtcdElection;
use super::layout::{Holders, Layout, Mirror};
use super::lease_key::EtcdLeaseKey;
use crate::model::Scheme;

/// Election ids carry which layout they belong to in their first byte: the two kinds could
/// otherwise share an id (a lease key that ends in `/`).
const ELECTION: u8 = b'e';
const LEASE_KEY: u8 = b'k';

pub(crate) struct PerKey {
    election: EtcdElection,
    lease_key: EtcdLeaseKey,
}

impl PerKey {
    pub(crate) fn new(prefix: Vec<u8>) -> Self {
        PerKey {
            election: EtcdElection {
                prefix: prefix.clone(),
            },
            lease_key: EtcdLeaseKey {
                prefix,
                registry: None,
            },
        }
    }

    fn part<'a>(&'a self, id: &'a [u8]) -> Option<(&'a dyn Layout, &'a [u8])> {
        match id.split_first() {
            Some((&ELECTION, rest)) => Some((&self.election, rest)),
            Some((&LEASE_KEY, rest)) => Some((&self.lease_key, rest)),
            _ => None,
        }
    }
}

/// Whether the key's last segment is written like an etcd lease id: etcdctl and Go's
/// `concurrency` package name a candidate after its lease in hex, the Node `etcd3` package in
/// decimal. etcd makes lease ids from a member id's low bits above a millisecond clock, so
/// they run to 12-16 hex digits (15-19 decimal ones); the bounds leave room below that and
/// keep short names (`/leader/12`, `/svc/cafe`) lease keys.
pub(crate) fn named_like_a_lease(key: &[u8]) -> bool {
    let last = key
        .iter()
        .rposition(|b| *b == b'/')
        .map_or(key, |i| &key[i + 1..]);
    let Ok(text) = std::str::from_utf8(last) else {
        return false;
    };
    let hex = (10..=16).contains(&text.len())
        && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        && u64::from_str_radix(text, 16).is_ok_and(|n| n > 0 && i64::try_from(n).is_ok());
    let decimal = (13..=19).contains(&text.len())
        && text.bytes().all(|b| b.is_ascii_digit())
        && text.parse::<i64>().is_ok_and(|n| n > 0);
    key.contains(&b'/') && (hex || decimal)
}

impl Layout for PerKey {
    /// What the source says it holds when it holds both: the election API, the scheme an
    /// empty prefix most often waits for. Each election carries its own ([`Layout::scheme_of`]).
    fn scheme(&self) -> Scheme {
        Scheme::EtcdElection
    }

    fn per_key(&self) -> bool {
        true
    }

    fn scheme_of(&self, election: &[u8]) -> Scheme {
        self.part(election)
            .map_or(Scheme::EtcdLeaseKey, |(layout, _)| layout.scheme())
    }

    fn prefixes(&self) -> Vec<Vec<u8>> {
        self.election.prefixes()
    }

    fn election_of(&self, key: &[u8]) -> Option<Vec<u8>> {
        let (tag, id) = if named_like_a_lease(key) {
            (ELECTION, self.election.election_of(key)?)
        } else {
            (LEASE_KEY, self.lease_key.election_of(key)?)
        };
        let mut tagged = Vec::with_capacity(id.len() + 1);
        tagged.push(tag);
        tagged.extend_from_slice(&id);
        Some(tagged)
    }

    fn display_name(&self, election: &[u8]) -> String {
        match self.part(election) {
            Some((layout, id)) => layout.display_name(id),
            None => crate::model::escape_bytes(election),
        }
    }

    fn derive(&self, election: &[u8], mirror: &Mirror) -> Holders {
        match self.part(election) {
            // The election API's line is every key in its directory: only those named like
            // a lease belong to it here; a lease key beside them is an election of its own.
            Some((_, dir)) if election[0] == ELECTION => {
                let mut h = self.election.derive(dir, mirror);
                h.candidates.retain(|c| named_like_a_lease(&c.raw_key));
                // A held head of the line leads nobody (see `EtcdElection::derive`).
                h.leader = h.candidates.first().filter(|_| h.held.is_none()).cloned();
                h
            }
            Some((layout, id)) => layout.derive(id, mirror),
            None => Holders::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::etcd::layout::Kv;

    fn put(m: &mut Mirror, key: &str, value: &str, create: i64, lease: i64) {
        let kv = Kv {
            key: key.as_bytes().to_vec(),
            value: value.as_bytes().to_vec(),
            create_revision: create,
            mod_revision: create,
            lease,
        };
        m.insert(kv.key.clone(), kv);
    }

    #[test]
    fn lease_ids_in_hex_or_decimal_are_told_from_names() {
        for yes in [
            "/svc/jobs/694d7a3f2b1c0a05",
            "/e/x/7587862319712430127",
            "/e/x/2b1c0a05ff",
        ] {
            assert!(named_like_a_lease(yes.as_bytes()), "{yes}");
        }
        for no in [
            "/leader/12",
            "/svc/cafe",
            "/svc/lock/billing",
            "694d7a3f2b1c0a05",
            "/e/x/694D7A3F2B1C0A05",
            "/e/x/ffffffffffffffff",
            "/e/x/99999999999999999999",
        ] {
            assert!(!named_like_a_lease(no.as_bytes()), "{no}");
        }
    }

    #[test]
    fn an_election_and_two_locks_under_one_prefix_stay_three_elections() {
        let layout = PerKey::new(b"/svc/".to_vec());
        let mut m = Mirror::new();
        let a = 0x694d_7a3f_2b1c_0a05_i64;
        let b = 0x694d_7a3f_2b1c_0a09_i64;
        put(&mut m, &format!("/svc/jobs/{a:x}"), "jobs-1", 3, a);
        put(&mut m, &format!("/svc/jobs/{b:x}"), "jobs-2", 4, b);
        put(&mut m, "/svc/lock/billing", "billing-a", 5, 0x11);
        put(&mut m, "/svc/lock/reports", "reports-a", 6, 0x12);
        let mut ids: Vec<Vec<u8>> = m.keys().filter_map(|k| layout.election_of(k)).collect();
        ids.dedup();
        let named: Vec<(String, Scheme)> = ids
            .iter()
            .map(|id| (layout.display_name(id), layout.scheme_of(id)))
            .collect();
        assert_eq!(
            named,
            [
                ("jobs".to_string(), Scheme::EtcdElection),
                ("lock/billing".to_string(), Scheme::EtcdLeaseKey),
                ("lock/reports".to_string(), Scheme::EtcdLeaseKey),
            ]
        );
        let jobs = layout.derive(&ids[0], &m);
        let line: Vec<_> = jobs.candidates.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(line, ["jobs-1", "jobs-2"]);
        let billing = layout.derive(&ids[1], &m);
        assert_eq!(billing.leader.map(|l| l.id), Some("billing-a".into()));
        assert_eq!(billing.candidates.len(), 1, "no line: nobody else in it");
    }

    #[test]
    fn a_lease_key_beside_candidates_in_one_directory_is_its_own_election() {
        let layout = PerKey::new(b"/svc/".to_vec());
        let mut m = Mirror::new();
        let a = 0x694d_7a3f_2b1c_0a05_i64;
        put(&mut m, &format!("/svc/jobs/{a:x}"), "jobs-1", 3, a);
        put(&mut m, "/svc/jobs/owner", "someone", 2, 0x11);
        let jobs = layout
            .election_of(format!("/svc/jobs/{a:x}").as_bytes())
            .expect("id");
        let h = layout.derive(&jobs, &m);
        assert_eq!(h.leader.map(|l| l.id), Some("jobs-1".into()));
        assert_eq!(h.candidates.len(), 1);
        let owner = layout.election_of(b"/svc/jobs/owner").expect("id");
        assert_eq!(layout.display_name(&owner), "jobs/owner");
        assert_eq!(layout.scheme_of(&owner), Scheme::EtcdLeaseKey);
    }
}
