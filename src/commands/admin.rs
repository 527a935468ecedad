//! `electop force-leader | reelect | resign`: read what the store holds, check it against
//! `--expect-leader`, show the plan, confirm, act with compare-and-swap, audit, and exit
//! 0 done, 3 changed or refused, 2 usage, 1 store error.

use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;

use super::EXIT_USAGE;
use crate::admin::{self, ActionKind, AdminRequest, Outcome};
use crate::backend::{self, BackendOptions};
use crate::cli::AdminArgs;
use crate::config::SourceConfig;
use crate::model::Election;
use crate::runtime::{Sources, collect_status};

pub const EXIT_DONE: u8 = 0;
pub const EXIT_STORE: u8 = 1;
pub const EXIT_CHANGED: u8 = 3;

fn fail(code: u8, msg: &str) -> ExitCode {
    eprintln!("electop: {msg}");
    ExitCode::from(code)
}

/// Records an admin command that was not understood (it exits 2) in the audit log.
pub(super) fn audit_usage(action: &str, election: Option<&str>, error: &str) {
    if let Some(path) = admin::audit::default_path()
        && let Err(e) = admin::audit::record_usage(&path, action, election, error)
    {
        eprintln!(
            "electop: warning: cannot write the audit log {}: {e}",
            path.display()
        );
    }
}

/// A usage error of `action` on `election`: audited, then exit 2.
fn usage(action: &str, election: &str, msg: &str) -> ExitCode {
    audit_usage(action, Some(election), msg);
    fail(EXIT_USAGE, msg)
}

/// What shapes an admin verb beyond its flags: the history kept, and whether an id never
/// seen in the election may be forced as its leader.
struct How {
    pub limit: usize,
    pub allow_unseen: bool,
}

impl How {
    fn plain(limit: usize) -> How {
        How {
            limit,
            allow_unseen: false,
        }
    }
}

/// `force-leader`, `reelect` or `resign`, as given.
pub(super) async fn command(
    c: crate::cli::Command,
    sources: &[SourceConfig],
    limit: usize,
) -> ExitCode {
    use crate::cli::Command;
    let (election, kind, admin, how) = match c {
        Command::ForceLeader {
            election,
            id,
            allow_unseen,
            admin,
        } => {
            let how = How {
                limit,
                allow_unseen,
            };
            (election, ActionKind::ForceLeader { target: id }, admin, how)
        }
        Command::Reelect { election, admin } => {
            (election, ActionKind::Reelect, admin, How::plain(limit))
        }
        Command::Resign { election, admin } => {
            (election, ActionKind::Resign, admin, How::plain(limit))
        }
        _ => unreachable!("only the admin verbs are passed here"),
    };
    run(sources, &election, kind, &admin, how).await
}

async fn run(
    sources: &[SourceConfig],
    election: &str,
    kind: ActionKind,
    args: &AdminArgs,
    How {
        limit: history_limit,
        allow_unseen,
    }: How,
) -> ExitCode {
    let opts = BackendOptions {
        history_limit,
        all_leases: true,
        request_timeout: args.timeout,
        ..BackendOptions::default()
    };
    let action = kind.name();
    let spawned = match Sources::spawn(sources, &opts) {
        Ok(s) => s,
        Err(e) => return usage(action, election, &format!("{e:#}")),
    };
    let app = match collect_status(spawned, args.timeout).await {
        Ok(app) => app,
        Err(why) => return fail(EXIT_STORE, &why),
    };
    let (source, seen) = match find(&app, election) {
        Ok(found) => found,
        Err(why) => return usage(action, election, &why),
    };
    let req = AdminRequest {
        source,
        source_name: app.sources[source].info.name.clone(),
        kind,
        seen,
        target: backend::target(&sources[source]),
    };
    let trail = admin::audit::Trail::default();
    let finish = |outcome: Outcome| finish(&trail, &req, outcome);
    if let Some(refusal) = refused(&req.seen, args, &sources[source]) {
        return finish(refusal);
    }
    let unseen = match &req.kind {
        ActionKind::ForceLeader { target } => admin::unseen_leader(&req.seen, target, &[]),
        _ => None,
    };
    let plan = match (backend::plan(&req), unseen) {
        (Ok(_), Some(warning)) if !allow_unseen => {
            let why = format!("{warning}; check the id, or give --allow-unseen to write it anyway");
            return usage(action, election, &why);
        }
        (Ok(p), _) => p,
        // An id the store cannot take because it was never seen (not in etcd's line) is
        // a mistake in the command, as an unseen id is wherever it could be written.
        (Err(reason), Some(_)) => {
            let known = known_ids(&req.seen);
            return usage(action, election, &format!("{reason}; {known}"));
        }
        (Err(reason), None) => return finish(Outcome::Refused { reason }),
    };
    if !args.yes {
        match confirmed(&plan) {
            Ok(true) => {}
            Ok(false) => {
                return finish(Outcome::Refused {
                    reason: "not confirmed".into(),
                });
            }
            Err(why) => return usage(action, election, why),
        }
    }
    if let Err(reason) = trail.attempt(&req) {
        return finish(Outcome::Refused { reason });
    }
    finish(backend::execute(&sources[source], &req, args.timeout).await)
}

