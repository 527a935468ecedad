//! When electop saw each etcd change live, kept on disk per cluster, so a dashboard started
//! later shows times, not bare revisions, for everything some electop saw before. etcd keeps
//! no time for a revision; this file does. Lines are `{"rev":N,"at_ms":T}`, appended whole
//! (several electops may share the file); it is read from its tail only and trimmed when it
//! outgrows its bound.

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// The most of the file that is read, and what it is trimmed back to.
pub(super) const MAX_BYTES: u64 = 4 << 20;

#[derive(Serialize, Deserialize)]
struct Line {
    rev: i64,
    at_ms: u64,
}

/// `<data dir>/history/etcd-<cluster id>.jsonl`.
pub(super) fn path(cluster_id: u64) -> Option<PathBuf> {
    let dirs = directories::ProjectDirs::from("", "", "electop")?;
    Some(
        dirs.data_dir()
            .join("history")
            .join(format!("etcd-{cluster_id:x}.jsonl")),
    )
}

/// The times recorded for revisions, from the last `max` bytes of the file at most.
pub(super) fn load(path: &Path, max: u64) -> HashMap<i64, SystemTime> {
    let mut out = HashMap::new();
    let Ok(mut f) = std::fs::File::open(path) else {
        return out;
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(max);
    let mut buf = Vec::new();
    if f.seek(SeekFrom::Start(start)).is_err() || f.read_to_end(&mut buf).is_err() {
        return out;
    }
    let text = String::from_utf8_lossy(&buf);
    // Starting mid-file, the first line is a fragment.
    let lines = text.lines().skip(usize::from(start > 0));
    for l in lines.filter_map(|l| serde_json::from_str::<Line>(l).ok()) {
        out.insert(l.rev, UNIX_EPOCH + Duration::from_millis(l.at_ms));
    }
    out
}

/// One cluster's file, held open between appends. Opening it (and making its directory)
/// for each watch message cost five system calls a message: 9% of serve's CPU at 1,000
/// changes/s. Another electop's trim replaces the file, so each append first looks at what
/// the path is now (one `stat`, which also gives the size the trim is decided on) and opens
/// it again when it is not the file held.
pub(super) struct TimesFile {
    path: PathBuf,
    /// The file held, and its inode.
    open: std::sync::Mutex<Option<(std::fs::File, u64)>>,
}

impl TimesFile {
    pub(super) fn new(path: PathBuf) -> TimesFile {
        TimesFile {
            path,
            open: std::sync::Mutex::new(None),
        }
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// Appends times seen live, in one write so lines from several electops never
    /// interleave; trims the file back to `max` once it is twice that.
    pub(super) fn append(&self, seen: &[(i64, SystemTime)], max: u64) -> std::io::Result<()> {
        use std::os::unix::fs::MetadataExt;
        if seen.is_empty() {
            return Ok(());
        }
        let mut text = String::new();
        for (rev, at) in seen {
            let at_ms = at
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default()
                .as_millis() as u64;
            text.push_str(&serde_json::to_string(&Line { rev: *rev, at_ms })?);
            text.push('\n');
        }
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let now = std::fs::metadata(&self.path).ok();
        let size = now.as_ref().map_or(0, |m| m.len());
        let held = open.as_ref().map(|(_, ino)| *ino);
        if held.is_none() || held != now.as_ref().map(|m| m.ino()) {
            if let Some(dir) = self.path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            let f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.path)?;
            let ino = f.metadata()?.ino();
            *open = Some((f, ino));
        }
        let (f, _) = open.as_mut().expect("opened above");
        f.write_all(text.as_bytes())?;
        if size + text.len() as u64 > 2 * max {
            trim(&self.path, max)?;
            *open = None;
        }
        Ok(())
    }
}

/// Keeps the newest `max` bytes (whole lines), replacing the file atomically.
fn trim(path: &Path, max: u64) -> std::io::Result<()> {
    let mut f = std::fs::File::open(path)?;
    let len = f.metadata()?.len();
    f.seek(SeekFrom::Start(len.saturating_sub(max)))?;
    let mut buf = Vec::new();
    f.read_to_end(&mut buf)?;
    let cut = buf.iter().position(|b| *b == b'\n').map_or(0, |i| i + 1);
    let tmp = path.with_extension("trim");
    std::fs::write(&tmp, &buf[cut..])?;
    std::fs::rename(tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_load_back_and_the_file_stays_bounded() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("h").join("etcd-1.jsonl");
        let t = |ms| UNIX_EPOCH + Duration::from_millis(ms);
        let f = TimesFile::new(p.clone());
        f.append(&[(5, t(1_000)), (6, t(2_000))], 1 << 20)
            .expect("append");
        let got = load(&p, 1 << 20);
        assert_eq!(got.get(&5), Some(&t(1_000)));
        assert_eq!(got.len(), 2);
        for i in 0..200 {
            f.append(&[(100 + i, t(i as u64))], 512).expect("append");
        }
        let size = std::fs::metadata(&p).expect("meta").len();
        assert!(size <= 2 * 512, "trimmed: {size} bytes");
        let got = load(&p, 512);
        assert!(got.contains_key(&299), "the newest kept");
        assert!(!got.contains_key(&5), "the oldest dropped");
        assert!(got.len() < 40, "only the tail is read: {}", got.len());
    }

    /// Two electops on one cluster: each holds the file open, and one's trim (a new file in
    /// its place) must not make the other's lines go to the old one.
    #[test]
    fn an_append_after_another_electops_trim_goes_to_the_new_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("etcd-2.jsonl");
        let t = |ms| UNIX_EPOCH + Duration::from_millis(ms);
        let (a, b) = (TimesFile::new(p.clone()), TimesFile::new(p.clone()));
        a.append(&[(1, t(1))], 1 << 20).expect("a");
        b.append(&[(2, t(2))], 1 << 20).expect("b");
        // `a` trims: the file is replaced.
        let line = |i: i64| format!("{{\"rev\":{i},\"at_ms\":{i}}}\n").len() as u64;
        a.append(&[(3, t(3))], line(3) + 3).expect("a trims");
        b.append(&[(4, t(4))], 1 << 20).expect("b after the trim");
        let got = load(&p, 1 << 20);
        assert!(
            got.contains_key(&4),
            "b's line is in the file now there: {got:?}"
        );
        assert!(got.contains_key(&3), "{got:?}");
        assert!(!got.contains_key(&1), "trimmed: {got:?}");
    }
}
