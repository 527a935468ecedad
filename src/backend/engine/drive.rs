//! Carrying out a life cycle: each phase's step is the store's IO, its outcome the life
//! cycle's next input, and what a transition says is sent on. Written once; a store gives
//! only its steps.

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

/// A follow task's steps, one per phase of the life cycle; [`drive`] runs them.
pub(crate) trait Steps {
    type Error: StoreError;
    fn lifecycle(&mut self) -> &mut Lifecycle;
    fn io(&self) -> &BackendIo;
    fn info(&self) -> &SourceInfo;
    /// `status`: the process answers once and ends.
    fn one_shot(&self) -> bool;
    /// Connects to a member, trying them in turn from `from`.
    async fn connect(&mut self, from: usize) -> Result<Input, Stop<Self::Error>>;
    /// Reads the current state (after checking what must be there first), and shows it:
    /// the first read, or what changed while the source was away.
    async fn snapshot(&mut self) -> Result<Input, Stop<Self::Error>>;
    /// Replays the store's past up to the snapshot, where it keeps one.
    async fn replay(&mut self) -> Result<Input, Stop<Self::Error>> {
        Ok(Input::CaughtUp)
    }
    /// Waits for the next changes (or the next poll), meanwhile serving the runtime's
    /// requests, and applies them in the store's order.
    async fn follow(&mut self) -> Result<Input, Stop<Self::Error>>;
    /// Lets go of what the failed member held (a pool, a session).
    async fn release(&mut self);
}

/// Runs a follow task's steps until its source is closed.
pub(crate) async fn drive(f: &mut impl Steps) {
    let mut down: Option<(String, bool)> = None;
    loop {
        let step = match f.lifecycle().phase {
            Phase::Connecting { from } => {
                let (source, state) = (f.info().id, ConnState::Connecting);
                if send(f.io(), SourceEvent::Conn { source, state })
                    .await
                    .is_err()
                {
                    return;
                }
                f.connect(from).await
            }
            Phase::Snapshot { .. } => f.snapshot().await,
            Phase::Replaying { .. } => f.replay().await,
            Phase::Live { .. } => f.follow().await,
            Phase::Down { lasting } => wait_down(f, down.take(), lasting).await,
        };
        let input = match step {
            Ok(input) => input,
            Err(Stop::Closed) => return,
            Err(Stop::Failed(e)) => {
                f.release().await;
                let failure = e.failure();
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
    let one_shot = f.one_shot();
    let (error, ends_one_shot) = error.unwrap_or_default();
    let lasting = lasting || (one_shot && ends_one_shot);
    let go_on = if f.lifecycle().take_at_once() {
        // The member was left for another: at once, and the wait does not grow.
        let mut now = super::Backoff::new(Default::default(), Default::default());
        super::down_and_wait(f.io(), f.info(), error, lasting, &mut now).await
    } else {
        // A copy, advanced by the wait and put back: the io is read meanwhile.
        let mut backoff = f.lifecycle().backoff().clone();
        let go_on = super::down_and_wait(f.io(), f.info(), error, lasting, &mut backoff).await;
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
    let source = f.info().id;
    let event = match tell {
        Tell::Connected => SourceEvent::Conn {
            source,
            state: ConnState::Connected,
        },
        Tell::Synced => SourceEvent::Synced { source },
    };
    send(f.io(), event).await
}

async fn send(io: &BackendIo, event: SourceEvent) -> Result<(), ()> {
    io.events.send(event).await.map_err(|_| ())
}
