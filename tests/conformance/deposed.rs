//! What a view started after a `reelect` says of it (9): the deposed holder (a holder
//! removed whose lease or session lives on, who may still believe it leads) with its alarm
//! and `electop_election_deposed_holders`, and the change told with the dashboard's cause,
//! in a `serve` started after the change and in a later `status`.

use serde_json::Value;

use crate::common::{T, electop::command, http};
use crate::stores::{Cell, Kind, names};
use crate::views::{Observers, find_election};

/// Whether the holder a `reelect` removes lives on unaware: a Redis lock's client (its
/// token's PX runs on) and kazoo's `Election` (its session lives, and it fires nothing).
/// `electop node` on etcd and ZooKeeper sees its key or node go and campaigns again; the
/// etcd election's hold and a session lock's end take the holder's lease or session.
pub fn deposed_expected(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::redis_events | Kind::redis_poll | Kind::zookeeper_kazoo
    )
}

/// What is wrong with one election's JSON (`status --json`, `/api/v1/elections`) after
/// `from` was removed by a re-election, or Ok; `cause`: the history is checked too.
fn judge(kind: Kind, e: &Value, from: &str, cause: Option<&str>) -> Result<(), String> {
    let deposed = e["deposed"]["id"].as_str();
    let alarmed = e["alarms"]
        .as_array()
        .is_some_and(|a| a.iter().any(|x| x == "deposed"));
    match deposed_expected(kind) {
        true if !deposed.is_some_and(|d| names(d, from)) || !alarmed => {
            return Err(format!("{from} deposed, with its alarm"));
        }
        false if deposed.is_some() || alarmed => return Err("nobody deposed".into()),
        _ => {}
    }
    let Some(cause) = cause else { return Ok(()) };
    let told = e["history"].as_array().is_some_and(|h| {
        h.iter()
            .any(|c| c["cause"] == cause && c["from"].as_str().is_some_and(|f| names(f, from)))
    });
    // Every store keeps its history: etcd replays its revisions, the others read their
    // journal back (and label it with the audit log's actions read at start).
    match told {
        false => Err(format!("the change from {from} told {cause}")),
        true => Ok(()),
    }
}

/// `electop_election_deposed_holders` of the election: its sample, none when not raised.
fn deposed_gauge(metrics: &str, election: &str) -> Option<String> {
    let label = format!("election=\"{election}\"");
    metrics
        .lines()
        .find(|l| l.starts_with("electop_election_deposed_holders{") && l.contains(&label))
        .and_then(|l| l.rsplit(' ').next())
        .map(String::from)
}

/// A `serve` started after the change: its `/api/v1/elections` and `/metrics` say it, as
/// `judge` wants, within `T` (it reads the store and the audit log first).
pub fn in_fresh_serve(
    cell: &Cell,
    later: &Observers,
    which: &str,
    from: &str,
    cause: Option<&str>,
) {
    let kind = cell.kind;
    let what = match cause {
        None => format!("a serve {which} says the deposed holder"),
        Some(c) => format!("a serve {which} says the deposed holder and {c}"),
    };
    crate::common::wait_for(&what, T, || {
        let (_, body) = http::request(&later.addr, "/api/v1/elections", &[]);
        let doc: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        let e = find_election(&doc, &cell.election).ok_or_else(|| body.clone())?;
        let (_, m) = http::request(&later.addr, "/metrics", &[]);
        let gauge = deposed_gauge(&m, &cell.election);
        let want = deposed_expected(kind).then(|| "1".to_string());
        let gauge_ok = gauge.as_deref().map(|g| g.trim_end_matches(".0")) == want.as_deref();
        match judge(kind, e, from, cause) {
            Ok(()) if gauge_ok => Ok(()),
            Ok(()) => Err(format!("{kind:?}: deposed_holders {gauge:?}, not {want:?}")),
            Err(why) => Err(format!("{kind:?}: /api/v1/elections: {why}: {e:#}")),
        }
    });
}

/// A `status --json --history` run after the change says it as `judge` wants.
pub fn in_later_status(cell: &Cell, from: &str, cause: &str) {
    let kind = cell.kind;
    let what = format!("a later status says the deposed holder and {cause}");
    crate::common::wait_for(&what, T, || {
        let out = command(cell.home())
            .args(&cell.source)
            .args(["status", "--json", "--history"])
            .output()
            .expect("run electop status");
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        let e = find_election(&doc, &cell.election).ok_or_else(|| doc.to_string())?;
        judge(kind, e, from, Some(cause)).map_err(|why| format!("{kind:?}: status: {why}: {e:#}"))
    });
}
