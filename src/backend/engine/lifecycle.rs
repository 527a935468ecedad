//! A source's connection life cycle as plain data, one for every store: connecting (to the
//! members in turn, for a store of several) -> snapshot -> replaying what came before it
//! (where the store keeps a past) -> live (following changes in the store's order), and down
//! with a growing wait when no member can serve. Transitions are pure, so every path is
//! unit-tested; a store's follow task only carries them out.

use std::time::Duration;

use super::Backoff;

/// What a failure means for the life cycle; each store sorts its own errors into these.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The member or the network may come back: try the next member, then wait and retry.
    Transient,
    /// Waiting will not help until someone acts (credentials, TLS, a wrong schema).
    Lasting,
    /// The member is fine but the changes asked for are gone (etcd's compaction): read the
    /// state again from it.
    Resnapshot,
    /// The member in use stopped answering and another can serve: connect again at once,
    /// without the wait. Said as an outage, as a new session is read afresh (ZooKeeper).
    Moved,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Trying the members in turn, starting with `from`.
    Connecting { from: usize },
    /// Connected to `member`: reading the current state (SQL: checking the table first).
    Snapshot { member: usize },
    /// Replaying the store's past up to the snapshot.
    Replaying { member: usize },
    /// Following the store's changes, in its order.
    Live { member: usize },
    /// No member could serve; `lasting` when waiting will not help.
    Down { lasting: bool },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Input {
    Connected {
        member: usize,
    },
    /// The state was read; `replay`: the past is to be replayed before going live.
    SnapshotRead {
        replay: bool,
    },
    CaughtUp,
    /// Changes (or a poll) were received live.
    Followed,
    /// The member in use failed.
    Failed(Failure),
    /// Every member was tried and none could serve.
    NoMember(Failure),
    /// The wait after going down has passed.
    Retry,
}

/// What readers are told on a transition, besides going down (which the down step says).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tell {
    /// The state is read: the source is connected.
    Connected,
    /// The first state read since the source started: what follows is live.
    Synced,
}

/// Told on reaching live: connected each time, synced the first time.
const FIRST_LIVE: &[Tell] = &[Tell::Connected, Tell::Synced];
const LIVE_AGAIN: &[Tell] = &[Tell::Connected];

/// The phase plus what the transitions need to remember.
#[derive(Debug)]
pub(crate) struct Lifecycle {
    pub phase: Phase,
    members: usize,
    /// The member to try first next time: the one after the last that failed.
    preferred: usize,
    /// Members that failed one after the other without the connection getting live: once
    /// every member has, the source is down rather than cycling through them forever.
    failed_in_row: usize,
    synced: bool,
    backoff: Backoff,
    /// The next retry is at once (the member in use was left for another).
    at_once: bool,
}

impl Lifecycle {
    /// A life cycle over `members` members (1 for a single server), waiting `min_wait`
    /// after a first failure, twice as long after each further one up to `max_wait`.
    pub(crate) fn new(members: usize, min_wait: Duration, max_wait: Duration) -> Lifecycle {
        Lifecycle {
            phase: Phase::Connecting { from: 0 },
            members: members.max(1),
            preferred: 0,
            failed_in_row: 0,
            synced: false,
            backoff: Backoff::new(min_wait, max_wait),
            at_once: false,
        }
    }

    /// The wait before the next retry: it grows with each failure until the source is live.
    pub(crate) fn backoff(&mut self) -> &mut Backoff {
        &mut self.backoff
    }

    /// The member in use, if connected.
    #[cfg(test)]
    pub(crate) fn member(&self) -> Option<usize> {
        match self.phase {
            Phase::Snapshot { member } | Phase::Replaying { member } | Phase::Live { member } => {
                Some(member)
            }
            _ => None,
        }
    }

    /// The member a connection attempt starts with.
    pub(crate) fn first_to_try(&self) -> usize {
        match self.phase {
            Phase::Connecting { from } => from,
            _ => self.preferred,
        }
    }

