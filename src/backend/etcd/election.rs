//! `etcd-election`: etcd's v3 election API (`etcdctl elect`, Go's `concurrency.Election`).
//! Each candidate holds `<election>/<lease id>` on its own lease (in hex from etcdctl and Go,
//! in decimal from the Node `etcd3` package); the lowest
//! create_revision leads and the rest wait in that order.

use super::layout::{Holders, Layout, Mirror, children, relative_name};
use crate::model::Scheme;

pub struct EtcdElection {
    pub prefix: Vec<u8>,
}

impl Layout for EtcdElection {
    fn scheme(&self) -> Scheme {
        Scheme::EtcdElection
    }

    fn prefixes(&self) -> Vec<Vec<u8>> {
        vec![self.prefix.clone()]
    }

    /// The election is everything up to and including the key's last `/`.
    fn election_of(&self, key: &[u8]) -> Option<Vec<u8>> {
        let rest = key.strip_prefix(self.prefix.as_slice())?;
        let slash = rest.iter().rposition(|b| *b == b'/')?;
        Some(key[..self.prefix.len() + slash + 1].to_vec())
    }

    fn display_name(&self, election: &[u8]) -> String {
        relative_name(&self.prefix, election)
    }

    /// The lowest create revision leads, unless an admin action holds its key: then nobody
    /// does until the hold's lease ends, and the held keys are not in line.
    fn derive(&self, election: &[u8], mirror: &Mirror) -> Holders {
        let mut line: Vec<_> = children(mirror, election).collect();
        line.sort_by_key(|kv| kv.create_revision);
        let head_held = line.first().is_some_and(|kv| held(&kv.key, kv.lease));
        let held = head_held.then(|| line[0].candidate());
        let candidates: Vec<_> = line
            .iter()
            .filter(|kv| !self::held(&kv.key, kv.lease))
            .map(|kv| kv.candidate())
            .collect();
        Holders {
            leader: candidates.first().filter(|_| !head_held).cloned(),
            candidates,
            held,
            ..Holders::default()
        }
    }
}

/// Is this key held by an admin action? An election client names its key after its own
/// lease; electop's hold re-puts the key, name unchanged, onto a lease of its own (the only
/// writer that moves a candidate's key to another lease), so a key named for one lease on
/// another is held. etcd's lease ids use the high bits (a member's id and a time), so a
/// name under 2^32 is a sequence number, not a lease.
fn held(key: &[u8], lease: i64) -> bool {
    let suffix = key.rsplit(|b| *b == b'/').next().unwrap_or_default();
    let named = std::str::from_utf8(suffix).ok().and_then(|s| {
        i64::from_str_radix(s, 16)
            .ok()
            .or_else(|| s.parse::<i64>().ok())
    });
    lease != 0 && named.is_some_and(|n| n >= 1 << 32) && !looks_like_candidate(key, lease)
}

/// Does this key look like an election candidate, named after its own lease? etcdctl and
/// Go's `concurrency` package write the lease id in hex, the Node `etcd3` package in decimal.
/// Used to guess the scheme when none is configured.
pub fn looks_like_candidate(key: &[u8], lease: i64) -> bool {
    if lease == 0 {
        return false;
    }
    let suffix = match key.iter().rposition(|b| *b == b'/') {
        Some(i) => &key[i + 1..],
        None => return false,
    };
    suffix == format!("{lease:x}").as_bytes() || suffix == lease.to_string().as_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::etcd::layout::Kv;

    fn kv(key: &str, value: &str, create: i64, lease: i64) -> Kv {
        Kv {
            key: key.as_bytes().to_vec(),
            value: value.as_bytes().to_vec(),
            create_revision: create,
            mod_revision: create,
            lease,
        }
    }

    #[test]
    fn lowest_create_revision_leads_and_nested_elections_stay_apart() {
        let layout = EtcdElection {
            prefix: b"/e/".to_vec(),
        };
        let mut m = Mirror::new();
        for kv in [
            kv("/e/jobs/2", "b", 7, 2),
            kv("/e/jobs/1", "a", 9, 1),
            kv("/e/jobs/sub/3", "c", 1, 3),
        ] {
            m.insert(kv.key.clone(), kv);
        }
        let jobs = layout.election_of(b"/e/jobs/2").expect("election");
        assert_eq!(jobs, b"/e/jobs/");
        assert_eq!(layout.display_name(&jobs), "jobs");
        let h = layout.derive(&jobs, &m);
        let ids: Vec<_> = h.candidates.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["b", "a"]);
        assert_eq!(h.leader.map(|l| l.id), Some("b".to_string()));
        assert_eq!(layout.display_name(b"/e/jobs/sub/"), "jobs/sub");
        assert_eq!(layout.election_of(b"/e/nokey"), None);
    }

    #[test]
    fn a_held_head_of_the_line_leads_nobody_and_leaves_the_line() {
        let layout = EtcdElection {
            prefix: b"/e/".to_vec(),
        };
        let mut m = Mirror::new();
        // node-a's key (named for its lease) held on electop's lease; node-b waits.
        for kv in [
            kv("/e/jobs/390da22024880308", "a", 5, 0x390da22024880319),
            kv("/e/jobs/390da2202488030d", "b", 7, 0x390da2202488030d),
        ] {
            m.insert(kv.key.clone(), kv);
        }
        let h = layout.derive(b"/e/jobs/", &m);
        assert_eq!(h.leader, None);
        assert_eq!(h.held.map(|c| c.id), Some("a".to_string()));
        let ids: Vec<_> = h.candidates.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["b"]);
        // The hold ends: etcd deletes the held key, and node-b leads.
        m.remove(b"/e/jobs/390da22024880308".as_slice());
        let h = layout.derive(b"/e/jobs/", &m);
        assert_eq!(h.leader.map(|l| l.id), Some("b".to_string()));
        assert!(h.held.is_none());
    }

    #[test]
    fn keys_on_their_own_lease_or_none_or_not_named_for_a_lease_are_not_held() {
        let on = 0x390da22024880319;
        assert!(held(b"/e/jobs/390da22024880308", on));
        assert!(held(b"/e/jobs/7587855358190682121", on), "a decimal name");
        let own = 0x390da22024880308;
        assert!(!held(b"/e/jobs/390da22024880308", own), "its own lease");
        assert!(
            !held(b"/e/jobs/390da22024880308", 0),
            "a key without a lease"
        );
        assert!(!held(b"/e/jobs/leader", on), "not named for a lease");
        assert!(!held(b"/e/jobs/2", 1), "a sequence number, not a lease");
    }

    #[test]
    fn prefix_that_is_the_election_itself_keeps_its_name() {
        let layout = EtcdElection {
            prefix: b"scheduler".to_vec(),
        };
        let e = layout.election_of(b"scheduler/694d").expect("election");
        assert_eq!(layout.display_name(&e), "scheduler");
    }

    #[test]
    fn candidate_keys_are_recognised_by_their_lease_suffix() {
        assert!(looks_like_candidate(b"x/694d7a3f", 0x694d7a3f));
        assert!(!looks_like_candidate(b"x/694d7a3f", 0));
        assert!(!looks_like_candidate(b"leader", 5));
        assert!(
            looks_like_candidate(b"election/jobs/7587855358190682121", 0x694d_7a3f_0000_0009),
            "the Node etcd3 package's decimal lease id"
        );
        assert!(!looks_like_candidate(b"x/12", 0x13));
        assert!(looks_like_candidate(
            b"election/jobs/7587862319712430127",
            7587862319712430127
        ));
        assert!(!looks_like_candidate(b"x/694d7a3f", 0x694d7a40));
    }
}
