//! The running sources: a store task per configured source, the channels to and from
//! them, the admin actions under way, and the follower of the shared audit log.

use std::collections::HashMap;
use std::time::Duration;

use anyhow::Result;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::backend::{self, BackendIo, BackendOptions, Request};
use crate::config::SourceConfig;
use crate::model::{SourceEvent, SourceInfo};

/// The running backends and the runtime's ends of their channels.
pub struct Sources {
    pub infos: Vec<SourceInfo>,
    pub events: mpsc::Receiver<SourceEvent>,
    commands: Vec<mpsc::Sender<Request>>,
    cancel: CancellationToken,
    tasks: JoinSet<()>,
    /// Admin actions under way, each with what it is (`reelect jobs`): quitting waits for them.
    pub(super) actions: JoinSet<()>,
    pub(super) action_labels: HashMap<tokio::task::Id, String>,
    /// What the sources were built from, for admin actions.
    configs: Vec<SourceConfig>,
    request_timeout: Duration,
    /// How long an empty election stays on screen.
    pub retention: Duration,
}

impl Sources {
    pub fn spawn(configs: &[SourceConfig], opts: &BackendOptions) -> Result<Sources> {
        let (tx, events) = mpsc::channel(1024);
        let cancel = CancellationToken::new();
        let mut tasks = JoinSet::new();
        let mut infos = Vec::new();
        let mut commands = Vec::new();
        for id in 0..configs.len() {
            let b = backend::build(configs, id, opts);
            let info = b.info();
            infos.push(info.clone());
            let (ctx, crx) = mpsc::channel(16);
            commands.push(ctx);
            let io = BackendIo {
                // Through the recorder of the timeline's marks, which journals them.
                events: backend::engine::marks::tap(&info, tx.clone(), opts, &mut tasks),
                commands: crx,
                cancel: cancel.child_token(),
            };
            let (events, stop) = (tx.clone(), io.cancel.clone());
            let task = crate::supervise::debug_panic(id, b.run(io));
            tasks.spawn(crate::supervise::backend(info, task, events, stop));
        }
        if let Some(path) = crate::admin::audit::default_path() {
            let names = infos.iter().map(|i| i.name.clone()).collect();
            let follow = follow_audit(path, names, commands.clone(), cancel.child_token());
            tasks.spawn(follow);
        }
        Ok(Sources {
            infos,
            events,
            commands,
            cancel,
            tasks,
            actions: JoinSet::new(),
            action_labels: HashMap::new(),
            configs: configs.to_vec(),
            request_timeout: opts.request_timeout,
            retention: opts.retention,
        })
    }

    /// A full command queue only means the backend is busy; the next request supersedes it.
    pub fn send(&self, id: usize, cmd: Request) {
        if let Some(tx) = self.commands.get(id) {
            let _ = tx.try_send(cmd);
        }
    }

    /// Carries out a confirmed admin action in the background, audits it (the attempt before
    /// the store is touched, the outcome after), and reports the outcome on `done`.
    pub fn execute(
        &mut self,
        req: crate::admin::AdminRequest,
        done: mpsc::Sender<crate::admin::Outcome>,
    ) {
        let Some(cfg) = self.configs.get(req.source).cloned() else {
            return;
        };
        let label = format!("{} {}", req.kind.name(), req.seen.name);
        let timeout = self.request_timeout;
        let backend_tx = self.commands.get(req.source).cloned();
        let task = self.actions.spawn(async move {
            let trail = crate::admin::audit::Trail::default();
            let outcome = match trail.attempt(&req) {
                Ok(()) => act(&cfg, &req, timeout, backend_tx).await,
                Err(reason) => crate::admin::Outcome::Refused { reason },
            };
            if let Err(e) = trail.outcome(&req, &outcome) {
                tracing::warn!(%e, "cannot write the audit log");
            }
            let _ = done.send(outcome).await;
        });
        self.action_labels.insert(task.id(), label);
    }

    /// Each source's settings that decide what an action writes, for the dashboard's plans.
    pub fn targets(&self) -> Vec<crate::admin::Target> {
        self.configs.iter().map(crate::backend::target).collect()
    }

