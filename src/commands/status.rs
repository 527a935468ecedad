//! `electop status`: one snapshot of every source into the read model, printed as a table
//! or JSON.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;

use crate::backend::BackendOptions;
use crate::cli::OutputFormat;
use crate::config::SourceConfig;
use crate::output;
use crate::runtime::Sources;
use crate::state::ReadModel;

/// Some sources were read and some not: what was read is printed, the rest named.
pub(super) const EXIT_PARTIAL: u8 = 3;

/// `electop status`: one snapshot of every source, printed. Every source that could not be
/// read is named on stderr with why (and in the output beside the others); exit 0 when all
/// were read, [`EXIT_PARTIAL`] when some were, 1 (and nothing on stdout) when none was.
pub(super) async fn status(
    sources: &[SourceConfig],
    opts: &BackendOptions,
    timeout: Duration,
    format: OutputFormat,
) -> Result<ExitCode> {
    let s = Sources::spawn(sources, opts)?;
    // Printed while the store tasks end (their connections closed, their journals flushed),
    // which is waited for before the exit all the same.
    let (snap, stopping) = crate::runtime::collect_stopping(s, timeout).await;
    for (_, why) in &snap.unread {
        eprintln!("electop: {why}");
    }
    let app = snap.model;
    let printed = match snap.unread.len() == app.sources.len() {
        true => Ok(false),
        false => {
            // An empty or unsure prefix still answers (exit 0), but says why.
            print_notices(&app, format);
            print_status(&app, format).map(|()| true)
        }
    };
    // The process ends now: freeing 100,000 elections would only delay it.
    std::mem::forget(app);
    stopping.await;
    // What the journals' last writes found, as the store tasks ended.
    for w in crate::backend::engine::journal::take_warnings() {
        eprintln!("electop: {w}");
    }
    if !printed? {
        return Ok(ExitCode::FAILURE);
    }
    Ok(match snap.unread.is_empty() {
        true => ExitCode::SUCCESS,
        false => ExitCode::from(EXIT_PARTIAL),
    })
}

/// What reading a source found unsure (its layout, an empty prefix), and beside a table
/// what it leaves out (a ZooKeeper ensemble's members, since when history is known), on
/// stderr: stdout stays the elections alone, for scripts.
pub(super) fn print_notices(app: &ReadModel, format: OutputFormat) {
    for w in crate::backend::engine::journal::take_warnings() {
        eprintln!("electop: {w}");
    }
    for s in &app.sources {
        if let Some(n) = &s.info.notice {
            eprintln!("electop: {}: {}", s.info.short, n.text());
        }
        if let Some(n) = &s.notice {
            eprintln!("electop: {}: {n}", s.info.short);
        }
    }
    if format != OutputFormat::Json {
        for line in output::table::notes(app).lines() {
            eprintln!("electop: {line}");
        }
    }
}

/// `status` as asked: JSON, or the table (cut to the terminal's width only on a terminal).
/// A closed pipe (`| head`) is not an error.
pub(super) fn print_status(app: &ReadModel, format: OutputFormat) -> Result<()> {
    use std::io::IsTerminal;
    let text = match format {
        OutputFormat::Json => {
            // Streamed: at 100,000 elections the text is 80 MB, built and faulted in for
            // nothing when it can go out as it is made.
            // Indented for a person at a terminal, one line for a program (as `gh --json`
            // does): half the bytes to write and to parse at 10,000 elections.
            let pretty = std::io::stdout().is_terminal();
            let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
            let r = if pretty {
                let doc = output::status(app, app.now);
                serde_json::to_writer_pretty(&mut out, &doc).map_err(std::io::Error::from)
            } else {
                output::write_compact(app, app.now, &mut out)
            };
            let r = r
                .and_then(|()| out.write_all(b"\n"))
                .and_then(|()| out.flush());
            return Ok(output::pipe::quiet(r)?);
        }
        OutputFormat::Table | OutputFormat::Wide => {
            let fit = (format == OutputFormat::Table && std::io::stdout().is_terminal())
                .then(|| crossterm::terminal::size().ok())
                .flatten()
                .map(|(w, _)| w as usize);
            output::table::render(app, format == OutputFormat::Wide, fit)
        }
    };
    Ok(output::pipe::print(text.as_bytes())?)
}

