//! What each cause of a leader change means, in words short enough for the screen: the
//! help lists them and the detail view explains those in an election's history.

use super::Cause;

impl Cause {
    /// What the cause means, in a few words for the screen (the help and the detail view).
    pub fn meaning(self) -> &'static str {
        match self {
            Cause::Elected => "a leader appeared where there was none",
            Cause::Resigned => "the leader deleted its key, its lease alive",
            Cause::Deleted => "a key without a lease was deleted",
            Cause::LeaseExpired => "the leader's lease ran out",
            Cause::LeaseRevoked => "the leader's lease was revoked before it ran out",
            Cause::LeaseEnded => "the lease is gone: expired or revoked, not told",
            Cause::Proclaimed => "the leader changed its value (etcd Proclaim)",
            Cause::TakenOver => "another wrote over the leader's key or row",
            Cause::Expired => "the row's term had run out before the change",
            Cause::ForcedLeader => "an admin action made this leader",
            Cause::ForcedReelection => "an admin action forced a re-election",
            Cause::ForcedResign => "an admin action made the leader resign",
            Cause::Unknown => "changes missed (between polls, compacted): result",
            Cause::NodeGone => "its node went: session ended or node deleted",
            Cause::Promoted => "a new primary was promoted (Patroni's history)",
            Cause::SessionEnded => "the holder's database session ended",
        }
    }

    /// Every cause, for the help's list.
    pub const ALL: [Cause; 16] = [
        Cause::Elected,
        Cause::Resigned,
        Cause::Deleted,
        Cause::LeaseExpired,
        Cause::LeaseRevoked,
        Cause::LeaseEnded,
        Cause::Proclaimed,
        Cause::TakenOver,
        Cause::Expired,
        Cause::ForcedLeader,
        Cause::ForcedReelection,
        Cause::ForcedResign,
        Cause::Unknown,
        Cause::NodeGone,
        Cause::Promoted,
        Cause::SessionEnded,
    ];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cause_is_listed_once_and_explained_in_a_help_row() {
        let names: std::collections::BTreeSet<&str> =
            Cause::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(names.len(), Cause::ALL.len());
        for c in Cause::ALL {
            // A help row: the name (17), then the meaning, in a column of 69.
            assert!(
                c.meaning().chars().count() <= 50,
                "{}: {}",
                c.as_str(),
                c.meaning()
            );
        }
    }
}
