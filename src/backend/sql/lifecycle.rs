//! A SQL source's life cycle as plain data: connecting -> schema check -> live (polling),
//! and down with a growing wait when any step fails. Transitions are pure so every path is
//! unit-tested; the IO in `follow.rs` only carries them out.

use std::time::Duration;

use super::super::Backoff;
use super::errors::{SqlError, SqlErrorKind};
use crate::backend::BackendIo;
use crate::model::{ConnState, SourceEvent, SourceId, SourceInfo};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Opening a pool.
    Connecting,
    /// Connected: checking the table, its columns and the deadline's type.
    Schema,
    /// Polling the table.
    Live,
    /// A step failed; `lasting` when waiting will not help (schema, password, TLS).
    Down { lasting: bool },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Input {
    Connected,
    SchemaChecked,
    /// A poll was answered and its rows read.
    Polled,
    Failed(SqlErrorKind),
    /// The wait after going down has passed.
    Retry,
}

/// What the source tells the rest of electop on a transition, besides going down.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tell {
    /// The table is usable: the source is connected.
    Connected,
    /// The first poll since the source started: its elections are known.
    Synced,
}

/// The phase plus what the transitions need to remember.
#[derive(Debug)]
pub(crate) struct Lifecycle {
    pub phase: Phase,
    synced: bool,
    backoff: Backoff,
}

impl Lifecycle {
    pub(crate) fn new(min_wait: Duration, max_wait: Duration) -> Lifecycle {
        Lifecycle {
            phase: Phase::Connecting,
            synced: false,
            backoff: Backoff::new(min_wait, max_wait),
        }
    }

    /// The wait before the next retry grows with each failure in a row.
    pub(crate) fn backoff(&mut self) -> &mut Backoff {
        &mut self.backoff
    }

    pub(crate) fn on(&mut self, input: Input) -> Option<Tell> {
        use Phase::*;
        let (next, tell) = match (self.phase, input) {
            (Connecting, Input::Connected) => (Schema, None),
            (Schema, Input::SchemaChecked) => (Live, Some(Tell::Connected)),
            (Live, Input::Polled) => {
                // Only an answered poll shows the source works: a table that connects and
                // checks but cannot be polled must keep backing off.
                self.backoff.reset();
                let first = !std::mem::replace(&mut self.synced, true);
                (Live, first.then_some(Tell::Synced))
            }
            (Connecting | Schema | Live, Input::Failed(kind)) => (
                Down {
                    lasting: kind.is_lasting(),
                },
                None,
            ),
            (Down { .. }, Input::Retry) => (Connecting, None),
            (phase, _) => (phase, None),
        };
        self.phase = next;
        tell
    }
}

/// A SQL follow task's steps, one per phase of its life cycle: [`drive`] runs them, each
/// step's outcome fed to the life cycle, until the source is closed. The SQL lease tables and
/// the session locks share it.
pub(crate) trait Steps {
    fn lifecycle(&mut self) -> &mut Lifecycle;
    async fn connect(&mut self) -> Result<Input, Stop>;
    /// The schema check, or what stands where it does.
    async fn check(&mut self) -> Result<Input, Stop>;
    async fn poll(&mut self) -> Result<Input, Stop>;
    async fn wait(&mut self, lasting: bool) -> Result<Input, Stop>;
    /// Takes the source down after `e` (and says so); what the life cycle is told.
    async fn failed(&mut self, e: SqlError) -> Input;
    async fn tell(&self, tell: Tell) -> Result<(), Stop>;
}

type Stop = crate::backend::Stop<SqlError>;

/// Runs a follow task's steps until its source is closed.
pub(crate) async fn drive(f: &mut impl Steps) {
    loop {
        let step = match f.lifecycle().phase {
            Phase::Connecting => f.connect().await,
            Phase::Schema => f.check().await,
            Phase::Live => f.poll().await,
            Phase::Down { lasting } => f.wait(lasting).await,
        };
        let input = match step {
            Ok(input) => input,
            Err(Stop::Closed) => return,
            Err(Stop::Failed(e)) => f.failed(e).await,
        };
        let told = match f.lifecycle().on(input) {
            Some(tell) => f.tell(tell).await,
            None => Ok(()),
        };
        if told.is_err() {
            return;
        }
    }
}

