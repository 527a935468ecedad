//! Every directory a test makes (a server's data and log, an electop HOME): removed when the
//! test passes, kept when it fails, with its path written to the run's list of kept logs
//! (`$ELECTOP_TEST_KEPT`, set by `scripts/test.sh`), so a failing run can say where each
//! failed test's logs are. They live under `TMPDIR`, which the script makes new for each run.

use std::io::Write;
use std::path::Path;

/// A directory removed when dropped, unless its thread is panicking (a failed assertion):
/// then it stays, and is named in the run's list under the test that made it.
pub struct Scratch {
    dir: tempfile::TempDir,
}

/// A new empty directory, its name starting `.tmp`.
pub fn tempdir() -> Scratch {
    with_prefix(".tmp")
}

/// A new empty directory, its name starting with `prefix`.
pub fn with_prefix(prefix: &str) -> Scratch {
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .unwrap_or_else(|e| {
            panic!(
                "create a temp dir {prefix}* in {:?}: {e}",
                std::env::temp_dir()
            )
        });
    Scratch { dir }
}

impl Scratch {
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        self.path()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.dir.disable_cleanup(true);
            record_kept(self.dir.path());
        }
    }
}

/// Appends "`crate::test` path" to the run's list. libtest names each test's thread after
/// the test; a directory made on another thread is listed under the test binary alone.
fn record_kept(path: &Path) {
    let Some(list) = std::env::var_os("ELECTOP_TEST_KEPT") else {
        eprintln!("kept for a failed test: {}", path.display());
        return;
    };
    let thread = std::thread::current();
    let test = match thread.name() {
        Some(name) if name != "main" => format!("{}::{name}", env!("CARGO_CRATE_NAME")),
        _ => env!("CARGO_CRATE_NAME").to_string(),
    };
    let line = format!("{test} {}\n", path.display());
    let appended = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&list)
        .and_then(|mut f| f.write_all(line.as_bytes()));
    if appended.is_err() {
        eprintln!("kept for a failed test: {}", path.display());
    }
}
