//! `/metrics`: what the read model holds, as Prometheus series, made at each scrape rather
//! than kept in registered metrics: the elections come and go, and the holder of each lives
//! only on its `_info` series, which a new holder replaces rather than adds to, so the series
//! stay bounded by the elections. The elections' series are written by [`Series`], which
//! keeps what `prometheus-client` made for each election; the sources', the hooks' and the
//! build's by a `prometheus-client` collector.

use std::sync::{Arc, Mutex, RwLock};
use std::time::SystemTime;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;

use super::observer::Observed;
use super::series::{Format, Series, flag};
use super::sink::{CHUNK, Gzip, Sink, Whole};
use crate::model::ConnState;
use crate::state::SourceView;

type Labels = Vec<(&'static str, String)>;

/// What `/metrics` encodes: the elections' series, then the registry's, with `context` on
/// every series when a context was chosen, so several observers scraped by one Prometheus
/// stay apart.
pub(crate) struct Metrics {
    observed: Arc<RwLock<Observed>>,
    registry: Registry,
    /// Scrapes take turns: each brings the kept labels up to date.
    series: Mutex<Series>,
}

impl Metrics {
    pub(crate) fn new(
        observed: Arc<RwLock<Observed>>,
        hooks: HookCounts,
        context: Option<String>,
    ) -> Metrics {
        let labels = context
            .clone()
            .map(|c| (std::borrow::Cow::Borrowed("context"), c.into()));
        let mut registry = Registry::with_labels(labels.into_iter());
        registry.register_collector(Box::new(Electop {
            observed: Arc::clone(&observed),
            hooks,
        }));
        Metrics {
            observed,
            registry,
            series: Mutex::new(Series::new(context)),
        }
    }

    /// Writes every series in the format asked for: OpenMetrics when the scraper accepts it
    /// (Prometheus does), else the classic text format (`promtool check metrics`, curl).
    pub(crate) fn encode(&self, openmetrics: bool) -> Result<String, std::fmt::Error> {
        let mut series = self.series.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = String::with_capacity(series.last_len + 64 * 1024);
        self.write(&mut series, openmetrics, &mut out, &mut Whole)?;
        series.last_len = out.len();
        Ok(out)
    }

    /// [`Self::encode`] gzipped at `level`, compressed a [`CHUNK`] at a time as it is
    /// written: the text is never whole in memory.
    pub(crate) fn encode_gzip(&self, openmetrics: bool, level: u32) -> std::io::Result<Vec<u8>> {
        let mut series = self.series.lock().unwrap_or_else(|p| p.into_inner());
        let mut sink = Gzip::new(level, series.last_gzip_len);
        let mut out = String::with_capacity(CHUNK + 16 * 1024);
        self.write(&mut series, openmetrics, &mut out, &mut sink)
            .map_err(|_| std::io::Error::other("cannot encode the metrics"))?;
        sink.take(&mut out);
        let body = sink.finish()?;
        series.last_gzip_len = body.len();
        Ok(body)
    }

    /// The elections' series, then the registry's (each handed to `sink` as `out` fills),
    /// with `series` locked by the caller for the whole scrape: scrapes take turns.
    fn write(
        &self,
        series: &mut Series,
        openmetrics: bool,
        out: &mut String,
        sink: &mut dyn Sink,
    ) -> Result<(), std::fmt::Error> {
        let format = if openmetrics {
            Format::OpenMetrics
        } else {
            Format::Text
        };
        {
            let o = self.observed.read().unwrap_or_else(|p| p.into_inner());
            series.write(&o, format, out, sink);
        }
        // The collector takes the read lock again: not while this one is held, which a
        // waiting writer would deadlock.
        if openmetrics {
            prometheus_client::encoding::text::encode(out, &self.registry)
        } else {
            prometheus_client::encoding::prometheus_text::encode(out, &self.registry)
        }
    }
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
        {
            let o = self.observed.read().unwrap_or_else(|p| p.into_inner());
            sources(&o, &mut enc)?;
        }
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
        vec![
            ("source", s.info.short.clone()),
            ("store", s.info.store.label().to_string()),
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
