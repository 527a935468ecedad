//! The first snapshot on screen page by page while it is read: a large prefix takes long
//! to read and derive in full, but its first page of keys is
//! enough for a first frame. Pages are all read at one revision, so every election shown
//! early is also in the full snapshot, which replaces it once read; until then the header
//! says how far the read got, and the source is not shown as connected.

use std::collections::BTreeSet;

use super::layout::Mirror;
use super::tracker::Tracker;
use super::{Closed, send};
use crate::backend::BackendIo;
use crate::model::SourceEvent;

pub(super) struct Preview<'a> {
    io: &'a BackendIo,
    /// An empty tracker with the source's layout: it derives, it never stores.
    tracker: Tracker,
    /// The first key not shown yet: the last election of the previous page, whose other
    /// keys may be on the next.
    next: Vec<u8>,
    /// Keys in the whole range, from the first page's count.
    total: Option<usize>,
    /// The elections sent so far.
    sent: &'a mut BTreeSet<Vec<u8>>,
}

impl<'a> Preview<'a> {
    pub(super) fn new(
        io: &'a BackendIo,
        tracker: Tracker,
        sent: &'a mut BTreeSet<Vec<u8>>,
    ) -> Self {
        Preview {
            io,
            tracker,
            next: Vec::new(),
            total: None,
            sent,
        }
    }

    /// A page was read into `mirror`; `count` is the keys the range still held from this
    /// page on, and `more` whether another page follows. Shows the elections the page
    /// completed (the full snapshot shows the rest) and how far the read got.
    pub(super) async fn page(
        &mut self,
        mirror: &Mirror,
        count: i64,
        more: bool,
    ) -> Result<(), Closed> {
        let total = *self
            .total
            .get_or_insert(usize::try_from(count).unwrap_or(0).max(mirror.len()));
        self.loading(mirror.len(), total).await?;
        if !more {
            return Ok(());
        }
        self.show(mirror).await
    }

    /// The whole snapshot is read, but its scheme was known only from every key (detected),
    /// so nothing is on screen yet: shows the elections of its first `keys` keys while the
    /// rest are derived.
    pub(super) async fn head(&mut self, mirror: &Mirror, keys: usize) -> Result<(), Closed> {
        let head: Mirror = mirror
            .iter()
            .take(keys)
            .map(|(k, kv)| (k.clone(), kv.clone()))
            .collect();
        self.loading(mirror.len(), mirror.len()).await?;
        self.show(&head).await
    }

    async fn loading(&self, read: usize, total: usize) -> Result<(), Closed> {
        let source = self.tracker.source();
        send(
            self.io,
            SourceEvent::Loading {
                source,
                read,
                total,
                what: "keys",
            },
        )
        .await
    }

    /// Sends the elections whose keys are all in `mirror`: every one met from `next` on but
    /// the last, whose other keys may be further on.
    async fn show(&mut self, mirror: &Mirror) -> Result<(), Closed> {
        let layout = self.tracker.layout();
        let mut ids = BTreeSet::new();
        // Where the run of keys of the last election met starts.
        let mut run: Option<(Vec<u8>, &Vec<u8>)> = None;
        for key in mirror.range(self.next.clone()..).map(|(k, _)| k) {
            let Some(id) = layout.election_of(key) else {
                continue;
            };
            if run.as_ref().is_none_or(|(last, _)| *last != id) {
                if let Some((done, _)) = run.take() {
                    ids.insert(done);
                }
                run = Some((id, key));
            }
        }
        let Some((held, start)) = run else {
            return Ok(());
        };
        self.next = start.clone();
        ids.remove(&held);
        let elections = self.tracker.preview(mirror, &ids);
        if elections.is_empty() {
            return Ok(());
        }
        self.sent.extend(ids);
        let source = self.tracker.source();
        send(self.io, SourceEvent::Elections { source, elections }).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::etcd::election::EtcdElection;
    use crate::backend::etcd::layout::Kv;

    fn kv(key: &str) -> (Vec<u8>, Kv) {
        let kv = Kv {
            key: key.as_bytes().to_vec(),
            value: b"node".to_vec(),
            create_revision: 1,
            mod_revision: 1,
            lease: 0,
        };
        (kv.key.clone(), kv)
    }

    fn names(ev: SourceEvent) -> Vec<String> {
        match ev {
            SourceEvent::Elections { elections, .. } => {
                elections.into_iter().map(|e| e.name).collect()
            }
            _ => Vec::new(),
        }
    }

    #[tokio::test]
    async fn each_page_shows_what_it_completed_and_holds_back_its_last_election() {
        let (tx, mut rx) = tokio::sync::mpsc::channel(16);
        let (_ctx, crx) = tokio::sync::mpsc::channel(1);
        let io = BackendIo {
            events: tx,
            commands: crx,
            cancel: Default::default(),
        };
        let layout = Box::new(EtcdElection {
            prefix: b"/e/".to_vec(),
        });
        let mut sent = BTreeSet::new();
        let mut p = Preview::new(&io, Tracker::new(0, "s".into(), layout, 10), &mut sent);
        let mut mirror: Mirror = ["/e/a/1", "/e/a/2", "/e/b/1"].map(kv).into();
        p.page(&mirror, 5, true).await.ok();
        assert!(matches!(
            rx.recv().await,
            Some(SourceEvent::Loading {
                read: 3,
                total: 5,
                ..
            })
        ));
        assert_eq!(names(rx.recv().await.expect("page")), ["a"], "b may go on");
        mirror.extend(["/e/b/2", "/e/c/1"].map(kv));
        p.page(&mirror, 2, true).await.ok();
        rx.recv().await;
        assert_eq!(names(rx.recv().await.expect("page")), ["b"]);
        p.page(&mirror, 0, false).await.ok();
        assert!(matches!(
            rx.recv().await,
            Some(SourceEvent::Loading {
                read: 5,
                total: 5,
                ..
            })
        ));
        assert!(
            rx.try_recv().is_err(),
            "the last page is the full snapshot's"
        );
        drop(p);
        assert_eq!(sent.len(), 2);
    }
}
