//! The admin verbs while the observers run: (7) `reelect`, (9) the views started after it,
//! (10) `force-leader`. The observers learn an action from the shared audit log after the
//! CLI wrote it, so a change already told is then attributed to it; every view must end up
//! saying the same.

use std::process::{Output, Stdio};

use serde_json::Value;

use crate::common::{T, electop::command};
use crate::deposed;
use crate::participants::Participant;
use crate::scenarios::{Expect, changes, each_list, lists, settle, two_nodes};
use crate::stores::{Cell, Kind, names};
use crate::views::{Change, Observers, View, dump, find_election};

/// `electop <args> --yes` on the cell's source, stdin closed (as a script runs it).
pub fn admin(cell: &Cell, args: &[&str]) -> Output {
    command(cell.home())
        .args(&cell.source)
        .args(args)
        .arg("--yes")
        .stdin(Stdio::null())
        .output()
        .expect("run electop's admin verb")
}

fn said(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    )
}

/// (7) An operator's `reelect`: the holder is removed (or its session ended); every
/// running view says the change was forced, and a `serve` and a `watch` started after it
/// show the same leader.
pub fn reelect(kind: Kind) {
    let cell = Cell::new(kind, "reelect", 7);
    let mut obs = Observers::start(&cell, &cell.source, true);
    let (_a, _b, ia, _) = two_nodes(&cell, &mut obs);
    let out = admin(&cell, &["reelect", &cell.election]);
    assert!(out.status.success(), "{kind:?}: reelect: {}", said(&out));
    let leader = reelected(&mut obs, &cell, &ia);
    // Only serve's API replays what came before a view started, so the leader is compared.
    let mut later = Observers::start(&cell, &cell.source, true);
    crate::common::wait_for("a serve and watch started after agree", T, || {
        let views = later.read(&cell);
        match views.iter().all(|v| v.leader == leader) {
            true => Ok(()),
            false => Err(dump(&views)),
        }
    });
}

/// Every running view says `from`'s tenure ended `forced_reelection`; the leader after.
fn reelected(obs: &mut Observers, cell: &Cell, from: &str) -> Option<String> {
    let cause = "forced_reelection";
    let leader = forced_then_led(obs, cell, from, cause);
    let views = settle(obs, cell, leader.as_deref());
    each_list(
        cell.kind,
        &views,
        "node-a's tenure ended by the re-election",
        |after| {
            after[0].cause.as_deref() == Some(cause)
                && after[0].from.as_deref().is_some_and(|f| names(f, from))
        },
    );
    leader
}

/// (9) What views started after a `reelect` say of it: a `serve` started at once shows
/// the deposed holder (where it lives on unaware, with its alarm and
/// `electop_election_deposed_holders`); once the running views agree, a later `status` and
/// another fresh `serve` show it too, and the change with the dashboard's cause where the
/// history is kept.
pub fn reelect_later(kind: Kind) {
    let cell = Cell::new(kind, "reelect-later", 9);
    let mut obs = Observers::start(&cell, &cell.source, true);
    let (_nodes, ia) = holder_and_follower(&cell, &mut obs);
    let out = admin(&cell, &["reelect", &cell.election]);
    assert!(out.status.success(), "{kind:?}: reelect: {}", said(&out));
    let cause = "forced_reelection";
    // Started at once: a Redis holder is deposed only while its PX runs.
    let at_once = Observers::start(&cell, &cell.source, true);
    deposed::in_fresh_serve(&cell, &at_once, "started at once", &ia, None);
    reelected(&mut obs, &cell, &ia);
    deposed::in_later_status(&cell, &ia, cause);
    let after = Observers::start(&cell, &cell.source, true);
    deposed::in_fresh_serve(&cell, &after, "started after", &ia, Some(cause));
}

/// (9b) A `serve` started at once after a `reelect`, before the running electop has
/// learnt the action from the audit log and written its label to the journal: once the
/// running views agree, it too tells the change `forced_reelection` (it read the action
/// from the audit log when it started: it shows the holder deposed from it).
pub fn reelect_early_serve(kind: Kind) {
    let cell = Cell::new(kind, "reelect-early", 12);
    let mut obs = Observers::start(&cell, &cell.source, true);
    let (_nodes, ia) = holder_and_follower(&cell, &mut obs);
    let out = admin(&cell, &["reelect", &cell.election]);
    assert!(out.status.success(), "{kind:?}: reelect: {}", said(&out));
    let at_once = Observers::start(&cell, &cell.source, true);
    reelected(&mut obs, &cell, &ia);
    let cause = Some("forced_reelection");
    deposed::in_fresh_serve(&cell, &at_once, "started at once", &ia, cause);
}

