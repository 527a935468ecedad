//! Carrying out a life cycle: each phase's step is the store's IO, its outcome the life
//! cycle's next input, and what a transition says is sent on. Written once; a store gives
//! only its steps.

use std::time::Duration;

use super::lifecycle::{Failure, Input, Lifecycle, Phase, Tell};
use crate::backend::{BackendIo, Stop};
use crate::model::{ConnState, SourceEvent, SourceInfo};

/// What a store's errors must say for the engine: what the failure means for the life
/// cycle, and whether a one-shot read (`status`) should end on it at once rather than wait.
pub(crate) trait StoreError: std::fmt::Display {
    fn failure(&self) -> Failure;
    /// Nothing listens there now (a refused connection): `status` reports it at once.
    fn ends_one_shot(&self) -> bool;
}

/// What the driver needs of a follow task besides its steps: its channels, its source,
/// and whether the process answers once and ends (`status`).
pub(crate) struct Source<'a> {
    pub io: &'a BackendIo,
    pub info: &'a SourceInfo,
    pub one_shot: bool,
}

/// A follow task's steps, one per phase of the life cycle; [`drive`] runs them, handing
/// the link a connect made to each step after it until one fails.
pub(crate) trait Steps {
    type Error: StoreError;
    /// What a connect opens and the later steps use (a pool, a session, a connection).
    type Link;
    fn lifecycle(&mut self) -> &mut Lifecycle;
    fn source(&self) -> Source<'_>;
    /// Connects to a member, trying them in turn from `from`: the member and its link.
    async fn connect(&mut self, from: usize) -> Result<(usize, Self::Link), Stop<Self::Error>>;
    /// Reads the current state (after checking what must be there first), and shows it:
    /// the first read, or what changed while the source was away.
    async fn snapshot(&mut self, link: &mut Self::Link) -> Result<Input, Stop<Self::Error>>;
    /// Replays the store's past up to the snapshot, where it keeps one.
    async fn replay(&mut self, _link: &mut Self::Link) -> Result<Input, Stop<Self::Error>> {
        Ok(Input::CaughtUp)
    }
    /// Waits for the next changes (or the next poll), meanwhile serving the runtime's
    /// requests, and applies them in the store's order.
    async fn follow(&mut self, link: &mut Self::Link) -> Result<Input, Stop<Self::Error>>;
    /// Lets go of what the failed member held (closes a pool); dropping the link is the
    /// rest.
    async fn release(&mut self, _link: Self::Link) {}
}

/// How long letting go of a failed member may take before it is dropped.
const RELEASE_WITHIN: Duration = Duration::from_secs(1);

/// Runs a follow task's steps until its source is closed or cancelled.
pub(crate) async fn drive(f: &mut impl Steps) {
    let cancel = f.source().io.cancel.clone();
    tokio::select! {
        _ = run(f) => {}
        _ = cancel.cancelled() => {}
    }
}

async fn run<S: Steps>(f: &mut S) {
    let mut down: Option<(String, bool)> = None;
    let mut link: Option<S::Link> = None;
    loop {
        let step = match (f.lifecycle().phase, link.as_mut()) {
            (Phase::Connecting { from }, _) => {
                let (src, state) = (f.source(), ConnState::Connecting);
                let source = src.info.id;
                if send(src.io, SourceEvent::Conn { source, state })
                    .await
                    .is_err()
                {
                    return;
                }
                f.connect(from).await.map(|(member, made)| {
                    link = Some(made);
                    Input::Connected { member }
                })
            }
            (Phase::Snapshot { .. }, Some(l)) => f.snapshot(l).await,
            (Phase::Replaying { .. }, Some(l)) => f.replay(l).await,
            (Phase::Live { .. }, Some(l)) => f.follow(l).await,
            (Phase::Down { lasting }, _) => wait_down(f, down.take(), lasting).await,
            // Only a connect leads to these phases, and it hands its link on: never reached.
            (_, None) => Ok(Input::Failed(Failure::Transient)),
        };
        let input = match step {
            Ok(input) => input,
            Err(Stop::Closed) => return,
            Err(Stop::Failed(e)) => {
                // A graceful close (a pool's, a session's) through a server that froze would
                // wait on it, and the source would not be said down meanwhile: what was not
                // let go of by then is dropped instead.
                let failure = e.failure();
                // A re-read on the same member keeps its link.
                if let Some(l) = link.take_if(|_| failure != Failure::Resnapshot) {
                    let _ = tokio::time::timeout(RELEASE_WITHIN, f.release(l)).await;
                }
                down = Some((e.to_string(), e.ends_one_shot()));
                Input::Failed(failure)
            }
        };
        for &tell in f.lifecycle().on(input) {
            if announce(f, tell).await.is_err() {
                return;
            }
        }
    }
}

