//! Every view of one election, read the same moment: `status --json`, the `status` table,
//! a `watch --json` running through the scenario, `serve`'s `/api/v1/elections`,
//! `/api/v1/events` and `/metrics`. `agree` compares what they say.

use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use serde_json::Value;

use crate::common::electop::{Watch, command};
use crate::common::{T, http, process};
use crate::stores::Cell;

/// `status`'s wait for the stores in the views read again and again (all local: they
/// answer in ms); a closed source's wait is checked once, in `other_source_down`.
const STATUS_TIMEOUT: &str = "2s";

/// A leader change as a view tells it: who led, who leads (none: no leader), and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    pub from: Option<String>,
    pub to: Option<String>,
    pub cause: Option<String>,
}

/// What one view says of the election.
#[derive(Clone, Debug)]
pub struct View {
    pub name: &'static str,
    pub leader: Option<String>,
    /// The changes since the observers started, where the view lists them.
    pub changes: Option<Vec<Change>>,
}

/// `electop serve` (stopped when dropped) and its event stream, and a `watch --json`,
/// started before anything happens in the election.
pub struct Observers {
    pub watch: Watch,
    serve: Serve,
    pub addr: String,
    events: Receiver<String>,
    pub api_events: Vec<Value>,
    /// The flags they were started with (the cell's, or through a proxy, or with more).
    pub source: Vec<String>,
    pub election: String,
    /// `status --timeout` in every read (`STATUS_TIMEOUT` unless a scenario needs more).
    pub status_timeout: &'static str,
}

impl Observers {
    /// Started on `source`; `all_up`: every source is expected to be read, so serve
    /// says it is ready (`/readyz`), else only that it runs (`/healthz`).
    pub fn start(cell: &Cell, source: &[String], all_up: bool) -> Observers {
        let src: Vec<&str> = source.iter().map(String::as_str).collect();
        let addr = format!("127.0.0.1:{}", crate::common::free_port());
        // Owned before anything can fail, so a failing start stops it too.
        let serve = Serve(
            command(cell.home())
                .args(&src)
                .args(["serve", "--listen", &addr])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn electop serve"),
        );
        let mut watch = Watch::start(cell.home(), &src);
        let probe = if all_up { "/readyz" } else { "/healthz" };
        crate::common::wait_until(&format!("serve answers {probe}"), T, || {
            std::net::TcpStream::connect(&addr).is_ok() && http::request(&addr, probe, &[]).0 == 200
        });
        if !all_up {
            // Not ready while the other source is down: ready enough once the cell's own
            // source is read, or serve would first read the election after it changed.
            crate::common::wait_until("serve reads the cell's source", T, || {
                let (_, body) = http::request(&addr, "/metrics", &[]);
                body.lines().any(|l| {
                    l.starts_with("electop_source_up{")
                        && (l.ends_with(" 1") || l.ends_with(" 1.0"))
                })
            });
        }
        watch.wait_synced(1);
        let events = http::lines(&addr, "/api/v1/events");
        Observers {
            watch,
            serve,
            addr,
            events,
            api_events: Vec::new(),
            source: source.to_vec(),
            election: cell.election.clone(),
            status_timeout: STATUS_TIMEOUT,
        }
    }

    /// Every view's reading now.
    pub fn read(&mut self, cell: &Cell) -> Vec<View> {
        let src: Vec<&str> = self.source.iter().map(String::as_str).collect();
        let (home, e, t) = (cell.home(), &self.election, self.status_timeout);
        let mut views = vec![
            status_json_view(home, &src, e, t),
            status_table_view(home, &src, e, t),
        ];
        views.extend(self.read_running());
        views
    }

    /// The views of the running processes (watch and serve) now: no process started, so
    /// quick.
    pub fn read_running(&mut self) -> Vec<View> {
        while let Ok(l) = self.events.try_recv() {
            if let Ok(v) = serde_json::from_str::<Value>(&l) {
                self.api_events.push(v);
            }
        }
        self.watch.pump();
        let e = &self.election;
        let mut views = vec![lines_view("watch --json", &self.watch.seen, e)];
        views.push(lines_view("/api/v1/events", &self.api_events, e));
        views.push(api_view(&self.addr, e));
        views.push(metrics_view(&self.addr, e));
        views
    }

    /// The process ids of `serve` and `watch`.
    pub fn pids(&self) -> (u32, u32) {
        (self.serve.0.id(), self.watch.pid())
    }

    /// A new `watch --json` in place of the running one (nothing happened yet, so it lists
    /// the same changes).
    pub fn restart_watch(&mut self, cell: &Cell) {
        let src: Vec<&str> = self.source.iter().map(String::as_str).collect();
        self.watch = Watch::start(cell.home(), &src);
        self.watch.wait_synced(1);
    }

    /// The body of `/metrics`.
    pub fn metrics(&self) -> String {
        let (code, body) = http::request(&self.addr, "/metrics", &[]);
        assert_eq!(code, 200, "{body}");
        body
    }
}

