//! Which znodes under the prefix are candidates of which election, and in what order: pure,
//! from the nodes as read (`../shared/design/election-models.md`, ZooKeeper).
//!
//! Every recipe seen (Curator `LeaderLatch` and `LeaderSelector`, kazoo `Election` and `Lock`)
//! has each candidate create an ephemeral sequential child of the election's znode; the
//! lowest sequence number leads. Detection is per node, so one prefix may hold several
//! recipes, and any other ephemeral sequential child counts as a candidate too.

use std::collections::BTreeMap;

use crate::model::{Candidate, Election, Scheme, SourceId, escape_bytes};

/// One znode as read: its path and data, and the parts of its stat the layout needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Znode {
    /// Absolute path (as the server sees it, below any chroot).
    pub path: String,
    pub data: Vec<u8>,
    pub czxid: i64,
    pub mzxid: i64,
    /// The session holding an ephemeral node; 0 for a persistent one.
    pub ephemeral_owner: i64,
}

impl Znode {
    pub fn is_ephemeral(&self) -> bool {
        self.ephemeral_owner != 0
    }

    /// The last segment of the path.
    pub fn name(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or(&self.path)
    }

    /// The parent's path (`/` for a child of the root).
    pub fn parent(&self) -> &str {
        match self.path.rfind('/') {
            Some(0) | None => "/",
            Some(i) => &self.path[..i],
        }
    }
}

/// The recipe a candidate's node name says it was made by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recipe {
    /// Curator `LeaderLatch`: `_c_<uuid>-latch-<seq>`.
    CuratorLatch,
    /// Curator `LeaderSelector` (an `InterProcessMutex`): `_c_<uuid>-lock-<seq>`.
    CuratorLock,
    /// kazoo `Election` and `Lock`: `<uuid>__lock__<seq>`.
    Kazoo,
    /// Any other ephemeral sequential node.
    Sequential,
}

/// ZooKeeper appends the sequence number as 10 digits (`%010d`).
const SEQ_DIGITS: usize = 10;

