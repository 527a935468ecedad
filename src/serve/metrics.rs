//! `/metrics`: what the read model holds, as Prometheus series, made at each scrape rather
//! than kept in registered metrics: the elections come and go, and the holder of each lives
//! only on its `_info` series, which a new holder replaces rather than adds to, so the series
//! stay bounded by the elections. The elections' series are written by [`Series`], which
//! keeps each election's labels between scrapes; the sources', the hooks' and the build's
//! here; all of them by the one writer of `exposition`.

use std::sync::{Arc, Mutex, RwLock};
use std::time::SystemTime;

use super::exposition::{Format, Head, Kind, Num, Writer, labels};
use super::observer::Observed;
use super::series::{Series, flag};
use super::sink::{CHUNK, Gzip, Sink, Whole};
use crate::model::ConnState;
use crate::state::SourceView;

/// What `/metrics` encodes: the elections' series, then the sources', the hooks' and the
/// build's, with `context` on every series when a context was chosen, so several observers
/// scraped by one Prometheus stay apart.
pub(crate) struct Metrics {
    observed: Arc<RwLock<Observed>>,
    hooks: HookCounts,
    context: Option<String>,
    /// Scrapes take turns: each brings the kept labels up to date.
    series: Mutex<Series>,
}

impl Metrics {
    pub(crate) fn new(
        observed: Arc<RwLock<Observed>>,
        hooks: HookCounts,
        context: Option<String>,
    ) -> Metrics {
        Metrics {
            observed,
            hooks,
            series: Mutex::new(Series::new(context.clone())),
            context,
        }
    }

    /// Writes every series in the format asked for: OpenMetrics when the scraper accepts it
    /// (Prometheus does), else the classic text format (`promtool check metrics`, curl).
    pub(crate) fn encode(&self, openmetrics: bool) -> Result<String, std::fmt::Error> {
        let mut series = self.series.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = String::with_capacity(series.last_len + 64 * 1024);
        self.write(&mut series, openmetrics, &mut out, &mut Whole);
        series.last_len = out.len();
        Ok(out)
    }

    /// [`Self::encode`] gzipped at `level`, compressed a [`CHUNK`] at a time as it is
    /// written: the text is never whole in memory.
    pub(crate) fn encode_gzip(&self, openmetrics: bool, level: u32) -> std::io::Result<Vec<u8>> {
        let mut series = self.series.lock().unwrap_or_else(|p| p.into_inner());
        let mut sink = Gzip::new(level, series.last_gzip_len);
        let mut out = String::with_capacity(CHUNK + 16 * 1024);
        self.write(&mut series, openmetrics, &mut out, &mut sink);
        sink.take(&mut out);
        let body = sink.finish()?;
        series.last_gzip_len = body.len();
        Ok(body)
    }

    /// Every series, handed to `sink` as `out` fills, with `series` locked by the caller
    /// for the whole scrape: scrapes take turns.
    fn write(&self, series: &mut Series, openmetrics: bool, out: &mut String, sink: &mut dyn Sink) {
        let format = match openmetrics {
            true => Format::OpenMetrics,
            false => Format::Text,
        };
        let context = self.context.as_deref();
        let mut w = Writer::new(out, sink);
        {
            let o = self.observed.read().unwrap_or_else(|p| p.into_inner());
            series.write(&o, format, &mut w);
            sources(&o, format, context, &mut w);
        }
        let head = |name, help, kind| Head::new(format, name, help, kind);
        let runs = head(
            "electop_hook_runs",
            "Change hooks run, by hook and outcome (ok, failed, timeout, dropped).",
            Kind::Counter,
        );
        w.head(&runs);
        for (hook, outcome, n) in (self.hooks)() {
            let l = labels(context, &[("hook", hook), ("outcome", outcome)]);
            w.sample(&runs.sample, &l, Num::U(n));
        }
        let build = head(
            "electop_build_info",
            "The electop version serving these metrics.",
            Kind::Gauge,
        );
        w.head(&build);
        let version = labels(context, &[("version", env!("CARGO_PKG_VERSION"))]);
        w.sample(&build.sample, &version, Num::U(1));
        if format == Format::OpenMetrics {
            w.out.push_str("# EOF\n");
        }
        w.flush();
    }
}

/// The change hooks' runs as `(hook, outcome, count)`, read at each scrape.
pub(crate) type HookCounts = Box<dyn Fn() -> Vec<(&'static str, &'static str, u64)> + Send + Sync>;

/// A per-source gauge: its name, help and value (none: no sample).
pub(crate) type PerSource = (
    &'static str,
    &'static str,
    fn(&SourceView, std::time::Instant) -> Option<f64>,
);

pub(crate) const SOURCE_GAUGES: &[PerSource] = &[
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

fn sources(o: &Observed, format: Format, context: Option<&str>, w: &mut Writer<'_>) {
    let labels = |s: &SourceView, more: &[(&str, &str)]| {
        let mine = [
            ("source", s.info.short.as_str()),
            ("store", s.info.store.label()),
        ];
        let all: Vec<(&str, &str)> = mine.iter().chain(more).copied().collect();
        labels(context, &all)
    };
    for (name, help, value) in SOURCE_GAUGES {
        let head = Head::new(format, name, help, Kind::Gauge);
        w.head(&head);
        for s in &o.model.sources {
            if let Some(v) = value(s, o.model.now) {
                w.sample(&head.sample, &labels(s, &[]), Num::F(v));
            }
        }
    }
    let errors = Head::new(
        format,
        "electop_source_errors",
        "Times the source went down, by whether its error lasts (a refused password) or not.",
        Kind::Counter,
    );
    w.head(&errors);
    for (i, s) in o.model.sources.iter().enumerate() {
        for (kind, n) in o.source_errors.get(i).into_iter().flatten() {
            w.sample(&errors.sample, &labels(s, &[("kind", kind)]), Num::U(*n));
        }
    }
}
