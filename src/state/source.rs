//! What is known of one source: its connection, how current its view is, its members.

use std::time::{Duration, Instant, SystemTime};

use crate::model::{ConnState, EventKind, MemberStatus, SourceInfo};

/// The source's connection as its readers were last told: `connected` and `disconnected`
/// are said once per change of it, never once per retry, poll or reconnect attempt.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Link {
    /// Nothing said yet.
    #[default]
    Unknown,
    Up,
    Down,
}

impl Link {
    /// The link after `state`, and the marker it makes readers hear, if any.
    pub fn next(self, state: &ConnState) -> (Link, Option<EventKind>) {
        match (self, state) {
            (Link::Up, ConnState::Connected) | (Link::Down, ConnState::Down { .. }) => (self, None),
            (_, ConnState::Connected) => (Link::Up, Some(EventKind::Connected)),
            (_, ConnState::Down { .. }) => (Link::Down, Some(EventKind::Disconnected)),
            // Trying again says nothing new: still down, or not yet up.
            (_, ConnState::Connecting) => (self, None),
        }
    }
}

/// A source as every view shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct SourceView {
    pub info: SourceInfo,
    pub conn: ConnState,
    pub revision: Option<i64>,
    /// Snapshot and history replay done.
    pub synced: bool,
    /// The latest thing worth telling about this source (e.g. compacted history).
    pub notice: Option<String>,
    /// When the store last answered a read that proves the view current.
    pub last_contact: Option<(Instant, SystemTime)>,
    /// How often the source confirms contact while all is well.
    pub contact_every: Duration,
    /// Each member of a clustered store, as last probed.
    pub members: Vec<MemberStatus>,
    /// The first snapshot is being read: keys read, keys in all (0: not known) and what a
    /// key is called there (until connected).
    pub loading: Option<(usize, usize, &'static str)>,
    /// ZooKeeper: electop's own session id (`0x…`) and its negotiated timeout.
    pub session: Option<(String, Duration)>,
    /// A store that keeps no history (ZooKeeper): leader changes are seen from here on.
    pub history_since: Option<SystemTime>,
    /// The stretches no electop watched before this run, from electop's own record.
    pub history_gaps: Vec<crate::model::HistoryGap>,
    /// The connection as readers were last told it.
    pub link: Link,
    /// Readers were last told the source is stale.
    pub told_stale: bool,
    /// Past outages and deposed holders, for the timeline's strips.
    pub marks: super::marks::Marks,
}

/// No contact for this much longer than the source's own contact interval and its rows are
/// shown as stale: with contact every 500 ms, stale after 2 s.
pub const STALE_MARGIN: Duration = Duration::from_millis(1500);

impl SourceView {
    /// A source not yet heard from.
    pub fn new(info: SourceInfo) -> SourceView {
        SourceView {
            info,
            conn: ConnState::Connecting,
            revision: None,
            synced: false,
            notice: None,
            last_contact: None,
            contact_every: Duration::from_millis(500),
            members: Vec::new(),
            loading: None,
            session: None,
            history_since: None,
            history_gaps: Vec::new(),
            link: Link::Unknown,
            told_stale: false,
            marks: super::marks::Marks::default(),
        }
    }

    /// How long the source has gone without contact, once that is long enough to matter
    /// (or it is down). `None`: current, or never reached (nothing shown yet).
    pub fn stale_for(&self, now: Instant) -> Option<Duration> {
        let (at, _) = self.last_contact?;
        let age = now.saturating_duration_since(at);
        let down = matches!(self.conn, ConnState::Down { .. });
        (down || age > self.contact_every + STALE_MARGIN).then_some(age)
    }

    /// The instant what this source shows was last known true, for countdowns frozen at it.
    pub fn as_of(&self, now: Instant) -> Instant {
        match (self.stale_for(now), self.last_contact) {
            (Some(_), Some((at, _))) => at,
            _ => now,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn down() -> ConnState {
        ConnState::Down {
            error: "refused".into(),
            retry_at: Instant::now(),
            lasting: false,
        }
    }

    /// One outage is one `disconnected` and one `connected`, however many retries and polls
    /// lie between.
    #[test]
    fn an_outage_is_said_once_however_often_it_is_retried() {
        let states = [
            ConnState::Connecting,
            ConnState::Connected,
            ConnState::Connected,
            down(),
            ConnState::Connecting,
            down(),
            ConnState::Connecting,
            down(),
            ConnState::Connected,
            ConnState::Connected,
        ];
        let mut link = Link::Unknown;
        let mut said = Vec::new();
        for s in &states {
            let (next, marker) = link.next(s);
            link = next;
            said.extend(marker);
        }
        assert_eq!(
            said,
            [
                EventKind::Connected,
                EventKind::Disconnected,
                EventKind::Connected
            ]
        );
    }

    #[test]
    fn a_source_never_reached_is_said_down_once() {
        let (link, m) = Link::Unknown.next(&down());
        assert_eq!((link, m), (Link::Down, Some(EventKind::Disconnected)));
        assert_eq!(link.next(&ConnState::Connecting), (Link::Down, None));
        assert_eq!(link.next(&down()), (Link::Down, None));
    }
}