/// The one election named `NAME` or `SOURCE/NAME`; else what is known, or which sources
/// share the name.
fn find(app: &crate::state::ReadModel, election: &str) -> Result<(usize, Election), String> {
    let qualified = |(src, name): &(usize, String)| {
        let short = app
            .sources
            .get(*src)
            .map(|s| s.info.short.as_str())
            .unwrap_or("?");
        format!("{short}/{name}")
    };
    let matches: Vec<_> = app
        .elections
        .iter()
        .filter(|(key, _)| key.1 == election || qualified(key) == election)
        .collect();
    match matches.as_slice() {
        [((source, _), seen)] => Ok((*source, (*seen).clone())),
        [] => {
            let known: Vec<String> = app.elections.keys().map(qualified).collect();
            Err(format!(
                "no election `{election}`; known: {}",
                known.join(", ")
            ))
        }
        many => {
            let names: Vec<String> = many.iter().map(|(k, _)| qualified(k)).collect();
            Err(format!(
                "`{election}` is in several sources; name one of: {}",
                names.join(", ")
            ))
        }
    }
}

/// The ids `e` was seen with, for a message about one that was not.
fn known_ids(e: &Election) -> String {
    let mut ids: Vec<&str> = e.candidates.iter().map(|c| c.id.as_str()).collect();
    ids.extend(e.leader.as_ref().map(|l| l.id.as_str()));
    ids.sort_unstable();
    ids.dedup();
    match ids.is_empty() {
        true => format!("no participant of {} was seen", e.name),
        false => format!("seen in {}: {}", e.name, ids.join(", ")),
    }
}

/// Why nothing may be written before a plan is made: the leader is not the one
/// `--expect-leader` names, or the source is read-only.
fn refused(seen: &Election, args: &AdminArgs, source: &SourceConfig) -> Option<Outcome> {
    let current = seen
        .leader
        .as_ref()
        .or(seen.candidates.first())
        .map(|c| c.id.as_str());
    if let Some(expected) = &args.expect_leader
        && current != Some(expected.as_str())
    {
        return Some(Outcome::Changed {
            detail: admin::changed_since(&format!(
                "the leader is {}, not {expected}",
                current.unwrap_or("nobody")
            )),
        });
    }
    source.read_only().then(|| Outcome::Refused {
        reason: "this source is read-only (--read-only or read_only = true): admin actions are off"
            .into(),
    })
}

/// Shows the plan on stderr and asks on the terminal. Without a terminal nobody can answer:
/// that is a usage error, the reason returned.
fn confirmed(plan: &admin::Plan) -> Result<bool, &'static str> {
    if !std::io::stdin().is_terminal() {
        return Err(
            "stdin is not a terminal, so nobody can confirm: pass --yes to act without asking",
        );
    }
    let mut out = std::io::stderr();
    let _ = writeln!(out, "{}", plan.summary);
    for g in plan.gist.lines() {
        let _ = writeln!(out, "  {g}");
    }
    for w in plan.writes() {
        let _ = writeln!(out, "  write: {w}");
    }
    for n in &plan.notes {
        let _ = writeln!(out, "  note:  {n}");
    }
    let _ = write!(out, "Proceed? [y/N] ");
    let _ = out.flush();
    let mut answer = String::new();
    let _ = std::io::stdin().lock().read_line(&mut answer);
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}

/// Audits the outcome, prints it (stdout when done, stderr else) and turns it into the exit
/// code.
fn finish(trail: &admin::audit::Trail, req: &AdminRequest, outcome: Outcome) -> ExitCode {
    if let Err(e) = trail.outcome(req, &outcome) {
        eprintln!("electop: warning: {e}");
    }
    let code = match &outcome {
        Outcome::Done { .. } => EXIT_DONE,
        Outcome::Changed { .. } | Outcome::Refused { .. } => EXIT_CHANGED,
        Outcome::Failed { .. } => EXIT_STORE,
    };
    if code == EXIT_DONE {
        // Done is done: a reader that went away does not make it fail.
        let line = format!("{}: {}\n", req.kind.name(), outcome.message());
        let _ = crate::output::pipe::print(line.as_bytes());
    } else {
        eprintln!(
            "electop: {} {}: {}",
            req.kind.name(),
            outcome.label(),
            outcome.message()
        );
    }
    ExitCode::from(code)
}
