//! A ZooKeeper plan's step, one `multi`, and the words the confirmation shows for it, in
//! ZooKeeper's own (zxids in hex, as its tools print them).

use crate::admin::{Check, Compare, Key, StoreStep, compares_in_lines};

/// One ZooKeeper `multi`: all of it or nothing. ZooKeeper cannot compare a node's czxid
/// or mzxid inside a multi, only its data version; so `compares` (czxid and mzxid of
/// each node, as seen) are checked in one read just before, and the multi then deletes
/// `delete` and checks `keep`, each at the data version that read found. The read and
/// the multi are not one atomic step: what the multi still catches is any node deleted
/// or written since the read; what it cannot is a node deleted and made again at the
/// same path in between, which a sequential name never is (its number comes from the
/// parent's child count, which only grows), only a node made by hand under that name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Multi {
    pub compares: Vec<Compare>,
    pub delete: Vec<Key>,
    pub keep: Vec<Key>,
}

/// What a ZooKeeper plan reads back after it wrote: who leads the election whose znode is
/// this path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Znode(pub String);

impl StoreStep for Multi {
    fn line(&self) -> String {
        let checks: Vec<String> = self.compares.iter().map(zk_compare).collect();
        format!(
            "read, then one multi: if {} then, at the data versions read, {}",
            checks.join(" and "),
            self.ops().join(", ")
        )
    }

    /// The compares one to a line under `if`, the operations under `then`.
    fn lines(&self) -> Vec<String> {
        let mut lines = vec!["read, then one multi: if".to_string()];
        lines.extend(compares_in_lines(self.compares.iter().map(zk_compare)));
        lines.push("then, at the data versions read".to_string());
        lines.extend(self.ops().into_iter().map(|o| format!("  {o}")));
        lines
    }
}

impl Multi {
    /// The operations: each delete (and check) at the data version the read found.
    fn ops(&self) -> Vec<String> {
        let deletes = self.delete.iter().map(|k| format!("delete {}", k.shown));
        let checks = self
            .keep
            .iter()
            .map(|k| format!("check {} is still there", k.shown));
        deletes.chain(checks).collect()
    }
}

/// A compare of a node, in ZooKeeper's words.
fn zk_compare(c: &Compare) -> String {
    let k = &c.key.shown;
    match &c.check {
        Check::CreateRevision(z) => format!("czxid({k}) == 0x{z:x}"),
        Check::ModRevision(z) => format!("mzxid({k}) == 0x{z:x}"),
        _ => c.to_string(),
    }
}