/// The sequence number a node name ends with, if it ends with ZooKeeper's 10 digits.
pub fn sequence(name: &str) -> Option<u64> {
    let at = name.len().checked_sub(SEQ_DIGITS)?;
    let digits = name.get(at..)?;
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// What made the candidate node `n`, or `None` when it is no candidate: it must be
/// ephemeral (a session holds it) and end in a sequence number.
pub fn recipe(n: &Znode) -> Option<Recipe> {
    if !n.is_ephemeral() {
        return None;
    }
    let name = n.name();
    sequence(name)?;
    let stem = &name[..name.len() - SEQ_DIGITS];
    Some(if stem.starts_with("_c_") && stem.ends_with("-latch-") {
        Recipe::CuratorLatch
    } else if stem.starts_with("_c_") && stem.ends_with("-lock-") {
        Recipe::CuratorLock
    } else if stem.ends_with("__lock__") {
        Recipe::Kazoo
    } else {
        Recipe::Sequential
    })
}

/// The candidate a node stands for. Its id is the node's data; a node with none (Curator
/// writes the empty id by default, as kazoo does without an identifier) is named by its node
/// name, so two such candidates are still told apart.
pub fn candidate(n: &Znode) -> Candidate {
    let (id, raw_id) = if n.data.is_empty() {
        (
            escape_bytes(n.name().as_bytes()),
            n.name().as_bytes().to_vec(),
        )
    } else {
        (super::single::shown(&n.data), n.data.clone())
    };
    Candidate {
        id,
        raw_id,
        key: escape_bytes(n.path.as_bytes()),
        raw_key: n.path.as_bytes().to_vec(),
        // Not an etcd lease: `Some(0)` would call it a zombie. The session is in `stamp`.
        lease: None,
        create_revision: n.czxid,
        mod_revision: n.mzxid,
        // The holder's session (`ephemeralOwner`) in ZooKeeper's own hex notation, which an
        // admin action will compare on (and the deposed-holder check will follow) until the
        // model has a field for sessions.
        stamp: Some(session_hex(n.ephemeral_owner)),
        ttl: None,
    }
}

/// A session id as ZooKeeper's own tools print it: `0x` and lower-case hex.
pub fn session_hex(session: i64) -> String {
    format!("0x{:x}", session as u64)
}

/// The election's name: its znode's path below the prefix, or the prefix's own path when
/// the candidates are its direct children.
pub fn election_name(prefix: &str, parent: &str) -> String {
    let prefix = prefix.trim_end_matches('/');
    match parent.strip_prefix(prefix) {
        Some(rest) if rest.starts_with('/') && rest.len() > 1 => rest[1..].to_string(),
        _ => parent.to_string(),
    }
}

/// The election whose znode is `parent`, from its children as read; `None` when none of
/// them is a candidate. The line is in sequence order (the 10-digit suffix, not the name:
/// every client prefixes its own uuid), leader first.
pub fn election(
    source: SourceId,
    prefix: &str,
    parent: &str,
    children: &[Znode],
) -> Option<Election> {
    let mut line: Vec<(u64, &Znode)> = children
        .iter()
        .filter(|n| n.parent() == parent && recipe(n).is_some())
        .filter_map(|n| Some((sequence(n.name())?, n)))
        .collect();
    if line.is_empty() {
        return None;
    }
    line.sort_by_key(|(seq, n)| (*seq, n.czxid));
    let mut e = Election::new(source, election_name(prefix, parent), Scheme::ZkRecipe);
    e.candidates = line.into_iter().map(|(_, n)| candidate(n)).collect();
    e.leader = e.candidates.first().cloned();
    Some(e)
}

/// Every election under the prefix, by name, from all the nodes read below it.
pub fn elections(source: SourceId, prefix: &str, nodes: &[Znode]) -> Vec<Election> {
    let mut by_parent: BTreeMap<&str, Vec<Znode>> = BTreeMap::new();
    for n in nodes.iter().filter(|n| recipe(n).is_some()) {
        by_parent.entry(n.parent()).or_default().push(n.clone());
    }
    let mut out: Vec<Election> = by_parent
        .into_iter()
        .filter_map(|(parent, children)| election(source, prefix, parent, &children))
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(path: &str, data: &str, czxid: i64, owner: i64) -> Znode {
        Znode {
            path: path.into(),
            data: data.as_bytes().to_vec(),
            czxid,
            mzxid: czxid,
            ephemeral_owner: owner,
        }
    }

    fn ids(e: &Election) -> Vec<&str> {
        e.candidates.iter().map(|c| c.id.as_str()).collect()
    }

    #[test]
    fn each_recipe_is_told_by_its_node_name() {
        let r = |name: &str| recipe(&node(&format!("/e/{name}"), "x", 1, 7));
        assert_eq!(
            r("_c_0b1e9a52-4c1a-4b0e-9a1c-1d2e3f4a5b6c-latch-0000000003"),
            Some(Recipe::CuratorLatch)
        );
        assert_eq!(
            r("_c_0b1e9a52-4c1a-4b0e-9a1c-1d2e3f4a5b6c-lock-0000000000"),
            Some(Recipe::CuratorLock)
        );
        assert_eq!(
            r("8d4f2c3b7f1e4b5a9c0d1e2f3a4b5c6d__lock__0000000012"),
            Some(Recipe::Kazoo)
        );
        assert_eq!(r("member_0000000001"), Some(Recipe::Sequential));
        assert_eq!(r("member_000000001"), None, "nine digits: not a sequence");
        assert_eq!(r("leader"), None);
    }

    #[test]
    fn persistent_nodes_are_no_candidates() {
        let n = node("/e/_c_a-latch-0000000001", "x", 1, 0);
        assert_eq!(recipe(&n), None);
        assert!(election(0, "/", "/e", &[n]).is_none());
    }

    #[test]
    fn the_lowest_sequence_leads_whatever_the_names_say() {
        // Names sort the other way round: "z..." has the lowest sequence number.
        let nodes = [
            node("/app/jobs/aaa__lock__0000000007", "node-b", 30, 2),
            node("/app/jobs/zzz__lock__0000000002", "node-a", 20, 1),
            node("/app/jobs/mmm__lock__0000000011", "node-c", 40, 3),
        ];
        let e = election(4, "/app", "/app/jobs", &nodes).expect("an election");
        assert_eq!(e.name, "jobs");
        assert_eq!(e.source, 4);
        assert_eq!(e.scheme, Scheme::ZkRecipe);
        assert_eq!(ids(&e), ["node-a", "node-b", "node-c"]);
        let leader = e.leader.as_ref().expect("a leader");
        assert_eq!(leader.id, "node-a");
        assert_eq!(leader.key, "/app/jobs/zzz__lock__0000000002");
        assert_eq!(leader.raw_key, b"/app/jobs/zzz__lock__0000000002");
        assert_eq!(leader.create_revision, 20);
        assert_eq!(leader.stamp.as_deref(), Some("0x1"));
        assert_eq!(e.waiting(), Some(2));
    }

    #[test]
    fn a_curator_node_without_data_is_named_by_its_node() {
        let name = "_c_0b1e9a52-4c1a-4b0e-9a1c-1d2e3f4a5b6c-latch-0000000000";
        let n = node(&format!("/svc/{name}"), "", 5, 0x1000_0a3f_22b4_0001);
        let c = candidate(&n);
        assert_eq!(c.id, name);
        assert_eq!(c.stamp.as_deref(), Some("0x10000a3f22b40001"));
        assert_eq!(c.lease, None, "not a zombie: a session holds it");
    }

    #[test]
    fn ids_are_escaped_for_the_screen_and_kept_raw_for_compare() {
        let mut n = node("/e/x__lock__0000000000", "", 1, 9);
        n.data = b"bad\x1b[2Jid".to_vec();
        let c = candidate(&n);
        assert_eq!(c.id, "bad\\u{1b}[2Jid");
        assert_eq!(c.raw_id, b"bad\x1b[2Jid");
    }

    #[test]
    fn elections_are_grouped_by_parent_and_named_below_the_prefix() {
        let nodes = [
            node("/election", "", 1, 0),
            node("/election/a", "", 2, 0),
            node("/election/a/_c_u1-latch-0000000001", "a2", 4, 12),
            node("/election/a/_c_u2-latch-0000000000", "a1", 3, 11),
            node("/election/b/deep", "", 5, 0),
            node("/election/b/deep/k__lock__0000000000", "b1", 6, 13),
            node("/election/b/config", "not a candidate", 7, 0),
            node("/election/x__lock__0000000004", "top", 8, 14),
        ];
        let got = elections(0, "/election/", &nodes);
        let names: Vec<&str> = got.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["/election", "a", "b/deep"]);
        assert_eq!(ids(&got[1]), ["a1", "a2"]);
        assert_eq!(ids(&got[2]), ["b1"]);
        assert_eq!(got[0].leader.as_ref().map(|l| l.id.as_str()), Some("top"));
    }

    #[test]
    fn parents_and_names_of_paths() {
        let n = node("/a/b/c", "", 1, 0);
        assert_eq!((n.parent(), n.name()), ("/a/b", "c"));
        let top = node("/a", "", 1, 0);
        assert_eq!((top.parent(), top.name()), ("/", "a"));
        assert_eq!(election_name("/", "/a/b"), "a/b");
        assert_eq!(election_name("/a", "/a"), "/a");
        assert_eq!(election_name("/a", "/ab"), "/ab");
    }
}
