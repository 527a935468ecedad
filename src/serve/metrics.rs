//! `/metrics`: what the read model holds, as Prometheus series, made at each scrape by a
//! `prometheus-client` collector rather than kept in registered metrics: the elections come
//! and go, and the holder of each lives only on its `_info` series, which a new holder
//! replaces rather than adds to, so the series stay bounded by the elections.

use std::sync::{Arc, RwLock};
use std::time::SystemTime;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;

use super::observer::Observed;
use crate::model::{ConnState, Election};
use crate::state::alarm::Alarm;
use crate::state::{Key, SourceView};

type Labels = Vec<(&'static str, String)>;

/// The registry `/metrics` encodes: electop's collector, with `context` on every series
/// when a context was chosen, so several observers scraped by one Prometheus stay apart.
pub(crate) fn registry(
    observed: Arc<RwLock<Observed>>,
    hooks: HookCounts,
    context: Option<String>,
) -> Registry {
    let labels = context.map(|c| (std::borrow::Cow::Borrowed("context"), c.into()));
    let mut r = Registry::with_labels(labels.into_iter());
    r.register_collector(Box::new(Electop { observed, hooks }));
    r
}

/// Writes the registry in the format asked for: OpenMetrics when the scraper accepts it
/// (Prometheus does), else the classic text format (`promtool check metrics`, curl).
pub(crate) fn encode(registry: &Registry, openmetrics: bool) -> Result<String, std::fmt::Error> {
    let mut out = String::with_capacity(64 * 1024);
    if openmetrics {
        prometheus_client::encoding::text::encode(&mut out, registry)?;
    } else {
        prometheus_client::encoding::prometheus_text::encode(&mut out, registry)?;
    }
    Ok(out)
}

/// The change hooks' runs as `(hook, outcome, count)`, read at each scrape.
pub(crate) type HookCounts = Box<dyn Fn() -> Vec<(&'static str, &'static str, u64)> + Send + Sync>;

struct Electop {
    observed: Arc<RwLock<Observed>>,
    hooks: HookCounts,
}

impl std::fmt::Debug for Electop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Electop")
    }
}

impl Collector for Electop {
    fn encode(&self, mut enc: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let o = self.observed.read().unwrap_or_else(|p| p.into_inner());
        elections(&o, &mut enc)?;
        sources(&o, &mut enc)?;
        let mut m = enc.encode_descriptor(
            "electop_hook_runs",
            "Change hooks run, by hook and outcome (ok, failed, timeout, dropped).",
            None,
            MetricType::Counter,
        )?;
        for (hook, outcome, n) in (self.hooks)() {
            let labels: Labels = vec![("hook", hook.into()), ("outcome", outcome.into())];
            ConstCounter::new(n).encode(m.encode_family(&labels)?)?;
        }
        let m = enc.encode_descriptor(
            "electop_build_info",
            "The electop version serving these metrics.",
            None,
            MetricType::Gauge,
        )?;
        let version: Labels = vec![("version", env!("CARGO_PKG_VERSION").into())];
        let mut m = m;
        ConstGauge::new(1i64).encode(m.encode_family(&version)?)
    }
}

/// A per-election gauge: its name, help, and value (none: no sample).
type PerElection = (
    &'static str,
    &'static str,
    fn(&Observed, &Key, &Election) -> Option<f64>,
);

const ELECTION_GAUGES: &[PerElection] = &[
    (
        "electop_election_has_leader",
        "Whether the election has a leader (1) or not (0).",
        |_, _, e| Some(flag(e.leader.is_some())),
    ),
    (
        "electop_election_leader_ttl_seconds",
        "Time left on the leader's lease or term.",
        |o, k, e| {
            let d = e.leader.as_ref()?.ttl?;
            Some(d.remaining_ms_at(o.model.as_of(k.0)) as f64 / 1000.0)
        },
    ),
    (
        "electop_election_leader_term_seconds",
        "The lease or term the leader was granted.",
        |_, _, e| Some(e.leader.as_ref()?.ttl?.granted_ms as f64 / 1000.0),
    ),
    (
        "electop_election_last_change_age_seconds",
        "Seconds since the last leader change seen live.",
        |o, k, _| {
            let at = o.tallies.get(k)?.last_change?;
            Some(o.model.now.saturating_duration_since(at).as_secs_f64())
        },
    ),
    (
        "electop_election_leaderless_current_seconds",
        "How long the election has been without a leader now (0 while led).",
        |o, k, _| Some(o.leaderless_now(k).as_secs_f64()),
    ),
    (
        "electop_election_candidates_waiting",
        "Candidates in line behind the leader.",
        |_, _, e| e.waiting().map(|n| n as f64),
    ),
    (
        "electop_election_deposed_holders",
        "Holders removed by someone else whose lease or session lives on: they may still believe they lead.",
        |_, _, e| Some(flag(e.deposed.is_some())),
    ),
    (
        "electop_election_zombie",
        "A key that never expires (no lease) blocks the election.",
        |_, _, e| Some(flag(e.has_zombie())),
    ),
    (
        "electop_election_flapping",
        "The leader changes more often than the configured threshold.",
        |o, k, _| {
            Some(flag(
                o.model
                    .alarms(k)
                    .is_some_and(|(a, _)| a.has(Alarm::Flapping)),
            ))
        },
    ),
];