/// The down phase's step: says the source is down, with what took it down, and waits the
/// life cycle's backoff. A one-shot read also ends on a server that did not take the
/// connection at once.
async fn wait_down<S: Steps>(
    f: &mut S,
    error: Option<(String, bool)>,
    lasting: bool,
) -> Result<Input, Stop<S::Error>> {
    let one_shot = f.source().one_shot;
    let (error, ends_one_shot) = error.unwrap_or_default();
    let lasting = lasting || (one_shot && ends_one_shot);
    let go_on = if f.lifecycle().take_at_once() {
        // The member was left for another: at once, and the wait does not grow.
        let mut now = super::Backoff::new(Default::default(), Default::default());
        let src = f.source();
        super::down_and_wait(src.io, src.info, error, lasting, &mut now).await
    } else {
        // A copy, advanced by the wait and put back: the io is read meanwhile.
        let mut backoff = f.lifecycle().backoff().clone();
        let src = f.source();
        let go_on = super::down_and_wait(src.io, src.info, error, lasting, &mut backoff).await;
        *f.lifecycle().backoff() = backoff;
        go_on
    };
    if go_on {
        Ok(Input::Retry)
    } else {
        Err(Stop::Closed)
    }
}

/// Tells readers what a transition says: connected, or the first state read.
async fn announce<S: Steps>(f: &S, tell: Tell) -> Result<(), ()> {
    let src = f.source();
    let source = src.info.id;
    let event = match tell {
        Tell::Connected => SourceEvent::Conn {
            source,
            state: ConnState::Connected,
        },
        Tell::Synced => SourceEvent::Synced { source },
    };
    send(src.io, event).await
}

