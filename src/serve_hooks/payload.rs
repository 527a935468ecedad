//! An event made ready for the hooks: the JSON line every hook gets and the environment the
//! command gets, made once and shared by all hooks (one `Arc`), not rebuilt per hook.

use std::sync::OnceLock;

use serde_json::Value;

use crate::model::{Event, time};

/// The variables a `--on-change` command gets, like `etcdctl watch -- CMD` sets
/// `ETCD_WATCH_*`, and the JSON field each comes from. `ELECTOP_SOURCE` is the source's short
/// handle (`etcd1`, `sql1`, the `source` label of the metrics); the long name stays in the
/// JSON.
const ENV: [(&str, &[&str]); 7] = [
    ("ELECTOP_KIND", &["kind"]),
    ("ELECTOP_SOURCE", &["source_id", "source"]),
    ("ELECTOP_ELECTION", &["election"]),
    ("ELECTOP_FROM", &["from"]),
    ("ELECTOP_TO", &["to"]),
    ("ELECTOP_CAUSE", &["cause"]),
    ("ELECTOP_AT", &["at"]),
];

/// One event for the hooks. `send` runs on the observer's path, so it only stores what it
/// was given; the JSON line and the variables are made once, by the first hook task to need
/// them, and shared by the others.
#[derive(Debug)]
pub(super) struct Payload {
    raw: Raw,
    ready: OnceLock<Ready>,
}

#[derive(Debug)]
enum Raw {
    Value(Value),
    Event { event: Event, source_id: String },
}

#[derive(Debug)]
struct Ready {
    /// One line of JSON, no newline: the command's stdin (with a newline) and the POST body.
    json: String,
    /// Every variable of [`ENV`], empty when the event has no such field.
    env: Vec<(&'static str, String)>,
}

impl Payload {
    pub(super) fn from_value(v: Value) -> Payload {
        Payload {
            raw: Raw::Value(v),
            ready: OnceLock::new(),
        }
    }

    pub(super) fn from_event(event: &Event, source_id: &str) -> Payload {
        Payload {
            raw: Raw::Event {
                event: event.clone(),
                source_id: source_id.to_string(),
            },
            ready: OnceLock::new(),
        }
    }

    pub(super) fn json(&self) -> &str {
        &self.ready().json
    }

    pub(super) fn env(&self) -> &[(&'static str, String)] {
        &self.ready().env
    }

    fn ready(&self) -> &Ready {
        self.ready.get_or_init(|| match &self.raw {
            Raw::Value(v) => Ready {
                json: v.to_string(),
                env: ENV
                    .iter()
                    .map(|(name, fields)| (*name, env_value(v, fields)))
                    .collect(),
            },
            Raw::Event { event, source_id } => ready_event(event, source_id),
        })
    }

    /// `leader_changed etcd1/jobs`: which event, for the logs.
    pub(super) fn describe(&self) -> String {
        let var = |name: &str| {
            self.env()
                .iter()
                .find(|(n, _)| *n == name)
                .map_or("", |(_, v)| v.as_str())
        };
        let mut text = format!("{} {}", var("ELECTOP_KIND"), var("ELECTOP_SOURCE"));
        let election = var("ELECTOP_ELECTION");
        if !election.is_empty() {
            text.push('/');
            text.push_str(election);
        }
        text
    }
}

/// The line exactly as `watch --json` prints it, field order included, and the variables
/// from the event's fields directly (parsing the line back would be wasted work).
fn ready_event(event: &Event, source_id: &str) -> Ready {
    let json = serde_json::to_string(&EventJson { event, source_id })
        .unwrap_or_else(|_| String::from("{}"));
    let text = |s: &Option<String>| s.as_deref().unwrap_or_default().replace('\0', "");
    let kind = match serde_json::to_value(event.kind) {
        Ok(Value::String(k)) => k,
        _ => String::new(),
    };
    let values = [
        kind,
        source_id.replace('\0', ""),
        text(&event.election),
        text(&event.from),
        text(&event.to),
        event
            .cause
            .map(|c| c.as_str().to_string())
            .unwrap_or_default(),
        event.at.map(time::rfc3339).unwrap_or_default(),
    ];
    let env = ENV.iter().map(|(name, _)| *name).zip(values).collect();
    Ready { json, env }
}

/// The first of `fields` present as a string or number. A NUL cannot be passed in an
/// environment variable (spawning would fail), so it is dropped rather than losing the run.
fn env_value(v: &Value, fields: &[&str]) -> String {
    let text = fields.iter().find_map(|f| match v.get(f)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    });
    text.unwrap_or_default().replace('\0', "")
}

/// An event as `watch --json` prints it: the event with the source's handle beside its name.
/// The same shape as `commands::watch`'s, which this layer cannot reach; a test below holds
/// the two outputs together through the public [`Event`] serialization.
#[derive(serde::Serialize)]
struct EventJson<'a> {
    #[serde(flatten)]
    event: &'a Event,
    source_id: &'a str,
}

