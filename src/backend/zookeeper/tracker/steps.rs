//! The watch's events applied one at a time, in the order ZooKeeper sent them: a deletion
//! is itself the step (the node leaves its election's nodes as last known), a creation or a
//! data change brings the node as read just after its event. Re-reading the election's
//! znode at each event instead saw every later change at once: two nodes deleted together
//! made one leader change (n1 -> n3) where the store had made two (n1 -> n2 -> n3).

use std::collections::HashSet;
use std::time::SystemTime;

use super::ZkTracker;
use crate::backend::change::Changes;
use crate::backend::zookeeper::layout::Znode;

impl ZkTracker {
    /// Keeps `children` (those of `parent` the layout counts) as its election's nodes.
    pub(super) fn keep_nodes(&mut self, parent: &str, children: &[Znode]) {
        let mine: Vec<Znode> = children
            .iter()
            .filter(|n| n.parent() == parent && self.layout.holds(n))
            .cloned()
            .collect();
        if mine.is_empty() {
            self.nodes.remove(parent);
        } else {
            self.nodes.insert(parent.to_string(), mine);
        }
    }

    /// A watch event said the node at `path` was deleted: its election without it, if it
    /// was one of the nodes known. `held`: sessions known to hold a node now (see
    /// [`ZkTracker::deleted_leader_session`]).
    pub(crate) fn deleted(&mut self, path: &str, at: SystemTime, held: &HashSet<i64>) -> Changes {
        let parent = parent_of(path);
        let Some(known) = self.nodes.get(parent) else {
            return Changes::default();
        };
        if !known.iter().any(|n| n.path == path) {
            return Changes::default();
        }
        let children: Vec<Znode> = known.iter().filter(|n| n.path != path).cloned().collect();
        self.apply(parent, &children, at, held)
    }

    /// A watch event said a node of `parent` was created or written: `read`, the nodes read
    /// just after it (a node already gone again is not among them; its deletion comes next).
    pub(crate) fn written(&mut self, parent: &str, read: Vec<Znode>, at: SystemTime) -> Changes {
        let mut children = self.nodes.get(parent).cloned().unwrap_or_default();
        for n in read.into_iter().filter(|n| n.parent() == parent) {
            match children.iter_mut().find(|c| c.path == n.path) {
                Some(c) => *c = n,
                None => children.push(n),
            }
        }
        self.apply(parent, &children, at, &HashSet::new())
    }
}

/// The parent of a node's path (`/` for a child of the root), as [`Znode::parent`].
fn parent_of(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}
