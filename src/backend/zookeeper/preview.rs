//! The first read on screen while it goes: ZooKeeper has no range read, so 10,000 elections
//! are 10,000 `getChildren` and 30,000 `getData`, long to wait for. Each election's children
//! are read together, so an election read is whole as of its read and can be shown at once;
//! the source stays "connecting" with how far the read got (the general `Loading` state)
//! until the whole tree is read and loaded, and only that load makes history and events.

use std::time::{Duration, Instant};

use tokio::sync::mpsc::Sender;

use super::layout::Znode;
use super::read::Seen;
use super::single::Layout;
use crate::model::{Election, SourceEvent, SourceId};

/// How often the elections read so far are sent: a redraw each time, not one per election.
const EVERY: Duration = Duration::from_millis(100);

pub(super) struct Preview<'a> {
    events: &'a Sender<SourceEvent>,
    source: SourceId,
    prefix: &'a str,
    layout: Layout,
    /// Znodes below the prefix, as the server counted them before the read (0: not known,
    /// a server before 3.6 cannot count them).
    total: usize,
    /// Znodes read so far.
    read: usize,
    /// Elections read and not sent yet.
    pending: Vec<Election>,
    /// Elections sent so far.
    shown: usize,
    last: Instant,
}

impl<'a> Preview<'a> {
    /// Says at once that the read has begun (so the first frame says so too).
    pub(super) async fn start(
        events: &'a Sender<SourceEvent>,
        (source, prefix, layout): (SourceId, &'a str, Layout),
        total: Option<usize>,
    ) -> Preview<'a> {
        let p = Preview {
            events,
            source,
            prefix,
            layout,
            total: total.unwrap_or(0),
            read: 0,
            pending: Vec::new(),
            shown: 0,
            last: Instant::now(),
        };
        p.loading().await;
        p
    }

    async fn loading(&self) {
        let ev = SourceEvent::Loading {
            source: self.source,
            read: self.read,
            // Nodes created since the count are read too.
            total: if self.total == 0 {
                0
            } else {
                self.total.max(self.read)
            },
            what: "znodes",
        };
        // A closed channel ends the follow at its next send, which is not a preview's.
        let _ = self.events.send(ev).await;
    }

    async fn flush(&mut self) {
        self.last = Instant::now();
        self.loading().await;
        if self.pending.is_empty() {
            return;
        }
        self.shown += self.pending.len();
        let elections = std::mem::take(&mut self.pending);
        let source = self.source;
        let _ = self
            .events
            .send(SourceEvent::Elections { source, elections })
            .await;
    }
}

impl Seen for Preview<'_> {
    fn znodes(&mut self, n: usize) {
        self.read += n;
    }

    async fn parent(&mut self, parent: &str, children: &[Znode]) {
        let e = self
            .layout
            .election(self.source, self.prefix, parent, children);
        self.pending.extend(e);
        // The first election read goes out at once: it is the first frame's.
        let first = self.shown == 0 && !self.pending.is_empty();
        if first || self.last.elapsed() >= EVERY {
            self.flush().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(path: &str, data: &str, czxid: i64) -> Znode {
        Znode {
            path: path.into(),
            data: data.as_bytes().to_vec(),
            czxid,
            mzxid: czxid,
            ephemeral_owner: 0x100,
        }
    }

    fn names(ev: Option<SourceEvent>) -> Vec<String> {
        match ev {
            Some(SourceEvent::Elections { elections, .. }) => {
                elections.into_iter().map(|e| e.name).collect()
            }
            other => panic!("elections expected, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn the_first_election_read_is_sent_at_once_then_batches_with_the_progress() {
        let (tx, mut rx) = tokio::sync::mpsc::channel(16);
        let at = (0, "/e", Layout::Recipes);
        let mut p = Preview::start(&tx, at, Some(6)).await;
        assert!(matches!(
            rx.try_recv(),
            Ok(SourceEvent::Loading {
                read: 0,
                total: 6,
                ..
            })
        ));
        // The prefix's own children: elections' znodes, no election of their own.
        p.znodes(2);
        p.parent("/e", &[node("/e/a", "", 1), node("/e/b", "", 2)])
            .await;
        assert!(rx.try_recv().is_err(), "nothing to show yet");
        p.znodes(1);
        p.parent("/e/a", &[node("/e/a/x__lock__0000000000", "n1", 3)])
            .await;
        assert!(matches!(
            rx.try_recv(),
            Ok(SourceEvent::Loading {
                read: 3,
                total: 6,
                ..
            })
        ));
        assert_eq!(names(rx.try_recv().ok()), ["a"]);
        // The next waits for its batch.
        p.znodes(1);
        p.parent("/e/b", &[node("/e/b/x__lock__0000000000", "n2", 4)])
            .await;
        assert!(rx.try_recv().is_err(), "batched");
        p.last -= EVERY;
        p.parent("/e/c", &[]).await;
        assert!(matches!(
            rx.try_recv(),
            Ok(SourceEvent::Loading { read: 4, .. })
        ));
        assert_eq!(names(rx.try_recv().ok()), ["b"]);
    }

    #[tokio::test]
    async fn an_unknown_total_stays_unknown() {
        let (tx, mut rx) = tokio::sync::mpsc::channel(16);
        let mut p = Preview::start(&tx, (0, "/e", Layout::Recipes), None).await;
        rx.try_recv().ok();
        p.znodes(1);
        p.parent("/e/a", &[node("/e/a/x__lock__0000000000", "n1", 3)])
            .await;
        assert!(matches!(
            rx.try_recv(),
            Ok(SourceEvent::Loading {
                read: 1,
                total: 0,
                ..
            })
        ));
    }
}