async fn send(io: &BackendIo, event: SourceEvent) -> Result<(), ()> {
    io.events.send(event).await.map_err(|_| ())
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::time::Duration;

    use tokio::sync::mpsc;
    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::backend::engine::lifecycle::Failure;

    #[derive(Debug)]
    struct Refused(&'static str, Failure);

    impl std::fmt::Display for Refused {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl StoreError for Refused {
        fn failure(&self) -> Failure {
            self.1
        }
        fn ends_one_shot(&self) -> bool {
            false
        }
    }

    /// Steps that answer from a script and note each call.
    struct Scripted {
        life: Lifecycle,
        io: BackendIo,
        info: SourceInfo,
        answers: VecDeque<Result<Input, Stop<Refused>>>,
        calls: Vec<String>,
        /// `release` never ends (a close through a frozen server).
        hang_release: bool,
    }

    impl Scripted {
        fn next(&mut self, call: &str) -> Result<Input, Stop<Refused>> {
            self.calls.push(call.into());
            self.answers.pop_front().unwrap_or(Err(Stop::Closed))
        }
    }

    impl Steps for Scripted {
        type Error = Refused;
        type Link = ();
        fn lifecycle(&mut self) -> &mut Lifecycle {
            &mut self.life
        }
        fn source(&self) -> Source<'_> {
            let (io, info) = (&self.io, &self.info);
            Source {
                io,
                info,
                one_shot: false,
            }
        }
        async fn connect(&mut self, from: usize) -> Result<(usize, ()), Stop<Refused>> {
            match self.next(&format!("connect from {from}"))? {
                Input::Connected { member } => Ok((member, ())),
                other => panic!("a connect answers Connected, not {other:?}"),
            }
        }
        async fn snapshot(&mut self, _: &mut ()) -> Result<Input, Stop<Refused>> {
            self.next("snapshot")
        }
        async fn follow(&mut self, _: &mut ()) -> Result<Input, Stop<Refused>> {
            self.next("follow")
        }
        async fn release(&mut self, _: ()) {
            self.calls.push("release".into());
            if self.hang_release {
                std::future::pending::<()>().await;
            }
        }
    }

    /// Steps answering `answers` in turn, with the channel the driver sends on.
    fn scripted(
        answers: Vec<Result<Input, Stop<Refused>>>,
        hang_release: bool,
    ) -> (Scripted, mpsc::Receiver<SourceEvent>) {
        let (events, rx) = mpsc::channel(64);
        // The sender is dropped: a step that waits on commands would see them closed.
        let (_, commands) = mpsc::channel(1);
        let io = BackendIo {
            events,
            commands,
            cancel: CancellationToken::new(),
        };
        let s = Scripted {
            life: Lifecycle::new(1, Duration::from_millis(500), Duration::from_secs(5)),
            io,
            info: SourceInfo::test_etcd(),
            answers: answers.into(),
            calls: Vec::new(),
            hang_release,
        };
        (s, rx)
    }

    /// The driver runs the step of each phase, hands the connect's link on, releases it and
    /// waits after a failure (at once after a move; a failed connect has nothing to
    /// release), tells connected and synced, and ends when a step finds nobody listening;
    /// what it sends is each state once.
    #[tokio::test(start_paused = true)]
    async fn drive_runs_each_phase_step_until_the_source_is_closed() {
        let fail = |f| Err(Stop::Failed(Refused("refused", f)));
        let answers = vec![
            fail(Failure::Transient),
            Ok(Input::Connected { member: 0 }),
            Ok(Input::SnapshotRead { replay: false }),
            Ok(Input::Followed),
            fail(Failure::Moved),
            Ok(Input::Connected { member: 0 }),
            Ok(Input::SnapshotRead { replay: false }),
        ];
        let (mut s, mut rx) = scripted(answers, false);
        let start = tokio::time::Instant::now();
        drive(&mut s).await;
        assert_eq!(
            s.calls,
            [
                "connect from 0",
                "connect from 0",
                "snapshot",
                "follow",
                "follow",
                "release",
                "connect from 0",
                "snapshot",
                "follow",
            ]
        );
        assert_eq!(
            start.elapsed(),
            Duration::from_millis(500),
            "one wait, not the move's"
        );
        let mut told = Vec::new();
        while let Ok(ev) = rx.try_recv() {
            told.push(match ev {
                SourceEvent::Conn { state, .. } => format!("{state:?}")
                    .split([' ', '{'])
                    .next()
                    .unwrap_or_default()
                    .to_string(),
                SourceEvent::Synced { .. } => "Synced".into(),
                other => format!("{other:?}"),
            });
        }
        assert_eq!(
            told,
            [
                "Connecting",
                "Down",
                "Connecting",
                "Connected",
                "Synced",
                "Down",
                "Connecting",
                "Connected",
            ]
        );
    }

    /// A release that never ends (a pool closing through a frozen server) is dropped after
    /// [`RELEASE_WITHIN`]: the source is said down, and the driver goes on.
    #[tokio::test(start_paused = true)]
    async fn a_release_that_hangs_does_not_keep_the_source_from_going_down() {
        let frozen = Err(Stop::Failed(Refused("frozen", Failure::Transient)));
        let answers = vec![Ok(Input::Connected { member: 0 }), frozen];
        let (mut s, mut rx) = scripted(answers, true);
        let start = tokio::time::Instant::now();
        drive(&mut s).await;
        assert_eq!(
            s.calls,
            ["connect from 0", "snapshot", "release", "connect from 0"]
        );
        assert_eq!(start.elapsed(), RELEASE_WITHIN + Duration::from_millis(500));
        let down = std::iter::from_fn(|| rx.try_recv().ok()).any(|ev| {
            matches!(
                ev,
                SourceEvent::Conn {
                    state: ConnState::Down { .. },
                    ..
                }
            )
        });
        assert!(down, "said down");
    }
}
