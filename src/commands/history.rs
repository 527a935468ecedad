//! `electop history`: every source read once, as `status` does, with as much history as the
//! journals keep, then who led each election when over a window, as a table or JSON.

use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use anyhow::Result;

use crate::backend::BackendOptions;
use crate::config::{SourceConfig, Usage};
use crate::model::timeline::When;
use crate::output;
use crate::runtime::Sources;

use super::status::EXIT_PARTIAL;

/// What `history` was asked for.
pub(super) struct Ask {
    pub election: Option<String>,
    pub since: When,
    pub until: Option<When>,
    pub json: bool,
    pub timeout: Duration,
}

/// Exit 0 when every source was read, [`EXIT_PARTIAL`] when some were, 1 when none. An
/// election named that no source holds is a usage error (exit 2, as for the admin verbs)
/// when every source was read; with some unread it may be in one of them: exit 1.
pub(super) async fn run(
    sources: &[SourceConfig],
    opts: &BackendOptions,
    ask: Ask,
) -> Result<ExitCode> {
    let now = SystemTime::now();
    let since = ask.since.resolve(now);
    let until = ask.until.map_or(now, |u| u.resolve(now));
    if until < since {
        return Err(Usage(format!(
            "--until ({}) is before --since ({})",
            crate::model::time::rfc3339(until),
            crate::model::time::rfc3339(since)
        ))
        .into());
    }
    let mut snap = crate::runtime::collect(Sources::spawn(sources, opts)?, ask.timeout).await;
    let asked = ask.election.as_deref();
    let some_read = snap.unread.len() < snap.model.sources.len();
    if opts.only.is_some() && some_read && output::history::select(&snap.model, asked).is_err() {
        // The stores were read for the election's keys alone and none holds it: read again
        // whole, for the names an error offers (or the election, taken since).
        let whole = BackendOptions {
            whole_store: true,
            ..opts.clone()
        };
        snap = crate::runtime::collect(Sources::spawn(sources, &whole)?, ask.timeout).await;
    }
    for (_, why) in &snap.unread {
        eprintln!("electop: {why}");
    }
    let app = snap.model;
    if snap.unread.len() == app.sources.len() {
        return Ok(ExitCode::FAILURE);
    }
    // Before any error about the election: a notice may be why it is not there (an empty
    // prefix, a store that holds no keys).
    super::status::print_notices(&app, &opts.history, crate::cli::OutputFormat::Json);
    let keys = match output::history::select(&app, ask.election.as_deref()) {
        Ok(keys) => keys,
        Err(why) if snap.unread.is_empty() => return Err(Usage(why).into()),
        Err(why) => {
            eprintln!("electop: {why} (among the sources read)");
            return Ok(ExitCode::FAILURE);
        }
    };
    let doc = output::history::document(&app, &keys, (since, until), SystemTime::now());
    print(&doc, ask.json)?;
    Ok(match snap.unread.is_empty() {
        true => ExitCode::SUCCESS,
        false => ExitCode::from(EXIT_PARTIAL),
    })
}

/// JSON (indented on a terminal, one line for a program, as `status`) or the table.
fn print(doc: &output::history::HistoryDoc<'_>, json: bool) -> Result<()> {
    use std::io::IsTerminal;
    let text = match json {
        true if std::io::stdout().is_terminal() => serde_json::to_string_pretty(doc)? + "\n",
        true => serde_json::to_string(doc)? + "\n",
        false => output::history::render(doc),
    };
    Ok(output::pipe::print(text.as_bytes())?)
}
