//! The engine every store runs on: the connection life cycle ([`lifecycle`]: connect,
//! snapshot, replay, follow, down with backoff, reconnect and resynchronise) as one state
//! machine with pure transitions, the driver that carries it out with a store's steps
//! ([`drive`]), and the wait after a failure. A store supplies only its steps: how to
//! connect, read a snapshot, receive the next changes in its own order, and map what it
//! reads to candidates.

pub(crate) mod drive;
pub(crate) mod history;
pub(crate) mod journal;
pub(crate) mod lifecycle;
pub(crate) mod marks;
pub(crate) mod remembered;

use std::time::Duration;

use crate::backend::BackendIo;
use crate::model::{SourceEvent, SourceInfo};

/// The store answered as of `sent` (when the read was sent: what it says was true then);
/// the next answer is due within `next_within`.
pub(crate) fn contact(
    source: crate::model::SourceId,
    sent: (std::time::Instant, std::time::SystemTime),
    next_within: std::time::Duration,
) -> SourceEvent {
    SourceEvent::Contact {
        source,
        at: sent.0,
        wall: sent.1,
        next_within,
    }
}

/// Sends what a store's changes did, in their order: the changed elections, then the events
/// they make. Every store's follow task shows its tracker's [`Changes`] this way.
pub(crate) async fn show<E>(
    io: &BackendIo,
    info: &SourceInfo,
    changes: crate::backend::change::Changes,
) -> Result<(), crate::backend::Stop<E>> {
    let closed = |_| crate::backend::Stop::Closed;
    if !changes.changed.is_empty() {
        let elections = changes.changed;
        let source = info.id;
        let ev = SourceEvent::Elections { source, elections };
        io.events.send(ev).await.map_err(closed)?;
    }
    for e in changes.events {
        io.events
            .send(SourceEvent::Happened(e))
            .await
            .map_err(closed)?;
    }
    Ok(())
}

/// Reports a source as down, then waits out the backoff. Returns false when the backend
/// should stop: cancelled, or nobody listens any more. Readers hear `disconnected` once per
/// outage: the read model says it when the connection state changes, not at every retry.
pub async fn down_and_wait(
    io: &BackendIo,
    info: &SourceInfo,
    error: String,
    lasting: bool,
    backoff: &mut Backoff,
) -> bool {
    let delay = backoff.next_delay();
    tracing::warn!(source = %info.name, %error, ?delay, "source down");
    let state = crate::model::ConnState::Down {
        error,
        retry_at: std::time::Instant::now() + delay,
        lasting,
    };
    let down = SourceEvent::Conn {
        source: info.id,
        state,
    };
    if io.events.send(down).await.is_err() {
        return false;
    }
    tokio::select! {
        _ = tokio::time::sleep(delay) => true,
        _ = io.cancel.cancelled() => false,
    }
}

/// Exponential backoff for reconnecting, reset after a successful connection.
#[derive(Clone, Debug)]
pub struct Backoff {
    next: Duration,
    min: Duration,
    max: Duration,
}

impl Backoff {
    pub fn new(min: Duration, max: Duration) -> Self {
        Backoff {
            next: min,
            min,
            max,
        }
    }

    pub fn next_delay(&mut self) -> Duration {
        let d = self.next;
        self.next = (self.next * 2).min(self.max);
        d
    }

    pub fn reset(&mut self) {
        self.next = self.min;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::mpsc;
    use tokio_util::sync::CancellationToken;

    #[test]
    fn backoff_doubles_to_a_cap_and_resets() {
        let mut b = Backoff::new(Duration::from_millis(500), Duration::from_secs(2));
        let got: Vec<_> = (0..4).map(|_| b.next_delay().as_millis()).collect();
        assert_eq!(got, [500, 1000, 2000, 2000]);
        b.reset();
        assert_eq!(b.next_delay().as_millis(), 500);
    }

    fn io() -> (BackendIo, mpsc::Receiver<SourceEvent>) {
        let (events, rx) = mpsc::channel(8);
        let (_tx, commands) = mpsc::channel(1);
        let cancel = CancellationToken::new();
        let io = BackendIo {
            events,
            commands,
            cancel,
        };
        (io, rx)
    }

    /// A source that went down is shown so at once (its state only), then retried after exactly the backoff,
    /// the next time after twice as long; on the paused clock, without waiting.
    #[tokio::test(start_paused = true)]
    async fn down_is_said_at_once_and_the_retry_waits_out_the_backoff() {
        let (io, mut rx) = io();
        let info = SourceInfo::test_etcd();
        let mut backoff = Backoff::new(Duration::from_millis(250), Duration::from_secs(5));
        for expect in [250, 500] {
            let start = tokio::time::Instant::now();
            let go_on = down_and_wait(&io, &info, "refused".into(), false, &mut backoff);
            assert!(go_on.await);
            assert_eq!(start.elapsed(), Duration::from_millis(expect));
            let Some(SourceEvent::Conn { state, .. }) = rx.recv().await else {
                panic!("the connection state")
            };
            assert!(matches!(
                state,
                crate::model::ConnState::Down { lasting: false, .. }
            ));
            assert!(rx.try_recv().is_err(), "nothing more: the model says it");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_cancel_ends_the_wait_for_a_retry_at_once() {
        let (io, _rx) = io();
        let info = SourceInfo::test_etcd();
        let mut backoff = Backoff::new(Duration::from_secs(5), Duration::from_secs(5));
        let start = tokio::time::Instant::now();
        let cancel = io.cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(10)).await;
            cancel.cancel();
        });
        let go_on = down_and_wait(&io, &info, "refused".into(), false, &mut backoff).await;
        assert!(!go_on, "stop: cancelled");
        assert_eq!(start.elapsed(), Duration::from_millis(10));
    }
}
