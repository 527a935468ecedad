//! The tokio side: spawns a backend task per source and runs the loops that own the state —
//! the TUI loop (terminal events, backend events and ticks in one `select!`) and the
//! one-shot `status` / `watch` loops. Drawing never waits on IO.

use std::collections::HashMap;
use std::io::Write;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, Result};
use crossterm::event::{Event as TermEvent, EventStream};
use futures::StreamExt;
use ratatui::DefaultTerminal;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::app::{self, App, Msg};
use crate::backend::{self, BackendIo, BackendOptions, Command};
use crate::config::SourceConfig;
use crate::model::{ConnState, Event, EventKind, SourceEvent, SourceInfo};
use crate::state::ReadModel;
use crate::{output, ui};

mod extension;
pub use extension::{Extension, Plain};

/// The running backends and the runtime's ends of their channels.
pub struct Sources {
    pub infos: Vec<SourceInfo>,
    pub events: mpsc::Receiver<SourceEvent>,
    commands: Vec<mpsc::Sender<Command>>,
    cancel: CancellationToken,
    tasks: JoinSet<()>,
    /// Admin actions under way, each with what it is (`reelect jobs`): quitting waits for them.
    actions: JoinSet<()>,
    action_labels: HashMap<tokio::task::Id, String>,
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
                events: tx.clone(),
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
    pub fn send(&self, id: usize, cmd: Command) {
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
        self.configs
            .iter()
            .map(crate::admin::Target::from_config)
            .collect()
    }

    /// What the admin actions under way are (`reelect jobs`).
    pub fn actions_in_flight(&self) -> Vec<String> {
        let mut labels: Vec<String> = self.action_labels.values().cloned().collect();
        labels.sort();
        labels
    }

