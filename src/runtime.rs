//! The tokio side: spawns a backend task per source and runs the loops that own the state —
//! the TUI loop (terminal events, backend events and ticks in one `select!`) and the
//! one-shot `status` / `watch` loops. Drawing never waits on IO.

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
use crate::{output, ui};

/// The running backends and the runtime's ends of their channels.
pub struct Sources {
    pub infos: Vec<SourceInfo>,
    pub events: mpsc::Receiver<SourceEvent>,
    commands: Vec<mpsc::Sender<Command>>,
    cancel: CancellationToken,
    tasks: JoinSet<()>,
    /// What the sources were built from, for admin actions.
    configs: Vec<SourceConfig>,
    request_timeout: Duration,
}

impl Sources {
    pub fn spawn(configs: &[SourceConfig], opts: &BackendOptions) -> Result<Sources> {
        let (tx, events) = mpsc::channel(1024);
        let cancel = CancellationToken::new();
        let mut tasks = JoinSet::new();
        let mut infos = Vec::new();
        let mut commands = Vec::new();
        for id in 0..configs.len() {
            let b = backend::build(configs, id, opts)?;
            infos.push(b.info());
            let (ctx, crx) = mpsc::channel(16);
            commands.push(ctx);
            let io = BackendIo {
                events: tx.clone(),
                commands: crx,
                cancel: cancel.child_token(),
            };
            tasks.spawn(b.run(io));
        }
        Ok(Sources {
            infos,
            events,
            commands,
            cancel,
            tasks,
            configs: configs.to_vec(),
            request_timeout: opts.request_timeout,
        })
    }

    /// A full command queue only means the backend is busy; the next request supersedes it.
    pub fn send(&self, id: usize, cmd: Command) {
        if let Some(tx) = self.commands.get(id) {
            let _ = tx.try_send(cmd);
        }
    }

    /// Carries out a confirmed admin action in the background, audits it, and reports the
    /// outcome on `done`.
    pub fn execute(
        &mut self,
        req: crate::admin::AdminRequest,
        done: mpsc::Sender<crate::admin::Outcome>,
    ) {
        let Some(cfg) = self.configs.get(req.source).cloned() else {
            return;
        };
        let timeout = self.request_timeout;
        let backend_tx = self.commands.get(req.source).cloned();
        self.tasks.spawn(async move {
            // Tell the backend first, so the change it is about to see is labelled ours.
            let mark = |cause| Command::Forced {
                election: req.seen.name.clone(),
                cause,
            };
            if let Some(tx) = &backend_tx {
                let _ = tx.send(mark(Some(req.kind.cause()))).await;
            }
            let outcome = backend::execute(&cfg, &req, timeout).await;
            if !matches!(outcome, crate::admin::Outcome::Done { .. })
                && let Some(tx) = &backend_tx
            {
                let _ = tx.send(mark(None)).await;
            }
            if let Some(path) = crate::admin::audit::default_path()
                && let Err(e) = crate::admin::audit::record(&path, &req, &outcome)
            {
                tracing::warn!(%e, "cannot write the audit log");
            }
            let _ = done.send(outcome).await;
        });
    }

    /// Cancels every backend and waits (briefly) for them to finish.
    pub async fn shutdown(mut self) {
        self.cancel.cancel();
        let _ = tokio::time::timeout(Duration::from_secs(2), async {
            while self.tasks.join_next().await.is_some() {}
        })
        .await;
    }
}

/// A key press on the dashboard (or in its dialog): the action it is bound to, and any admin
/// action that confirmed, sent off to run. Returns whether the screen changed.
pub(crate) fn on_key(
    app: &mut App,
    sources: &mut Sources,
    admin_tx: &mpsc::Sender<crate::admin::Outcome>,
    key: crossterm::event::KeyEvent,
) -> bool {
    let action = match &app.dialog {
        Some(d) => app.keys.dialog_action_for(key, d.typing()),
        None => app.keys.action_for(key),
    };
    let dirty = action.is_some_and(|a| app::update(app, Msg::Action(a)));
    for req in std::mem::take(&mut app.outbox) {
        sources.execute(req, admin_tx.clone());
    }
    dirty
}

/// How often the screen must be redrawn for time alone: as often as the countdowns on
/// screen change (fast under a minute), every half second while contact is tracked, once a
/// second while ages show, never when nothing moves.
pub(crate) fn tick_interval(app: &App, fast: Duration) -> Option<Duration> {
    let countdowns = app.tick_step(fast);
    // Staleness must show within seconds even when nothing else moves.
    let contact = app
        .sources
        .iter()
        .any(|s| s.last_contact.is_some())
        .then_some(Duration::from_millis(500));
    let ages = app
        .on_screen()
        .any(|e| e.last_change().is_some_and(|h| h.at.is_some()))
        .then_some(Duration::from_secs(1));
    [countdowns, contact, ages].into_iter().flatten().min()
}

