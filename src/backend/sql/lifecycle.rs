//! A SQL source's life cycle as plain data: connecting -> schema check -> live (polling),
//! and down with a growing wait when any step fails. Transitions are pure so every path is
//! unit-tested; the IO in `follow.rs` only carries them out.

use std::time::Duration;

use super::super::Backoff;
use super::errors::SqlErrorKind;

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
}
