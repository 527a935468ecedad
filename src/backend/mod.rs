//! The stores: where elections live, and how electop reads and changes them. A store
//! reads its elections as [`SourceEvent`]s over a channel (a tokio task per source), knows
//! the model, and never touches the read model's views or the UI.
//!
//! Each store is a folder that implements [`Store`]: its follow task ([`Backend`]: connect,
//! detect the layout, snapshot and follow, as an explicit connection state machine), the
//! plans of its admin actions and their execution, and its participant for `electop node`.
//! The decision "did the leader change, why, was it forced" and the history entry it makes
//! are shared (`change` and `forced`), not written per store.
//!
//! Adding a store (Redis is the latest):
//! 1. a `SourceConfig` variant and its flags (`config`, `cli`);
//! 2. a folder here with a type implementing [`Store`] on its own config and target, and
//!    its plans' steps (each an `admin::StoreStep`) and read-back;
//! 3. its one line in `stores!` below;
//! 4. to offer `electop demo`, a [`demo::Demo`] in its folder and its line in [`DEMOS`].

pub(crate) mod book;
pub(crate) mod change;
pub mod demo;
pub(crate) mod engine;
pub mod etcd;
pub(crate) mod forced;
pub mod kubernetes;
#[cfg(test)]
mod plan_tests;
pub mod probe;
pub mod redis;
pub mod session_lock;
pub mod sql;
pub(crate) mod tls;
pub mod zookeeper;

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::admin::{AdminRequest, Outcome, Plan, Target};
use crate::config::SourceConfig;
use crate::model::{Scheme, SourceEvent, SourceId, SourceInfo};

/// Requests from the runtime to a backend.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// What the screen shows: keep these elections' leader leases (and the first
    /// candidates of `selected`) fresh. Reads follow what is visible, not the election count.
    Visible {
        names: Vec<String>,
        selected: Option<String>,
    },
    /// An admin action is changing this election (`Some`: which action, by whom), or one of
    /// ours did not after all (`None`): its leader change has that cause, whatever it looks
    /// like in the store.
    Forced {
        election: String,
        mark: Option<ForcedMark>,
    },
}

pub use engine::{Backoff, down_and_wait};
pub use forced::{BY_US, ForcedMark};

/// A backend's ends of the channels.
pub struct BackendIo {
    pub events: mpsc::Sender<SourceEvent>,
    pub commands: mpsc::Receiver<Request>,
    pub cancel: CancellationToken,
}

/// Why a store's follow task stopped a step: the runtime went away (stop quietly), or the
/// store failed (report it and reconnect). One for every store, with its own error type.
#[derive(Debug)]
pub enum Stop<E> {
    /// Nobody listens any more.
    Closed,
    Failed(E),
}

impl<E> From<E> for Stop<E> {
    fn from(e: E) -> Self {
        Stop::Failed(e)
    }
}

/// Settings every backend shares.
#[derive(Clone, Debug)]
pub struct BackendOptions {
    /// Leader changes kept per election; 0 turns history replay off.
    pub history_limit: usize,
    /// etcd: replay the history before the first snapshot. Off for a plain `status`, which
    /// prints the current state and should not wait on a replay as deep as the store's past.
    pub replay_history: bool,
    /// Keep every lease fresh rather than only the visible ones (`status`, `watch`).
    pub all_leases: bool,
    /// Per-request deadline against the store.
    pub request_timeout: Duration,
    /// How long an election with nothing left in the store stays listed after its last
    /// change.
    pub retention: Duration,
    /// The process answers once and ends (`status`): reading every lease must fit in half
    /// the request timeout counted from the start, not from the end of the snapshot; and
    /// the state is left to the operating system at exit instead of being freed piece by
    /// piece, which at 100,000 elections cost about a tenth of `status`'s CPU.
    pub one_shot: bool,
    /// The one election a command asks for (`history ELECTION`, maybe `short/name`): the
    /// history journals are read for it alone, and not written (see
    /// [`BackendOptions::only_elections`]). None: every election.
    pub only: Option<String>,
    /// With [`BackendOptions::only`], the store is still read whole (every election listed):
    /// the names `history` offers when the election asked for is in no source.
    pub whole_store: bool,
    /// Where every source's history is kept (docs/history.md).
    pub history: crate::backend::engine::journal::History,
}

impl BackendOptions {
    /// The election names a source whose short name is `short` reads back from its journal:
    /// none (every election) unless [`BackendOptions::only`] is set; then the name asked
    /// for, and its part after `short/` when it is qualified by this source.
    pub(crate) fn only_elections(&self, short: &str) -> Vec<String> {
        let Some(wanted) = &self.only else {
            return Vec::new();
        };
        let mut names = vec![wanted.clone()];
        if let Some(name) = wanted.strip_prefix(short).and_then(|r| r.strip_prefix('/')) {
            names.push(name.to_string());
        }
        names
    }

