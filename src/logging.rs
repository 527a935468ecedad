//! Tracing goes to a file, never to the terminal the TUI draws on.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use tracing_appender::non_blocking::WorkerGuard;
use tracing_subscriber::EnvFilter;

/// Log lines queued for the writer thread before new ones are dropped.
const LINES_QUEUED: usize = 4_096;

pub(crate) fn default_log_path() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "electop").map(|d| d.data_dir().join("electop.log"))
}

/// Starts logging to `path` (or the default). Keep the guard alive until exit so the last
/// lines are flushed. `ELECTOP_LOG` sets the filter (default `info`).
pub(crate) fn init(path: Option<&Path>) -> Result<Option<WorkerGuard>> {
    let Some(path) = path.map(Path::to_path_buf).or_else(default_log_path) else {
        return Ok(None);
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create log directory {}", dir.display()))?;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .with_context(|| format!("cannot open log file {}", path.display()))?;
    // The default queue of 128,000 lines is allocated and touched up front: memory every
    // electop would hold for a log that writes a few lines a minute.
    let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .buffered_lines_limit(LINES_QUEUED)
        .finish(file);
    let filter = EnvFilter::try_from_env("ELECTOP_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_writer(writer)
        .with_ansi(false)
        .with_env_filter(filter)
        .init();
    Ok(Some(guard))
}

/// Logs to stderr, as text or one JSON object a line, for a service (`serve`): there is no
/// screen to keep clean, and the journal or the container runtime keeps stderr.
pub(crate) fn init_stderr(json: bool) -> Option<WorkerGuard> {
    let filter = EnvFilter::try_from_env("ELECTOP_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter);
    if json {
        builder.json().init();
    } else {
        builder.with_ansi(false).init();
    }
    None
}
