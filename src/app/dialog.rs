//! The admin dialogs: pick a candidate (or type an id), confirm what will be written, wait
//! for the outcome. Confirming queues the request; the runtime carries it out.

use super::log::{LogEntry, Tone};
use super::{App, Effect, Flash};
use crate::admin::{self, ActionKind, AdminRequest, Outcome, Plan};
use crate::app::Action;

#[derive(Clone, Debug)]
pub enum Dialog {
    /// Choose the new leader from the line.
    Pick {
        options: Vec<String>,
        selected: usize,
    },
    /// Type the new leader's id (schemes without a line).
    Type { input: String },
    /// The id to force was never seen in the election: asked first, on its own, before
    /// the plan (`warning` says why it matters).
    Unseen {
        request: Box<AdminRequest>,
        plan: Plan,
        warning: String,
    },
    /// What will happen, in short, to which store; waiting for yes or no.
    Confirm {
        request: Box<AdminRequest>,
        plan: Plan,
    },
    /// The whole plan of the confirmation `under` (`d`), scrolled past `scroll` lines: yes
    /// still confirms, `d` or Esc goes back to it.
    Details { under: Box<Dialog>, scroll: usize },
    /// Quitting stops something (the demo's nodes): asked first. `under` is an action's
    /// `Running` dialog, kept so its outcome is still reported and shown again on "no".
    ConfirmQuit {
        what: &'static str,
        under: Option<Box<Dialog>>,
    },
    /// Sent; waiting for the store. The source and election are for the events view.
    Running {
        summary: String,
        source: String,
        election: String,
    },
}

impl Dialog {
    /// Whether printable keys are text for this dialog.
    pub fn typing(&self) -> bool {
        matches!(self, Dialog::Type { .. })
    }
}

/// The selected election, if an admin action may be started on it; else says why not.
fn writable(app: &mut App) -> Option<crate::model::Election> {
    let Some(e) = app.selected_election().cloned() else {
        app.say(Flash::error("no election selected"));
        return None;
    };
    if app.model.sources.get(e.source)?.info.read_only {
        app.say(Flash::error(
            "read-only: admin actions are off for this source (--read-only / read_only = true)",
        ));
        return None;
    }
    Some(e)
}

/// `:force-leader ID`: straight to the confirmation.
pub(crate) fn force(app: &mut App, target: String) {
    if writable(app).is_some() {
        confirm(app, ActionKind::ForceLeader { target });
    }
}

