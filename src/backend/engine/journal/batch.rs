//! A journal written in batches, at most one write every [`FLUSH_AFTER`]: a record after a
//! quiet spell is written at once (a change is on disk before another electop started just
//! after it reads the file), and the records that come within [`FLUSH_AFTER`] of a write go
//! out together, in one write, when that time is up (a timer task of the runtime) or when
//! the journal is dropped (a clean stop). At 1,000 changes a second that is about ten writes
//! a second instead of a thousand, and a killed electop loses at most what it saw in its
//! last [`FLUSH_AFTER`]. A rewrite the file's bound calls for is prepared on a blocking
//! thread ([`rewrite`]), not under the lock every recording task waits on.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use super::{Entry, Journal, rewrite};

/// The longest a record waits in memory before it is written.
pub(crate) const FLUSH_AFTER: Duration = Duration::from_millis(100);

struct Inner {
    journal: Journal,
    /// A flush is due: a timer task is sleeping for it.
    timer: bool,
    /// When the last write was (a record within [`FLUSH_AFTER`] of it waits its turn).
    last_write: Option<tokio::time::Instant>,
    /// What a timed flush could not write, told at the next append.
    failed: Option<std::io::Error>,
}

/// One source's journal shared by the tasks that record into it, flushed on a timer.
pub(crate) struct Batched {
    inner: Arc<Mutex<Inner>>,
    path: PathBuf,
}

/// The journals this process has open, by path: what sees a source's events beside its
/// store's task (`engine::marks`) appends its marks to the journal that task opened.
static OPEN: Mutex<Vec<(PathBuf, Weak<Mutex<Inner>>)>> = Mutex::new(Vec::new());

impl Batched {
    pub(crate) fn new(journal: Journal) -> Batched {
        let path = journal.path().to_path_buf();
        let inner = Inner {
            journal,
            timer: false,
            last_write: None,
            failed: None,
        };
        let b = Batched {
            inner: Arc::new(Mutex::new(inner)),
            path,
        };
        let mut open = OPEN.lock().unwrap_or_else(|p| p.into_inner());
        open.retain(|(_, w)| w.strong_count() > 0);
        open.push((b.path.clone(), Arc::downgrade(&b.inner)));
        b
    }

    /// The journal at `path` this process has open (the newest), if any.
    pub(crate) fn find(path: &Path) -> Option<Batched> {
        let open = OPEN.lock().unwrap_or_else(|p| p.into_inner());
        let (path, inner) = open.iter().rev().find(|(p, _)| p == path)?;
        Some(Batched {
            inner: inner.upgrade()?,
            path: path.clone(),
        })
    }

