//! The first read of a prefix: the layout it holds (configured, or found from its keys),
//! what to tell the operator about it, and the first elections on screen while it is read.

use tracing::info;

use super::{Link, Session};
use crate::backend::etcd::layout::Mirror;
use crate::backend::etcd::tracker::Tracker;
use crate::backend::etcd::{EtcdBackend, Stop, read_all, send};
use crate::model::SourceEvent;

impl Session<'_> {
    /// The scheme and prefixes to watch: known after the first snapshot; before it, one read
    /// of the configured prefix decides the scheme.
    pub(super) async fn prefixes(&mut self, link: &mut Link) -> Result<FirstRead, Stop> {
        let backend = self.backend;
        if let Some(f) = &self.state.followed {
            return Ok((f.prefixes.clone(), None, None));
        }
        let probe = vec![backend.cfg.prefix.as_bytes().to_vec()];
        let mut preview = early_layout(backend, &probe).map(|layout| {
            let limit = backend.opts.history_limit;
            let tracker = Tracker::new(backend.info.id, backend.info.name.clone(), layout, limit);
            crate::backend::etcd::preview::Preview::new(
                &self.io,
                tracker,
                &mut self.state.previewed,
            )
        });
        let (snap, rev) = read_all(
            backend,
            &link.endpoint,
            &mut link.client,
            &probe,
            None,
            preview.as_mut(),
        )
        .await?;
        let verdict = crate::backend::etcd::detect::detect(&snap);
        // Without a configured scheme each key is read for itself; only Patroni's keys are
        // read as one layout, found from all of them.
        let chosen = backend.cfg.scheme.or(verdict.whole());
        let scheme = chosen.or(verdict.shown());
        let notice = crate::backend::etcd::detect::notice(
            backend,
            link,
            verdict,
            backend.cfg.scheme.is_none(),
        )
        .await;
        let notice = crate::backend::etcd::detect::with_boundary(
            notice,
            backend.cfg.prefix.as_bytes(),
            &snap,
        );
        if let Some(n) = &notice {
            info!(scheme = ?scheme, "{}", n.text());
        }
        let layout = backend.layout(chosen);
        let prefixes = layout.prefixes();
        let tracker = Tracker::new(
            backend.info.id,
            backend.info.name.clone(),
            layout,
            backend.opts.history_limit,
        );
        let mut info = backend.info.clone();
        info.scheme = scheme;
        info.notice = notice;
        self.state.shown = Some((info.clone(), std::time::Instant::now()));
        send(&self.io, SourceEvent::Info(info)).await?;
        if preview.is_none() && prefixes == probe {
            drop(preview);
            self.head_preview(chosen, &snap).await?;
        }
        let read = (prefixes == probe).then_some((snap, rev));
        Ok((prefixes, Some(tracker), read))
    }

    /// A dashboard whose scheme was detected has nothing on screen until every key is derived
    /// (long at a large prefix): its first keys' elections are shown at once.
    async fn head_preview(
        &mut self,
        scheme: Option<crate::model::Scheme>,
        snap: &Mirror,
    ) -> Result<(), super::Closed> {
        let backend = self.backend;
        if backend.opts.all_leases || snap.len() <= crate::backend::etcd::FIRST_PAGE as usize {
            return Ok(());
        }
        let layout = backend.layout(scheme);
        let limit = backend.opts.history_limit;
        let tracker = Tracker::new(backend.info.id, backend.info.name.clone(), layout, limit);
        let mut preview = crate::backend::etcd::preview::Preview::new(
            &self.io,
            tracker,
            &mut self.state.previewed,
        );
        preview
            .head(snap, crate::backend::etcd::FIRST_PAGE as usize)
            .await
    }
}

pub(super) type FirstRead = (Vec<Vec<u8>>, Option<Tracker>, Option<(Mirror, i64)>);

/// The layout a dashboard's first read can be shown page by page with: the scheme is
/// configured (a detected one is known only once every key is read) and its keys are all
/// under the configured prefix. `status` and `watch` draw nothing, so they go without.
fn early_layout(
    backend: &EtcdBackend,
    probe: &[Vec<u8>],
) -> Option<Box<dyn crate::backend::etcd::layout::Layout>> {
    let scheme = backend.cfg.scheme.filter(|_| !backend.opts.all_leases)?;
    let layout = backend.layout(Some(scheme));
    (layout.prefixes() == probe).then_some(layout)
}
