//! The etcd connection's life cycle as plain data: connecting -> snapshot -> replaying ->
//! live, and down when no member answers. Transitions are pure so every path, the failed
//! first snapshot among them, is unit-tested; the IO in `mod.rs` only carries them out.

use super::error::ErrorKind;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Trying the members in turn, starting with `from`.
    Connecting {
        from: usize,
    },
    /// Connected to `member`: reading the current state. A dashboard shows it page by page
    /// meanwhile (`preview`), but the screen calls the source connected only after this.
    Snapshot {
        member: usize,
    },
    /// Replaying history from old revisions up to the snapshot.
    Replaying {
        member: usize,
    },
    Live {
        member: usize,
    },
    /// No member could serve; `lasting` when waiting will not help (TLS, credentials).
    Down {
        lasting: bool,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Input {
    Connected {
        member: usize,
    },
    SnapshotRead {
        replay: bool,
    },
    CaughtUp,
    /// The member in use failed.
    Failed(ErrorKind),
    /// Every member was tried and none could serve.
    NoMember(ErrorKind),
    /// The backoff after going down has passed.
    Retry,
}

/// The phase plus what the transitions need to remember.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Lifecycle {
    pub phase: Phase,
    members: usize,
    /// The member to try first next time: the one after the last that failed.
    preferred: usize,
    /// Members that failed one after the other without the connection getting live: once
    /// every member has, the source is down rather than cycling through them forever.
    failed_in_row: usize,
}

impl Lifecycle {
    pub(crate) fn new(members: usize) -> Lifecycle {
        Lifecycle {
            phase: Phase::Connecting { from: 0 },
            members: members.max(1),
            preferred: 0,
            failed_in_row: 0,
        }
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

    pub(crate) fn on(&mut self, input: Input) {
        use Phase::*;
        let next = match (self.phase, input) {
            (Connecting { .. }, Input::Connected { member }) => Snapshot { member },
            (Connecting { .. }, Input::NoMember(kind)) => self.down(kind),
            (Snapshot { member }, Input::SnapshotRead { replay: true }) => Replaying { member },
            (Snapshot { member }, Input::SnapshotRead { replay: false })
            | (Replaying { member }, Input::CaughtUp) => {
                self.failed_in_row = 0;
                Live { member }
            }
            (Snapshot { member } | Replaying { member } | Live { member }, Input::Failed(kind)) => {
                self.member_failed(member, kind)
            }
            (Down { .. }, Input::Retry) => Connecting {
                from: self.preferred,
            },
            (phase, _) => phase,
        };
        self.phase = next;
    }

    fn down(&mut self, kind: ErrorKind) -> Phase {
        self.failed_in_row = 0;
        Phase::Down {
            lasting: matches!(
                kind,
                ErrorKind::Lasting | ErrorKind::Auth | ErrorKind::Tls | ErrorKind::TooLarge
            ),
        }
    }

    fn member_failed(&mut self, member: usize, kind: ErrorKind) -> Phase {
        match kind {
            ErrorKind::Lasting | ErrorKind::Auth | ErrorKind::Tls | ErrorKind::TooLarge => {
                self.down(kind)
            }
            // The member is fine; the history we asked for is gone: read the state again.
            ErrorKind::Compacted => Phase::Snapshot { member },
            ErrorKind::Transient | ErrorKind::Refused => {
                self.preferred = (member + 1) % self.members;
                self.failed_in_row += 1;
                if self.failed_in_row >= self.members {
                    self.down(kind)
                } else {
                    Phase::Connecting {
                        from: self.preferred,
                    }
                }
            }
        }
    }
}

/// Per watched prefix, the revision a (re)opened watch starts from. Built only together
/// with the tracker, after a snapshot was read, so a watch never opens without one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Resume(Vec<i64>);

impl Resume {
    pub(crate) fn new(prefixes: usize, from: i64) -> Resume {
        Resume(vec![from; prefixes])
    }

    pub(crate) fn get(&self, i: usize) -> i64 {
        self.0.get(i).copied().unwrap_or(1)
    }

    /// A change up to `revision` of prefix `i` is in the state: resume after it.
    pub(crate) fn applied(&mut self, i: usize, revision: i64) {
        if let Some(r) = self.0.get_mut(i) {
            *r = (*r).max(revision + 1);
        }
    }

