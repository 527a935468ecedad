//! Reading znodes: the whole tree under the prefix, or the children of one election.

use std::time::Duration;

use zookeeper_client::{Client, Error as E};

use super::error::ZkError;
use super::layout::Znode;

/// How many znodes one source reads at most: beyond that, the prefix is too wide to be
/// one place where elections live.
pub(crate) const MAX_NODES: usize = 200_000;

/// Told how the tree read goes as it gets answers (see `preview`).
pub(crate) trait Seen {
    /// `n` more znodes read (a parent's children may come in several chunks).
    fn znodes(&mut self, n: usize);
    /// All of `parent`'s children, read.
    async fn parent(&mut self, parent: &str, children: &[Znode]);
}

/// A read nobody watches (a re-read after a reconnect: the screen has it all already).
impl Seen for () {
    fn znodes(&mut self, _: usize) {}
    async fn parent(&mut self, _: &str, _: &[Znode]) {}
}

/// One client and what its errors are reported against.
pub(crate) struct Reader<'a> {
    pub client: &'a Client,
    pub connect: &'a str,
    pub timeout: Duration,
}

impl Reader<'_> {
    fn err(&self, e: E, path: &str) -> ZkError {
        ZkError::from_client(e, self.connect, path, self.timeout)
    }

    async fn bounded<T>(
        &self,
        path: &str,
        f: impl std::future::Future<Output = Result<T, E>>,
    ) -> Result<Option<T>, ZkError> {
        match tokio::time::timeout(self.timeout, f).await {
            Err(_) => Err(ZkError::Timeout(self.connect.to_string(), self.timeout)),
            Ok(Ok(v)) => Ok(Some(v)),
            // Gone between listing and reading it: as if it had never been listed.
            Ok(Err(E::NoNode)) => Ok(None),
            Ok(Err(e)) => Err(self.err(e, path)),
        }
    }

    /// The paths of `parent`'s children; empty when `parent` is gone.
    pub(super) async fn list(&self, parent: &str) -> Result<Vec<String>, ZkError> {
        let names = self
            .bounded(parent, self.client.list_children(parent))
            .await?;
        Ok(names
            .unwrap_or_default()
            .iter()
            .map(|n| join(parent, n))
            .collect())
    }

    /// The znodes at `paths` with their data and stat (those gone since listed left out),
    /// and which of them have children of their own.
    pub(super) async fn data(
        &self,
        paths: Vec<String>,
    ) -> Result<(Vec<Znode>, Vec<String>), ZkError> {
        // One request per child, pipelined on the one connection.
        let reads = paths
            .iter()
            .map(|p| self.bounded(p, self.client.get_data(p)));
        let got = futures::future::join_all(reads).await;
        let mut nodes = Vec::with_capacity(paths.len());
        let mut deeper = Vec::new();
        for (path, read) in paths.into_iter().zip(got) {
            let Some((data, stat)) = read? else { continue };
            if stat.ephemeral_owner == 0 && stat.num_children > 0 {
                deeper.push(path.clone());
            }
            nodes.push(Znode {
                path,
                data,
                czxid: stat.czxid,
                mzxid: stat.mzxid,
                ephemeral_owner: stat.ephemeral_owner,
            });
        }
        Ok((nodes, deeper))
    }

    /// Whether `path` exists.
    pub(crate) async fn exists(&self, path: &str) -> Result<bool, ZkError> {
        let stat = self.bounded(path, self.client.check_stat(path)).await?;
        Ok(stat.flatten().is_some())
    }

    /// How many znodes are below `path`, as the server counts them (one request, ZooKeeper
    /// 3.6 on); `None` where it cannot say (an older server, or `path` is gone).
    pub(crate) async fn descendants(&self, path: &str) -> Result<Option<usize>, ZkError> {
        let count = self.client.count_descendants_number(path);
        match tokio::time::timeout(self.timeout, count).await {
            Err(_) => Err(ZkError::Timeout(self.connect.to_string(), self.timeout)),
            Ok(Ok(n)) => Ok(Some(n)),
            Ok(Err(E::ConnectionLoss)) => Err(self.err(E::ConnectionLoss, path)),
            Ok(Err(_)) => Ok(None),
        }
    }

    /// The children of one election's znode.
    pub(crate) async fn children(&self, parent: &str) -> Result<Vec<Znode>, ZkError> {
        Ok(self.data(self.list(parent).await?).await?.0)
    }

    /// Every znode below `prefix` (not the prefix itself), at most [`MAX_NODES`].
    ///
    /// Many parents are listed at once: one after the other, each election cost two round
    /// trips in turn, 10,000 elections 20,000: far slower than ZooKeeper's Java client making
    /// the same reads all asynchronously (docs/PERFORMANCE.md). A parent with many children
    /// is read in chunks, descending as each answers (`tree`).
    /// `seen` is told how far the read got, and each parent's children once all are read.
    pub(crate) async fn tree(
        &self,
        prefix: &str,
        seen: &mut impl Seen,
    ) -> Result<Vec<Znode>, ZkError> {
        super::tree::tree(self, prefix, seen).await
    }
}

/// `parent/name`, with no doubled `/` below the root.
pub(crate) fn join(parent: &str, name: &str) -> String {
    if parent.ends_with('/') {
        format!("{parent}{name}")
    } else {
        format!("{parent}/{name}")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn paths_join_without_a_double_slash() {
        assert_eq!(super::join("/", "a"), "/a");
        assert_eq!(super::join("/a", "b"), "/a/b");
    }
}
