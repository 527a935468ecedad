//! The etcd backend: one snapshot, then one watch per key prefix from the snapshot's
//! revision (or from the past, to replay history). Leader changes come from diffing each
//! revision in [`tracker::Tracker`]; lease TTLs are read only for what is visible and counted
//! down locally in between. It reads through one member at a time and moves to another when
//! that one fails ([`lifecycle`] holds the life cycle); [`members`] probes them all.

pub(crate) mod admin;
mod audited;
mod detect;
pub(crate) mod dial;
pub mod election;
pub(crate) mod error;
mod follow;
mod history;
pub mod layout;
pub(crate) mod lease_key;
mod leases;
pub(crate) mod members;
mod participant;
mod past;
pub(crate) mod patroni;
mod per_key;
mod plan;
mod preview;
pub(crate) mod resume;
mod store;
pub(crate) mod times;
pub mod tracker;
mod watch;

use etcd_client::{Client, GetOptions};

pub use self::error::EtcdError;
use self::layout::{Kv, Layout, Mirror};
pub use self::store::{Etcd, EtcdTarget};
use super::{Backend, BackendFuture, BackendIo, BackendOptions};
use crate::config::EtcdSource;
use crate::model::{Scheme, SourceEvent, SourceId, SourceInfo};

/// The runtime went away: stop quietly.
pub(super) struct Closed;

/// Why an etcd step stopped.
pub(super) type Stop = crate::backend::Stop<EtcdError>;

impl From<Closed> for Stop {
    fn from(_: Closed) -> Self {
        Stop::Closed
    }
}

pub struct EtcdBackend {
    pub(super) info: SourceInfo,
    cfg: EtcdSource,
    pub(super) opts: BackendOptions,
    /// When the backend was made: `status` must answer within its --timeout from here, so
    /// the budget for reading leases counts from here, not from the end of the snapshot.
    pub(super) started: tokio::time::Instant,
}

impl EtcdBackend {
    pub fn new(id: SourceId, short: String, cfg: EtcdSource, opts: BackendOptions) -> Self {
        let endpoints = cfg.endpoints.join(",");
        let prefix = crate::model::escape_bytes(cfg.prefix.as_bytes());
        let info = SourceInfo {
            store: crate::model::StoreKind::Etcd,
            id,
            name: format!("etcd {endpoints} {prefix}"),
            short,
            label: match (prefix.is_empty(), dial::security_note(&cfg)) {
                (true, None) => "(all keys)".to_string(),
                (true, Some(note)) => format!("(all keys) · {note}"),
                (false, None) => prefix,
                (false, Some(note)) => format!("{prefix} · {note}"),
            },
            endpoints,
            scheme: cfg.scheme,
            read_only: cfg.read_only,
            clustered: true,
            idle_is_normal: false,
            notice: None,
        };
        EtcdBackend {
            info,
            cfg,
            opts,
            started: tokio::time::Instant::now(),
        }
    }

    /// The layout of `scheme`, or with none chosen (configured or found to be Patroni's),
    /// each key read for itself.
    fn layout(&self, scheme: Option<Scheme>) -> Box<dyn Layout> {
        let prefix = self.cfg.prefix.as_bytes().to_vec();
        match scheme {
            Some(Scheme::EtcdLeaseKey) => Box::new(lease_key::EtcdLeaseKey {
                prefix,
                registry: self.cfg.registry.as_ref().map(|r| r.as_bytes().to_vec()),
            }),
            Some(Scheme::Patroni) => Box::new(patroni::Patroni { prefix }),
            Some(_) => Box::new(election::EtcdElection { prefix }),
            None => Box::new(per_key::PerKey::new(prefix)),
        }
    }
}

impl Backend for EtcdBackend {
    fn info(&self) -> SourceInfo {
        self.info.clone()
    }

    fn run(self: Box<Self>, io: BackendIo) -> BackendFuture {
        Box::pin(follow::run(*self, io))
    }
}

pub(super) async fn send(io: &BackendIo, ev: SourceEvent) -> Result<(), Closed> {
    io.events.send(ev).await.map_err(|_| Closed)
}

/// Runs an etcd request against `endpoint` under the configured deadline.
pub(super) async fn timed<T>(
    backend: &EtcdBackend,
    endpoint: &str,
    fut: impl std::future::Future<Output = Result<T, etcd_client::Error>>,
) -> Result<T, EtcdError> {
    let limit = backend.opts.request_timeout;
    match tokio::time::timeout(limit, fut).await {
        Ok(r) => r.map_err(|e| EtcdError::from_client(endpoint, e)),
        Err(_) => Err(EtcdError::Timeout {
            endpoint: endpoint.to_string(),
            timeout: limit,
        }),
    }
}