    /// Everything up to `revision` is in the state, whichever prefix it came from.
    #[cfg(test)]
    pub(crate) fn all_applied(&mut self, revision: i64) {
        for r in self.0.iter_mut() {
            *r = (*r).max(revision + 1);
        }
    }

    /// Start over from `revision` (after a compaction).
    pub(crate) fn reset(&mut self, revision: i64) {
        for r in self.0.iter_mut() {
            *r = revision;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_life_cycle() {
        let mut c = Lifecycle::new(3);
        c.on(Input::Connected { member: 1 });
        assert_eq!(c.phase, Phase::Snapshot { member: 1 });
        c.on(Input::SnapshotRead { replay: true });
        assert_eq!(c.phase, Phase::Replaying { member: 1 });
        c.on(Input::CaughtUp);
        assert_eq!(c.phase, Phase::Live { member: 1 });
        assert_eq!(c.member(), Some(1));
    }

    #[test]
    fn a_failed_first_snapshot_tries_the_next_member_not_down() {
        let mut c = Lifecycle::new(3);
        c.on(Input::Connected { member: 0 });
        c.on(Input::Failed(ErrorKind::Transient));
        assert_eq!(c.phase, Phase::Connecting { from: 1 });
        assert_eq!(c.member(), None);
        c.on(Input::Connected { member: 1 });
        c.on(Input::SnapshotRead { replay: false });
        assert_eq!(c.phase, Phase::Live { member: 1 });
    }

    /// A member that refused the connection is passed over like any failed one: the
    /// source is down only when every member refused.
    #[test]
    fn a_refusing_member_passes_to_the_next_and_all_refusing_is_down() {
        let mut c = Lifecycle::new(2);
        c.on(Input::Connected { member: 0 });
        c.on(Input::Failed(ErrorKind::Refused));
        assert_eq!(c.phase, Phase::Connecting { from: 1 });
        c.on(Input::Connected { member: 1 });
        c.on(Input::Failed(ErrorKind::Refused));
        assert_eq!(
            c.phase,
            Phase::Down { lasting: false },
            "retried, not lasting"
        );
    }

    #[test]
    fn a_live_member_failing_moves_to_the_next_member() {
        let mut c = Lifecycle::new(3);
        c.on(Input::Connected { member: 2 });
        c.on(Input::SnapshotRead { replay: false });
        c.on(Input::Failed(ErrorKind::Transient));
        assert_eq!(c.phase, Phase::Connecting { from: 0 }, "wraps around");
    }

    #[test]
    fn every_member_failing_in_a_row_is_down_then_retried() {
        let mut c = Lifecycle::new(2);
        for m in [0, 1] {
            c.on(Input::Connected { member: m });
            c.on(Input::Failed(ErrorKind::Transient));
        }
        assert_eq!(c.phase, Phase::Down { lasting: false });
        c.on(Input::Retry);
        assert_eq!(c.phase, Phase::Connecting { from: 0 });
    }

    #[test]
    fn lasting_errors_stop_at_once_and_compaction_rereads() {
        let mut c = Lifecycle::new(3);
        c.on(Input::NoMember(ErrorKind::Tls));
        assert_eq!(c.phase, Phase::Down { lasting: true });
        let mut c = Lifecycle::new(3);
        c.on(Input::Connected { member: 0 });
        c.on(Input::SnapshotRead { replay: false });
        c.on(Input::Failed(ErrorKind::Compacted));
        assert_eq!(c.phase, Phase::Snapshot { member: 0 });
        c.on(Input::Failed(ErrorKind::Auth));
        assert_eq!(c.phase, Phase::Down { lasting: true });
    }

    #[test]
    fn inputs_out_of_place_change_nothing() {
        let mut c = Lifecycle::new(1);
        c.on(Input::CaughtUp);
        c.on(Input::Retry);
        assert_eq!(c.phase, Phase::Connecting { from: 0 });
    }

    #[test]
    fn resume_never_goes_back_and_never_panics() {
        let mut r = Resume::new(2, 1);
        r.applied(0, 10);
        r.applied(0, 5);
        assert_eq!(r.get(0), 11);
        assert_eq!(r.get(1), 1);
        assert_eq!(r.get(7), 1, "an unknown prefix starts at the beginning");
        r.applied(9, 3);
        r.all_applied(20);
        assert_eq!((r.get(0), r.get(1)), (21, 21));
        r.reset(4);
        assert_eq!(r.get(1), 4);
    }
}