/// The `watch --json` line for `event` as a JSON value, for [`super::Hooks::send`]. (A
/// `Value` keeps its keys sorted; [`super::Hooks::send_event`] keeps `watch --json`'s order.)
pub fn event_json(event: &Event, source_id: &str) -> Value {
    serde_json::to_value(EventJson { event, source_id }).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Cause, EventKind};
    use std::time::{Duration, SystemTime};

    fn change() -> Event {
        Event {
            at: Some(SystemTime::UNIX_EPOCH + Duration::from_millis(1_795_000_062_345)),
            source: "etcd 127.0.0.1:2379 /e/".into(),
            election: Some("jobs".into()),
            kind: EventKind::LeaderChanged,
            from: Some("node-a".into()),
            to: Some("node-b".into()),
            cause: Some(Cause::LeaseExpired),
            was: None,
            revision: Some(12),
            replayed: false,
            detail: None,
        }
    }

    fn env<'a>(p: &'a Payload, name: &str) -> &'a str {
        p.env()
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
            .unwrap_or("<unset>")
    }

    #[test]
    fn the_line_is_the_event_with_its_source_handle_as_watch_json_prints_it() {
        let e = change();
        let p = Payload::from_event(&e, "etcd1");
        // The event's own serialization, then `source_id`: what `watch --json` writes.
        let own = serde_json::to_string(&e).expect("event json");
        let expected = format!("{},\"source_id\":\"etcd1\"}}", own.trim_end_matches('}'));
        assert_eq!(p.json(), expected);
        assert_eq!(
            serde_json::from_str::<Value>(p.json()).expect("json"),
            event_json(&e, "etcd1")
        );
    }

    #[test]
    fn the_environment_names_the_change_and_is_empty_where_the_event_says_nothing() {
        let p = Payload::from_event(&change(), "etcd1");
        assert_eq!(env(&p, "ELECTOP_KIND"), "leader_changed");
        assert_eq!(env(&p, "ELECTOP_SOURCE"), "etcd1");
        assert_eq!(env(&p, "ELECTOP_ELECTION"), "jobs");
        assert_eq!(env(&p, "ELECTOP_FROM"), "node-a");
        assert_eq!(env(&p, "ELECTOP_TO"), "node-b");
        assert_eq!(env(&p, "ELECTOP_CAUSE"), "lease_expired");
        assert!(env(&p, "ELECTOP_AT").starts_with("2026-"), "{:?}", p.env());

        let mut lost = change();
        lost.kind = EventKind::LeaderLost;
        lost.to = None;
        lost.cause = None;
        lost.at = None;
        let p = Payload::from_value(event_json(&lost, "etcd1"));
        assert_eq!(env(&p, "ELECTOP_TO"), "");
        assert_eq!(env(&p, "ELECTOP_CAUSE"), "");
        assert_eq!(env(&p, "ELECTOP_AT"), "");
        assert_eq!(env(&p, "ELECTOP_KIND"), "leader_lost");
    }
}