    /// Waits for the next admin action to finish (forever when none is under way). On the
    /// fields, not `self`, so the events channel can be read beside it.
    async fn action_finished(
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
    commands: Vec<mpsc::Sender<Command>>,
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
                let _ = tx.try_send(Command::Forced {
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
    backend_tx: Option<mpsc::Sender<Command>>,
) -> crate::admin::Outcome {
    use futures::FutureExt;
    let mark = |mark| Command::Forced {
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

/// A key press on the dashboard (or in its dialog): the action it is bound to, and what
/// that asked for carried out. Returns whether the screen changed and whether to quit.
pub(crate) fn on_key(
    app: &mut App,
    sources: &mut Sources,
    admin_tx: &mpsc::Sender<crate::admin::Outcome>,
    key: crossterm::event::KeyEvent,
) -> (bool, bool) {
    let action = match (&app.dialog, &app.prompt) {
        (Some(d), _) => app.keys.dialog_action_for(key, d.typing()),
        (None, Some(_)) => app.keys.prompt_action_for(key),
        (None, None) => app.keys.action_for(key),
    };
    let Some(action) = action else {
        return (false, false);
    };
    let done = app::update(app, Msg::Action(action));
    (done.redraw, carry_out(done.effects, sources, admin_tx))
}

/// Does what the dashboard asked: admin actions start in the background, text goes to the
/// clipboard. Returns whether it asked to quit.
fn carry_out(
    effects: Vec<app::Effect>,
    sources: &mut Sources,
    admin_tx: &mpsc::Sender<crate::admin::Outcome>,
) -> bool {
    let mut quit = false;
    for effect in effects {
        match effect {
            app::Effect::Admin(req) => sources.execute(*req, admin_tx.clone()),
            app::Effect::Copy(text) => copy_to_clipboard(&text),
            app::Effect::Quit => quit = true,
        }
    }
    quit
}

/// Hands `text` to the terminal's clipboard (OSC 52), between frames. A terminal that
/// ignores the sequence ignores it silently; the status line said what was asked.
fn copy_to_clipboard(text: &str) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out
        .write_all(ui::osc52::sequence(text).as_bytes())
        .and_then(|()| out.flush())
    {
        tracing::warn!("writing the OSC 52 clipboard sequence: {e}");
    }
}

/// A click or the wheel, on whatever the view drew there. Returns whether the screen changed.
pub(crate) fn on_mouse(app: &mut App, m: crossterm::event::MouseEvent) -> bool {
    let target = ui::target_at(app, m.column, m.row);
    dashboard_mouse(app, target, m.kind)
}

/// A mouse event on the dashboard, `target` being what is under it: the demo finds that in
/// its own layout, so a click, a double click and the wheel do the same there.
pub(crate) fn dashboard_mouse(
    app: &mut App,
    target: Option<app::Target>,
    kind: crossterm::event::MouseEventKind,
) -> bool {
    use crossterm::event::{MouseButton, MouseEventKind};
    // The detail view covers the panes: the wheel scrolls it, three lines a notch.
    if app.describe.is_some() && app.dialog.is_none() && !app.show_help {
        let step = match kind {
            MouseEventKind::ScrollDown => app::Action::Down,
            MouseEventKind::ScrollUp => app::Action::Up,
            _ => return false,
        };
        return (0..3).fold(false, |dirty, _| {
            app::update(app, Msg::Action(step)).redraw | dirty
        });
    }
    let Some(target) = target else {
        return false;
    };
    match kind {
        MouseEventKind::Down(MouseButton::Left) => {
            app::update(app, Msg::Click(target, Instant::now())).redraw
        }
        MouseEventKind::ScrollDown => app::update(app, Msg::Wheel(target, 3)).redraw,
        MouseEventKind::ScrollUp => app::update(app, Msg::Wheel(target, -3)).redraw,
        _ => false,
    }
}

/// How often the screen must be redrawn for time alone: fast while a countdown on screen
/// shows tenths, once a second while a longer one runs or ages show, twice a second while
/// staleness must be noticed, never when nothing moves.
/// `rows`: the table's lines on screen (the demo's table is shorter than the dashboard's).
pub(crate) fn tick_interval(app: &App, rows: usize, fast: Duration) -> Option<Duration> {
    if app.needs_tick(rows) {
        Some(fast)
    } else if app.model.sources.iter().any(|s| s.last_contact.is_some()) || app.flash.is_some() {
        // Staleness must show within seconds even when nothing else moves; a flash must go.
        Some(Duration::from_millis(500))
    } else if app.countdown_on_screen(rows, i64::MAX)
        || app
            .model
            .elections
            .values()
            .any(|e| e.last_change().is_some_and(|h| h.at.is_some()))
    {
        Some(Duration::from_secs(1))
    } else {
        None
    }
}

/// Runs the dashboard until quit. The panic hook (`crate::supervise`) restores the terminal
/// before a panic of this loop is printed. `:ctx NAME` ends the loop with the old state;
/// the sources are switched here and the loop entered again, on the same terminal.
pub async fn run_tui(
    mut sources: Sources,
    tick: Duration,
    min_frame: Duration,
    debug_panic: bool,
    prefs: crate::app::Prefs,
    contexts: Option<crate::context_switch::ContextSwitch<'_>>,
) -> Result<()> {
    let mut terminal = crate::supervise::init_terminal().context("cannot set up the terminal")?;
    let mut app =
        App::new(sources.infos.clone(), Instant::now(), SystemTime::now()).with_prefs(prefs);
    if let Some(c) = &contexts {
        app.contexts = c.state();
    }
    let result = loop {
        let pace = (tick, min_frame);
        match run_loop(
            &mut terminal,
            &mut sources,
            pace,
            debug_panic,
            app,
            &mut Plain,
        )
        .await
        {
            Ok((LoopEnd::Switch, old)) => {
                app = old;
                crate::context_switch::switch(&mut app, &mut sources, contexts.as_ref()).await;
            }
            Ok((LoopEnd::Quit, _)) => break Ok(()),
            Err(e) => break Err(e),
        }
    };
    crate::supervise::restore_terminal();
    sources.shutdown().await;
    result
}

/// Why the dashboard loop returned.
pub(crate) enum LoopEnd {
    Quit,
    /// `:ctx NAME` asked for another context; no admin action is under way any more.
    Switch,
}

/// Quitting or switching context: the admin actions under way finish first (their outcomes
/// on screen), so none is dropped with its source.
async fn end_loop<E: Extension>(
    terminal: &mut DefaultTerminal,
    app: &mut App,
    sources: &mut Sources,
    admin_rx: &mut mpsc::Receiver<crate::admin::Outcome>,
    ext: &mut E,
    quit: bool,
) -> Result<LoopEnd> {
    let done = wait_for_actions(terminal, app, sources, admin_rx, ext).await;
    while let Ok(outcome) = admin_rx.try_recv() {
        app::update(app, Msg::AdminDone(outcome));
    }
    if quit || done.is_err() {
        ext.shutdown(app).await;
        return done.map(|()| LoopEnd::Quit);
    }
    Ok(LoopEnd::Switch)
}

/// The dashboard loop with a state of its own, until quit (the demo's way in).
/// `ext`: what surrounds the dashboard (the demo), or [`Plain`].
pub(crate) async fn tui_loop<E: Extension>(
    terminal: &mut DefaultTerminal,
    sources: &mut Sources,
    pace: (Duration, Duration),
    debug_panic: bool,
    prefs: crate::app::Prefs,
    ext: &mut E,
) -> Result<()> {
    let app = App::new(sources.infos.clone(), Instant::now(), SystemTime::now()).with_prefs(prefs);
    run_loop(terminal, sources, pace, debug_panic, app, ext)
        .await
        .map(|_| ())
}

/// `(tick, min_frame)`: how often countdowns move, and the shortest time between frames.
/// Returns how it ended, and the state (which `:ctx` carries over).
async fn run_loop<E: Extension>(
    terminal: &mut DefaultTerminal,
    sources: &mut Sources,
    (tick, min_frame): (Duration, Duration),
    debug_panic: bool,
    mut app: App,
    ext: &mut E,
) -> Result<(LoopEnd, App)> {
    prepare(terminal, sources, &mut app, ext)?;
    let mut input = EventStream::new();
    let (admin_tx, mut admin_rx) = mpsc::channel(4);
    let mut dirty = true;
    // The dashboard asked to quit (or the bench's first frame was drawn).
    let mut quit = false;
    let mut sent: Vec<Option<Command>> = vec![None; sources.infos.len()];
    let mut next_tick: Option<tokio::time::Instant> = None;
    // When the frame cap lets the next frame be drawn; unlike a tick, waking for it forces
    // no frame: only what changed meanwhile decides.
    let mut pace_wake: Option<tokio::time::Instant> = None;
    let mut sources_ended = false;
    let mut pacer = Pacer::new(min_frame);
    let after = AfterFrame::new(debug_panic);
    loop {
        let wanted = dirty || app.rows_index.pending(&app.model);
        if wanted && pacer.draw_now(tokio::time::Instant::now(), &mut pace_wake) {
            if draw(terminal, &mut app, ext, dirty)? {
                quit |= after.drawn(&app);
            }
            dirty = false;
        }
        if quit || app.contexts.switch_to.is_some() {
            let end = end_loop(terminal, &mut app, sources, &mut admin_rx, ext, quit).await?;
            return Ok((end, app));
        }
        let rows = ext.table_rows(&app);
        send_visible(&app, rows, sources, &mut sent);
        if next_tick.is_none() {
            next_tick = tick_due(&app, ext, rows, tick).map(|i| tokio::time::Instant::now() + i);
        }
        tokio::select! {
            ev = input.next() => match ev {
                Some(Ok(TermEvent::Key(k))) => {
                    dirty |= match ext.on_key(&mut app, k) {
                        Some(changed) => changed,
                        None => {
                            let (changed, quits) = on_key(&mut app, sources, &admin_tx, k);
                            quit |= quits;
                            changed
                        }
                    };
                }
                Some(Ok(TermEvent::Mouse(m))) => dirty |= ext.on_mouse(&mut app, m),
                Some(Ok(TermEvent::Resize(width, height))) => {
                    dirty |= app::update(&mut app, Msg::Resize { width, height }).redraw;
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(e).context("reading the terminal"),
                None => return Ok((LoopEnd::Quit, app)),
            },
            ev = sources.events.recv(), if !sources_ended => match ev {
                Some(ev) => {
                    dirty |= app::update(&mut app, Msg::Source(ev)).redraw;
                    // Take whatever else is queued before drawing once.
                    while let Ok(ev) = sources.events.try_recv() {
                        dirty |= app::update(&mut app, Msg::Source(ev)).redraw;
                    }
                }
                // Every backend ended (each one's end is on screen as a lasting error): the
                // screen stays until the operator quits.
                None => sources_ended = true,
            },
            Some(outcome) = admin_rx.recv() => {
                dirty |= app::update(&mut app, Msg::AdminDone(outcome)).redraw;
            }
            input = ext.next() => dirty |= ext.on_input(&mut app, input),
            _ = sleep_until(next_tick), if next_tick.is_some() => {
                next_tick = None;
                dirty = true;
            }
            _ = sleep_until(pace_wake), if pace_wake.is_some() => pace_wake = None,
        }
    }
}

/// What ends the loop right after a frame is drawn.
struct AfterFrame {
    /// `--debug-panic`: panic after the first frame, to test the terminal's restoring.
    debug_panic: bool,
    /// `ELECTOP_BENCH_FIRST_FRAME=exit`: quit after the first frame that shows elections,
    /// so the etcd_scale benchmark can time the first frame from outside.
    exit_on_first: bool,
}

impl AfterFrame {
    fn new(debug_panic: bool) -> AfterFrame {
        AfterFrame {
            debug_panic,
            exit_on_first: std::env::var("ELECTOP_BENCH_FIRST_FRAME").as_deref() == Ok("exit"),
        }
    }

    /// Returns whether to quit now.
    fn drawn(&self, app: &App) -> bool {
        if self.debug_panic {
            panic!("--debug-panic: panicking after the first frame as asked");
        }
        // Through the usual end, so the terminal and the sources are left as on `q`.
        self.exit_on_first && !app.model.elections.is_empty()
    }
}

/// How long until the next tick: the soonest the dashboard or what surrounds it needs one.
fn tick_due<E: Extension>(app: &App, ext: &E, rows: usize, tick: Duration) -> Option<Duration> {
    [tick_interval(app, rows, tick), ext.tick_interval(app, tick)]
        .into_iter()
        .flatten()
        .min()
}

/// What the loop's state takes from the sources and the terminal before the first frame.
fn prepare<E: Extension>(
    terminal: &mut DefaultTerminal,
    sources: &Sources,
    app: &mut App,
    ext: &mut E,
) -> Result<()> {
    app.model.retention = sources.retention;
    app.targets = sources.targets();
    // Rows settle once per frame (at its tick), not after every event of a burst.
    app.rows_index.defer = true;
    ext.init(app);
    let size = terminal.size()?;
    app::update(
        app,
        Msg::Resize {
            width: size.width,
            height: size.height,
        },
    );
    Ok(())
}

/// One frame, with the clocks brought up to now first.
/// A frame: the tick settles the rows, then the screen is drawn if `force` (something
/// besides the elections changed, or time moved) or if what settled shows. Returns whether
/// it was drawn.
fn draw<E: Extension>(
    terminal: &mut DefaultTerminal,
    app: &mut App,
    ext: &mut E,
    force: bool,
) -> Result<bool> {
    app::update(
        app,
        Msg::Tick {
            now: Instant::now(),
            wall: SystemTime::now(),
        },
    );
    ext.before_draw(app);
    let rows = ext.table_rows(app);
    if !force && !app::frames::rows_show(app, rows) {
        return Ok(false);
    }
    terminal.draw(|f| ext.draw(app, f))?;
    app::frames::drawn(app, rows);
    Ok(true)
}

/// Tells each source which elections are in view, when that changed since it was last told
/// (`sent`), so it refreshes TTLs only for what is on screen.
fn send_visible(app: &App, rows: usize, sources: &Sources, sent: &mut [Option<Command>]) {
    for (id, cmd) in app.visible_requests(rows) {
        if sent[id].as_ref() != Some(&cmd) {
            sources.send(id, cmd.clone());
            sent[id] = Some(cmd);
        }
    }
}

/// Quitting while admin actions are under way: they finish (and are audited) first, the
/// screen saying so. Aborting one could leave the store half-changed (a txn done, the lease
/// not yet revoked) and its outcome off the record; each is bounded by the request timeout.
async fn wait_for_actions(
    terminal: &mut DefaultTerminal,
    app: &mut App,
    sources: &mut Sources,
    admin_rx: &mut mpsc::Receiver<crate::admin::Outcome>,
    ext: &impl Extension,
) -> Result<()> {
    loop {
        let waiting = sources.actions_in_flight();
        if waiting.is_empty() {
            return Ok(());
        }
        let notice = format!("waiting for {} to finish…", waiting.join(", "));
        app::update(
            app,
            Msg::Tick {
                now: Instant::now(),
                wall: SystemTime::now(),
            },
        );
        terminal.draw(|f| {
            ext.draw(app, f);
            draw_notice(f, &notice);
        })?;
        tokio::select! {
            () = Sources::action_finished(&mut sources.actions, &mut sources.action_labels) => {}
            Some(outcome) = admin_rx.recv() => {
                app::update(app, Msg::AdminDone(outcome));
            }
            Some(ev) = sources.events.recv() => {
                app::update(app, Msg::Source(ev));
            }
        }
    }
}

/// One line in a box in the middle of the screen, over the dashboard.
fn draw_notice(f: &mut ratatui::Frame, text: &str) {
    use ratatui::layout::Rect;
    use ratatui::widgets::{Block, Clear, Paragraph};
    let area = f.area();
    let width = (text.chars().count() as u16)
        .saturating_add(4)
        .min(area.width);
    let height = 3.min(area.height);
    let rect = Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    };
    f.render_widget(Clear, rect);
    f.render_widget(Paragraph::new(text).block(Block::bordered()), rect);
}

/// Redraws are paced: changes arriving within a frame's time are drawn together, at most
/// one frame per `min_frame`.
struct Pacer {
    min_frame: Duration,
    last: Option<tokio::time::Instant>,
}

impl Pacer {
    fn new(min_frame: Duration) -> Pacer {
        Pacer {
            min_frame,
            last: None,
        }
    }

    /// Something changed: whether to draw now. If not, `wake` is brought forward to when
    /// the next frame may be drawn.
    fn draw_now(
        &mut self,
        now: tokio::time::Instant,
        wake: &mut Option<tokio::time::Instant>,
    ) -> bool {
        match self.last.map(|t| t + self.min_frame) {
            Some(due) if now < due => {
                *wake = Some(wake.map_or(due, |w| w.min(due)));
                false
            }
            _ => {
                self.last = Some(now);
                true
            }
        }
    }
}

pub(crate) async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Collects events until every source has its snapshot and replay, or `timeout` passes.
/// Returns the state, or the reason a source could not be read.
pub async fn collect_status(mut sources: Sources, timeout: Duration) -> Result<ReadModel, String> {
    // The alarms are worked out once, at the end, not after every batch of elections.
    let mut app = ReadModel::new(sources.infos.clone(), Instant::now(), SystemTime::now());
    let deadline = tokio::time::Instant::now() + timeout;
    // The last error of each source: at the deadline it may be between retries ("connecting").
    let mut last_error: Vec<Option<String>> = vec![None; app.sources.len()];
    let result = loop {
        // Clustered sources also wait for their first member probe, for the members list.
        if app.all_synced()
            && app
                .sources
                .iter()
                .all(|s| !s.info.clustered || !s.members.is_empty())
        {
            break Ok(());
        }
        // A source that is plainly misconfigured will not answer by waiting longer.
        if let Some(error) = app.sources.iter().find_map(|s| match &s.conn {
            ConnState::Down {
                error,
                lasting: true,
                ..
            } if !s.synced => Some(error.clone()),
            _ => None,
        }) {
            break Err(error);
        }
        tokio::select! {
            ev = sources.events.recv() => match ev {
                Some(ev) => {
                    if let SourceEvent::Conn { source, state: ConnState::Down { error, .. } } = &ev
                        && let Some(slot) = last_error.get_mut(*source)
                    {
                        *slot = Some(error.clone());
                    }
                    app.apply(ev);
                }
                None => break Err("every source stopped".to_string()),
            },
            _ = tokio::time::sleep_until(deadline) => {
                let why = app.sources.iter().zip(&last_error).find_map(|(s, last)| match (&s.conn, last) {
                    (_, _) if s.synced => None,
                    (ConnState::Down { error, .. }, _) | (_, Some(error)) => Some(error.clone()),
                    _ => Some(format!("{}: no answer within {:?}", s.info.name, timeout)),
                });
                break Err(why.unwrap_or_else(|| format!("no answer within {timeout:?}")));
            }
        }
    };
    sources.shutdown().await;
    // The clock as the state is printed, and the alarms and rates `status` prints.
    app.tick(Instant::now(), SystemTime::now());
    app.settle();
    result.map(|()| app)
}

/// What reading a source found unsure (its layout, an empty prefix), on stderr: stdout
/// stays the elections alone, for scripts.
pub fn print_notices(app: &ReadModel) {
    for s in &app.sources {
        if let Some(n) = &s.info.notice {
            eprintln!("electop: {}: {}", s.info.short, n.text());
        }
        if let Some(n) = &s.notice {
            eprintln!("electop: {}: {n}", s.info.short);
        }
    }
}

/// `status` as asked: JSON, or the table (cut to the terminal's width only on a terminal).
/// A closed pipe (`| head`) is not an error.
pub fn print_status(app: &ReadModel, format: crate::cli::OutputFormat) -> Result<()> {
    use crate::cli::OutputFormat;
    use std::io::IsTerminal;
    let text = match format {
        OutputFormat::Json => {
            // Streamed: at 100,000 elections the text is 80 MB, built and faulted in for
            // nothing when it can go out as it is made.
            // Indented for a person at a terminal, one line for a program (as `gh --json`
            // does): half the bytes to write and to parse at 10,000 elections.
            let pretty = std::io::stdout().is_terminal();
            let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
            let r = if pretty {
                let doc = output::status(app, app.now);
                serde_json::to_writer_pretty(&mut out, &doc).map_err(std::io::Error::from)
            } else {
                output::write_compact(app, app.now, &mut out)
            };
            let r = r
                .and_then(|()| out.write_all(b"\n"))
                .and_then(|()| out.flush());
            return quiet_pipe(r);
        }
        OutputFormat::Table | OutputFormat::Wide => {
            let fit = (format == OutputFormat::Table && std::io::stdout().is_terminal())
                .then(|| crossterm::terminal::size().ok())
                .flatten()
                .map(|(w, _)| w as usize);
            output::table::render(app, format == OutputFormat::Wide, fit)
        }
    };
    let mut out = std::io::stdout().lock();
    quiet_pipe(out.write_all(text.as_bytes()).and_then(|()| out.flush()))
}

/// A reader that went away (`| head`) ends the output quietly.
fn quiet_pipe(r: std::io::Result<()>) -> Result<()> {
    match r {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => Ok(r?),
    }
}

/// Prints each change as it happens until the input or the sources end. `json`: one object
/// per line.
pub async fn run_watch(mut sources: Sources, json: bool) -> Result<()> {
    let mut out = std::io::stdout();
    let names: Vec<String> = sources.infos.iter().map(|i| i.name.clone()).collect();
    // The same state the TUI keeps, so staleness is judged the same way.
    // Alarms are never printed here: changes only mark them (bounded by the elections),
    // never settle them, so a change is printed without working anything out.
    let mut app = ReadModel::new(sources.infos.clone(), Instant::now(), SystemTime::now());
    let mut was_stale = vec![false; names.len()];
    let mut check = tokio::time::interval(Duration::from_millis(250));
    let stop = tokio::signal::ctrl_c();
    tokio::pin!(stop);
    loop {
        let mut lines = Vec::new();
        tokio::select! {
            ev = sources.events.recv() => {
                let Some(ev) = ev else { break };
                lines.extend(watch_line(&names, &ev));
                app.apply(ev);
            }
            _ = check.tick() => {}
            _ = &mut stop => break,
        }
        app.now = Instant::now();
        for (id, s) in app.sources.iter().enumerate() {
            let stale = s.stale_for(app.now);
            if stale.is_some() != was_stale[id] {
                was_stale[id] = stale.is_some();
                lines.push(stale_line(&names, id, s, stale));
            }
        }
        for e in lines {
            // A closed stdout (e.g. `| head`) ends the watch quietly.
            if writeln!(out, "{}", watch_text(&app, &e, json)?)
                .and_then(|()| out.flush())
                .is_err()
            {
                sources.shutdown().await;
                return Ok(());
            }
        }
    }
    sources.shutdown().await;
    Ok(())
}

fn watch_line(names: &[String], ev: &SourceEvent) -> Option<Event> {
    match ev {
        SourceEvent::Happened(e) => Some(e.clone()),
        SourceEvent::Conn {
            source,
            state: ConnState::Connected,
        } => Some(marker(names, *source, EventKind::Connected)),
        SourceEvent::Synced { source } => Some(marker(names, *source, EventKind::Synced)),
        _ => None,
    }
}

fn stale_line(
    names: &[String],
    id: usize,
    s: &crate::state::SourceView,
    stale: Option<Duration>,
) -> Event {
    let kind = if stale.is_some() {
        EventKind::Stale
    } else {
        EventKind::Fresh
    };
    let mut e = marker(names, id, kind);
    e.detail = match (stale, s.last_contact) {
        (Some(age), Some((_, wall))) => Some(format!(
            "no contact for {}s; state as of {}",
            age.as_secs(),
            crate::model::time::rfc3339(wall)
        )),
        _ => None,
    };
    e
}

fn watch_text(app: &ReadModel, e: &Event, json: bool) -> Result<String> {
    if json {
        return Ok(serde_json::to_string(e)?);
    }
    let source = app.sources.iter().find(|s| s.info.name == e.source);
    let short = source.map(|s| s.info.short.as_str()).unwrap_or(&e.source);
    // The new leader's time left, if its lease has been read.
    let ttl = source
        .zip(e.election.as_ref())
        .and_then(|(s, name)| app.elections.get(&(s.info.id, name.clone())))
        .and_then(|el| el.leader.as_ref())
        .filter(|l| Some(&l.id) == e.to.as_ref() && !l.zombie())
        .and_then(|l| l.ttl)
        .map(|d| d.remaining_ms_at(app.now));
    let offset = output::watch::local_offset(e.at.unwrap_or_else(SystemTime::now));
    Ok(output::watch::line(e, short, ttl, offset))
}

fn marker(names: &[String], source: usize, kind: EventKind) -> Event {
    Event::about_source(
        names.get(source).cloned().unwrap_or_default(),
        kind,
        None,
        None,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A countdown drives fast frames only while it shows tenths (under a minute) and is
    /// on screen: a leader a page below the table's rows moves nothing.
    #[test]
    fn frames_follow_only_the_countdowns_on_screen_and_their_precision() {
        use crate::model::{Candidate, Deadline, Election, Scheme, SourceEvent};
        let now = Instant::now();
        let info = crate::model::SourceInfo::test_etcd();
        let mut app = App::new(vec![info], now, SystemTime::UNIX_EPOCH);
        app::update(
            &mut app,
            Msg::Resize {
                width: 100,
                height: 12,
            },
        );
        let rows = ui::table_rows(app.size.1);
        let lead = |name: String, left_ms: i64| {
            let mut e = Election::new(0, name, Scheme::EtcdLeaseKey);
            e.leader = Some(Candidate {
                ttl: Some(Deadline {
                    granted_ms: 600_000,
                    remaining_ms: left_ms,
                    read_at: now,
                }),
                ..Candidate::plain("a", "k")
            });
            e
        };
        // Sorted by name: the long countdowns fill the screen, the short one is below it.
        let mut elections: Vec<Election> = (0..rows + 5)
            .map(|i| lead(format!("a{i:03}"), 300_000))
            .collect();
        elections.push(lead("zzz".into(), 5_000));
        app.sort = crate::app::Sort {
            key: crate::app::SortKey::Name,
            reversed: false,
        };
        app::update(
            &mut app,
            Msg::Source(SourceEvent::Elections {
                source: 0,
                elections,
            }),
        );
        let fast = Duration::from_millis(100);
        assert!(!app.needs_tick(rows), "the short countdown is off screen");
        assert_eq!(
            tick_interval(&app, rows, fast),
            Some(Duration::from_secs(1))
        );
        app::update(&mut app, Msg::Action(app::Action::Bottom));
        assert!(app.needs_tick(rows), "now it is on screen, in tenths");
        assert_eq!(tick_interval(&app, rows, fast), Some(fast));
    }

    #[test]
    fn frames_are_paced_and_a_change_too_soon_waits_for_the_next() {
        let mut p = Pacer::new(Duration::from_millis(33));
        let t0 = tokio::time::Instant::now();
        let mut wake = None;
        assert!(
            p.draw_now(t0, &mut wake),
            "the first change is drawn at once"
        );
        let soon = t0 + Duration::from_millis(10);
        assert!(!p.draw_now(soon, &mut wake), "too soon");
        assert_eq!(
            wake,
            Some(t0 + Duration::from_millis(33)),
            "woken for the next frame"
        );
        let mut later_wake = Some(t0 + Duration::from_secs(1));
        assert!(!p.draw_now(soon, &mut later_wake));
        assert_eq!(
            later_wake,
            Some(t0 + Duration::from_millis(33)),
            "brought forward"
        );
        assert!(p.draw_now(t0 + Duration::from_millis(40), &mut wake));
    }

    /// A double click on a row opens its detail; there the wheel scrolls it; a single
    /// click only selects.
    #[test]
    fn a_double_click_opens_the_detail_and_the_wheel_scrolls_it() {
        use crate::model::{Candidate, Election, Scheme, SourceEvent, SourceInfo};
        use crossterm::event::{KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
        let mut app = App::new(
            vec![SourceInfo::test_etcd()],
            Instant::now(),
            SystemTime::now(),
        );
        let mut e = Election::new(0, "jobs".into(), Scheme::EtcdElection);
        e.candidates = (0..60)
            .map(|i| Candidate {
                id: format!("n{i}"),
                raw_id: Vec::new(),
                key: format!("/e/jobs/{i}"),
                raw_key: Vec::new(),
                lease: Some(i + 1),
                create_revision: i,
                mod_revision: i,
                stamp: None,
                ttl: None,
            })
            .collect();
        let elections = vec![e, Election::new(0, "zzz".into(), Scheme::EtcdElection)];
        app::update(
            &mut app,
            Msg::Source(SourceEvent::Elections {
                source: 0,
                elections,
            }),
        );
        app::update(
            &mut app,
            Msg::Resize {
                width: 100,
                height: 30,
            },
        );
        let mouse = |kind, row| MouseEvent {
            kind,
            column: 10,
            row,
            modifiers: KeyModifiers::NONE,
        };
        let click = mouse(MouseEventKind::Down(MouseButton::Left), 3);
        assert!(on_mouse(&mut app, click));
        assert!(app.describe.is_none(), "one click selects");
        on_mouse(&mut app, click);
        assert!(app.describe.is_some(), "two open the detail");
        on_mouse(&mut app, mouse(MouseEventKind::ScrollDown, 10));
        assert_eq!(app.describe.as_ref().map(|d| d.scroll), Some(3));
    }
}
