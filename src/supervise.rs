//! Supervision. A backend task that panics or ends on its own is a bug: its source would
//! freeze silently on screen, so its end becomes a lasting error for that source instead.
//! A panic anywhere is recorded, and the process exits non-zero ([`PANIC_EXIT`]) once the
//! terminal is back to normal.
//!
//! While the dashboard owns the terminal, or its sources are starting just before, a panic
//! in a tokio task (caught by tokio) or on another thread must neither restore the terminal
//! under the running dashboard nor print over it: its message goes to the log and is printed
//! when electop exits. A panic of the dashboard loop itself (on the main thread, in no task)
//! ends the process: the terminal is restored first.

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use futures::FutureExt;
use ratatui::DefaultTerminal;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::backend::BackendFuture;
use crate::model::{ConnState, SourceEvent, SourceInfo};

/// The exit code after a panic: Rust's own for a panicking main.
pub const PANIC_EXIT: u8 = 101;

static PANICKED: AtomicBool = AtomicBool::new(false);
static TUI_ACTIVE: AtomicBool = AtomicBool::new(false);
/// Set before a dashboard's sources start: their tasks may panic before the terminal is
/// taken, and a message printed then would vanish under the alternate screen.
static DASHBOARD_AHEAD: AtomicBool = AtomicBool::new(false);
/// Panic messages not printed yet (they happened under the dashboard).
static DEFERRED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// The text of a panic payload.
pub fn panic_text(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_string())
}

/// Records every panic, then prints it (restoring the terminal first) unless it happened
/// in a task under the running dashboard. Installed once, however often it is called.
pub fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(install);
}

fn install() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        PANICKED.store(true, Ordering::SeqCst);
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let text = format!("{}{at}", panic_text(info.payload()));
        let thread = std::thread::current();
        let name = thread.name().unwrap_or("unnamed");
        tracing::error!(thread = name, panic = %text, "panic");
        let deferring = TUI_ACTIVE.load(Ordering::SeqCst) || DASHBOARD_AHEAD.load(Ordering::SeqCst);
        // A spawned task has an id, wherever it runs: the dashboard's runtime is the main
        // thread's own, on which the dashboard loop (no task) runs too.
        let in_task = tokio::task::try_id().is_some();
        if deferring && (in_task || name != "main") {
            if let Ok(mut d) = DEFERRED.lock() {
                d.push(format!("a task panicked (thread {name}): {text}"));
            }
            return;
        }
        restore_terminal();
        default(info);
    }));
}

/// Called before a dashboard's sources are spawned: from then on a task's panic is kept
/// for the exit message rather than printed where the dashboard is about to draw.
pub fn dashboard_ahead() {
    DASHBOARD_AHEAD.store(true, Ordering::SeqCst);
}

/// Whether anything panicked so far.
pub fn panicked() -> bool {
    PANICKED.load(Ordering::SeqCst)
}

/// The panics that happened under the dashboard, to print once the terminal is back.
pub fn take_deferred() -> Vec<String> {
    DEFERRED
        .lock()
        .map(|mut d| std::mem::take(&mut *d))
        .unwrap_or_default()
}

/// Raw mode and the alternate screen, without ratatui's panic hook (ours knows which
/// panics may restore the terminal).
pub fn init_terminal() -> std::io::Result<DefaultTerminal> {
    use ratatui::crossterm::{execute, terminal};
    terminal::enable_raw_mode()?;
    TUI_ACTIVE.store(true, Ordering::SeqCst);
    // Mouse capture too: clicks and the wheel; restore_terminal turns it off on every exit.
    if let Err(e) = execute!(
        std::io::stdout(),
        terminal::EnterAlternateScreen,
        ratatui::crossterm::event::EnableMouseCapture
    ) {
        restore_terminal();
        return Err(e);
    }
    ratatui::Terminal::new(ratatui::backend::CrosstermBackend::new(std::io::stdout()))
        .inspect_err(|_| restore_terminal())
}

/// Gives the terminal back (once; later calls do nothing).
pub fn restore_terminal() {
    if TUI_ACTIVE.swap(false, Ordering::SeqCst) {
        // Before leaving the alternate screen, or the shell gets mouse reports as input.
        let _ = ratatui::crossterm::execute!(
            std::io::stdout(),
            ratatui::crossterm::event::DisableMouseCapture
        );
        ratatui::restore();
    }
}