/// The heap grown in large steps and never given back, in one arena: `status` builds its
/// snapshot once and exits. At 10,000 elections the default (an arena per thread, grown
/// 128 KiB at a time and trimmed as it is freed) cost 2,500 of its 10,800 page faults and
/// 13% of its CPU (docs/PERFORMANCE.md). Called before the runtime's threads start.
pub(super) fn tune_allocator() {
    /// Each growth of the heap: the address space only, a page costs nothing until touched.
    const GROW_BY: i32 = 64 << 20;
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets the allocator's parameters; called before other threads
    // allocate.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
        libc::mallopt(libc::M_TOP_PAD, GROW_BY);
        libc::mallopt(libc::M_TRIM_THRESHOLD, i32::MAX);
        // Large blocks (the elections' list, a page of keys) from that heap too, not from
        // mappings of their own faulted in 4 KiB at a time (32 MiB: glibc's largest).
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        heap_in_huge_pages();
    }
}

/// Asks for the heap to be backed by 2 MiB pages (transparent huge pages; Debian's kernel
/// grants them to a region advised so): a page fault per 2 MiB written instead of per
/// 4 KiB. At 10,000 elections `status` took 4,900 faults, most in building the elections,
/// and 900 with this (docs/PERFORMANCE.md). A kernel without them ignores the advice.
///
/// # Safety
/// Only before other threads allocate: the heap must grow here, under this thread alone.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
unsafe fn heap_in_huge_pages() {
    // SAFETY: sbrk(0) only reads the break; malloc and free are paired below.
    unsafe {
        let before = libc::sbrk(0) as usize;
        // Blocks until the heap grows (by the M_TOP_PAD above): the region to advise is
        // mapped only then. The heap left at startup is far smaller than 64 of them.
        let mut held = Vec::with_capacity(64);
        let mut after = before;
        while after == before && held.len() < 64 {
            held.push(libc::malloc(256 << 10));
            after = libc::sbrk(0) as usize;
        }
        if let Some((start, len)) = whole_huge_pages(before, after) {
            libc::madvise(start as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
        }
        for p in held {
            libc::free(p);
        }
    }
}

/// A transparent huge page's size on x86-64 and arm64 (4 KiB base pages).
const HUGE: usize = 2 << 20;

/// The whole huge pages within the heap grown from `before` to `after` (its start and
/// length), if any: advice on a part of one would not make it huge.
fn whole_huge_pages(before: usize, after: usize) -> Option<(usize, usize)> {
    let (start, end) = (before.next_multiple_of(HUGE), after & !(HUGE - 1));
    (end > start).then(|| (start, end - start))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_whole_huge_pages_of_the_grown_heap_are_advised() {
        let mib = 1 << 20;
        // 64 MiB grown from an unaligned break: the first and last partial pages left out.
        let before = 0x5555_0000_0000 + 300 * 1024;
        let after = before + 64 * mib;
        let (start, len) = whole_huge_pages(before, after).expect("whole pages");
        assert_eq!(start % HUGE, 0);
        assert!(start >= before && start + len <= after);
        assert_eq!(len, 62 * mib);
        // Aligned at both ends: all of it.
        assert_eq!(
            whole_huge_pages(4 * HUGE, 8 * HUGE),
            Some((4 * HUGE, 4 * HUGE))
        );
        // Less than one whole page, or no growth: nothing.
        assert_eq!(whole_huge_pages(HUGE + 1, 3 * HUGE - 1), None);
        assert_eq!(whole_huge_pages(before, before), None);
    }
}
