//! Writes Curator `LeaderLatch` elections into ZooKeeper, fast: an election's znode and its
//! three candidates in one `multi`, many `multi`s in flight, all from one session that stays
//! open for the run (its ephemeral nodes go when it closes).

use std::time::Duration;

use futures::StreamExt;
use zookeeper_client::{Acls, Client, CreateMode};

/// Candidates per election, as the target counts them.
pub const CANDIDATES: usize = 3;
/// Elections per `multi`: 4 creates each, 400 ops a request, far below jute.maxbuffer.
const PER_MULTI: usize = 100;
const IN_FLIGHT: usize = 16;

/// The loader's session: long, so a busy machine never expires it mid-run.
pub async fn connect(endpoint: &str) -> Client {
    Client::connector()
        .with_session_timeout(Duration::from_secs(30))
        .connect(endpoint)
        .await
        .expect("connect the loader to zookeeper")
}

/// The election's name under the prefix.
pub fn election(e: usize) -> String {
    format!("e{e:06}")
}

/// A Curator-like `_c_<uuid>-latch-` prefix (the server appends the sequence).
fn latch_prefix(e: usize, c: usize) -> String {
    let x = (e as u64) << 8 | c as u64;
    format!(
        "_c_{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}-latch-",
        x.wrapping_mul(2_654_435_761) as u32,
        e & 0xffff,
        c,
        e & 0xfff,
        x
    )
}

/// Creates `prefix` (persistent, with its parents) and `n` elections of three candidates
/// under it; the first created of each leads.
pub async fn load(client: &Client, prefix: &str, n: usize) {
    let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
    let mut at = String::new();
    for part in prefix.trim_matches('/').split('/') {
        at.push('/');
        at.push_str(part);
        match client.create(&at, b"", &persistent).await {
            Ok(_) | Err(zookeeper_client::Error::NodeExists) => {}
            Err(e) => panic!("create {at}: {e}"),
        }
    }
    let batches: Vec<std::ops::Range<usize>> = (0..n.div_ceil(PER_MULTI))
        .map(|b| b * PER_MULTI..((b + 1) * PER_MULTI).min(n))
        .collect();
    futures::stream::iter(batches)
        .map(|range| async move {
            let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
            let candidate = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
            let mut multi = client.new_multi_writer();
            for e in range {
                let parent = format!("{prefix}/{}", election(e));
                multi.add_create(&parent, b"", &persistent).expect("op");
                for c in 0..CANDIDATES {
                    let path = format!("{parent}/{}", latch_prefix(e, c));
                    let id = format!("node-{e}-{c}");
                    multi
                        .add_create(&path, id.as_bytes(), &candidate)
                        .expect("op");
                }
            }
            multi.commit().await.expect("load multi");
        })
        .buffer_unordered(IN_FLIGHT)
        .collect::<Vec<()>>()
        .await;
}

/// The leader's node of election `e` (the lowest sequence), read back.
pub async fn leader(client: &Client, prefix: &str, e: usize) -> String {
    let parent = format!("{prefix}/{}", election(e));
    let mut names = client.list_children(&parent).await.expect("list");
    names.sort_by_key(|n| n.rsplit('-').next().map(str::to_string));
    format!("{parent}/{}", names[0])
}