/// `electop serve`, stopped (SIGTERM, then SIGKILL) when dropped.
struct Serve(Child);

impl Drop for Serve {
    fn drop(&mut self) {
        process::terminate(&mut self.0, "-TERM", Duration::from_secs(3));
    }
}

/// `status --json --timeout <timeout>`.
pub fn status_json_view(home: &Path, src: &[&str], election: &str, timeout: &str) -> View {
    let out = command(home)
        .args(src)
        .args(["status", "--json", "--timeout", timeout])
        .output()
        .expect("run electop status --json");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    View {
        name: "status --json",
        leader: find_election(&doc, election).and_then(|e| leader_id(&e["leader"])),
        changes: None,
    }
}

/// The status table's LEADER column on the election's row ("-" or "none since …": none;
/// no table: none).
pub fn status_table_view(home: &Path, src: &[&str], election: &str, timeout: &str) -> View {
    let out = command(home)
        .args(src)
        .args(["status", "--timeout", timeout])
        .output()
        .expect("run electop status");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut rows = text.lines();
    let head: Vec<&str> = rows.next().unwrap_or_default().split_whitespace().collect();
    let cols = (!head.is_empty()).then(|| (col(&head, "ELECTION"), col(&head, "LEADER")));
    let (e_col, l_col) = cols.unwrap_or((usize::MAX, usize::MAX));
    let leader = rows
        .map(|r| r.split_whitespace().collect::<Vec<_>>())
        .find(|r| r.get(e_col).is_some_and(|e| *e == election))
        .and_then(|r| r.get(l_col).map(|l| l.to_string()))
        // "none since 14:05:09": no leader, and since when.
        .filter(|l| l != "-" && l != "none");
    View {
        name: "status (table)",
        leader,
        changes: None,
    }
}

fn col(head: &[&str], name: &str) -> usize {
    head.iter()
        .position(|h| *h == name)
        .unwrap_or_else(|| panic!("no {name} column in the status table: {head:?}"))
}

pub fn find_election<'a>(doc: &'a Value, name: &str) -> Option<&'a Value> {
    doc["elections"]
        .as_array()?
        .iter()
        .find(|e| e["name"] == name)
}

fn leader_id(leader: &Value) -> Option<String> {
    leader["id"].as_str().map(String::from)
}

fn opt(v: &Value) -> Option<String> {
    v.as_str().map(String::from)
}

/// The changes of a line stream (watch, /api/v1/events) for `election`, and the leader
/// they leave: the last `current`, `leader_*` line says it.
fn lines_view(name: &'static str, lines: &[Value], election: &str) -> View {
    let mut leader = None;
    let mut changes = Vec::new();
    for v in lines.iter().filter(|v| v["election"] == election) {
        let kind = v["kind"].as_str().unwrap_or_default();
        if kind == "current" {
            leader = opt(&v["to"]);
        } else if kind == "attributed" {
            // A stream cannot take back a line: an earlier change found forced is told by
            // `attributed`, with the cause the store gave it (`was`). Its newest change
            // with that cause and these holders is the one it names.
            let named = changes.iter_mut().rev().find(|c: &&mut Change| {
                c.from == opt(&v["from"]) && c.to == opt(&v["to"]) && c.cause == opt(&v["was"])
            });
            if let Some(c) = named {
                c.cause = opt(&v["cause"]);
            }
        } else if kind.starts_with("leader_") {
            leader = opt(&v["to"]);
            changes.push(Change {
                from: opt(&v["from"]),
                to: opt(&v["to"]),
                cause: opt(&v["cause"]),
            });
        }
    }
    View {
        name,
        leader,
        changes: Some(changes),
    }
}

fn api_view(addr: &str, election: &str) -> View {
    let (code, body) = http::request(addr, "/api/v1/elections", &[]);
    let doc: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let e = find_election(&doc, election).filter(|_| code == 200);
    let changes = e.and_then(|e| e["history"].as_array()).map(|h| {
        h.iter()
            .map(|c| Change {
                from: opt(&c["from"]),
                to: opt(&c["to"]),
                cause: opt(&c["cause"]),
            })
            .collect()
    });
    View {
        name: "/api/v1/elections",
        leader: e.and_then(|e| leader_id(&e["leader"])),
        changes,
    }
}

/// `/metrics`: the holder of `electop_election_leader_info` (none when has_leader is 0);
/// its changes only as counts by cause, which `agree` compares separately.
fn metrics_view(addr: &str, election: &str) -> View {
    let (_, body) = http::request(addr, "/metrics", &[]);
    let label = format!("election=\"{}\"", election);
    let has = body
        .lines()
        .find(|l| l.starts_with("electop_election_has_leader{") && l.contains(&label))
        .is_some_and(|l| l.ends_with(" 1.0") || l.ends_with(" 1"));
    let holder = body
        .lines()
        .filter(|l| l.starts_with("electop_election_leader_info{") && l.contains(&label))
        .filter(|l| l.ends_with(" 1"))
        .find_map(|l| label_value(l, "holder"));
    View {
        name: "/metrics",
        leader: if has { holder } else { None },
        changes: None,
    }
}