    /// The elections a source reads from the store itself: those of
    /// [`BackendOptions::only_elections`] (a keyed read: a SQL table's rows by key, a Redis
    /// key), unless [`BackendOptions::whole_store`]; empty: every election.
    pub(crate) fn store_keys(&self, short: &str) -> Vec<String> {
        match self.whole_store {
            true => Vec::new(),
            false => self.only_elections(short),
        }
    }
}

impl Default for BackendOptions {
    fn default() -> Self {
        BackendOptions {
            history_limit: 200,
            replay_history: true,
            all_leases: false,
            request_timeout: Duration::from_secs(5),
            retention: Duration::from_secs(600),
            one_shot: false,
            only: None,
            whole_store: false,
            history: crate::backend::engine::journal::History::default_at(Default::default()),
        }
    }
}

pub type BackendFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// One source of elections. Each scheme (or family of schemes sharing a store) implements it.
pub trait Backend: Send {
    fn info(&self) -> SourceInfo;
    /// Runs until cancelled or until the runtime drops its receiver.
    fn run(self: Box<Self>, io: BackendIo) -> BackendFuture;
}

/// One store: everything electop does with the sources kept in it, each from the store's
/// own typed config and admin target (the one match on [`SourceConfig`], and the one
/// dispatch of a [`Target`], are [`stores!`]'s, below).
pub trait Store: Sync {
    /// The source's settings, as the config checked them.
    type Config: Sync;
    /// What decides what an action writes, read from [`Store::Config`]: the store's own
    /// type (a request carries it as a [`Target`], which only this store reads), told
    /// from every other store's.
    type Target: crate::admin::StoreValue;

    /// The task that connects to the `id`-th source (named `short`), detects its layout,
    /// reads a snapshot and follows it.
    fn backend(
        &self,
        cfg: &Self::Config,
        id: SourceId,
        short: String,
        opts: &BackendOptions,
    ) -> Box<dyn Backend>;

    /// The source's settings that decide what an action writes.
    fn target(&self, cfg: &Self::Config) -> Self::Target;

    /// What the settings are for `scheme` without a config (the demo, tests), if `scheme`
    /// is one of this store's.
    fn default_target(&self, scheme: Scheme) -> Option<Self::Target>;

    /// What an admin action will do on a source with `target`, as one typed plan, or why
    /// it cannot be done on what was seen.
    fn plan(&self, req: &AdminRequest, target: &Self::Target) -> Result<Plan, String>;

