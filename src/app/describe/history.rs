//! The detail view's history: the leader changes kept, newest first, and what each cause
//! among them means.

use super::{DLine, Tone, heading};
use crate::app::App;
use crate::model::Election;
use crate::model::time::clock;

/// Since when changes are known: when electop connected, or where its own record of
/// earlier runs starts, with the stretches no electop watched.
fn since_line(s: &crate::state::SourceView) -> String {
    let Some(t) = s.history_since else {
        return String::new();
    };
    if s.history_gaps.is_empty() {
        return format!(" since {}, when electop connected", clock(t));
    }
    let gaps: Vec<String> = s.history_gaps.iter().map(|g| g.describe()).collect();
    format!(
        " since {}, electop's own record ({})",
        clock(t),
        gaps.join(", ")
    )
}

pub(super) fn history(app: &App, e: &Election) -> Vec<DLine> {
    // A store that keeps no history (ZooKeeper): seen since electop connected.
    let since = app
        .model
        .sources
        .get(e.source)
        .map(since_line)
        .unwrap_or_default();
    let mut out = vec![heading(format!(
        "History · {} seen{since}, newest first ({} kept)",
        if e.transitions == 1 {
            "1 change".to_string()
        } else {
            format!("{} changes", e.transitions)
        },
        e.history.len()
    ))];
    for h in e.history.iter().rev() {
        let when = match h.at {
            Some(at) => clock(at),
            None => "replayed".into(),
        };
        let rev = h
            .revision
            .map(|r| format!(" {}", e.scheme.revision_text(r)))
            .unwrap_or_default();
        let by =
            h.by.as_ref()
                .map(|b| format!(" by {b}"))
                .unwrap_or_default();
        out.push(vec![
            (Tone::Dim, format!("{when:>8}  ")),
            (
                Tone::Text,
                format!(
                    "{} → {}",
                    h.from.as_deref().unwrap_or("∅"),
                    h.to.as_deref().unwrap_or("∅")
                ),
            ),
            (Tone::Warn, format!("  {}", h.cause.as_str())),
            (Tone::Dim, format!("{by}{rev}")),
        ]);
    }
    out.extend(causes(e));
    out
}

/// What each cause in the history means, once each, in the order first listed.
fn causes(e: &Election) -> Vec<DLine> {
    let mut seen = Vec::new();
    for h in e.history.iter().rev() {
        if !seen.contains(&h.cause) {
            seen.push(h.cause);
        }
    }
    if seen.is_empty() {
        return Vec::new();
    }
    let w = seen.iter().map(|c| c.as_str().len()).max().unwrap_or(0);
    let mut out = vec![Vec::new(), heading("Causes".into())];
    out.extend(seen.iter().map(|c| {
        vec![
            (Tone::Warn, format!("  {:<w$}", c.as_str())),
            (Tone::Dim, format!("  {}", c.meaning())),
        ]
    }));
    out
}