    /// Whether this run is the one recording the source.
    pub(crate) fn writing(&self) -> bool {
        self.lock().journal.writing()
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// See [`Journal::take_turn`].
    pub(crate) fn take_turn(&self) -> std::io::Result<bool> {
        self.lock().journal.take_turn()
    }

    /// See [`Journal::take_read_back`].
    pub(crate) fn take_read_back(&self) -> Option<Vec<Entry>> {
        self.lock().journal.take_read_back()
    }

    /// See [`Journal::preface`]; written within [`FLUSH_AFTER`] if this run writes.
    pub(crate) fn preface(&self, e: Entry) -> std::io::Result<()> {
        let mut g = self.lock();
        g.journal.preface(e)?;
        self.schedule(&mut g)
    }

    /// Queues `entries` if this run records the source (taking the turn if it is free),
    /// to be written within [`FLUSH_AFTER`]; false when another electop records it. An
    /// error is this append's, or an earlier timed flush's.
    pub(crate) fn append(&self, entries: &[Entry]) -> std::io::Result<bool> {
        let mut g = self.lock();
        let writing = g.journal.append(entries)?;
        self.schedule(&mut g)?;
        match g.failed.take() {
            Some(e) => Err(e),
            None => Ok(writing),
        }
    }

    /// Writes of appended records so far.
    #[cfg(test)]
    pub(crate) fn writes(&self) -> u64 {
        self.lock().journal.writes()
    }

    /// Writes the records queued at once when the last write is [`FLUSH_AFTER`] old, else
    /// starts the timer of that write's turn, unless one runs already. Outside a runtime (a
    /// test, a tool) there is no timer: the records are written at once.
    fn schedule(&self, g: &mut Inner) -> std::io::Result<()> {
        if g.timer || !g.journal.pending() {
            return Ok(());
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return g.journal.flush();
        };
        let now = tokio::time::Instant::now();
        let turn = g.last_write.map(|w| w + FLUSH_AFTER);
        let Some(turn) = turn.filter(|t| *t > now) else {
            g.last_write = Some(now);
            g.journal.write_queued()?;
            start_rewrite(&self.inner, g);
            return Ok(());
        };
        g.timer = true;
        // Weak: the timer does not keep a dropped journal alive (its drop writes the rest).
        let weak = Arc::downgrade(&self.inner);
        rt.spawn(flush_later(weak, turn));
        Ok(())
    }
}

/// Sleeps until `turn` then writes what the journal queued meanwhile.
async fn flush_later(inner: Weak<Mutex<Inner>>, turn: tokio::time::Instant) {
    tokio::time::sleep_until(turn).await;
    let Some(inner) = inner.upgrade() else {
        return;
    };
    let mut g = inner.lock().unwrap_or_else(|p| p.into_inner());
    g.timer = false;
    g.last_write = Some(tokio::time::Instant::now());
    if let Err(e) = g.journal.write_queued() {
        g.failed = Some(e);
    }
    start_rewrite(&inner, &mut g);
}

/// A rewrite due, prepared on a blocking thread ([`rewrite::prepare`]) and put in place
/// under the lock when ready; meanwhile the records go on being appended.
fn start_rewrite(inner: &Arc<Mutex<Inner>>, g: &mut Inner) {
    let Some(job) = g.journal.rewrite_due() else {
        return;
    };
    let weak = Arc::downgrade(inner);
    tokio::spawn(async move {
        let j = job.clone();
        let prepared = tokio::task::spawn_blocking(move || rewrite::prepare(&j))
            .await
            .unwrap_or_else(|e| Err(std::io::Error::other(format!("the rewrite failed: {e}"))));
        let Some(inner) = weak.upgrade() else {
            // The journal was dropped (its stop wrote the rest): nothing to put in place.
            let _ = std::fs::remove_file(rewrite::temp_path(&job.path));
            return;
        };
        let mut g = inner.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(e) = g.journal.adopt(prepared) {
            g.failed = Some(e);
        }
    });
}

#[cfg(test)]
mod tests {
    use std::time::UNIX_EPOCH;

    use super::super::{Bound, Keep, read};
    use super::*;

    fn seen(revision: i64) -> Entry {
        Entry::Seen {
            revision,
            at: UNIX_EPOCH + Duration::from_secs(1_700_000_000),
            cause: None,
        }
    }

    fn journal(dir: &tempfile::TempDir) -> Batched {
        let bound = Bound {
            per_election: 10,
            seen: 10_000,
            keep: Keep::UNBOUNDED,
        };
        Batched::new(Journal::new(dir.path().join("h.jsonl"), bound))
    }

    fn on_disk(b: &Batched) -> usize {
        read(b.path()).expect("read").0.len()
    }

    /// A record after quiet is written at once; the records within 100 ms of that write go
    /// out in one write, when the 100 ms are up; a record after quiet again is written at
    /// once.
    #[tokio::test(start_paused = true)]
    async fn records_within_the_window_are_one_write() {
        let dir = tempfile::tempdir().expect("tempdir");
        let j = journal(&dir);
        assert!(j.take_turn().expect("turn"));
        let start = tokio::time::Instant::now();
        for r in 0..10 {
            assert!(j.append(&[seen(r)]).expect("append"));
            tokio::time::sleep(Duration::from_millis(9)).await;
        }
        assert!(start.elapsed() < FLUSH_AFTER);
        assert_eq!(
            (j.writes(), on_disk(&j)),
            (1, 1),
            "the first at once, no more yet"
        );
        tokio::time::sleep_until(start + FLUSH_AFTER + Duration::from_millis(1)).await;
        assert_eq!((j.writes(), on_disk(&j)), (2, 10), "one write for the nine");
        tokio::time::sleep(FLUSH_AFTER + Duration::from_millis(1)).await;
        j.append(&[seen(10)]).expect("append");
        assert_eq!((j.writes(), on_disk(&j)), (3, 11), "after quiet, at once");
    }

