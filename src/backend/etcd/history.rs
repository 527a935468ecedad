//! History replayed in the background: a second tracker follows a watch from the oldest
//! revision etcd keeps up to the snapshot the screen already shows, and its leader changes
//! are merged in front of what was seen live. The first frame never waits for it.

use std::collections::HashMap;
use std::time::Instant;

use etcd_client::{Client, WatchOptions};

use super::error::EtcdError;
use super::layout::{Kv, Mirror};
use super::leases::fates;
use super::tracker::{Change, Observation, Tracker};

/// How far a replay got, for the progress shown while it runs.
pub(super) type Progress = tokio::sync::watch::Sender<i64>;

/// A finished replay: the tracker that replayed, and where history began when the oldest
/// revisions were compacted away.
pub(super) struct Replayed {
    pub tracker: Tracker,
    pub compacted: Option<i64>,
}

/// Replays into `tracker` (empty, with the live tracker's layout) every change up to
/// `target`, the snapshot's revision, then returns it. A compacted start begins at the
/// compaction point, from the state read there.
pub(super) async fn replay(
    client: Client,
    endpoint: String,
    mut tracker: Tracker,
    snapshot: std::sync::Arc<Mirror>,
    target: i64,
    progress: Progress,
    times: Option<crate::backend::engine::journal::Journal>,
) -> Result<Replayed, EtcdError> {
    let prefixes = tracker.layout().prefixes();
    let past = Past {
        client: &client,
        endpoint: &endpoint,
        prefixes: &prefixes,
        snapshot: &snapshot,
        target,
        progress: &progress,
    };
    let mut from = 1;
    let mut compacted = None;
    loop {
        match follow(&past, &mut tracker, from).await? {
            None => {
                if let Some(j) = &times {
                    tracker.fill_seen(&super::times::load(j));
                }
                return Ok(Replayed { tracker, compacted });
            }
            Some(compact) => {
                compacted = Some(compact);
                let (at, _) = read_at(&client, &endpoint, &prefixes, compact).await?;
                tracker.load(at, compact);
                from = compact + 1;
            }
        }
    }
}

async fn read_at(
    client: &Client,
    endpoint: &str,
    prefixes: &[Vec<u8>],
    revision: i64,
) -> Result<(Mirror, i64), EtcdError> {
    let mut kv = client
        .kv_client()
        .max_decoding_message_size(super::DECODE_LIMIT);
    let mut mirror = Mirror::new();
    for p in prefixes {
        let opts = etcd_client::GetOptions::new()
            .with_prefix()
            .with_revision(revision);
        let resp = kv
            .get(p.clone(), Some(opts))
            .await
            .map_err(|e| EtcdError::from_client(endpoint, e))?;
        for kv in resp.kvs() {
            let kv = Kv::from_etcd(kv);
            mirror.insert(kv.key.clone(), kv);
        }
    }
    Ok((mirror, revision))
}

/// What a replay reads from and up to: the member, the prefixes, and the snapshot (at
/// revision `target`) it must reach, with where it has got to for the screen.
struct Past<'a> {
    client: &'a Client,
    endpoint: &'a str,
    prefixes: &'a [Vec<u8>],
    snapshot: &'a Mirror,
    target: i64,
    progress: &'a Progress,
}

/// Follows one watch per prefix from `from` until the mirror is the snapshot or a change past
/// `target` shows every earlier one was delivered. `Some(rev)`: compacted at `rev`.
async fn follow(
    past: &Past<'_>,
    tracker: &mut Tracker,
    from: i64,
) -> Result<Option<i64>, EtcdError> {
    let Past {
        client,
        endpoint,
        prefixes,
        snapshot,
        target,
        progress,
    } = *past;
    let err = |e| EtcdError::from_client(endpoint, e);
    let mut watcher = client
        .watch_client()
        .max_decoding_message_size(super::DECODE_LIMIT);
    // No previous values (see `watch::open`): the replay is applied in order to what it
    // rebuilt.
    let opts = || WatchOptions::new().with_prefix().with_start_revision(from);
    let Some(first) = prefixes.first() else {
        return Ok(None);
    };
    let mut stream = watcher
        .watch(first.clone(), Some(opts()))
        .await
        .map_err(err)?;
    for p in prefixes.iter().skip(1) {
        stream.watch(p.clone(), Some(opts())).await.map_err(err)?;
    }
    // etcd 3.4.23 answers a progress request before an unsynced watcher has delivered its
    // past events (fixed in 3.4.24), so the end is found from the events themselves: a
    // change past the target, or the mirror equal to the snapshot it must reach.
    let mut created = 0;
    loop {
        let resp = stream
            .message()
            .await
            .map_err(err)?
            .ok_or_else(|| EtcdError::WatchEnded {
                endpoint: endpoint.to_string(),
            })?;
        if resp.created() {
            created += 1;
        }
        if resp.canceled() && resp.compact_revision() > 0 {
            return Ok(Some(resp.compact_revision()));
        }
        let changes = super::watch::changes_of(&resp);
        let past_target = changes.iter().any(|c| c.revision() > target);
        let old: Vec<Change> = changes
            .into_iter()
            .filter(|c| c.revision() <= target)
            .collect();
        if let Some(last) = old.last() {
            let _ = progress.send(last.revision());
        }
        apply(client, tracker, old).await;
        if past_target || (created == prefixes.len() && tracker.mirror_equals(snapshot)) {
            return Ok(None);
        }
    }
}

async fn apply(client: &Client, tracker: &mut Tracker, changes: Vec<Change>) {
    if changes.is_empty() {
        return;
    }
    let f: HashMap<i64, _> = fates(client, tracker.leases_to_check(&changes)).await;
    let now = Instant::now();
    let seen = Observation {
        at: None,
        now,
        since: now,
        replayed: true,
    };
    tracker.apply_quietly(changes, &f, seen);
}
