//! The journals of an earlier release (a file of JSON lines per source, format v1 or v2:
//! `<data dir>/history/*.jsonl`, ZooKeeper's `zookeeper-history-*.jsonl` beside the audit
//! log) imported into the database once, at its first opening after the upgrade, each
//! under the key its file name gives, and left in place.

use std::path::Path;

use super::db::{self, Db};

/// Imports every earlier journal under `dir` (the data directory) not imported yet; what
/// was wrong with them, for a person.
pub(super) fn journals(db: &mut Db, dir: &Path) -> Vec<String> {
    let mut said = Vec::new();
    let found = [dir.join("history"), dir.to_path_buf()]
        .into_iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flatten()
        .filter_map(Result::ok)
        .map(|f| f.path());
    for path in found {
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let in_history = path.parent().is_some_and(|p| p.ends_with("history"));
        let journal = name.strip_suffix(".jsonl").filter(|n| {
            // The audit log beside ZooKeeper's journals is no journal.
            in_history || n.starts_with("zookeeper-history-")
        });
        let Some(journal) = journal else { continue };
        match one(db, &path, journal) {
            Ok(Some(skipped)) => said.push(skipped),
            Ok(None) => {}
            Err(e) => said.push(format!("cannot import {}: {e}", path.display())),
        }
    }
    said
}

/// Imports the file at `path`; what it skipped (lines that are no record of a version this
/// electop reads: junk, another program's, a later format, a torn last line), if any.
fn one(
    db: &mut Db,
    path: &Path,
    journal: &str,
) -> Result<Option<String>, Box<dyn std::error::Error>> {
    let file = path.display().to_string();
    // Looked up first: a file imported before is not read again at every start.
    if db::imported(db, &file)? {
        return Ok(None);
    }
    let text = std::fs::read(path)?;
    let text = String::from_utf8_lossy(&text);
    let entries: Vec<_> = text.lines().filter_map(super::decode).collect();
    let skipped = text.lines().count() - entries.len();
    if !db::import(db, &file, journal, &entries)? {
        return Ok(None);
    }
    tracing::info!(%file, records = entries.len(), skipped, "imported an earlier history journal");
    Ok((skipped > 0).then(|| {
        format!(
            "{file}: {skipped} line(s) that are not electop history records (junk, another \
             program's, a later format, a torn last line) were skipped; the {} record(s) \
             around them were imported",
            entries.len()
        )
    }))
}
