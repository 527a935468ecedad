//! `electop watch`: every change as a line (or a JSON object) as it happens, judged by the
//! same read model the dashboard keeps.

use std::io::Write;
use std::time::{Duration, Instant, SystemTime};

use anyhow::Result;

use crate::model::{Event, EventKind, SourceEvent};
use crate::output;
use crate::runtime::Sources;
use crate::state::ReadModel;

/// How `watch` prints.
#[derive(Clone, Copy, Debug)]
pub(super) struct How {
    /// One JSON object per line.
    pub json: bool,
    /// No line per election for how it stands when its source is first read.
    pub changes_only: bool,
}

pub(super) async fn run(
    sources: &[crate::config::SourceConfig],
    mut opts: crate::backend::BackendOptions,
    how: How,
) -> Result<std::process::ExitCode> {
    opts.all_leases = true;
    let s = Sources::spawn(sources, &opts)?;
    run_watch(s, how).await?;
    Ok(std::process::ExitCode::SUCCESS)
}

/// Prints how each election stands once its source is read (unless `changes_only`), then
/// each change as it happens, until the input or the sources end.
async fn run_watch(mut sources: Sources, How { json, changes_only }: How) -> Result<()> {
    let mut out = std::io::stdout();
    let names: Vec<String> = sources.infos.iter().map(|i| i.name.clone()).collect();
    // The same state the TUI keeps, so staleness is judged the same way.
    // Alarms are never printed here: changes only mark them (bounded by the elections),
    // never settle them, so a change is printed without working anything out.
    let mut app = ReadModel::new(sources.infos.clone(), Instant::now(), SystemTime::now());
    let mut check = tokio::time::interval(Duration::from_millis(250));
    // SIGTERM (a service manager, `timeout`, a supervisor) ends a watch as Ctrl-C does:
    // the sources shut down cleanly, so ZooKeeper's record says until when it watched.
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let stop = tokio::signal::ctrl_c();
    tokio::pin!(stop);
    loop {
        let mut lines = Vec::new();
        tokio::select! {
            ev = sources.events.recv() => {
                let Some(ev) = ev else { break };
                let line = watch_line(&app, &names, &ev);
                let synced = match ev {
                    SourceEvent::Synced { source } if !changes_only => Some(source),
                    _ => None,
                };
                app.apply(ev);
                // How each election stands, then the marker that changes follow live.
                if let Some(source) = synced {
                    lines.extend(output::watch::current(&app, source));
                }
                lines.extend(line);
            }
            _ = check.tick() => {}
            _ = &mut stop => break,
            _ = term.recv() => break,
        }
        app.now = Instant::now();
        lines.extend(app.staleness_markers());
        for e in lines {
            // A closed stdout (e.g. `| head`) ends the watch quietly.
            if writeln!(out, "{}", watch_text(&app, &e, json)?)
                .and_then(|()| out.flush())
                .is_err()
            {
                sources.shutdown().await;
                return Ok(());
            }
        }
    }
    sources.shutdown().await;
    Ok(())
}

/// The line an event makes, judged by the model before it is applied: a connection is
/// told once per change, not once per retry or poll.
fn watch_line(app: &ReadModel, names: &[String], ev: &SourceEvent) -> Option<Event> {
    match ev {
        SourceEvent::Happened(e) => Some(e.clone()),
        SourceEvent::Conn { source, state } => app.conn_marker(*source, state),
        SourceEvent::Synced { source } => Some(marker(names, *source, EventKind::Synced)),
        _ => None,
    }
}

fn watch_text(app: &ReadModel, e: &Event, json: bool) -> Result<String> {
    let source = app.sources.iter().find(|s| s.info.name == e.source);
    let short = source.map(|s| s.info.short.as_str()).unwrap_or(&e.source);
    if json {
        return Ok(output::watch::json(e, short)?);
    }
    // The new leader's time left, if its lease has been read.
    let ttl = source
        .zip(e.election.as_ref())
        .and_then(|(s, name)| app.elections.get(&(s.info.id, name.clone())))
        .and_then(|el| el.leader.as_ref())
        .filter(|l| Some(&l.id) == e.to.as_ref() && !l.zombie())
        .and_then(|l| l.ttl)
        .map(|d| d.remaining_ms_at(app.now));
    let offset = output::watch::local_offset(e.at.unwrap_or_else(SystemTime::now));
    Ok(output::watch::line(e, short, ttl, offset))
}

fn marker(names: &[String], source: usize, kind: EventKind) -> Event {
    Event::about_source(
        names.get(source).cloned().unwrap_or_default(),
        kind,
        None,
        None,
    )
}