fn flag(b: bool) -> f64 {
    f64::from(u8::from(b))
}

/// Every election's series: the gauges above, the holder's `_info`, and the counters.
fn elections(o: &Observed, enc: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
    let model = &o.model;
    let rows: Vec<(Labels, &Key, &Election)> = model
        .elections
        .iter()
        .map(|(key, e)| {
            let source = model.sources.get(key.0).map(|s| s.info.short.clone());
            let labels = vec![
                ("source", source.unwrap_or_default()),
                ("election", e.name.clone()),
                ("scheme", e.scheme.as_str().to_string()),
            ];
            (labels, key, e)
        })
        .collect();
    for (name, help, value) in ELECTION_GAUGES {
        let mut m = enc.encode_descriptor(name, help, None, MetricType::Gauge)?;
        for (labels, key, e) in &rows {
            if let Some(v) = value(o, key, e) {
                ConstGauge::new(v).encode(m.encode_family(labels)?)?;
            }
        }
    }
    let mut m = enc.encode_descriptor(
        "electop_election_leader_info",
        "The leader's id as the store holds it (1 while it leads; replaced when it changes).",
        None,
        MetricType::Gauge,
    )?;
    for (labels, _, e) in &rows {
        if let Some(l) = &e.leader {
            let with_holder = with(labels, "holder", &l.id);
            ConstGauge::new(1i64).encode(m.encode_family(&with_holder)?)?;
        }
    }
    let mut m = enc.encode_descriptor(
        "electop_election_leader_changes",
        "Leader changes seen live since electop started, by cause.",
        None,
        MetricType::Counter,
    )?;
    for (labels, key, _) in &rows {
        for (cause, n) in o
            .tallies
            .get(*key)
            .map(|t| &t.changes)
            .into_iter()
            .flatten()
        {
            ConstCounter::new(*n).encode(m.encode_family(&with(labels, "cause", cause))?)?;
        }
    }
    let mut m = enc.encode_descriptor(
        "electop_election_leaderless_seconds",
        "All the time seen without a leader since electop started.",
        None,
        MetricType::Counter,
    )?;
    for (labels, key, _) in &rows {
        let total = o.tallies.get(*key).map_or(0.0, |t| t.leaderless_s);
        ConstCounter::new(total).encode(m.encode_family(labels)?)?;
    }
    Ok(())
}

fn with(labels: &Labels, name: &'static str, value: &str) -> Labels {
    let mut l = labels.clone();
    l.push((name, value.to_string()));
    l
}

/// A per-source gauge: its name, help and value (none: no sample).
type PerSource = (
    &'static str,
    &'static str,
    fn(&SourceView, std::time::Instant) -> Option<f64>,
);

const SOURCE_GAUGES: &[PerSource] = &[
    (
        "electop_source_up",
        "Whether the source is read and followed now.",
        |s, now| {
            Some(flag(
                s.conn == ConnState::Connected && s.stale_for(now).is_none(),
            ))
        },
    ),
    (
        "electop_source_idle_is_normal",
        "No leader is this source's resting state (a lock between runs).",
        |s, _| Some(flag(s.info.idle_is_normal)),
    ),
    (
        "electop_source_stale_seconds",
        "Seconds without contact beyond the source's interval (0 when current).",
        |s, now| Some(s.stale_for(now).map_or(0.0, |d| d.as_secs_f64())),
    ),
    (
        "electop_source_last_contact_timestamp_seconds",
        "When the store last answered a read that proves the view current.",
        |s, _| {
            let (_, wall) = s.last_contact?;
            Some(
                wall.duration_since(SystemTime::UNIX_EPOCH)
                    .ok()?
                    .as_secs_f64(),
            )
        },
    ),
    (
        "electop_source_members_up",
        "Members of the cluster that answer (etcd, ZooKeeper).",
        |s, _| (!s.members.is_empty()).then(|| s.members.iter().filter(|m| m.up).count() as f64),
    ),
    (
        "electop_source_members",
        "Members of the cluster (etcd, ZooKeeper).",
        |s, _| (!s.members.is_empty()).then_some(s.members.len() as f64),
    ),
];

fn sources(o: &Observed, enc: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
    let labels = |s: &SourceView| -> Labels {
        let store = match s.info.scheme {
            Some(s) if s.is_zookeeper() => "zookeeper",
            _ if s.info.clustered => "etcd",
            _ => "sql",
        };
        vec![
            ("source", s.info.short.clone()),
            ("store", store.to_string()),
        ]
    };
    for (name, help, value) in SOURCE_GAUGES {
        let mut m = enc.encode_descriptor(name, help, None, MetricType::Gauge)?;
        for s in &o.model.sources {
            if let Some(v) = value(s, o.model.now) {
                ConstGauge::new(v).encode(m.encode_family(&labels(s))?)?;
            }
        }
    }
    let mut m = enc.encode_descriptor(
        "electop_source_errors",
        "Times the source went down, by whether its error lasts (a refused password) or not.",
        None,
        MetricType::Counter,
    )?;
    for (i, s) in o.model.sources.iter().enumerate() {
        for (kind, n) in o.source_errors.get(i).into_iter().flatten() {
            ConstCounter::new(*n).encode(m.encode_family(&with(&labels(s), "kind", kind))?)?;
        }
    }
    Ok(())
}
