//! `--sql URL` alone where the database did not answer when electop started: its source is
//! down like any other until it answers (the one engine's loop, `follow`), then its catalog
//! is looked at and the first known table found is read, as it would have been at start. One
//! database down so hides none of the others (the sources are chosen before any is read).

use super::SqlBackend;
use crate::model::SourceNotice;

/// The backend reading the first of `tables`, found in the catalog, named as `b` was (its
/// short name), saying what was found and which others a restart would read too.
pub(super) fn resolved(
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
