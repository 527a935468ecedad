//! The dashboard loop: terminal input, store events, admin outcomes and ticks in one
//! `select!`, a frame drawn only when something on screen changed. Drawing never waits on
//! IO.

use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, Result};
use crossterm::event::{Event as TermEvent, EventStream};
use futures::StreamExt;
use ratatui::DefaultTerminal;
use tokio::sync::mpsc;

use super::input::on_key;
use super::pacing::{Pacer, sleep_until, tick_interval};
use super::{Extension, Plain, Sources};
use crate::app::{self, App, Msg};
use crate::backend::Request;

/// Runs the dashboard until quit. The panic hook (`crate::supervise`) restores the terminal
/// before a panic of this loop is printed. `:ctx NAME` ends the loop with the old state;
/// the sources are switched here and the loop entered again, on the same terminal.
pub async fn run_tui(
    mut sources: Sources,
    tick: Duration,
    min_frame: Duration,
    debug_panic: bool,
    prefs: crate::app::Prefs,
    contexts: Option<super::context_switch::ContextSwitch<'_>>,
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
                super::context_switch::switch(&mut app, &mut sources, contexts.as_ref()).await;
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
    let mut sent: Vec<Option<Request>> = vec![None; sources.infos.len()];
    let mut next_tick: Option<tokio::time::Instant> = None;
    // When the frame cap lets the next frame be drawn; unlike a tick, waking for it forces
    // no frame: only what changed meanwhile decides.
    let mut pace_wake: Option<tokio::time::Instant> = None;
    let mut sources_ended = false;
    let mut pacer = Pacer::new(min_frame);
    let after = AfterFrame::new(debug_panic);
    // A frame with elections was drawn: the first is not held back by the pacer.
    let mut shown = false;
    loop {
        let wanted = dirty || app.rows_index.pending(&app.model);
        let (now, first) = (
            tokio::time::Instant::now(),
            !shown && !app.model.elections.is_empty(),
        );
        if wanted && pacer.draw_now_or_first(now, &mut pace_wake, first) {
            shown |= first;
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
            ev = input.next() => match on_terminal(ev, &mut app, ext, sources, &admin_tx)? {
                Some((redraw, quits)) => {
                    dirty |= redraw;
                    quit |= quits;
                }
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

/// A terminal event: whether the screen changed and whether to quit; `None` when the
/// terminal is gone.
fn on_terminal<E: Extension>(
    ev: Option<std::io::Result<TermEvent>>,
    app: &mut App,
    ext: &mut E,
    sources: &mut Sources,
    admin_tx: &mpsc::Sender<crate::admin::Outcome>,
) -> Result<Option<(bool, bool)>> {
    let changed = match ev {
        Some(Ok(TermEvent::Key(k))) => match ext.on_key(app, k) {
            Some(changed) => (changed, false),
            None => on_key(app, sources, admin_tx, k),
        },
        Some(Ok(TermEvent::Mouse(m))) => (ext.on_mouse(app, m), false),
        Some(Ok(TermEvent::Resize(width, height))) => (
            app::update(app, Msg::Resize { width, height }).redraw,
            false,
        ),
        Some(Ok(_)) => (false, false),
        Some(Err(e)) => return Err(e).context("reading the terminal"),
        None => return Ok(None),
    };
    Ok(Some(changed))
}

/// What ends the loop right after a frame is drawn.
struct AfterFrame {
    /// `--debug-panic`: panic after the first frame, to test the terminal's restoring.
    debug_panic: bool,
    /// `ELECTOP_BENCH_FIRST_FRAME=exit`: quit after the first frame that shows elections,
    /// so the etcd_scale benchmark can time the first frame from outside; `=whole`: after
    /// the first frame with every source read through (zk_scale's whole first read).
    exit_on_first: Option<FirstFrame>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum FirstFrame {
    Any,
    Whole,
}

impl AfterFrame {
    fn new(debug_panic: bool) -> AfterFrame {
        AfterFrame {
            debug_panic,
            exit_on_first: match std::env::var("ELECTOP_BENCH_FIRST_FRAME").as_deref() {
                Ok("exit") => Some(FirstFrame::Any),
                Ok("whole") => Some(FirstFrame::Whole),
                _ => None,
            },
        }
    }

    /// Returns whether to quit now.
    fn drawn(&self, app: &App) -> bool {
        if self.debug_panic {
            panic!("--debug-panic: panicking after the first frame as asked");
        }
        // Through the usual end, so the terminal and the sources are left as on `q`.
        match self.exit_on_first {
            None => false,
            Some(FirstFrame::Any) => !app.model.elections.is_empty(),
            Some(FirstFrame::Whole) => !app.model.elections.is_empty() && app.model.all_synced(),
        }
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
fn send_visible(app: &App, rows: usize, sources: &Sources, sent: &mut [Option<Request>]) {
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
