//! How a scheme lays elections out in etcd's keyspace. Each scheme implements [`Layout`] in
//! its own file; the tracker and the connection code are shared.

use std::collections::BTreeMap;

use crate::model::{Candidate, HistoryEntry, MemberInfo, Note, Scheme, escape_bytes};

/// One key as etcd holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kv {
    pub key: Vec<u8>,
    pub value: Vec<u8>,
    pub create_revision: i64,
    pub mod_revision: i64,
    pub lease: i64,
}

impl Kv {
    pub fn from_etcd(kv: &etcd_client::KeyValue) -> Kv {
        Kv {
            key: kv.key().to_vec(),
            value: kv.value().to_vec(),
            create_revision: kv.create_revision(),
            mod_revision: kv.mod_revision(),
            lease: kv.lease(),
        }
    }

    /// As `from_etcd`, without copying the key and value.
    pub fn from_etcd_owned(kv: etcd_client::KeyValue) -> Kv {
        let (create_revision, mod_revision, lease) =
            (kv.create_revision(), kv.mod_revision(), kv.lease());
        let (key, value) = kv.into_key_value();
        Kv {
            key,
            value,
            create_revision,
            mod_revision,
            lease,
        }
    }

    /// A candidate whose identity is the key's value.
    pub fn candidate(&self) -> Candidate {
        self.candidate_named(&self.value)
    }

    /// A candidate whose identity is `raw_id` (a registry key's last segment).
    pub fn candidate_named(&self, raw_id: &[u8]) -> Candidate {
        Candidate {
            id: escape_bytes(raw_id),
            raw_id: raw_id.to_vec(),
            key: escape_bytes(&self.key),
            raw_key: self.key.clone(),
            lease: Some(self.lease),
            create_revision: self.create_revision,
            mod_revision: self.mod_revision,
            stamp: None,
            ttl: None,
        }
    }
}

/// The keys under the watched prefixes, as of the last applied revision.
pub type Mirror = BTreeMap<Vec<u8>, Kv>;

/// Keys directly under `dir` (no further `/`), in key order.
pub fn children<'a>(mirror: &'a Mirror, dir: &'a [u8]) -> impl Iterator<Item = &'a Kv> + 'a {
    mirror
        .range(dir.to_vec()..)
        .take_while(move |(k, _)| k.starts_with(dir))
        .filter(move |(k, _)| !k[dir.len()..].contains(&b'/'))
        .map(|(_, kv)| kv)
}

/// The leader and the line of one election, derived from the mirror.
#[derive(Debug, Default)]
pub struct Holders {
    pub leader: Option<Candidate>,
    /// Leader first.
    pub candidates: Vec<Candidate>,
    /// The key an admin action holds at the head of the line, so nobody leads until its
    /// lease ends (not in `candidates`).
    pub held: Option<Candidate>,
    /// What the store says of the candidates beyond their keys (Patroni's members).
    pub members: Vec<MemberInfo>,
    pub notes: Vec<Note>,
    /// Leader changes the store records itself (Patroni's `history` key), oldest first.
    pub past: Vec<HistoryEntry>,
}

pub trait Layout: Send + Sync {
    fn scheme(&self) -> Scheme;
    /// The scheme of one election: the layout's, unless it reads each key for itself.
    fn scheme_of(&self, _election: &[u8]) -> Scheme {
        self.scheme()
    }
    /// Guessed key by key ([`super::per_key::PerKey`]) rather than configured.
    fn per_key(&self) -> bool {
        false
    }
    /// Key prefixes to read and watch.
    fn prefixes(&self) -> Vec<Vec<u8>>;
    /// The election a key belongs to (an opaque id), or `None` for unrelated keys.
    fn election_of(&self, key: &[u8]) -> Option<Vec<u8>>;
    /// The election's name for the screen and JSON.
    fn display_name(&self, election: &[u8]) -> String;
    fn derive(&self, election: &[u8], mirror: &Mirror) -> Holders;
}

/// Display name of an election id relative to `prefix`: the id without the prefix, or the
/// whole id when the prefix is the election itself.
pub fn relative_name(prefix: &[u8], election: &[u8]) -> String {
    let rest = election.strip_prefix(prefix).unwrap_or(election);
    let rest = rest.strip_suffix(b"/").unwrap_or(rest);
    if rest.is_empty() {
        let whole = election.strip_suffix(b"/").unwrap_or(election);
        escape_bytes(whole)
    } else {
        escape_bytes(rest)
    }
}
