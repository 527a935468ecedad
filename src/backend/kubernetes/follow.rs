//! Following a Kubernetes source: list the Leases (every namespace, or each one given),
//! then watch from each list's resourceVersion and apply every event in the order the API
//! server sent it. A watch the server ends (its timeout) is resumed from the last
//! resourceVersion seen, which is no change; a `410 Gone` is listed again and compared, so
//! only what really changed meanwhile is told; one silent past its own timeout is lost.
//! Each second the server is asked for its version (its contact), and a countdown that ran
//! out is confirmed by reading its Lease again.

use std::time::{Duration, Instant, SystemTime};

use futures::StreamExt;
use futures::stream::BoxStream;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{ListParams, WatchEvent, WatchParams};
use tracing::info;

use super::KubeBackend;
use super::client::Cluster;
use super::error::KubeError;
use super::lease::Read;
use super::tracker::KubeTracker;
use crate::backend::BackendIo;
use crate::backend::change::Changes;
use crate::backend::engine::drive::{Source, Steps, drive};
use crate::backend::engine::history;
use crate::backend::engine::lifecycle::{Input, Lifecycle};
use crate::backend::forced::{Marks as _, serve};
use crate::config::NODE_LEASES;

type Stop = crate::backend::Stop<KubeError>;

/// How often the server is asked something, which proves what is shown is current.
const CONTACT_EVERY: Duration = Duration::from_secs(1);
/// Leases asked for per page of a list.
const PAGE: u32 = 500;
/// How long the server keeps one watch open before ending it (it is then resumed).
const WATCH_SECS: u32 = 290;

pub(super) async fn run(b: KubeBackend, io: BackendIo) {
    let only = b.opts.only_elections(&b.info.short);
    let recorded = history::open(&io, &b.info, &b.opts.history, b.opts.history_limit, &only);
    let past = history::by_election(recorded);
    let mut tracker = KubeTracker::new(b.info.id, b.info.name.clone(), b.opts.history_limit, past);
    tracker.audited_at_start(crate::backend::forced::audited_actions(&b.info.name));
    let mut f = Follow {
        tracker,
        b,
        io,
        life: Lifecycle::new(1, Duration::from_millis(500), Duration::from_secs(10)),
        loaded: false,
    };
    drive(&mut f).await;
}

struct Follow {
    b: KubeBackend,
    io: BackendIo,
    tracker: KubeTracker,
    life: Lifecycle,
    /// The first list is done: later lists report what changed.
    loaded: bool,
}

/// One namespace's watch (`None`: every namespace), from where its list or last event left.
struct Watch {
    namespace: Option<String>,
    version: String,
    events: Option<BoxStream<'static, Result<WatchEvent<Lease>, kube::Error>>>,
}

/// A cluster's client, its watches, and the clock of its contact.
struct Link {
    cluster: Cluster,
    watches: Vec<Watch>,
    tick: tokio::time::Interval,
}

impl Steps for Follow {
    type Error = KubeError;
    type Link = Link;

    fn lifecycle(&mut self) -> &mut Lifecycle {
        &mut self.life
    }