    /// A record just after a write, then quiet, is written when 100 ms have passed since
    /// that write, not at the next record.
    #[tokio::test(start_paused = true)]
    async fn a_record_then_quiet_is_written_within_the_window() {
        let dir = tempfile::tempdir().expect("tempdir");
        let j = journal(&dir);
        j.append(&[seen(1)]).expect("append");
        let start = tokio::time::Instant::now();
        assert_eq!(on_disk(&j), 1, "the first at once");
        tokio::time::sleep(Duration::from_millis(10)).await;
        j.append(&[seen(2)]).expect("append");
        tokio::time::sleep_until(start + FLUSH_AFTER - Duration::from_millis(1)).await;
        assert_eq!(on_disk(&j), 1, "still within the window");
        tokio::time::sleep(Duration::from_millis(2)).await;
        assert_eq!(on_disk(&j), 2, "written by {:?}", start.elapsed());
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert_eq!(j.writes(), 2, "no empty writes while quiet");
    }

    /// A clean stop (the journal dropped) writes what is queued at once; the timer of a
    /// dropped journal does nothing.
    #[tokio::test(start_paused = true)]
    async fn dropping_the_journal_writes_the_queue() {
        let dir = tempfile::tempdir().expect("tempdir");
        let j = journal(&dir);
        j.append(&[seen(1)]).expect("append");
        j.append(&[seen(2), seen(3)]).expect("append");
        let path = j.path().to_path_buf();
        assert_eq!(read(&path).expect("read").0.len(), 1, "two queued");
        drop(j);
        assert_eq!(read(&path).expect("read").0.len(), 3);
        tokio::time::sleep(FLUSH_AFTER * 2).await;
        assert_eq!(read(&path).expect("read").0.len(), 3);
    }

    /// Over its bound, the file is rewritten off the lock: appends go on while the rewrite
    /// is prepared, and what came meanwhile follows the kept records in the new file.
    #[tokio::test]
    async fn a_rewrite_is_prepared_off_the_lock_and_keeps_what_came_meanwhile() {
        let dir = tempfile::tempdir().expect("tempdir");
        let bound = Bound {
            per_election: 10,
            seen: 100,
            keep: Keep::UNBOUNDED,
        };
        let j = Batched::new(Journal::new(dir.path().join("h.jsonl"), bound));
        assert!(j.take_turn().expect("turn"));
        let first: Vec<Entry> = (0..300).map(seen).collect();
        j.append(&first).expect("append");
        assert_eq!(
            on_disk(&j),
            300,
            "written at once, the rewrite not done yet"
        );
        // Appended while the rewrite is prepared (its task has not run: this thread is
        // the runtime's, and it has not yielded).
        j.append(&[seen(1000), seen(1001)]).expect("append");
        let revisions = |b: &Batched| -> Vec<i64> {
            let (entries, _) = read(b.path()).expect("read");
            entries
                .iter()
                .filter_map(|e| match e {
                    Entry::Seen { revision, .. } => Some(*revision),
                    _ => None,
                })
                .collect()
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while revisions(&j).len() != 102 {
            assert!(std::time::Instant::now() < deadline, "{:?}", revisions(&j));
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let mut kept: Vec<i64> = (200..300).collect();
        kept.extend([1000, 1001]);
        assert_eq!(
            revisions(&j),
            kept,
            "the newest 100, then what came meanwhile"
        );
        assert!(!super::super::rewrite::temp_path(j.path()).exists());
        // The journal goes on in the new file.
        j.append(&[seen(2000)]).expect("append");
        drop(j);
        let (entries, clean) = read(&dir.path().join("h.jsonl")).expect("read");
        assert!(clean);
        assert_eq!(entries.last(), Some(&seen(2000)));
    }
}