    /// Carries out the plan of `req` with compare-and-swap (read-only and the time limit are
    /// [`execute`]'s).
    fn execute<'a>(
        &'a self,
        cfg: &'a Self::Config,
        req: &'a AdminRequest,
        timeout: Duration,
    ) -> BoxFuture<'a, Outcome>;

    /// `electop node`: takes part in an election of `scheme` until stopped.
    fn participate<'a>(
        &'a self,
        cfg: &'a Self::Config,
        scheme: Scheme,
        args: &'a crate::node::Options,
        run: &'a crate::node::Run,
    ) -> LocalBoxFuture<'a, anyhow::Result<()>>;

    /// What answered a probe ([`probe`]) that is not its protocol, when `first`, the first
    /// thing it said, is what this store's servers say: in words, with the flag that reads
    /// it. `None`: not one of this store's.
    fn recognise(&self, first: &[u8]) -> Option<probe::Answerer> {
        let _ = first;
        None
    }
}

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;
/// A participant runs on the command's own thread (`block_on`), so it need not be `Send`.
pub type LocalBoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// The dispatch from a source's config, and from an action's target, to its store: each
/// arm hands the store its own typed config or target. A line reads: the `SourceConfig`
/// variant (binding its config, with a guard where two stores share a variant, the first
/// that matches wins) `=>` the store. A target is the store's own type, so the store whose
/// type it is plans for it.
macro_rules! stores {
    ($($cv:ident($c:ident) $(if $guard:expr)? => $store:path;)+) => {
        /// The backend for the `id`-th configured source (the config checked its settings).
        pub fn build(
            configs: &[SourceConfig],
            id: SourceId,
            opts: &BackendOptions,
        ) -> Box<dyn Backend> {
            let short = short_name(configs, id);
            match &configs[id] {
                $(SourceConfig::$cv($c) $(if $guard)? => $store.backend($c, id, short, opts),)+
            }
        }

        /// The settings of a source that decide what an action writes.
        pub fn target(cfg: &SourceConfig) -> Target {
            match cfg {
                $(SourceConfig::$cv($c) $(if $guard)? => Target::of($store.target($c)),)+
            }
        }

        /// What the settings are for `scheme` without a config (the demo, tests): its
        /// store's defaults.
        pub fn default_target(scheme: Scheme) -> Option<Target> {
            $(if let Some(t) = $store.default_target(scheme) {
                return Some(Target::of(t));
            })+
            None
        }

        $(impl From<<$store as Store>::Target> for Target {
            fn from(t: <$store as Store>::Target) -> Target {
                Target::of(t)
            }
        })+

        /// The plan of `req` by its target's store.
        fn plan_by_store(req: &AdminRequest) -> Result<Plan, String> {
            $(if let Some(t) = req.target.get::<<$store as Store>::Target>() {
                return $store.plan(req, t);
            })+
            Err(format!("no store knows the target {:?}", req.target))
        }

        /// The action of `req` by the source's store.
        fn execute_by_store<'a>(
            source: &'a SourceConfig,
            req: &'a AdminRequest,
            timeout: Duration,
        ) -> BoxFuture<'a, Outcome> {
            match source {
                $(SourceConfig::$cv($c) $(if $guard)? => $store.execute($c, req, timeout),)+
            }
        }

        /// What answered a probe, as the first store that tells its servers by `first` says.
        pub(crate) fn recognise(first: &[u8]) -> Option<probe::Answerer> {
            $(if let Some(known) = $store.recognise(first) {
                return Some(known);
            })+
            None
        }

        /// The participant of `scheme` by the source's store.
        fn participate_by_store<'a>(
            source: &'a SourceConfig,
            scheme: Scheme,
            args: &'a crate::node::Options,
            run: &'a crate::node::Run,
        ) -> LocalBoxFuture<'a, anyhow::Result<()>> {
            match source {
                $(SourceConfig::$cv($c) $(if $guard)? => {
                    $store.participate($c, scheme, args, run)
                })+
            }
        }
    };
}

// The one registration line per store.
stores! {
    Etcd(c) => etcd::Etcd;
    Sql(c) if c.scheme.is_session_lock() => session_lock::SessionLocks;
    Sql(c) => sql::Sql;
    Zookeeper(c) => zookeeper::Zookeeper;
    Redis(c) => redis::Redis;
    Kubernetes(c) => kubernetes::Kubernetes;
}

/// The stores that give `electop demo` (and `node --store`) from their own folder, one line
/// each, in `--store`'s order after the stores the demo runs itself.
pub const DEMOS: &[demo::Offer] = &[
    demo::Offer(&redis::RedisDemo),
    demo::Offer(&kubernetes::KubeDemo),
];

/// The handle of the `id`-th source: its configured name, else `etcd1`, `sql1`...
pub fn short_name(configs: &[SourceConfig], id: SourceId) -> String {
    crate::config::context::source_names(configs).swap_remove(id)
}

/// The plan of `req` on its source, or why it cannot be done on what was seen.
pub fn plan(req: &AdminRequest) -> Result<Plan, String> {
    crate::admin::needs_leader(&req.seen, &req.kind)?;
    let plan = plan_by_store(req)?;
    Ok(Plan {
        summary: crate::admin::summary(req),
        ..plan
    })
}

/// Runs an admin action against the source's store, refusing it on a read-only source.
pub async fn execute(source: &SourceConfig, req: &AdminRequest, timeout: Duration) -> Outcome {
    if source.read_only() {
        return Outcome::Refused {
            reason:
                "this source is read-only (--read-only or read_only = true): admin actions are off"
                    .to_string(),
        };
    }
    let act = execute_by_store(source, req, timeout);
    // Every step has its own deadline, but a store that hangs mid-way must not hold the
    // CLI, or a dashboard that waits for its actions before quitting, forever. Longer than
    // the steps' own (etcd: connect, txns 2x, revokes, read back), so it fires only when
    // those did not, never between an etcd-election hold and its revokes.
    let limit = timeout * 5;
    tokio::time::timeout(limit, act)
        .await
        .unwrap_or_else(|_| Outcome::Failed {
            error: format!(
                "the store did not finish the action within {limit:?}: it may or may not \
                 have been applied; look before trying again"
            ),
        })
}

/// `electop node`: one participant of `scheme` on `source`, until SIGINT/SIGTERM.
pub async fn participate(
    args: &crate::node::Options,
    scheme: Scheme,
    source: &SourceConfig,
) -> anyhow::Result<()> {
    let run = crate::node::prepare(args, scheme)?;
    let work = participate_by_store(source, scheme, args, &run);
    crate::node::drive(&run, work).await
}
