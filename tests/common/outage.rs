//! What a later `electop history` says of an outage an earlier `watch` saw: the timeline's
//! marks read back from the journal (`history_live`, `marks_live`).

use std::path::Path;
use std::time::{Duration, SystemTime};

use serde_json::Value;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::electop::command;

/// A process starting, a busy machine: on top of every bound.
const SLACK: Duration = Duration::from_millis(1500);

fn wall(v: &Value) -> SystemTime {
    let text = v.as_str().unwrap_or_else(|| panic!("a time: {v}"));
    OffsetDateTime::parse(text, &Rfc3339)
        .unwrap_or_else(|e| panic!("{text}: {e}"))
        .into()
}

fn within(what: &str, at: SystemTime, lo: SystemTime, hi: SystemTime) {
    assert!(
        lo <= at && at <= hi,
        "{what}: {at:?} not within {lo:?}..{hi:?}"
    );
}

/// `electop history jobs --json` (and the table) after the watch: the one outage of the
/// source, from about `frozen` (its last answer before, `before` at most earlier) to about
/// `resumed` (its first after, `after` at most later). Returns the outage as printed.
pub fn in_a_later_history(
    home: &Path,
    source: &[&str],
    (frozen, before): (SystemTime, Duration),
    (resumed, after): (SystemTime, Duration),
) -> Value {
    let out = command(home)
        .args(source)
        .args(["history", "jobs", "--json", "--since", "10m"])
        .output()
        .expect("run electop history");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let e = &doc["elections"][0];
    let [o] = e["outages"].as_array().expect("outages").as_slice() else {
        let journal = super::electop::history_records(home, "");
        panic!("one outage: {e:#}\njournal: {journal:?}")
    };
    within(
        "outage start",
        wall(&o["start"]),
        frozen - before - SLACK,
        frozen + SLACK,
    );
    within(
        "outage end",
        wall(&o["end"]),
        resumed,
        resumed + after + SLACK,
    );
    let out = command(home)
        .args(source)
        .args(["history", "jobs", "--since", "10m"])
        .output()
        .expect("run electop history");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("  source "), "the table says it: {text}");
    o.clone()
}