/// Runs the dashboard until quit. `ratatui::try_init` installs a panic hook that restores
/// the terminal before the panic message is printed.
pub async fn run_tui(
    mut sources: Sources,
    tick: Duration,
    min_frame: Duration,
    debug_panic: bool,
    keys: crate::app::keys::KeyMap,
) -> Result<()> {
    let mut terminal = ratatui::try_init().context("cannot set up the terminal")?;
    let pacer = Pacer::new(min_frame);
    let result = tui_loop(&mut terminal, &mut sources, tick, pacer, debug_panic, keys).await;
    ratatui::restore();
    sources.shutdown().await;
    result
}

async fn tui_loop(
    terminal: &mut DefaultTerminal,
    sources: &mut Sources,
    tick: Duration,
    mut pacer: Pacer,
    debug_panic: bool,
    keys: crate::app::keys::KeyMap,
) -> Result<()> {
    let mut app = App::new(sources.infos.clone(), Instant::now(), SystemTime::now());
    app.keys = keys;
    let size = terminal.size()?;
    app::update(
        &mut app,
        Msg::Resize {
            width: size.width,
            height: size.height,
        },
    );
    let mut input = EventStream::new();
    let (admin_tx, mut admin_rx) = mpsc::channel(4);
    let mut dirty = true;
    let mut sent: Vec<Option<Command>> = vec![None; sources.infos.len()];
    let mut next_tick: Option<tokio::time::Instant> = None;
    loop {
        // A frame wanted too soon after the last waits for its turn.
        let draw_at = dirty
            .then(|| pacer.hold(tokio::time::Instant::now()))
            .flatten();
        if dirty && draw_at.is_none() {
            app::update(
                &mut app,
                Msg::Tick {
                    now: Instant::now(),
                    wall: SystemTime::now(),
                },
            );
            terminal.draw(|f| ui::view(&app, f))?;
            pacer.drawn(tokio::time::Instant::now());
            dirty = false;
            if debug_panic {
                panic!("--debug-panic: panicking after the first frame as asked");
            }
            if pacer.exit_on_first_frame && !app.elections.is_empty() {
                return Ok(());
            }
        }
        if app.quit {
            return Ok(());
        }
        for (id, cmd) in app.visible_requests(ui::table_rows(app.size.1)) {
            if sent[id].as_ref() != Some(&cmd) {
                sources.send(id, cmd.clone());
                sent[id] = Some(cmd);
            }
        }
        let interval = tick_interval(&app, tick);
        if next_tick.is_none() {
            next_tick = interval.map(|i| tokio::time::Instant::now() + i);
        }
        tokio::select! {
            ev = input.next() => match ev {
                Some(Ok(TermEvent::Key(k))) => dirty |= on_key(&mut app, sources, &admin_tx, k),
                Some(Ok(TermEvent::Resize(width, height))) => {
                    dirty |= app::update(&mut app, Msg::Resize { width, height });
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(e).context("reading the terminal"),
                None => return Ok(()),
            },
            ev = sources.events.recv() => match ev {
                Some(ev) => {
                    dirty |= app::update(&mut app, Msg::Source(ev));
                    // Take whatever else is queued before drawing once.
                    while let Ok(ev) = sources.events.try_recv() {
                        dirty |= app::update(&mut app, Msg::Source(ev));
                    }
                }
                None => return Ok(()),
            },
            Some(outcome) = admin_rx.recv() => {
                dirty |= app::update(&mut app, Msg::AdminDone(outcome));
            }
            _ = sleep_until(next_tick), if next_tick.is_some() => {
                next_tick = None;
                dirty = true;
            }
            // The frame held back by the pacer: `dirty` is still set, so it is drawn now.
            _ = sleep_until(draw_at), if draw_at.is_some() => {}
        }
    }
}

/// Paces redraws: at most `1 / min` frames a second on average, so a store changing a
/// thousand times a second costs a few dozen frames, each showing everything that arrived
/// since the last. A token bucket rather than a fixed gap: a change after a quiet spell (or
/// after a countdown tick) is drawn at once, and only a flood waits its turn.
pub(crate) struct Pacer {
    min: Duration,
    last: Option<tokio::time::Instant>,
    /// Time saved up for frames, at most `BURST` frames' worth.
    saved: Duration,
    /// `ELECTOP_BENCH_FIRST_FRAME=exit`: quit after the first frame that shows elections, so
    /// the benchmark can time the first frame from outside.
    exit_on_first_frame: bool,
}

impl Pacer {
    const BURST: u32 = 3;

    pub(crate) fn new(min: Duration) -> Pacer {
        Pacer {
            min,
            last: None,
            saved: min * Self::BURST,
            exit_on_first_frame: std::env::var("ELECTOP_BENCH_FIRST_FRAME").as_deref()
                == Ok("exit"),
        }
    }

    fn saved_at(&self, now: tokio::time::Instant) -> Duration {
        let since = self
            .last
            .map_or(Duration::ZERO, |l| now.saturating_duration_since(l));
        (self.saved + since).min(self.min * Self::BURST)
    }

    /// When a frame wanted `now` must wait: the earliest time it may be drawn.
    pub(crate) fn hold(&self, now: tokio::time::Instant) -> Option<tokio::time::Instant> {
        let saved = self.saved_at(now);
        (saved < self.min).then(|| now + (self.min - saved))
    }

    pub(crate) fn drawn(&mut self, at: tokio::time::Instant) {
        self.saved = self.saved_at(at).saturating_sub(self.min);
        self.last = Some(at);
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
pub async fn collect_status(mut sources: Sources, timeout: Duration) -> Result<App, String> {
    let mut app = App::new(sources.infos.clone(), Instant::now(), SystemTime::now());
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
                    app::update(&mut app, Msg::Source(ev));
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
    app.now = Instant::now();
    app.wall = SystemTime::now();
    result.map(|()| app)
}

pub fn print_status_json(app: &App) -> Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, &output::status(app, app.now))?;
    writeln!(out)?;
    Ok(())
}

pub fn print_status_text(app: &App) -> Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{:<32} {:<15} {:<24} {:>9} {:>5}",
        "ELECTION", "SCHEME", "LEADER", "TTL", "CHG"
    )?;
    for e in app.elections.values() {
        let leader = e
            .leader
            .as_ref()
            .map(|l| crate::model::truncate_display(&l.id, 24))
            .unwrap_or_else(|| "-".into());
        let ttl = match (&e.leader, e.ttl_ms_at(app.now)) {
            (Some(l), _) if l.zombie() => "no lease".to_string(),
            (_, Some(ms)) => ui::format::duration_ms(ms),
            _ => "-".to_string(),
        };
        writeln!(
            out,
            "{:<32} {:<15} {:<24} {:>9} {:>5}",
            crate::model::truncate_display(&e.name, 32),
            e.scheme.as_str(),
            leader,
            ttl,
            e.transitions
        )?;
    }
    Ok(())
}