    /// The next phase after `input`, and what readers are told of it.
    pub(crate) fn on(&mut self, input: Input) -> &'static [Tell] {
        use Phase::*;
        let (next, tell) = match (self.phase, input) {
            (Connecting { .. }, Input::Connected { member }) => (Snapshot { member }, &[][..]),
            (Connecting { .. }, Input::NoMember(f) | Input::Failed(f)) => (self.down(f), &[][..]),
            (Snapshot { member }, Input::SnapshotRead { replay: true }) => {
                (Replaying { member }, &[][..])
            }
            (Snapshot { member }, Input::SnapshotRead { replay: false })
            | (Replaying { member }, Input::CaughtUp) => {
                // Only a state read shows the source works: a server that takes connections
                // but cannot be read keeps backing off.
                self.failed_in_row = 0;
                self.backoff.reset();
                let first = !std::mem::replace(&mut self.synced, true);
                (Live { member }, if first { FIRST_LIVE } else { LIVE_AGAIN })
            }
            (Snapshot { member } | Replaying { member } | Live { member }, Input::Failed(f)) => {
                (self.member_failed(member, f), &[][..])
            }
            (Down { .. }, Input::Retry) => (
                Connecting {
                    from: self.preferred,
                },
                &[][..],
            ),
            (phase, _) => (phase, &[][..]),
        };
        self.phase = next;
        tell
    }

    /// Whether the wait before the next retry is skipped (once).
    pub(crate) fn take_at_once(&mut self) -> bool {
        std::mem::take(&mut self.at_once)
    }

    fn down(&mut self, f: Failure) -> Phase {
        self.failed_in_row = 0;
        self.at_once = f == Failure::Moved;
        Phase::Down {
            lasting: f == Failure::Lasting,
        }
    }

    fn member_failed(&mut self, member: usize, f: Failure) -> Phase {
        match f {
            Failure::Lasting | Failure::Moved => self.down(f),
            Failure::Resnapshot => Phase::Snapshot { member },
            Failure::Transient => {
                self.preferred = (member + 1) % self.members;
                self.failed_in_row += 1;
                if self.failed_in_row >= self.members {
                    self.down(f)
                } else {
                    Phase::Connecting {
                        from: self.preferred,
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(members: usize) -> Lifecycle {
        Lifecycle::new(members, Duration::from_millis(500), Duration::from_secs(10))
    }

    fn live(members: usize, member: usize) -> Lifecycle {
        let mut c = of(members);
        c.on(Input::Connected { member });
        c.on(Input::SnapshotRead { replay: false });
        c
    }

    #[test]
    fn a_full_life_cycle_with_a_replay() {
        let mut c = of(3);
        c.on(Input::Connected { member: 1 });
        assert_eq!(c.phase, Phase::Snapshot { member: 1 });
        assert_eq!(c.on(Input::SnapshotRead { replay: true }), []);
        assert_eq!(c.phase, Phase::Replaying { member: 1 });
        assert_eq!(c.on(Input::CaughtUp), [Tell::Connected, Tell::Synced]);
        assert_eq!(c.phase, Phase::Live { member: 1 });
        assert_eq!(c.member(), Some(1));
    }

    #[test]
    fn connected_is_told_at_each_state_read_and_synced_at_the_first() {
        let mut c = of(1);
        c.on(Input::Connected { member: 0 });
        let told = c.on(Input::SnapshotRead { replay: false });
        assert_eq!(told, [Tell::Connected, Tell::Synced]);
        assert_eq!(c.on(Input::Followed), [], "following is no news");
        c.on(Input::Failed(Failure::Transient));
        c.on(Input::Retry);
        c.on(Input::Connected { member: 0 });
        let told = c.on(Input::SnapshotRead { replay: false });
        assert_eq!(told, [Tell::Connected], "synced already");
    }

    #[test]
    fn a_failed_first_snapshot_tries_the_next_member_not_down() {
        let mut c = of(3);
        c.on(Input::Connected { member: 0 });
        c.on(Input::Failed(Failure::Transient));
        assert_eq!(c.phase, Phase::Connecting { from: 1 });
        assert_eq!(c.member(), None);
        c.on(Input::Connected { member: 1 });
        c.on(Input::SnapshotRead { replay: false });
        assert_eq!(c.phase, Phase::Live { member: 1 });
    }

    #[test]
    fn a_live_member_failing_moves_to_the_next_member_and_all_failing_is_down() {
        let mut c = live(3, 2);
        c.on(Input::Failed(Failure::Transient));
        assert_eq!(c.phase, Phase::Connecting { from: 0 }, "wraps around");
        let mut c = of(2);
        for m in [0, 1] {
            c.on(Input::Connected { member: m });
            c.on(Input::Failed(Failure::Transient));
        }
        assert_eq!(c.phase, Phase::Down { lasting: false });
        c.on(Input::Retry);
        assert_eq!(c.phase, Phase::Connecting { from: 0 });
    }

    /// A single server: any failure in any phase is down, lasting or not by its kind.
    #[test]
    fn a_single_server_goes_down_from_every_phase() {
        for (f, lasting) in [(Failure::Transient, false), (Failure::Lasting, true)] {
            let mut c = of(1);
            c.on(Input::Failed(f));
            assert_eq!(c.phase, Phase::Down { lasting }, "{f:?} connecting");
            let mut c = of(1);
            c.on(Input::Connected { member: 0 });
            c.on(Input::Failed(f));
            assert_eq!(c.phase, Phase::Down { lasting }, "{f:?} reading");
            let mut c = live(1, 0);
            c.on(Input::Failed(f));
            assert_eq!(c.phase, Phase::Down { lasting }, "{f:?} following");
        }
    }

    #[test]
    fn lasting_errors_stop_at_once_and_a_resnapshot_rereads() {
        let mut c = of(3);
        c.on(Input::NoMember(Failure::Lasting));
        assert_eq!(c.phase, Phase::Down { lasting: true });
        let mut c = live(3, 0);
        c.on(Input::Failed(Failure::Resnapshot));
        assert_eq!(c.phase, Phase::Snapshot { member: 0 });
        c.on(Input::Failed(Failure::Lasting));
        assert_eq!(c.phase, Phase::Down { lasting: true });
    }

    /// A member left for another is said down, then tried again without the wait; the wait
    /// after that grows as before.
    #[test]
    fn a_member_left_for_another_is_retried_at_once() {
        let mut c = live(1, 0);
        c.on(Input::Failed(Failure::Moved));
        assert_eq!(c.phase, Phase::Down { lasting: false });
        assert!(c.take_at_once());
        assert!(!c.take_at_once(), "once");
        c.on(Input::Retry);
        c.on(Input::Failed(Failure::Transient));
        assert!(!c.take_at_once());
    }

    #[test]
    fn inputs_out_of_place_change_nothing() {
        let mut c = of(1);
        for stray in [Input::CaughtUp, Input::Retry, Input::Followed] {
            assert_eq!(c.on(stray), []);
            assert_eq!(c.phase, Phase::Connecting { from: 0 });
        }
        let mut c = live(1, 0);
        c.on(Input::Failed(Failure::Transient));
        for stray in [
            Input::Connected { member: 0 },
            Input::SnapshotRead { replay: false },
            Input::Followed,
        ] {
            c.on(stray);
            assert_eq!(c.phase, Phase::Down { lasting: false });
        }
    }

    #[test]
    fn the_wait_grows_until_a_state_is_read() {
        let mut c = of(1);
        c.on(Input::Failed(Failure::Transient));
        assert_eq!(c.backoff().next_delay(), Duration::from_millis(500));
        c.on(Input::Retry);
        c.on(Input::Connected { member: 0 });
        c.on(Input::Failed(Failure::Transient));
        // Connecting is not enough to start over.
        assert_eq!(c.backoff().next_delay(), Duration::from_secs(1));
        c.on(Input::Retry);
        c.on(Input::Connected { member: 0 });
        c.on(Input::SnapshotRead { replay: false });
        c.on(Input::Failed(Failure::Transient));
        assert_eq!(c.backoff().next_delay(), Duration::from_millis(500));
    }
}