/// Starts an admin action on the selected election.
pub(crate) fn start(app: &mut App, action: Action) {
    let Some(e) = writable(app) else {
        return;
    };
    match action {
        Action::ForceLeader => {
            let leader = e.leader.as_ref().map(|l| l.id.clone());
            let has_line = e.scheme.has_line(e.candidates.len()) && e.candidates.len() > 1;
            // Without a line, the ids known from elsewhere (the demo's nodes) are offered.
            let known: Vec<String> = if has_line {
                e.candidates.iter().map(|c| c.id.clone()).collect()
            } else {
                app.around.known_ids.clone()
            };
            let options: Vec<String> = known
                .into_iter()
                .filter(|id| Some(id) != leader.as_ref())
                .collect();
            app.dialog = Some(if !options.is_empty() {
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
        .model
        .sources
        .get(e.source)
        .map(|s| s.info.name.clone())
        .unwrap_or_default();
    // Without a config (the demo, tests) the scheme's defaults are what its store uses.
    let target = app
        .targets
        .get(e.source)
        .cloned()
        .or_else(|| crate::backend::default_target(e.scheme));
    let Some(target) = target else {
        app.say(Flash::error(&format!(
            "cannot {}: no store keeps {} elections",
            kind.name(),
            e.scheme
        )));
        return;
    };
    let request = AdminRequest {
        source: e.source,
        source_name,
        kind,
        seen: e,
        target,
    };
    let unseen = match &request.kind {
        ActionKind::ForceLeader { target } => {
            admin::unseen_leader(&request.seen, target, &app.around.known_ids)
        }
        _ => None,
    };
    match crate::backend::plan(&request) {
        Ok(plan) => {
            let request = Box::new(request);
            app.dialog = Some(match unseen {
                Some(warning) => Dialog::Unseen {
                    request,
                    plan,
                    warning,
                },
                None => Dialog::Confirm { request, plan },
            })
        }
        Err(reason) => {
            app.dialog = None;
            app.say(Flash::error(&format!(
                "cannot {}: {reason}",
                request.kind.name()
            )));
        }
    }
}

/// A key action while a dialog is open.
pub(crate) fn on_action(app: &mut App, action: Action) {
    let Some(dialog) = app.dialog.take() else {
        return;
    };
    app.dialog = match (dialog, action) {
        (d, Action::Quit) => on_quit(app, d),
        (d @ Dialog::Running { .. }, _) => Some(d),
        (Dialog::Details { under, scroll }, a) => on_details(app, under, scroll, a),
        (d @ (Dialog::Confirm { .. } | Dialog::Unseen { .. }), Action::Details) => {
            Some(Dialog::Details {
                under: Box::new(d),
                scroll: 0,
            })
        }
        (Dialog::ConfirmQuit { under, .. }, Action::Accept) => {
            app.effects.push(Effect::Quit);
            under.map(|d| *d)
        }
        (Dialog::ConfirmQuit { under, .. }, Action::Back) => under.map(|d| *d),
        (_, Action::Back) => {
            app.say(Flash::info("cancelled: nothing was written"));
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
        (Dialog::Pick { options, selected }, Action::Choose | Action::Accept) => options
            .get(selected)
            .cloned()
            .and_then(|target| force_confirm(app, target)),
        (Dialog::Type { mut input }, Action::Type(c)) => {
            input.push(c);
            Some(Dialog::Type { input })
        }
        (Dialog::Type { mut input }, Action::Erase) => {
            input.pop();
            Some(Dialog::Type { input })
        }
        (Dialog::Type { input }, Action::Choose | Action::Accept) if !input.trim().is_empty() => {
            force_confirm(app, input.trim().to_string())
        }
        // Asked twice on purpose: the second question is the plan itself.
        (Dialog::Unseen { request, plan, .. }, Action::Accept) => {
            Some(Dialog::Confirm { request, plan })
        }
        // The plan offers a re-election instead (a resign its participants would not notice).
        (Dialog::Confirm { plan, .. }, Action::Reelect) if plan.reelect_instead => {
            confirm(app, ActionKind::Reelect);
            app.dialog.take()
        }
        (Dialog::Confirm { request, plan }, Action::Accept) => {
            let running = Dialog::Running {
                summary: plan.summary.clone(),
                source: app
                    .model
                    .sources
                    .get(request.source)
                    .map(|s| s.info.short.clone())
                    .unwrap_or_default(),
                election: request.seen.name.clone(),
            };
            app.effects.push(Effect::Admin(request));
            Some(running)
        }
        // Enter chooses, never answers: it may be typed on from the picker unread.
        (d, Action::Choose) => Some(not_an_answer(app, d)),
        (d, _) => Some(d),
    };
}

/// An Enter on a question: it stays, and the status line says which key answers it.
fn not_an_answer(app: &mut App, dialog: Dialog) -> Dialog {
    let text = match &dialog {
        Dialog::ConfirmQuit { .. } => "Enter does not answer: y quits · n/Esc stays",
        Dialog::Unseen { .. } | Dialog::Confirm { .. } | Dialog::Details { .. } => {
            "Enter does not confirm: y does it · n/Esc cancels"
        }
        _ => return dialog,
    };
    app.say(Flash::info(text));
    dialog
}

/// A key in the details of a confirmation: back to it, its answer, or a scroll.
fn on_details(app: &mut App, under: Box<Dialog>, scroll: usize, action: Action) -> Option<Dialog> {
    match action {
        Action::Back | Action::Details => Some(*under),
        Action::Choose => Some(not_an_answer(app, Dialog::Details { under, scroll })),
        // Yes (and a resign's `r`) answer the confirmation under the details.
        Action::Accept | Action::Reelect => {
            app.dialog = Some(*under);
            on_action(app, action);
            app.dialog.take()
        }
        a => {
            let scroll = super::details::scroll(app, &under, scroll, a).unwrap_or(scroll);
            Some(Dialog::Details { under, scroll })
        }
    }
}

/// The confirmation of forcing `target` (or why it cannot be done), as the next dialog.
fn force_confirm(app: &mut App, target: String) -> Option<Dialog> {
    confirm(app, ActionKind::ForceLeader { target });
    app.dialog.take()
}

/// `q`/`Ctrl-C` with a dialog open. Where quitting stops something (the demo's nodes) it
/// asks, from inside a dialog too; elsewhere it quits at once. An action already sent is
/// never dropped: its `Running` dialog stays, and the runtime waits for its outcome.
fn on_quit(app: &mut App, dialog: Dialog) -> Option<Dialog> {
    let running = matches!(dialog, Dialog::Running { .. });
    match (app.around.quit_asks, dialog) {
        // Asked already: only an answer (y / n) settles it.
        (_, d @ Dialog::ConfirmQuit { .. }) => Some(d),
        (None, d) => {
            app.effects.push(Effect::Quit);
            running.then_some(d)
        }
        (Some(what), d) if running => Some(Dialog::ConfirmQuit {
            what,
            under: Some(Box::new(d)),
        }),
        (Some(what), _) => {
            app.say(Flash::info("cancelled: nothing was written"));
            Some(Dialog::ConfirmQuit { what, under: None })
        }
    }
}

/// The store answered: the outcome flashes in the status line and stays in the events view.
pub(crate) fn on_outcome(app: &mut App, outcome: Outcome) {
    let running = match app.dialog.take() {
        // Asked whether to quit meanwhile: the question stays, the action is over.
        Some(Dialog::ConfirmQuit { what, under }) => {
            app.dialog = Some(Dialog::ConfirmQuit { what, under: None });
            under.map(|d| *d)
        }
        d => d,
    };
    let (summary, source, election) = match running {
        Some(Dialog::Running {
            summary,
            source,
            election,
        }) => (summary, source, Some(election)),
        _ => ("admin action".to_string(), String::new(), None),
    };
    let text = format!("{}: {}", outcome.label(), outcome.message());
    let done = matches!(outcome, Outcome::Done { .. });
    app.model.events.push(LogEntry {
        at: Some(app.model.wall),
        revision: None,
        source,
        election,
        text: format!("{summary}: {text}"),
        cause: None,
        tone: if done { Tone::Done } else { Tone::Failed },
    });
    app.say(if done {
        Flash::info(&text)
    } else {
        Flash::error(&text)
    });
}

#[cfg(test)]
mod tests {
    use std::time::{Instant, SystemTime};

    use super::*;
    use crate::app::{Msg, update};
    use crate::model::SourceInfo;

    fn app(quit_asks: Option<&'static str>) -> App {
        let mut app = App::new(
            vec![SourceInfo::test_etcd()],
            Instant::now(),
            SystemTime::now(),
        );
        app.around.quit_asks = quit_asks;
        app
    }

    fn running() -> Dialog {
        Dialog::Running {
            summary: "revoke lease 11".into(),
            source: "etcd1".into(),
            election: "jobs".into(),
        }
    }

    /// `Ctrl-C`: whether the dashboard quits at once.
    fn quit(app: &mut App) -> bool {
        update(app, Msg::Action(Action::Quit)).quits()
    }

    /// In the demo, `Ctrl-C` inside a dialog asks like `q` does: quitting stops every node.
    #[test]
    fn quitting_the_demo_from_a_dialog_asks_first() {
        let mut app = app(Some("stops every node"));
        app.dialog = Some(Dialog::Type {
            input: "node-b".into(),
        });
        assert!(!quit(&mut app), "asked, not quit");
        assert!(matches!(
            app.dialog,
            Some(Dialog::ConfirmQuit { under: None, .. })
        ));
        assert!(!quit(&mut app), "a second Ctrl-C is no answer");
        let n = update(&mut app, Msg::Action(Action::Back));
        assert!(!n.quits() && app.dialog.is_none(), "n: stay");
    }

    /// An action already sent stays on screen behind the question; its outcome is logged
    /// under its own name, and "yes" quits with the action's dialog back for the wait.
    #[test]
    fn quitting_the_demo_while_an_action_runs_keeps_the_action() {
        let mut app = app(Some("stops every node"));
        app.dialog = Some(running());
        quit(&mut app);
        assert!(matches!(
            app.dialog,
            Some(Dialog::ConfirmQuit { under: Some(_), .. })
        ));
        update(&mut app, Msg::Action(Action::Back));
        assert!(
            matches!(app.dialog, Some(Dialog::Running { .. })),
            "n: back to it"
        );

        quit(&mut app);
        update(
            &mut app,
            Msg::AdminDone(Outcome::Done {
                detail: "node-b leads".into(),
            }),
        );
        assert!(
            matches!(app.dialog, Some(Dialog::ConfirmQuit { under: None, .. })),
            "the question stays once the action is over"
        );
        let last = app.model.events.entries.back().map(|e| e.text.clone());
        assert_eq!(last.as_deref(), Some("revoke lease 11: done: node-b leads"));
        let y = update(&mut app, Msg::Action(Action::Accept));
        assert!(y.quits() && app.dialog.is_none(), "y: quit");

        let mut app = self::app(Some("stops every node"));
        app.dialog = Some(running());
        quit(&mut app);
        let y = update(&mut app, Msg::Action(Action::Accept));
        assert!(y.quits(), "y: quit");
        assert!(
            matches!(app.dialog, Some(Dialog::Running { .. })),
            "the runtime waits for the outcome with the action on screen"
        );
    }

    /// `Ctrl-C` in the `:` or `/` bar asks too in the demo; outside it, quits at once.
    #[test]
    fn quitting_the_demo_from_the_command_bar_asks_first() {
        let mut app = app(Some("stops every node"));
        update(&mut app, Msg::Action(Action::StartCommand));
        assert!(!quit(&mut app) && app.prompt.is_none());
        assert!(matches!(app.dialog, Some(Dialog::ConfirmQuit { .. })));

        let mut app = self::app(None);
        update(&mut app, Msg::Action(Action::StartFilter));
        assert!(quit(&mut app));
    }

    /// Outside the demo quitting is at once, but an action in flight keeps its dialog: the
    /// runtime waits for its outcome (`wait_for_actions`) before leaving.
    #[test]
    fn quitting_the_dashboard_from_a_dialog_is_at_once_and_keeps_a_running_action() {
        let mut app = app(None);
        app.dialog = Some(Dialog::Type {
            input: String::new(),
        });
        assert!(quit(&mut app) && app.dialog.is_none());

        let mut app = self::app(None);
        app.dialog = Some(running());
        assert!(quit(&mut app) && matches!(app.dialog, Some(Dialog::Running { .. })));
    }
}