/// Keys in the first range page: enough for a first frame, quick to read and show.
pub(super) const FIRST_PAGE: i64 = 2_000;
/// Keys in each later page: pages keep each response well under the decode limit and let
/// a huge prefix be read without one giant allocation on either side, but each costs a
/// round trip, and etcd 3.4 walks the rest of the range's index for every page: with
/// small pages each page read slower than the one before (docs/PERFORMANCE.md).
const PAGE: i64 = 20_000;
/// No limit: `status` and `watch` draw nothing while they read, so one range is read as
/// etcdctl reads it, faster than in pages (docs/PERFORMANCE.md).
const WHOLE: i64 = 0;
/// The largest response electop decodes (tonic's default is 4 MiB).
pub const DECODE_LIMIT: usize = 64 << 20;

/// The first key after every key that starts with `prefix` (etcd's prefix range end); an
/// empty result means "to the end of the keyspace".
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    Vec::new()
}

/// Reads every key under `prefixes` at one revision (`None`: now), a page at a time, all
/// pages at the revision of the first. Returns the keys and the revision. With a
/// `preview`, each page goes to the screen as it arrives.
async fn read_all(
    backend: &EtcdBackend,
    endpoint: &str,
    client: &mut Client,
    prefixes: &[Vec<u8>],
    at: Option<i64>,
    mut preview: Option<&mut preview::Preview<'_>>,
) -> Result<(Mirror, i64), Stop> {
    let mut kv = client.kv_client().max_decoding_message_size(DECODE_LIMIT);
    let mut mirror = Mirror::new();
    let mut revision = at.unwrap_or(0);
    for prefix in prefixes {
        let end = prefix_end(prefix);
        // An empty prefix is the whole keyspace: from "\0" with end "\0" (from-key).
        let mut from = if prefix.is_empty() {
            vec![0]
        } else {
            prefix.clone()
        };
        let mut limit = if preview.is_some() { FIRST_PAGE } else { WHOLE };
        // A page too large to decode shrinks every page after it too.
        let mut shrunk = false;
        loop {
            let mut opts = GetOptions::new().with_limit(limit);
            opts = if end.is_empty() {
                opts.with_from_key()
            } else {
                opts.with_range(end.clone())
            };
            if revision > 0 {
                opts = opts.with_revision(revision);
            }
            let mut resp = match timed(backend, endpoint, kv.get(from.clone(), Some(opts))).await {
                Err(e) if e.kind() == error::ErrorKind::TooLarge && limit != 1 => {
                    limit = if limit == WHOLE {
                        PAGE
                    } else {
                        (limit / 8).max(1)
                    };
                    shrunk = true;
                    continue;
                }
                Err(e) if e.kind() == error::ErrorKind::TooLarge => {
                    return Err(Stop::Failed(too_large(endpoint, prefix)));
                }
                r => r?,
            };
            if revision == 0 {
                revision = resp.header().map(|h| h.revision()).unwrap_or(0);
            }
            let (count, more) = (resp.count(), resp.more());
            let last = take_page(&mut resp, &mut mirror);
            if let Some(p) = preview.as_deref_mut() {
                p.page(&mirror, count, more).await?;
            }
            match (more, last) {
                (true, Some(mut key)) => {
                    key.push(0);
                    from = key;
                    if !shrunk {
                        limit = PAGE;
                    }
                }
                _ => break,
            }
        }
    }
    Ok((mirror, revision))
}

/// Moves a page's keys into `mirror`; returns the last key.
fn take_page(resp: &mut etcd_client::GetResponse, mirror: &mut Mirror) -> Option<Vec<u8>> {
    let mut last = None;
    for kv in resp.take_kvs() {
        let kv = Kv::from_etcd_owned(kv);
        last = Some(kv.key.clone());
        mirror.insert(kv.key.clone(), kv);
    }
    last
}

/// One key under `prefix` alone is over the response limit: no page can hold it.
fn too_large(endpoint: &str, prefix: &[u8]) -> EtcdError {
    EtcdError::lasting(
        endpoint,
        format!(
            "a single key under {} is larger than the {} MiB response limit",
            crate::model::escape_bytes(prefix),
            DECODE_LIMIT >> 20
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::prefix_end;

    #[test]
    fn prefix_ends_like_etcd() {
        assert_eq!(prefix_end(b"/e/"), b"/e0".to_vec());
        assert_eq!(prefix_end(b"a\xff"), b"b".to_vec());
        assert_eq!(prefix_end(b"\xff\xff"), Vec::<u8>::new());
        assert_eq!(prefix_end(b""), Vec::<u8>::new());
    }
}