    fn source(&self) -> Source<'_> {
        let (io, info, one_shot) = (&self.io, &self.b.info, self.b.opts.one_shot);
        Source { io, info, one_shot }
    }

    /// The client, from the kubeconfig or the pod; the first request is the list's.
    async fn connect(&mut self, _from: usize) -> Result<(usize, Link), Stop> {
        let cluster = Cluster::new(&self.b.cfg, self.b.opts.request_timeout).await?;
        info!(source = %self.b.info.name, server = %cluster.server, "kubernetes client ready");
        let namespaces: Vec<Option<String>> = match self.b.cfg.namespaces.is_empty() {
            true => vec![None],
            false => self.b.cfg.namespaces.iter().cloned().map(Some).collect(),
        };
        let watches = (namespaces.into_iter())
            .map(|namespace| Watch {
                namespace,
                version: String::new(),
                events: None,
            })
            .collect();
        let mut tick = tokio::time::interval(CONTACT_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        Ok((
            0,
            Link {
                cluster,
                watches,
                tick,
            },
        ))
    }

    /// Every Lease listed; the first list sets the scene, a later one is compared.
    async fn snapshot(&mut self, l: &mut Link) -> Result<Input, Stop> {
        let sent = (Instant::now(), SystemTime::now());
        let mut reads = Vec::new();
        for w in &mut l.watches {
            let (mut listed, version) = self.list(&l.cluster, w.namespace.as_deref()).await?;
            reads.append(&mut listed);
            w.version = version;
            w.events = None;
        }
        let (now, wall) = (Instant::now(), SystemTime::now());
        let changes = match self.loaded {
            false => self.tracker.load(reads, (now, wall), self.b.opts.retention),
            true => self.tracker.relist(reads, now, wall),
        };
        self.loaded = true;
        self.tell(changes).await?;
        self.send(contact(self.b.info.id, sent)).await?;
        l.tick.reset();
        Ok(Input::SnapshotRead { replay: false })
    }

    /// The next watch event of any namespace, in the order the server sent it; or, each
    /// [`CONTACT_EVERY`], the server asked for its version and the countdowns applied;
    /// meanwhile the runtime's requests.
    async fn follow(&mut self, l: &mut Link) -> Result<Input, Stop> {
        for w in &mut l.watches {
            if w.events.is_none() {
                let ns = w.namespace.as_deref();
                w.events = Some(self.watch(&l.cluster, ns, &w.version).await?);
            }
        }
        let next = futures::future::select_all(l.watches.iter_mut().map(|w| {
            Box::pin(async move {
                // The server ends a watch after WATCH_SECS, and nothing else does: one on a
                // dead connection that says nothing past that is lost.
                let quiet = Duration::from_secs(u64::from(WATCH_SECS) + 30);
                let events = w.events.as_mut().expect("opened above");
                let ev = tokio::time::timeout(quiet, events.next()).await;
                (ev, w)
            })
        }));
        let expiry = self.tracker.next_expiry(Instant::now());
        tokio::select! {
            ((ev, w), _, _) = next => match ev {
                Ok(ev) => self.on_event(&l.cluster, ev, w).await?,
                Err(_) => {
                    let said = format!("nothing for over {WATCH_SECS} s, its own timeout");
                    return Err(KubeError::Lost(l.cluster.server.clone(), said).into());
                }
            },
            _ = l.tick.tick() => {
                let sent = (Instant::now(), SystemTime::now());
                let within = self.b.opts.request_timeout;
                let (cluster, server) = (&l.cluster.client, &l.cluster.server);
                tokio::time::timeout(within, cluster.apiserver_version())
                    .await
                    .map_err(|_| KubeError::Timeout(server.clone(), within))?
                    .map_err(|e| KubeError::from_client(&e, server, "get", None))?;
                let changes = self.tracker.settle(Instant::now());
                self.tell(changes).await?;
                self.send(contact(self.b.info.id, sent)).await?;
            }
            _ = sleep_until(expiry) => self.expire(&l.cluster).await?,
            cmd = self.io.commands.recv() => serve(&self.io, &self.b.info, cmd, &mut self.tracker).await?,
        }
        Ok(Input::Followed)
    }
}

impl Follow {
    async fn send(&self, event: crate::model::SourceEvent) -> Result<(), Stop> {
        self.io.events.send(event).await.map_err(|_| Stop::Closed)
    }

    async fn tell(&mut self, changes: Changes) -> Result<(), Stop> {
        crate::backend::engine::show(&self.io, &self.b.info, changes).await
    }

    /// The Leases whose countdown ran out, each read again first: a renewal may sit unread
    /// in a watch that stalled, and a countdown that ran out while nothing was heard is no
    /// observation. Deposed holders whose time ran out are settled too.
    async fn expire(&mut self, cluster: &Cluster) -> Result<(), Stop> {
        for key in self.tracker.ran_out(Instant::now()) {
            let Some((ns, name)) = key.split_once('/') else {
                continue;
            };
            let within = self.b.opts.request_timeout;
            let got = tokio::time::timeout(within, cluster.leases(Some(ns)).get_opt(name))
                .await
                .map_err(|_| KubeError::Timeout(cluster.server.clone(), within))?
                .map_err(|e| KubeError::from_client(&e, &cluster.server, "get", Some(ns)))?;
            let read = got.as_ref().and_then(Read::of);
            let changes = (self.tracker).confirm(&key, read, Instant::now(), SystemTime::now());
            self.tell(changes).await?;
        }
        let changes = self.tracker.settle(Instant::now());
        self.tell(changes).await
    }