/// With `ELECTOP_DEBUG_PANIC=backend` in the environment, the first source's backend task
/// panics instead of running: lets the tests check supervision end to end, as `--debug-panic`
/// does for the dashboard loop.
pub fn debug_panic(id: usize, task: BackendFuture) -> BackendFuture {
    if id == 0 && std::env::var("ELECTOP_DEBUG_PANIC").as_deref() == Ok("backend") {
        Box::pin(async {
            tokio::task::yield_now().await;
            panic!("ELECTOP_DEBUG_PANIC=backend: panicking in a backend task as asked");
        })
    } else {
        task
    }
}

/// Runs a backend's task and turns its panic or unexpected end into a lasting error for
/// its source. Ending is expected only when cancelled or when nobody listens any more.
pub async fn backend(
    info: SourceInfo,
    task: BackendFuture,
    events: mpsc::Sender<SourceEvent>,
    cancel: CancellationToken,
) {
    let ended = AssertUnwindSafe(task).catch_unwind().await;
    let error = match ended {
        Ok(()) if cancel.is_cancelled() || events.is_closed() => return,
        Ok(()) => "the backend task ended unexpectedly (a bug, please report it)".to_string(),
        Err(p) => format!(
            "the backend task panicked (a bug, please report it): {}",
            panic_text(p.as_ref())
        ),
    };
    tracing::error!(source = %info.name, %error, "backend task ended");
    let state = ConnState::Down {
        error: error.clone(),
        retry_at: Instant::now(),
        lasting: true,
    };
    let _ = events
        .send(SourceEvent::Conn {
            source: info.id,
            state,
        })
        .await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{Backend, BackendIo};

    /// A test-only backend (not a store mock): it does nothing but panic or end, on purpose.
    struct Broken {
        panics: bool,
    }

    impl Backend for Broken {
        fn info(&self) -> SourceInfo {
            SourceInfo {
                store: crate::model::StoreKind::Etcd,
                id: 3,
                name: "broken".into(),
                label: String::new(),
                short: "etcd4".into(),
                endpoints: String::new(),
                scheme: None,
                read_only: false,
                clustered: false,
                idle_is_normal: false,
                notice: None,
            }
        }

        fn run(self: Box<Self>, io: BackendIo) -> BackendFuture {
            Box::pin(async move {
                if self.panics {
                    panic!("on purpose");
                }
                drop(io);
            })
        }
    }

    /// Runs `b` supervised; what it reported.
    async fn supervised(b: Broken, cancelled: bool) -> Vec<SourceEvent> {
        let (tx, mut rx) = mpsc::channel(8);
        let (_ctx, crx) = mpsc::channel(1);
        let cancel = CancellationToken::new();
        if cancelled {
            cancel.cancel();
        }
        let b = Box::new(b);
        let info = b.info();
        let io = BackendIo {
            events: tx.clone(),
            commands: crx,
            cancel: cancel.clone(),
        };
        tokio::spawn(backend(info, b.run(io), tx, cancel))
            .await
            .expect("the supervisor itself does not panic");
        let mut got = Vec::new();
        while let Ok(ev) = rx.try_recv() {
            got.push(ev);
        }
        got
    }

    fn lasting_error(events: &[SourceEvent]) -> String {
        match events.first() {
            Some(SourceEvent::Conn {
                source: 3,
                state:
                    ConnState::Down {
                        error,
                        lasting: true,
                        ..
                    },
            }) => error.clone(),
            other => panic!("not a lasting error for source 3: {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_panicking_backend_becomes_a_lasting_error() {
        install_panic_hook();
        let events = supervised(Broken { panics: true }, false).await;
        let error = lasting_error(&events);
        assert!(
            error.contains("panicked") && error.contains("on purpose") && error.contains("a bug"),
            "{error}"
        );
        assert_eq!(
            events.len(),
            1,
            "the state alone: the model says `disconnected`"
        );
        assert!(panicked(), "the panic is on record for the exit code");
    }

    #[tokio::test]
    async fn a_backend_that_ends_on_its_own_becomes_a_lasting_error() {
        let events = supervised(Broken { panics: false }, false).await;
        assert!(lasting_error(&events).contains("ended unexpectedly"));
    }

    #[tokio::test]
    async fn a_cancelled_backend_may_end() {
        assert!(supervised(Broken { panics: false }, true).await.is_empty());
    }
}