/// Prints each change as it happens until the input or the sources end. `json`: one object
/// per line.
pub async fn run_watch(mut sources: Sources, json: bool) -> Result<()> {
    let mut out = std::io::stdout();
    let names: Vec<String> = sources.infos.iter().map(|i| i.name.clone()).collect();
    // The same state the TUI keeps, so staleness is judged the same way.
    let mut app = App::new(sources.infos.clone(), Instant::now(), SystemTime::now());
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
                app::update(&mut app, Msg::Source(ev));
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
            if writeln!(out, "{}", watch_text(&e, json)?)
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

fn stale_line(names: &[String], id: usize, s: &app::SourceView, stale: Option<Duration>) -> Event {
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

fn watch_text(e: &Event, json: bool) -> Result<String> {
    Ok(if json {
        serde_json::to_string(e)?
    } else {
        format!(
            "{} {} {} {:?} {} -> {} {}",
            e.at.map(crate::model::time::rfc3339).unwrap_or_default(),
            e.source,
            e.election.as_deref().unwrap_or("-"),
            e.kind,
            e.from.as_deref().unwrap_or("-"),
            e.to.as_deref().unwrap_or("-"),
            e.cause
                .map(|c| c.as_str())
                .or(e.detail.as_deref())
                .unwrap_or("")
        )
    })
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
mod pacer_tests {
    use super::*;

    #[test]
    fn a_flood_is_drawn_at_max_fps_and_a_lone_change_at_once() {
        let min = Duration::from_millis(33);
        let mut p = Pacer::new(min);
        let t0 = tokio::time::Instant::now();
        // A flood: a frame wanted every millisecond for a second.
        let mut drawn = 0;
        for ms in 0..1000 {
            let now = t0 + Duration::from_millis(ms);
            if p.hold(now).is_none() {
                p.drawn(now);
                drawn += 1;
            }
        }
        assert!((30..=34).contains(&drawn), "about 30 a second: {drawn}");
        let now = t0 + Duration::from_millis(1000);
        let at = p.hold(now).expect("the flood used the budget up");
        assert!(at - now <= min);
        // After a quiet 100 ms (a countdown tick's gap) a change is drawn at once.
        let later = now + Duration::from_millis(100);
        assert_eq!(p.hold(later), None);
    }
}
