//! One snapshot of every source into the read model: what `status` and the admin verbs
//! read before they print or act.

use std::time::{Duration, Instant, SystemTime};

use super::Sources;
use crate::model::{ConnState, SourceEvent};
use crate::state::ReadModel;

/// Collects events until every source has its snapshot and replay, or `timeout` passes.
/// Returns the state, or the reason a source could not be read.
pub async fn collect_status(mut sources: Sources, timeout: Duration) -> Result<ReadModel, String> {
    // The alarms are worked out once, at the end, not after every batch of elections.
    let mut app = ReadModel::new(sources.infos.clone(), Instant::now(), SystemTime::now());
    let deadline = tokio::time::Instant::now() + timeout;
    // The last error of each source: at the deadline it may be between retries ("connecting").
    let mut last_error: Vec<Option<String>> = vec![None; app.sources.len()];
    let result = loop {
        // Clustered sources also wait for their first member probe, for the members list.
        if app.all_synced()
            && app
                .sources
                .iter()
                .all(|s| !s.info.clustered || !s.members.is_empty())
        {
            break Ok(());
        }
        // A source that is plainly misconfigured will not answer by waiting longer.
        if let Some(error) = app.sources.iter().find_map(|s| match &s.conn {
            ConnState::Down {
                error,
                lasting: true,
                ..
            } if !s.synced => Some(error.clone()),
            _ => None,
        }) {
            break Err(error);
        }
        tokio::select! {
            ev = sources.events.recv() => match ev {
                Some(ev) => {
                    if let SourceEvent::Conn { source, state: ConnState::Down { error, .. } } = &ev
                        && let Some(slot) = last_error.get_mut(*source)
                    {
                        *slot = Some(error.clone());
                    }
                    app.apply(ev);
                }
                None => break Err("every source stopped".to_string()),
            },
            _ = tokio::time::sleep_until(deadline) => {
                let why = app.sources.iter().zip(&last_error).find_map(|(s, last)| match (&s.conn, last) {
                    (_, _) if s.synced => None,
                    (ConnState::Down { error, .. }, _) | (_, Some(error)) => Some(error.clone()),
                    _ => Some(format!("{}: no answer within {:?}", s.info.name, timeout)),
                });
                break Err(why.unwrap_or_else(|| format!("no answer within {timeout:?}")));
            }
        }
    };
    sources.shutdown().await;
    // The clock as the state is printed, and the alarms and rates `status` prints.
    app.tick(Instant::now(), SystemTime::now());
    app.settle();
    result.map(|()| app)
}