/// The down phase's step of a SQL follow task: says the source is down, with what took it
/// down, and waits the life cycle's backoff. A one-shot read (`status`) also ends on a server
/// that did not take the connection at once.
pub(crate) async fn wait_down(
    io: &BackendIo,
    info: &SourceInfo,
    conn: &mut Lifecycle,
    error: Option<SqlError>,
    (lasting, one_shot): (bool, bool),
) -> Result<Input, Stop> {
    let lasting = lasting || (one_shot && error.as_ref().is_some_and(SqlError::ends_one_shot));
    let error = error.map(|e| e.to_string()).unwrap_or_default();
    if crate::backend::down_and_wait(io, info, error, lasting, conn.backoff()).await {
        Ok(Input::Retry)
    } else {
        Err(Stop::Closed)
    }
}

/// Tells the rest of electop what a transition says: connected, or the first poll read.
pub(crate) async fn announce(io: &BackendIo, source: SourceId, tell: Tell) -> Result<(), Stop> {
    let event = match tell {
        Tell::Connected => SourceEvent::Conn {
            source,
            state: ConnState::Connected,
        },
        Tell::Synced => SourceEvent::Synced { source },
    };
    io.events.send(event).await.map_err(|_| Stop::Closed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn() -> Lifecycle {
        Lifecycle::new(Duration::from_millis(500), Duration::from_secs(10))
    }

    fn live() -> Lifecycle {
        let mut c = conn();
        c.on(Input::Connected);
        assert_eq!(c.on(Input::SchemaChecked), Some(Tell::Connected));
        c
    }

    #[test]
    fn connecting_then_schema_then_live_then_synced_once() {
        let mut c = conn();
        assert_eq!(c.phase, Phase::Connecting);
        assert_eq!(c.on(Input::Connected), None);
        assert_eq!(c.phase, Phase::Schema);
        assert_eq!(c.on(Input::SchemaChecked), Some(Tell::Connected));
        assert_eq!(c.phase, Phase::Live);
        assert_eq!(c.on(Input::Polled), Some(Tell::Synced));
        assert_eq!(c.on(Input::Polled), None);
        assert_eq!(c.phase, Phase::Live);
    }

    #[test]
    fn each_kind_of_failure_goes_down_lasting_or_not() {
        use SqlErrorKind::*;
        for (kind, lasting) in [
            (Transient, false),
            (Lasting, true),
            (Auth, true),
            (Tls, true),
        ] {
            let mut c = conn();
            c.on(Input::Failed(kind));
            assert_eq!(c.phase, Phase::Down { lasting }, "{kind:?} connecting");
            let mut c = conn();
            c.on(Input::Connected);
            c.on(Input::Failed(kind));
            assert_eq!(
                c.phase,
                Phase::Down { lasting },
                "{kind:?} in the schema check"
            );
            let mut c = live();
            c.on(Input::Failed(kind));
            assert_eq!(c.phase, Phase::Down { lasting }, "{kind:?} polling");
        }
    }

    #[test]
    fn down_retries_by_connecting_again_and_syncs_only_once() {
        let mut c = live();
        c.on(Input::Polled);
        c.on(Input::Failed(SqlErrorKind::Transient));
        // Nothing but the wait ending leaves down.
        for stray in [Input::Connected, Input::SchemaChecked, Input::Polled] {
            c.on(stray);
            assert_eq!(c.phase, Phase::Down { lasting: false });
        }
        assert_eq!(c.on(Input::Retry), None);
        assert_eq!(c.phase, Phase::Connecting);
        c.on(Input::Connected);
        assert_eq!(c.on(Input::SchemaChecked), Some(Tell::Connected));
        assert_eq!(c.on(Input::Polled), None, "synced already");
    }

    #[test]
    fn steps_out_of_order_change_nothing() {
        let mut c = conn();
        for stray in [Input::SchemaChecked, Input::Polled, Input::Retry] {
            assert_eq!(c.on(stray), None);
            assert_eq!(c.phase, Phase::Connecting);
        }
        c.on(Input::Connected);
        assert_eq!(c.on(Input::Polled), None);
        assert_eq!(c.phase, Phase::Schema);
    }

    #[test]
    fn the_wait_grows_until_a_poll_is_answered() {
        let mut c = conn();
        c.on(Input::Failed(SqlErrorKind::Transient));
        assert_eq!(c.backoff().next_delay(), Duration::from_millis(500));
        c.on(Input::Retry);
        c.on(Input::Connected);
        c.on(Input::SchemaChecked);
        c.on(Input::Failed(SqlErrorKind::Transient));
        // Connecting and checking the table are not enough to start over.
        assert_eq!(c.backoff().next_delay(), Duration::from_secs(1));
        c.on(Input::Retry);
        c.on(Input::Connected);
        c.on(Input::SchemaChecked);
        c.on(Input::Polled);
        c.on(Input::Failed(SqlErrorKind::Transient));
        assert_eq!(c.backoff().next_delay(), Duration::from_millis(500));
    }

    /// Steps that answer from a script and note each call, for `drive`.
    struct Scripted {
        conn: Lifecycle,
        answers: std::collections::VecDeque<Result<Input, Stop>>,
        /// In a cell: `tell` takes `&self`.
        calls: std::cell::RefCell<Vec<String>>,
    }

    impl Scripted {
        fn next(&mut self, call: &str) -> Result<Input, Stop> {
            self.calls.get_mut().push(call.into());
            self.answers.pop_front().unwrap_or(Err(Stop::Closed))
        }
    }

    impl Steps for Scripted {
        fn lifecycle(&mut self) -> &mut Lifecycle {
            &mut self.conn
        }
        async fn connect(&mut self) -> Result<Input, Stop> {
            self.next("connect")
        }
        async fn check(&mut self) -> Result<Input, Stop> {
            self.next("check")
        }
        async fn poll(&mut self) -> Result<Input, Stop> {
            self.next("poll")
        }
        async fn wait(&mut self, lasting: bool) -> Result<Input, Stop> {
            self.next(&format!("wait lasting={lasting}"))
        }
        async fn failed(&mut self, e: SqlError) -> Input {
            self.calls.get_mut().push(format!("failed: {e}"));
            Input::Failed(e.kind())
        }
        async fn tell(&self, tell: Tell) -> Result<(), Stop> {
            self.calls.borrow_mut().push(format!("tell {tell:?}"));
            Ok(())
        }
    }

    /// The driver runs the step of each phase, takes a failed step down through `failed`,
    /// waits, retries from the start, and ends when a step finds nobody listening.
    #[tokio::test]
    async fn drive_runs_each_phase_step_until_the_source_is_closed() {
        let mut f = Scripted {
            conn: conn(),
            answers: [
                Err(Stop::Failed(SqlError::Unreachable("refused".into()))),
                Ok(Input::Retry),
                Ok(Input::Connected),
                Ok(Input::SchemaChecked),
                Ok(Input::Polled),
                Ok(Input::Polled),
                Err(Stop::Failed(SqlError::Schema("no column".into()))),
                Ok(Input::Retry),
            ]
            .into(),
            calls: Default::default(),
        };
        drive(&mut f).await;
        assert_eq!(
            f.calls.into_inner(),
            [
                "connect",
                "failed: refused",
                "wait lasting=false",
                "connect",
                "check",
                "tell Connected",
                "poll",
                "tell Synced",
                "poll",
                "poll",
                "failed: no column",
                "wait lasting=true",
                "connect",
            ]
        );
    }
}
