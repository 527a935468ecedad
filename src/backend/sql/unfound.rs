//! `--sql URL` alone where the database did not answer when electop started: its source is
//! down like any other until it answers, then its catalog is looked at and the first known
//! table found is read, as it would have been at start. One database down so hides none of
//! the others (the sources are chosen before any is read).

use std::time::Duration;

use super::discover::tables_in;
use super::{SqlBackend, dial::open, follow};
use crate::backend::{BackendIo, Backoff};
use crate::model::{ConnState, SourceEvent, SourceNotice};

pub(super) async fn run(b: SqlBackend, io: BackendIo) {
    let Some(cfg) = b.unresolved.clone() else {
        return follow::run(b, io).await;
    };
    let mut backoff = Backoff::new(Duration::from_millis(500), Duration::from_secs(10));
    let source = b.info.id;
    loop {
        let state = ConnState::Connecting;
        if io
            .events
            .send(SourceEvent::Conn { source, state })
            .await
            .is_err()
        {
            return;
        }
        let (error, lasting) = match open(&b.settings, b.opts.request_timeout).await {
            Err(e) => {
                let lasting = e.kind().is_lasting() || (b.opts.one_shot && e.ends_one_shot());
                (e.to_string(), lasting)
            }
            Ok(pool) => {
                let found = tables_in(&b.settings, &pool, cfg.table.as_deref()).await;
                pool.close().await;
                match found.and_then(|tables| resolved(&b, &cfg, &tables)) {
                    Ok(next) => {
                        if io
                            .events
                            .send(SourceEvent::Info(next.info.clone()))
                            .await
                            .is_ok()
                        {
                            follow::run(next, io).await;
                        }
                        return;
                    }
                    // No known table (or none usable): what it says is not waited out.
                    Err(e) => (e, true),
                }
            }
        };
        let info = &b.info;
        if !crate::backend::down_and_wait(&io, info, error, lasting, &mut backoff).await {
            return;
        }
    }
}

/// The backend reading the first of `tables`, found in the catalog, named as `b` was (its
/// short name), saying what was found and which others a restart would read too.
fn resolved(
    b: &SqlBackend,
    cfg: &crate::config::SqlSource,
    tables: &[crate::presets::KnownTable],
) -> Result<SqlBackend, String> {
    let Some(k) = tables.first() else {
        return Err("no election table found".to_string());
    };
    let src = cfg.found_table(k.scheme, k.preset, &k.table)?;
    let mut text = format!("found {} ({}) in {}", k.table, k.what(), src.url.redacted());
    if tables.len() > 1 {
        let others: Vec<&str> = tables[1..].iter().map(|k| k.table.as_str()).collect();
        text.push_str(&format!(
            "; it holds {} too, read when electop starts with it answering",
            others.join(", ")
        ));
    }
    let mut next = SqlBackend::new(b.info.id, b.info.short.clone(), &src, b.opts.clone());
    next.info.notice = Some(SourceNotice::Found(text));
    Ok(next)
}
