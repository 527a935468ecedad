//! A rewrite of the journal prepared off the writer's lock. Reading a file back at its size
//! bound and compacting it takes a good part of a second; done by the flush that found it
//! due, under the lock, it held up every task recording into the journal, and on the one
//! thread the dashboard runs on, the dashboard itself. [`super::Batched`] runs [`prepare`]
//! on a blocking thread instead: the file's first `upto` bytes (written before it started)
//! read back, compacted, written to `<file>.rewrite` and synced, its index records made,
//! while this run goes on appending to the file. [`super::Journal::adopt`] then, under the
//! lock, copies the lines appended since `upto` after them and renames the new file over
//! the old: a rewrite interrupted before leaves the old file whole.

use std::fs::File;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::{Bound, Entry, beside, compact, encode, index, read};

/// What a rewrite starts from: the file, its bound, and how much of it to read back.
#[derive(Clone, Debug)]
pub(crate) struct Job {
    pub(super) path: PathBuf,
    pub(super) bound: Bound,
    pub(super) upto: u64,
}

/// A rewrite ready to be put in place.
pub(crate) struct Prepared {
    pub(super) tmp: PathBuf,
    pub(super) upto: u64,
    /// The compacted lines' length and their index records.
    pub(super) bytes: u64,
    pub(super) records: Vec<u8>,
    pub(super) lines: usize,
    pub(super) oldest: Option<SystemTime>,
}

/// The file's first `upto` bytes compacted into `<file>.rewrite`, synced.
pub(crate) fn prepare(job: &Job) -> std::io::Result<Prepared> {
    let mut text = vec![0u8; job.upto as usize];
    File::open(&job.path)?.read_exact(&mut text)?;
    let kept = compact(read::parse(&text).entries, job.bound);
    drop(text);
    let text: String = kept.iter().map(|e| encode(e) + "\n").collect();
    let tmp = temp_path(&job.path);
    let mut f = File::create(&tmp)?;
    f.write_all(text.as_bytes())?;
    f.sync_all()?;
    Ok(Prepared {
        tmp,
        upto: job.upto,
        bytes: text.len() as u64,
        records: index::records_of(text.as_bytes(), 0),
        lines: kept.len(),
        oldest: kept.iter().filter_map(Entry::at).min(),
    })
}

/// Not the inline rewrite's `<file>.tmp`: a clean stop may rewrite in place while this one
/// is still being prepared.
pub(super) fn temp_path(path: &Path) -> PathBuf {
    beside(path, ".rewrite")
}
