//! `electop status`: one snapshot of every source into the read model, printed as a table
//! or JSON.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;

use crate::backend::BackendOptions;
use crate::backend::engine::journal::History;
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
            print_notices(&app, &opts.history, format);
            print_status(&app, format).map(|()| true)
        }
    };
    drop(app);
    stopping.await;
    // What the history's last writes found, as the store tasks ended.
    opts.history.flush();
    for w in opts.history.take_warnings() {
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
pub(super) fn print_notices(app: &ReadModel, history: &History, format: OutputFormat) {
    for w in history.take_warnings() {
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