    /// What the admin actions under way are (`reelect jobs`).
    pub fn actions_in_flight(&self) -> Vec<String> {
        let mut labels: Vec<String> = self.action_labels.values().cloned().collect();
        labels.sort();
        labels
    }

    /// Waits for the next admin action to finish (forever when none is under way). On the
    /// fields, not `self`, so the events channel can be read beside it.
    pub(super) async fn action_finished(
        actions: &mut JoinSet<()>,
        labels: &mut HashMap<tokio::task::Id, String>,
    ) {
        match actions.join_next_with_id().await {
            Some(Ok((id, ()))) => {
                labels.remove(&id);
            }
            Some(Err(e)) => {
                labels.remove(&e.id());
            }
            None => std::future::pending().await,
        }
    }

    /// [`Sources::shutdown`], begun now: with no admin action under way the backends are
    /// told to stop at once, and what is returned waits for them to finish.
    pub fn stop(self) -> impl std::future::Future<Output = ()> {
        if self.actions.is_empty() {
            self.cancel.cancel();
        }
        self.shutdown()
    }

    /// Waits for the admin actions under way (each is bounded by the request timeout), then
    /// cancels every backend and waits (briefly) for them to finish.
    pub async fn shutdown(mut self) {
        while !self.actions.is_empty() {
            Self::action_finished(&mut self.actions, &mut self.action_labels).await;
        }
        self.cancel.cancel();
        let _ = tokio::time::timeout(Duration::from_secs(2), async {
            while self.tasks.join_next().await.is_some() {}
        })
        .await;
    }
}

/// Tells each backend about admin actions other electops carried out on its store (seen in
/// the shared audit log), so their leader changes are recorded as forced, and by whom.
async fn follow_audit(
    path: std::path::PathBuf,
    names: Vec<String>,
    commands: Vec<mpsc::Sender<Request>>,
    cancel: CancellationToken,
) {
    let mut tail = crate::admin::audit_tail::Tail::from_end(path);
    let mut tick = tokio::time::interval(Duration::from_millis(300));
    let me = std::process::id();
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = cancel.cancelled() => return,
        }
        for done in tail.read_new() {
            // Our own actions marked their elections before they started.
            if done.pid == Some(me) {
                continue;
            }
            let Some(id) = names.iter().position(|n| *n == done.source) else {
                continue;
            };
            let mark = backend::ForcedMark {
                cause: done.cause,
                by: format!("{} (another electop)", done.by),
                before: done.before,
            };
            if let Some(tx) = commands.get(id) {
                let _ = tx.try_send(Request::Forced {
                    election: done.election,
                    mark: Some(mark),
                });
            }
        }
    }
}

/// One admin action against the store, with the backend told first so the change it is about
/// to see is labelled ours. A panic in it is a bug, reported as the action's failure.
async fn act(
    cfg: &SourceConfig,
    req: &crate::admin::AdminRequest,
    timeout: Duration,
    backend_tx: Option<mpsc::Sender<Request>>,
) -> crate::admin::Outcome {
    use futures::FutureExt;
    let mark = |mark| Request::Forced {
        election: req.seen.name.clone(),
        mark,
    };
    let ours = backend::ForcedMark {
        cause: req.kind.cause(),
        by: backend::BY_US.to_string(),
        before: None,
    };
    if let Some(tx) = &backend_tx {
        let _ = tx.send(mark(Some(ours))).await;
    }
    let outcome = std::panic::AssertUnwindSafe(backend::execute(cfg, req, timeout))
        .catch_unwind()
        .await
        .unwrap_or_else(|p| crate::admin::Outcome::Failed {
            error: format!(
                "the admin action panicked ({}): a bug, please report it",
                crate::supervise::panic_text(p.as_ref())
            ),
        });
    if !matches!(outcome, crate::admin::Outcome::Done { .. })
        && let Some(tx) = &backend_tx
    {
        let _ = tx.send(mark(None)).await;
    }
    outcome
}