/// A leader and a follower; the leader's id. On Redis the leader is a lock a client took
/// for a minute (`SET NX PX 60000`, as redis-py's `Lock` does), so that once removed it is
/// deposed for long enough to be seen by views started after.
fn holder_and_follower(cell: &Cell, obs: &mut Observers) -> (Vec<Participant>, String) {
    if !matches!(cell.kind, Kind::redis_events | Kind::redis_poll) {
        let (a, b, ia, _) = two_nodes(cell, obs);
        return (vec![a, b], ia);
    }
    crate::stores::Writer::new(cell).acquire("node-a");
    settle(obs, cell, Some("node-a"));
    let mut b = cell.participant("node-b");
    b.wait_follower(T);
    settle(obs, cell, Some("node-a"));
    (vec![b], "node-a".to_string())
}

/// Waits until every view lists a change from `from` told with `cause`, and serve a
/// leader elected after it (the participants campaign again); returns that leader's id.
fn forced_then_led(obs: &mut Observers, cell: &Cell, from: &str, cause: &str) -> Option<String> {
    let forced = |list: &[Change]| {
        list.iter().skip(1).any(|c| {
            c.cause.as_deref() == Some(cause) && c.from.as_deref().is_some_and(|f| names(f, from))
        })
    };
    crate::common::wait_for(
        &format!("every view says {cause} and who leads after"),
        T,
        || {
            let views = obs.read(cell);
            let last = changes(&views).last().cloned();
            match (lists(&views).iter().all(|(_, l)| forced(l)), last) {
                (true, Some(last)) if last.to.is_some() => Ok(last.to),
                _ => Err(dump(&views)),
            }
        },
    )
}

/// What `force-leader` can do in each store.
pub fn force_expect(kind: Kind) -> Expect {
    match kind {
        Kind::redis_events | Kind::redis_poll => Expect::Limit(
            "force-leader is unavailable on Redis: a lock has no line of candidates, and \
             electop cannot take",
        ),
        _ => Expect::Pass,
    }
}

/// The id the store lists `shown` under in the election's candidates, as force-leader
/// takes it (a session-lock scheme's line names sessions).
fn candidate_id(cell: &Cell, views: &[View], shown: &str) -> String {
    let out = command(cell.home())
        .args(&cell.source)
        .args(["status", "--json"])
        .output()
        .expect("run electop status");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    let e = find_election(&doc, &cell.election);
    e.and_then(|e| e["candidates"].as_array())
        .into_iter()
        .flatten()
        .filter_map(|c| c["id"].as_str())
        .find(|id| names(id, shown))
        .map(String::from)
        .unwrap_or_else(|| {
            panic!(
                "{:?}: {shown} is not in line: {doc:#}\n{}",
                cell.kind,
                dump(views)
            )
        })
}

/// (10) `force-leader` of the candidate in line: every view says the holder's tenure ended
/// `forced_leader` and that candidate leads; where the store cannot force one (Redis: no
/// line, and a token is its client's own), the verb refuses, says why, and nothing changes.
pub fn force_leader(kind: Kind) {
    let cell = Cell::new(kind, "force", 10);
    let mut obs = Observers::start(&cell, &cell.source, true);
    let (_a, _b, ia, ib) = two_nodes(&cell, &mut obs);
    let views = settle(&mut obs, &cell, Some(&ia));
    let mut args = vec!["force-leader", &cell.election];
    let target = match kind {
        Kind::redis_events | Kind::redis_poll => ib.clone(),
        // A SQL row names its holder only: a candidate waiting is nowhere in the store.
        k if !k.has_line() => {
            args.push("--allow-unseen");
            ib.clone()
        }
        _ => candidate_id(&cell, &views, &ib),
    };
    args.push(&target);
    let out = admin(&cell, &args);
    if let Expect::Limit(why) = force_expect(kind) {
        assert!(
            !out.status.success() && said(&out).contains(why),
            "{kind:?}: force-leader refuses ({why}): {}: {}",
            out.status,
            said(&out)
        );
        let views = settle(&mut obs, &cell, Some(&ia));
        assert_eq!(changes(&views).len(), 1, "{kind:?}: nothing changed");
        return;
    }
    assert!(
        out.status.success(),
        "{kind:?}: force-leader: {}",
        said(&out)
    );
    let leader = forced_then_led(&mut obs, &cell, &ia, "forced_leader");
    assert!(
        leader.as_deref().is_some_and(|l| names(l, &ib)),
        "{kind:?}: {ib} leads after force-leader, not {leader:?}"
    );
    let views = settle(&mut obs, &cell, leader.as_deref());
    each_list(
        kind,
        &views,
        "node-a's tenure ended forced_leader, node-b led next",
        |after| {
            let first_led = after.iter().find_map(|c| c.to.as_deref());
            after[0].cause.as_deref() == Some("forced_leader")
                && after[0].from.as_deref().is_some_and(|f| names(f, &ia))
                && first_led.is_some_and(|l| names(l, &ib))
        },
    );
    println!("{kind:?}: force-leader: {:?}", &changes(&views)[1..]);
}