/// The value of `name="..."` in a series' labels.
pub fn label_value(series: &str, name: &str) -> Option<String> {
    let start = series.find(&format!("{name}=\""))? + name.len() + 2;
    let rest = &series[start..];
    Some(rest[..rest.find('"')?].to_string())
}

/// `electop_election_leader_changes_total` of the election, by cause.
pub fn changes_by_cause(metrics: &str, election: &str) -> Vec<(String, u64)> {
    let label = format!("election=\"{}\"", election);
    let mut counts: Vec<(String, u64)> = metrics
        .lines()
        .filter(|l| l.starts_with("electop_election_leader_changes_total{"))
        .filter(|l| l.contains(&label))
        .filter_map(|l| {
            let n = l.rsplit(' ').next()?.parse::<f64>().ok()? as u64;
            Some((label_value(l, "cause")?, n))
        })
        .collect();
    counts.sort();
    counts
}

/// Whether every view says the same: one leader, one list of changes (where a view
/// lists them), and `/metrics`' counts by cause those of the list. Err says who differs.
/// `strict` false (a polled store): each process polls on its own, so `watch` may see a
/// step `serve` did not (the store's documented limit); then only the views of one
/// process (serve's API, events and metrics) must list the same changes.
/// How closely the views of two processes must agree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Agreement {
    /// Every view lists the same changes, causes included.
    Exact,
    /// A polled store: each process polls on its own; only one process's views must agree.
    PerProcess,
    /// The same changes in the same order everywhere; the causes only within one process
    /// (etcd does not say whether a key went by its holder's delete or its lease's end:
    /// each process asks the lease afterwards).
    CauseMayDiffer,
}

fn without_causes(c: &[Change]) -> Vec<(Option<String>, Option<String>)> {
    c.iter().map(|c| (c.from.clone(), c.to.clone())).collect()
}

pub fn agree(
    views: &[View],
    metrics_counts: &[(String, u64)],
    how: Agreement,
) -> Result<(), String> {
    if how == Agreement::CauseMayDiffer {
        let mut lists = views
            .iter()
            .filter_map(|v| Some((v.name, v.changes.as_ref()?)));
        if let Some((first, changes)) = lists.next()
            && let Some((name, other)) =
                lists.find(|(_, c)| without_causes(c) != without_causes(changes))
        {
            return Err(format!("{first} lists {changes:?}, {name} {other:?}"));
        }
    }
    let strict = how == Agreement::Exact;
    let leader = &views[0].leader;
    if let Some(v) = views.iter().find(|v| &v.leader != leader) {
        return Err(format!(
            "{} shows leader {:?}, {} {:?}",
            views[0].name, leader, v.name, v.leader
        ));
    }
    let mut lists = views
        .iter()
        .filter(|v| strict || v.name.starts_with('/'))
        .filter_map(|v| Some((v.name, v.changes.as_ref()?)));
    let Some((first, changes)) = lists.next() else {
        return Ok(());
    };
    if let Some((name, other)) = lists.find(|(_, c)| c != &changes) {
        return Err(format!("{first} lists {changes:?}, {name} {other:?}"));
    }
    let mut counts: Vec<(String, u64)> = Vec::new();
    for c in changes {
        let cause = c.cause.clone().unwrap_or_else(|| "unknown".into());
        match counts.iter_mut().find(|(k, _)| *k == cause) {
            Some((_, n)) => *n += 1,
            None => counts.push((cause, 1)),
        }
    }
    counts.sort();
    if counts != metrics_counts {
        return Err(format!(
            "{first} lists {changes:?}, /metrics counts {metrics_counts:?}"
        ));
    }
    Ok(())
}

pub fn dump(views: &[View]) -> String {
    views
        .iter()
        .map(|v| {
            format!(
                "  {}: leader {:?}, changes {:?}",
                v.name, v.leader, v.changes
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Each source's connection markers in a line stream alternate once it first connected:
/// never two `connected` without a `disconnected` between, nor two `disconnected`. (What
/// a source says before it first connects is its start; a source that never connects is
/// not checked here.)
pub fn markers_alternate(seen: &[Value]) -> Result<(), String> {
    let mut last: Vec<(String, String)> = Vec::new();
    for (i, v) in seen.iter().enumerate() {
        let kind = v["kind"].as_str().unwrap_or_default();
        if kind != "connected" && kind != "disconnected" {
            continue;
        }
        let src = v["source_id"].as_str().unwrap_or_default().to_string();
        match last.iter_mut().find(|(s, _)| *s == src) {
            None if kind == "connected" => last.push((src, kind.to_string())),
            None => {}
            Some((_, prev)) if prev == kind => {
                return Err(format!("{src}: {kind} twice in a row (line {i}): {v}"));
            }
            Some((_, prev)) => *prev = kind.to_string(),
        }
    }
    Ok(())
}
