//! What a ZooKeeper source was given, checked against the server: whether the chroot and
//! the prefix exist, and what is read under the prefix for its layout.

use super::error::ZkError;
use super::layout::Znode;
use super::read::{Reader, Seen};
use super::single::Layout;
use crate::config::ZkSource;

/// `None` when the prefix exists; else what the source's notice says (it is watched, so
/// what is created there is shown). A chroot that does not exist is an error: ZooKeeper
/// answers "no node" for every path below it, which would read as an empty store.
pub(super) async fn missing_prefix(
    reader: &Reader<'_>,
    cfg: &ZkSource,
) -> Result<Option<String>, ZkError> {
    if reader.exists(&cfg.prefix).await? {
        return Ok(None);
    }
    if let Some(chroot) = &cfg.chroot
        && !reader.exists("/").await?
    {
        return Err(ZkError::NoChroot(chroot.clone(), cfg.endpoints.join(",")));
    }
    Ok(Some(format!(
        "prefix {} does not exist (yet): nothing to show; watching for it to be created \
         (check --prefix; zkCli: ls {})",
        cfg.prefix,
        parent_or_root(&cfg.prefix)
    )))
}

/// What the layout reads under the prefix: the whole tree, or (Kafka) its children only.
/// `seen` is told what the tree read gets as it goes.
pub(super) async fn read(
    reader: &Reader<'_>,
    cfg: &ZkSource,
    seen: &mut impl Seen,
) -> Result<Vec<Znode>, ZkError> {
    if Layout::of(cfg.preset).deep() {
        reader.tree(&cfg.prefix, seen).await
    } else {
        reader.children(&cfg.prefix).await
    }
}

/// Resolves only when a member answers an HTTP request (or with anything else ZooKeeper
/// never says), a second into a handshake that has not come: that member is no ZooKeeper.
/// ZooKeeper reads `GET ` as a length far too large and closes without a word, and a frozen
/// member says nothing, so neither is taken for another kind of server.
pub(super) async fn not_zookeeper(endpoints: &[String]) -> ZkError {
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    for ep in endpoints {
        if let Some(said) = probe(ep).await {
            return ZkError::NotZooKeeper(ep.clone(), said);
        }
    }
    std::future::pending().await
}

/// What `ep` answers an HTTP request with, if anything, within a second.
async fn probe(ep: &str) -> Option<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let wait = std::time::Duration::from_secs(1);
    let mut s = tokio::time::timeout(wait, tokio::net::TcpStream::connect(ep))
        .await
        .ok()?
        .ok()?;
    s.write_all(b"GET / HTTP/1.0\r\n\r\n").await.ok()?;
    let mut buf = [0u8; 64];
    let n = tokio::time::timeout(wait, s.read(&mut buf))
        .await
        .ok()?
        .ok()?;
    let got = &buf[..n];
    if got.is_empty() {
        None
    } else if got.starts_with(b"HTTP/") {
        Some("it answers HTTP".to_string())
    } else {
        let first = crate::model::escape_bytes(&got[..n.min(24)]);
        Some(format!("it answered `{first}`"))
    }
}

fn parent_or_root(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_hint_lists_the_parent() {
        assert_eq!(super::parent_or_root("/a/b"), "/a");
        assert_eq!(super::parent_or_root("/a"), "/");
    }
}
