//! How a long-running electop (the dashboard, `watch`, `serve`) keeps its memory. glibc's
//! allocator, left as it is, gives each thread an arena of its own (up to eight a core),
//! raises the size from which a block gets pages of its own to the largest block freed, and
//! keeps what a source's first read freed (every row, znode or key read, the elections built
//! from them and their copies on the way) for reuse that never comes: at 10,000 ZooKeeper
//! elections the dashboard held 107 MiB under churn, of which 72 MiB were live.
//!
//! So: few arenas, set before the runtime's threads start ([`long_running`]; `serve` also
//! puts big blocks on pages of their own, [`serving`]); and once a source's first read is
//! in and shown, what it freed is given back to the system ([`after`]). Figures in
//! docs/PERFORMANCE.md.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::model::SourceEvent;

/// Arenas for the runtime's threads (each keeps what was freed in it for its own reuse).
const ARENAS: i32 = 2;
/// Allocations from this size on get pages of their own, given back when freed.
const OWN_PAGES_FROM: i32 = 256 * 1024;
/// How long after a source is synced its first read's garbage is given back: by then the
/// read model has its elections and the dashboard its rows (both made from that read).
const TRIM_AFTER: Duration = Duration::from_secs(2);

/// [`long_running`] was called: this process trims after first reads.
static LONG_RUNNING: AtomicBool = AtomicBool::new(false);
/// A trim is scheduled: sources synced together share it.
static TRIM_DUE: AtomicBool = AtomicBool::new(false);

/// Sets how glibc keeps memory for a long-running command, before its threads start.
pub(crate) fn long_running() {
    LONG_RUNNING.store(true, Ordering::Relaxed);
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets the allocator's parameters; called before other threads
    // allocate.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, ARENAS);
    }
}

/// [`long_running`], and big blocks on pages of their own: `serve`'s scrape buffers
/// (megabytes at 10,000 elections, freed on whichever thread sent them) stayed resident
/// after the first scrape otherwise. Not the dashboard's: its rows are sorted into a new
/// list of that size at each change, and pages of their own cost it a page fault per 4 KiB
/// each time (Redis at 100 changes/s: 3.4 -> 6.5% of a core).
pub(crate) fn serving() {
    long_running();
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: as above.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, OWN_PAGES_FROM);
    }
}

/// Called with each source event a long-running command takes in: a source synced (its
/// first read, or a read after a reconnect, is in) schedules one trim of the heap, off the
/// caller's task. Must be called within the runtime.
pub(crate) fn after(ev: &SourceEvent) {
    if !matches!(ev, SourceEvent::Synced { .. }) || !LONG_RUNNING.load(Ordering::Relaxed) {
        return;
    }
    if TRIM_DUE.swap(true, Ordering::AcqRel) {
        return;
    }
    tokio::spawn(async {
        tokio::time::sleep(TRIM_AFTER).await;
        TRIM_DUE.store(false, Ordering::Release);
        // A few milliseconds at 100 MiB: the heap's free pages are handed back one by one.
        let _ = tokio::task::spawn_blocking(trim).await;
    });
}

/// Gives the memory the allocator holds free back to the system (`serve` also does so on
/// a timer: each scrape's buffers are freed on whichever thread sent them).
pub(crate) fn trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes the allocator's own locks; safe from any thread.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn sources_synced_together_share_one_trim_after_a_pause() {
        let synced = |source| SourceEvent::Synced { source };
        // Not a long-running command (`status`): nothing is scheduled.
        after(&synced(0));
        assert!(!TRIM_DUE.load(Ordering::Acquire));
        LONG_RUNNING.store(true, Ordering::Relaxed);
        after(&SourceEvent::Notice {
            source: 0,
            text: String::new(),
        });
        assert!(!TRIM_DUE.load(Ordering::Acquire), "only a sync schedules");
        after(&synced(0));
        after(&synced(1));
        assert!(TRIM_DUE.load(Ordering::Acquire), "one trim due for both");
        tokio::time::sleep(TRIM_AFTER + Duration::from_millis(1)).await;
        tokio::task::yield_now().await;
        assert!(
            !TRIM_DUE.load(Ordering::Acquire),
            "done: the next sync schedules anew"
        );
    }
}
