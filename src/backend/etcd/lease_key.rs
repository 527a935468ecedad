//! `etcd-lease-key`: one key per election, `<prefix><name>`, whose value is the leader id and
//! whose lease is the leader's. An optional registry, `<registry><name>/<id>`, lists the live
//! candidates, each on its own lease.

use super::layout::{Holders, Layout, Mirror, children, relative_name};
use crate::model::Scheme;

pub(crate) struct EtcdLeaseKey {
    pub prefix: Vec<u8>,
    pub registry: Option<Vec<u8>>,
}

impl EtcdLeaseKey {
    fn registry_dir(&self, election: &[u8]) -> Option<Vec<u8>> {
        let registry = self.registry.as_ref()?;
        let mut dir = registry.clone();
        dir.extend_from_slice(election);
        dir.push(b'/');
        Some(dir)
    }
}

impl Layout for EtcdLeaseKey {
    fn scheme(&self) -> Scheme {
        Scheme::EtcdLeaseKey
    }

    fn prefixes(&self) -> Vec<Vec<u8>> {
        let mut p = vec![self.prefix.clone()];
        p.extend(self.registry.clone());
        p
    }

    /// The election id is the name after the prefix (or after the registry, up to the id).
    fn election_of(&self, key: &[u8]) -> Option<Vec<u8>> {
        if let Some(registry) = &self.registry
            && let Some(rest) = key.strip_prefix(registry.as_slice())
        {
            let slash = rest.iter().rposition(|b| *b == b'/')?;
            return Some(rest[..slash].to_vec());
        }
        key.strip_prefix(self.prefix.as_slice()).map(<[u8]>::to_vec)
    }

    fn display_name(&self, election: &[u8]) -> String {
        let mut full = self.prefix.clone();
        full.extend_from_slice(election);
        relative_name(&self.prefix, &full)
    }

    fn derive(&self, election: &[u8], mirror: &Mirror) -> Holders {
        let mut key = self.prefix.clone();
        key.extend_from_slice(election);
        let leader = mirror.get(&key).map(|kv| kv.candidate());
        let mut line = Vec::new();
        if let Some(dir) = self.registry_dir(election) {
            let mut entries: Vec<_> = children(mirror, &dir).collect();
            entries.sort_by_key(|kv| kv.create_revision);
            line = entries
                .iter()
                .map(|kv| kv.candidate_named(&kv.key[dir.len()..]))
                .collect();
        }
        if let Some(leader) = &leader {
            match line.iter().position(|c| c.id == leader.id) {
                Some(i) => {
                    let entry = line.remove(i);
                    line.insert(0, entry);
                }
                None => line.insert(0, leader.clone()),
            }
        }
        Holders {
            leader,
            candidates: line,
            ..Holders::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::etcd::layout::Kv;

    fn put(m: &mut Mirror, key: &str, value: &str, create: i64) {
        let kv = Kv {
            key: key.as_bytes().to_vec(),
            value: value.as_bytes().to_vec(),
            create_revision: create,
            mod_revision: create,
            lease: 7,
        };
        m.insert(kv.key.clone(), kv);
    }

    #[test]
    fn leader_from_key_and_line_from_registry_leader_first() {
        let layout = EtcdLeaseKey {
            prefix: b"/leader/".to_vec(),
            registry: Some(b"/registry/".to_vec()),
        };
        let mut m = Mirror::new();
        put(&mut m, "/leader/billing", "node-b", 10);
        put(&mut m, "/registry/billing/node-a", "10.0.0.1", 3);
        put(&mut m, "/registry/billing/node-b", "10.0.0.2", 4);
        put(&mut m, "/registry/billing/node-c", "10.0.0.3", 5);
        assert_eq!(
            layout.election_of(b"/registry/billing/node-a"),
            Some(b"billing".to_vec())
        );
        assert_eq!(
            layout.election_of(b"/leader/billing"),
            Some(b"billing".to_vec())
        );
        let h = layout.derive(b"billing", &m);
        assert_eq!(h.leader.as_ref().map(|l| l.id.as_str()), Some("node-b"));
        let ids: Vec<_> = h.candidates.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["node-b", "node-a", "node-c"]);
        assert_eq!(layout.display_name(b"billing"), "billing");
    }

    #[test]
    fn without_registry_the_leader_is_the_only_candidate() {
        let layout = EtcdLeaseKey {
            prefix: b"/leader/".to_vec(),
            registry: None,
        };
        let mut m = Mirror::new();
        put(&mut m, "/leader/x", "me", 1);
        let h = layout.derive(b"x", &m);
        assert_eq!(h.candidates.len(), 1);
        assert_eq!(layout.derive(b"y", &m).leader, None);
    }
}
