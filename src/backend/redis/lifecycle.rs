//! A Redis source's connection life cycle as plain data: starting -> live, and down with a
//! growing wait when any step fails, until a new connection's full read is answered.
//! Transitions are pure so every path is unit-tested; `follow.rs` only carries them out.
//!
//! What it settles: the source is `Connecting` only before its first connection (a retry
//! while down is no news: the source stays down, and a failed dial claims no contact);
//! `Connected` once per connection, when its first full read was answered (not at every
//! poll); an outage begins once, at the first failure after being up (or at start).

use std::time::Duration;

use crate::backend::Backoff;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Never connected yet.
    Starting,
    /// Connected, its first full read answered.
    Live,
    /// A step failed; retrying after the backoff's wait.
    Down,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Input {
    /// About to dial.
    Dialling,
    /// The full read of a new connection was answered.
    Read,
    /// A step failed (dialling, reading, a keyspace event's connection).
    Failed,
}

/// What the source tells the rest of electop on a transition.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Tell {
    /// `ConnState::Connecting`.
    pub connecting: bool,
    /// `ConnState::Connected`.
    pub connected: bool,
    /// The first full read since the source started: its elections are known.
    pub synced: bool,
    /// The first failure of an outage (later ones only move the retry time).
    pub outage_begins: bool,
}

#[derive(Debug)]
pub(crate) struct Lifecycle {
    pub phase: Phase,
    synced: bool,
    backoff: Backoff,
}

impl Lifecycle {
    pub(crate) fn new(min_wait: Duration, max_wait: Duration) -> Lifecycle {
        Lifecycle {
            phase: Phase::Starting,
            synced: false,
            backoff: Backoff::new(min_wait, max_wait),
        }
    }

    /// The wait before the next retry grows with each failure in a row.
    pub(crate) fn backoff(&mut self) -> &mut Backoff {
        &mut self.backoff
    }

    pub(crate) fn on(&mut self, input: Input) -> Tell {
        use Phase::*;
        let mut tell = Tell::default();
        self.phase = match (self.phase, input) {
            (Starting, Input::Dialling) => {
                tell.connecting = true;
                Starting
            }
            // Dialling again while down claims nothing: the source stays down.
            (phase, Input::Dialling) => phase,
            (Starting | Down, Input::Read) => {
                // Only an answered read shows the source works: a server that accepts
                // connections but cannot be read keeps backing off.
                self.backoff.reset();
                tell.connected = true;
                tell.synced = !std::mem::replace(&mut self.synced, true);
                Live
            }
            // A poll: the connection was reported already.
            (Live, Input::Read) => Live,
            (Starting | Live, Input::Failed) => {
                tell.outage_begins = true;
                Down
            }
            (Down, Input::Failed) => Down,
        };
        tell
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn life() -> Lifecycle {
        Lifecycle::new(Duration::from_millis(500), Duration::from_secs(10))
    }

    #[test]
    fn connecting_then_connected_and_synced_once_and_polls_say_nothing() {
        let mut l = life();
        let t = l.on(Input::Dialling);
        assert!(t.connecting && !t.connected);
        let t = l.on(Input::Read);
        assert!(t.connected && t.synced && !t.connecting);
        for _ in 0..3 {
            assert_eq!(l.on(Input::Read), Tell::default(), "a poll");
        }
        assert_eq!(l.phase, Phase::Live);
    }

    #[test]
    fn an_outage_begins_once_and_failed_retries_claim_nothing() {
        let mut l = life();
        l.on(Input::Dialling);
        l.on(Input::Read);
        let t = l.on(Input::Failed);
        assert!(t.outage_begins);
        let waits: Vec<Duration> = (0..3)
            .map(|_| {
                assert_eq!(l.on(Input::Dialling), Tell::default(), "no connecting");
                assert_eq!(l.on(Input::Failed), Tell::default(), "the same outage");
                l.backoff().next_delay()
            })
            .collect();
        assert!(waits.windows(2).all(|w| w[0] < w[1]), "{waits:?}");
        assert_eq!(l.phase, Phase::Down);
        // Back: connected again, not synced again; the wait starts over.
        assert_eq!(l.on(Input::Dialling), Tell::default());
        let t = l.on(Input::Read);
        assert!(t.connected && !t.synced);
        assert_eq!(l.backoff().next_delay(), Duration::from_millis(500));
        assert!(l.on(Input::Failed).outage_begins, "a new outage");
    }

    #[test]
    fn a_first_dial_that_fails_is_an_outage_and_the_first_read_later_syncs() {
        let mut l = life();
        assert!(l.on(Input::Dialling).connecting);
        assert!(l.on(Input::Failed).outage_begins);
        assert!(!l.on(Input::Dialling).connecting);
        let t = l.on(Input::Read);
        assert!(t.connected && t.synced);
    }
}