    /// The Leases of one namespace (or all), a page at a time, and the resourceVersion the
    /// list is consistent at. Node heartbeats are left out unless their namespace is asked.
    async fn list(
        &self,
        cluster: &Cluster,
        namespace: Option<&str>,
    ) -> Result<(Vec<Read>, String), Stop> {
        let api = cluster.leases(namespace);
        let mut params = ListParams::default().limit(PAGE);
        if let Some(sel) = &self.b.cfg.selector {
            params = params.labels(sel);
        }
        let node_leases = self.b.cfg.node_leases();
        let mut reads = Vec::new();
        loop {
            let within = self.b.opts.request_timeout;
            let page = tokio::time::timeout(within, api.list(&params))
                .await
                .map_err(|_| KubeError::Timeout(cluster.server.clone(), within))?
                .map_err(|e| KubeError::from_client(&e, &cluster.server, "list", namespace))?;
            reads.extend(
                (page.items.iter())
                    .filter_map(Read::of)
                    .filter(|r| node_leases || r.namespace() != NODE_LEASES),
            );
            match page.metadata.continue_.filter(|c| !c.is_empty()) {
                Some(next) => params = params.continue_token(&next),
                None => {
                    let version = page.metadata.resource_version.unwrap_or_default();
                    return Ok((reads, version));
                }
            }
        }
    }

    /// A watch of `ns` (none: every namespace) from `version`.
    async fn watch(
        &self,
        cluster: &Cluster,
        ns: Option<&str>,
        version: &str,
    ) -> Result<BoxStream<'static, Result<WatchEvent<Lease>, kube::Error>>, Stop> {
        let api = cluster.leases(ns);
        let mut params = WatchParams::default().timeout(WATCH_SECS);
        if let Some(sel) = &self.b.cfg.selector {
            params = params.labels(sel);
        }
        let within = self.b.opts.request_timeout;
        let stream = tokio::time::timeout(within, api.watch(&params, version))
            .await
            .map_err(|_| KubeError::Timeout(cluster.server.clone(), within))?
            .map_err(|e| KubeError::from_client(&e, &cluster.server, "watch", ns))?;
        Ok(stream.boxed())
    }

    /// One watch event: a write or a delete applied, a bookmark's resourceVersion kept; the
    /// end of a watch resumes it (no change); an error ends the step (`410 Gone`: list
    /// again).
    async fn on_event(
        &mut self,
        cluster: &Cluster,
        ev: Option<Result<WatchEvent<Lease>, kube::Error>>,
        w: &mut Watch,
    ) -> Result<(), Stop> {
        let ns = w.namespace.as_deref();
        let ev = match ev {
            None => {
                w.events = None;
                return Ok(());
            }
            Some(Err(e)) => {
                return Err(match &e {
                    kube::Error::Api(_) => KubeError::from_client(&e, &cluster.server, "watch", ns),
                    _ => KubeError::Lost(cluster.server.clone(), e.to_string()),
                }
                .into());
            }
            Some(Ok(ev)) => ev,
        };
        let (now, wall) = (Instant::now(), SystemTime::now());
        let node_leases = self.b.cfg.node_leases();
        let changes = match ev {
            WatchEvent::Added(l) | WatchEvent::Modified(l) => {
                let Some(r) = Read::of(&l) else { return Ok(()) };
                w.version = r.resource_version.clone();
                if !node_leases && r.namespace() == NODE_LEASES {
                    return Ok(());
                }
                self.tracker.written(r, now, wall)
            }
            WatchEvent::Deleted(l) => {
                let Some(r) = Read::of(&l) else { return Ok(()) };
                w.version = r.resource_version.clone();
                self.tracker.deleted(&r.key, now, wall)
            }
            WatchEvent::Bookmark(b) => {
                w.version = b.metadata.resource_version;
                return Ok(());
            }
            WatchEvent::Error(status) => {
                let e = kube::Error::Api(status);
                return Err(KubeError::from_client(&e, &cluster.server, "watch", ns).into());
            }
        };
        self.tell(changes).await
    }
}

/// The server answered as of `sent`; the next answer is due within [`CONTACT_EVERY`].
fn contact(
    source: crate::model::SourceId,
    sent: (Instant, SystemTime),
) -> crate::model::SourceEvent {
    crate::backend::engine::contact(source, sent, CONTACT_EVERY)
}

/// Until `at`, or never.
async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}
