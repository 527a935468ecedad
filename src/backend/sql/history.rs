//! Leader changes seen while polling, kept on disk (JSON lines in the platform data dir) so a
//! restarted dashboard still shows them. One writer per source at a time: a second electop
//! on the same source reads the file but leaves the appending to the first.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use tracing::warn;

use super::tracker::Recorded;
use crate::model::{Cause, HistoryEntry, time};

#[derive(Serialize, Deserialize)]
struct Line {
    election: String,
    at_ms: Option<u64>,
    /// Readable copy of `at_ms`.
    #[serde(default)]
    at: Option<String>,
    from: Option<String>,
    to: Option<String>,
    cause: Cause,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    by: Option<String>,
}

/// `<data dir>/history/<source>.jsonl`, the source name made file-safe.
pub(crate) fn default_path(source_name: &str) -> Option<PathBuf> {
    let dirs = directories::ProjectDirs::from("", "", "electop")?;
    let safe: String = source_name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    Some(
        dirs.data_dir()
            .join("history")
            .join(format!("{safe}.jsonl")),
    )
}

/// Everything recorded so far, oldest first; unreadable lines are skipped (and logged).
pub(crate) fn load(path: &Path) -> Vec<Recorded> {
    let Ok(file) = File::open(path) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (n, line) in BufReader::new(file).lines().enumerate() {
        let Ok(line) = line else { break };
        match serde_json::from_str::<Line>(&line) {
            Ok(l) => out.push((
                l.election,
                HistoryEntry {
                    at: l.at_ms.map(|ms| UNIX_EPOCH + Duration::from_millis(ms)),
                    revision: None,
                    from: l.from,
                    to: l.to,
                    cause: l.cause,
                    by: l.by,
                },
            )),
            Err(e) => {
                warn!(path = %path.display(), line = n + 1, %e, "skipping unreadable history line")
            }
        }
    }
    out
}

pub(crate) struct Writer {
    file: File,
    _lock: File,
}

impl Writer {
    /// Opens `path` for appending, unless another electop holds it.
    pub(crate) fn open(path: &Path) -> std::io::Result<Option<Writer>> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path.with_extension("lock"))?;
        if lock.try_lock().is_err() {
            return Ok(None);
        }
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Some(Writer { file, _lock: lock }))
    }

    pub(crate) fn append(&mut self, recorded: &[Recorded]) -> std::io::Result<()> {
        let mut buf = Vec::new();
        for (election, h) in recorded {
            let line = Line {
                election: election.clone(),
                at_ms: h
                    .at
                    .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                    .map(|d| d.as_millis() as u64),
                at: h.at.map(time::rfc3339),
                from: h.from.clone(),
                to: h.to.clone(),
                cause: h.cause,
                by: h.by.clone(),
            };
            serde_json::to_writer(&mut buf, &line)?;
            buf.push(b'\n');
        }
        self.file.write_all(&buf)?;
        self.file.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appended_history_loads_back_and_one_writer_at_a_time() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("h").join("src.jsonl");
        let at = UNIX_EPOCH + Duration::from_millis(1_795_000_000_123);
        let entry = HistoryEntry {
            at: Some(at),
            revision: None,
            from: Some("a".into()),
            to: Some("b".into()),
            cause: Cause::TakenOver,
            by: None,
        };
        let mut w = Writer::open(&path).expect("open").expect("first writer");
        assert!(
            Writer::open(&path).expect("open").is_none(),
            "second writer waits its turn"
        );
        w.append(&[("jobs".into(), entry.clone())]).expect("append");
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(b"garbage\n"))
            .expect("garbage");
        assert_eq!(load(&path), vec![("jobs".to_string(), entry)]);
        drop(w);
        assert!(Writer::open(&path).expect("open").is_some(), "free again");
    }

    #[test]
    fn source_names_become_safe_file_names() {
        let p = default_path("postgres tester@127.0.0.1:5432/electop leaderlock").expect("dirs");
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        assert_eq!(
            name,
            "postgres_tester_127.0.0.1_5432_electop_leaderlock.jsonl"
        );
    }
}
