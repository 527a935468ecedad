//! The admin dialogs: pick a candidate (or type an id), confirm what will be written, wait
//! for the outcome. Confirming queues the request; the runtime carries it out.

use super::{App, Flash};
use crate::admin::{self, ActionKind, AdminRequest, Outcome, Plan};
use crate::app::Action;
use crate::model::Scheme;

#[derive(Clone, Debug)]
pub enum Dialog {
    /// Choose the new leader from the line.
    Pick {
        options: Vec<String>,
        selected: usize,
    },
    /// Type the new leader's id (schemes without a line).
    Type { input: String },
    /// What will be written, to which store; waiting for yes or no.
    Confirm {
        request: Box<AdminRequest>,
        plan: Plan,
    },
    /// Sent; waiting for the store.
    Running { summary: String },
}

impl Dialog {
    /// Whether printable keys are text for this dialog.
    pub fn typing(&self) -> bool {
        matches!(self, Dialog::Type { .. })
    }
}

/// Starts an admin action on the selected election.
pub fn start(app: &mut App, action: Action) {
    let Some(e) = app.selected_election().cloned() else {
        app.flash = Some(Flash::error("no election selected"));
        return;
    };
    let Some(src) = app.sources.get(e.source) else {
        return;
    };
    if src.info.read_only {
        app.flash = Some(Flash::error(
            "read-only: admin actions are off for this source (--read-only / read_only = true)",
        ));
        return;
    }
    match action {
        Action::ForceLeader => {
            let leader = e.leader.as_ref().map(|l| l.id.clone());
            let has_line = matches!(
                e.scheme,
                Scheme::EtcdElection | Scheme::EtcdLeaseKey | Scheme::Patroni
            ) && e.candidates.len() > 1;
            app.dialog = Some(if has_line {
                let options: Vec<String> = e
                    .candidates
                    .iter()
                    .map(|c| c.id.clone())
                    .filter(|id| Some(id) != leader.as_ref())
                    .collect();
                Dialog::Pick {
                    options,
                    selected: 0,
                }
            } else {
                Dialog::Type {
                    input: String::new(),
                }
            });
        }
        Action::Reelect => confirm(app, ActionKind::Reelect),
        Action::Resign => confirm(app, ActionKind::Resign),
        _ => {}
    }
}

fn confirm(app: &mut App, kind: ActionKind) {
    let Some(e) = app.selected_election().cloned() else {
        return;
    };
    let source_name = app
        .sources
        .get(e.source)
        .map(|s| s.info.name.clone())
        .unwrap_or_default();
    // Without a config (the demo, tests) the scheme's defaults are what its store uses.
    let target = app
        .targets
        .get(e.source)
        .cloned()
        .unwrap_or_else(|| admin::Target::defaults(e.scheme));
    let request = AdminRequest {
        source: e.source,
        source_name,
        kind,
        seen: e,
        target,
    };
    match admin::plan(&request) {
        Ok(plan) => {
            app.dialog = Some(Dialog::Confirm {
                request: Box::new(request),
                plan,
            })
        }
        Err(reason) => {
            app.dialog = None;
            app.flash = Some(Flash::error(&format!(
                "cannot {}: {reason}",
                request.kind.name()
            )));
        }
    }
}

/// A key action while a dialog is open.
pub fn on_action(app: &mut App, action: Action) {
    let Some(dialog) = app.dialog.take() else {
        return;
    };
    app.dialog = match (dialog, action) {
        (_, Action::Quit) => {
            app.quit = true;
            None
        }
        (Dialog::Running { summary }, _) => Some(Dialog::Running { summary }),
        (_, Action::Back) => {
            app.flash = Some(Flash::info("cancelled: nothing was written"));
            None
        }
        (Dialog::Pick { options, selected }, Action::Up) => Some(Dialog::Pick {
            selected: selected.saturating_sub(1),
            options,
        }),
        (Dialog::Pick { options, selected }, Action::Down) => {
            let selected = (selected + 1).min(options.len().saturating_sub(1));
            Some(Dialog::Pick { options, selected })
        }
        (Dialog::Pick { options, selected }, Action::Accept) => match options.get(selected) {
            Some(target) => {
                confirm(
                    app,
                    ActionKind::ForceLeader {
                        target: target.clone(),
                    },
                );
                app.dialog.take()
            }
            None => None,
        },
        (Dialog::Type { mut input }, Action::Type(c)) => {
            input.push(c);
            Some(Dialog::Type { input })
        }
        (Dialog::Type { mut input }, Action::Erase) => {
            input.pop();
            Some(Dialog::Type { input })
        }
        (Dialog::Type { input }, Action::Accept) if !input.trim().is_empty() => {
            confirm(
                app,
                ActionKind::ForceLeader {
                    target: input.trim().to_string(),
                },
            );
            app.dialog.take()
        }
        // Election clients do not notice a resign; a re-election ends the session instead.
        (Dialog::Confirm { request, .. }, Action::Reelect)
            if request.kind == ActionKind::Resign
                && request.seen.scheme == Scheme::EtcdElection =>
        {
            confirm(app, ActionKind::Reelect);
            app.dialog.take()
        }
        (Dialog::Confirm { request, plan }, Action::Accept) => {
            let summary = plan.summary.clone();
            app.outbox.push(*request);
            Some(Dialog::Running { summary })
        }
        (d, _) => Some(d),
    };
}

/// The store answered.
pub fn on_outcome(app: &mut App, outcome: Outcome) {
    app.dialog = None;
    let text = format!("{}: {}", outcome.label(), outcome.message());
    app.flash = Some(match outcome {
        Outcome::Done { .. } => Flash::info(&text),
        _ => Flash::error(&text),
    });
}
