use std::time::{Duration, Instant, SystemTime};

use std::borrow::Cow;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;

use super::*;
use crate::model::{Candidate, ConnState, Deadline, Scheme, SourceEvent, SourceInfo};
use crate::serve::observer::Tally;
use crate::state::ReadModel;

fn observed() -> Observed {
    let now = Instant::now();
    let mut o = Observed::new(ReadModel::new(
        vec![SourceInfo::test_etcd()],
        now,
        SystemTime::now(),
    ));
    o.apply(SourceEvent::Conn {
        source: 0,
        state: ConnState::Connected,
    });
    o
}

fn led(name: &str, holder: &str, scheme: Scheme) -> Election {
    let mut e = Election::new(0, name.into(), scheme);
    let mut c = Candidate::plain(holder, &format!("/e/{name}"));
    c.lease = Some(7);
    c.ttl = Some(Deadline {
        granted_ms: 10_000,
        remaining_ms: 6_500,
        read_at: Instant::now(),
    });
    e.candidates = vec![c.clone()];
    e.leader = Some(c);
    e
}

fn set(o: &mut Observed, elections: Vec<Election>) {
    o.apply(SourceEvent::Elections {
        source: 0,
        elections,
    });
}

/// Leaders, one without, a holder whose id needs escaping, a zombie key, one flapping,
/// counts by cause and time without a leader.
fn varied() -> Observed {
    let mut o = observed();
    let mut flappy = led("flappy", "node-f", Scheme::EtcdLeaseKey);
    for _ in 0..6 {
        flappy.history.push_back(crate::model::HistoryEntry {
            at: Some(o.model.wall),
            revision: None,
            from: Some("a".into()),
            to: Some("b".into()),
            cause: crate::model::Cause::TakenOver,
            by: None,
        });
    }
    let mut zombie = led("lock", "old-node", Scheme::EtcdLeaseKey);
    for c in zombie.candidates.iter_mut().chain(zombie.leader.as_mut()) {
        c.lease = Some(0);
    }
    let mut waiting = led("jobs", "node-a", Scheme::EtcdElection);
    waiting
        .candidates
        .push(Candidate::plain("node-b", "/e/jobs/2"));
    set(
        &mut o,
        vec![
            waiting,
            led("web", "say \"hi\"\\ now\nand then", Scheme::EtcdLeaseKey),
            Election::new(0, "idle\"one".into(), Scheme::EtcdElection),
            zombie,
            flappy,
        ],
    );
    o.model.settle();
    assert_eq!(o.model.alarm_counts()[Alarm::Flapping as usize], 1);
    let mut t = Tally::default();
    t.changes.insert("lease_expired", 3);
    t.changes.insert("elected", 1);
    t.leaderless_s = 2.5;
    t.last_change = Some(o.model.now);
    o.tallies.insert((0, "jobs".into()), t);
    o
}

fn write(s: &mut Series, o: &Observed, format: Format) -> String {
    let mut out = String::new();
    let mut whole = crate::serve::sink::Whole;
    let mut w = Writer::new(&mut out, &mut whole);
    s.write(o, format, &mut w);
    w.flush();
    out
}

/// What a scrape works an election's numbers out from, looked up plainly.
fn row<'a>(o: &'a Observed, key: &Key, e: &'a Election) -> Row<'a> {
    Row {
        e,
        tally: o.tallies.get(key),
        flapping: o
            .model
            .alarms(key)
            .is_some_and(|(a, _)| a.has(Alarm::Flapping)),
        as_of: o.model.as_of(key.0),
        now: o.model.now,
    }
}

/// The election series as `prometheus-client`'s own collector writes them: what electop
/// wrote before it kept labels.
struct Reference(&'static Observed);

impl std::fmt::Debug for Reference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Reference")
    }
}

impl Collector for Reference {
    fn encode(&self, mut enc: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let o = self.0;
        let labels = |key: &Key, e: &Election| -> Vec<(&'static str, String)> {
            vec![
                ("source", o.model.sources[key.0].info.short.clone()),
                ("election", e.name.clone()),
                ("scheme", e.scheme.as_str().to_string()),
            ]
        };
        let with = |mut l: Vec<(&'static str, String)>, k: &'static str, v: &str| {
            l.push((k, v.to_string()));
            l
        };
        for (name, help, value) in ELECTION_GAUGES {
            let mut m = enc.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for (key, e) in &o.model.elections {
                if let Some(v) = value(&row(o, key, e)) {
                    ConstGauge::new(v).encode(m.encode_family(&labels(key, e))?)?;
                }
            }
        }
        let mut m = enc.encode_descriptor(INFO.0, INFO.1, None, MetricType::Gauge)?;
        for (key, e) in &o.model.elections {
            if let Some(l) = &e.leader {
                let l = with(labels(key, e), "holder", &l.id);
                ConstGauge::new(1i64).encode(m.encode_family(&l)?)?;
            }
        }
        let mut m = enc.encode_descriptor(CHANGES.0, CHANGES.1, None, MetricType::Counter)?;
        for (key, e) in &o.model.elections {
            for (cause, n) in o.tallies.get(key).map(|t| &t.changes).into_iter().flatten() {
                let l = with(labels(key, e), "cause", cause);
                ConstCounter::new(*n).encode(m.encode_family(&l)?)?;
            }
        }
        let mut m = enc.encode_descriptor(LEADERLESS.0, LEADERLESS.1, None, MetricType::Counter)?;
        for (key, e) in &o.model.elections {
            let total = o.tallies.get(key).map_or(0.0, |t| t.leaderless_s);
            ConstCounter::new(total).encode(m.encode_family(&labels(key, e))?)?;
        }
        Ok(())
    }
}

fn reference(o: &Observed, context: Option<&str>, format: Format) -> String {
    // The collector must be 'static to register: the model is cloned into a leaked box,
    // which a test can afford.
    let o: &'static Observed = Box::leak(Box::new(o.clone()));
    let labels = context.map(|c| (Cow::Borrowed("context"), Cow::Owned(c.to_string())));
    let mut r = Registry::with_labels(labels.into_iter());
    r.register_collector(Box::new(Reference(o)));
    let mut out = String::new();
    match format {
        Format::Text => prometheus_client::encoding::prometheus_text::encode(&mut out, &r),
        Format::OpenMetrics => prometheus_client::encoding::text::encode_registry(&mut out, &r),
    }
    .expect("encode");
    out
}

#[test]
fn kept_labels_write_what_prometheus_client_writes_in_both_formats() {
    let o = varied();
    let text = write(&mut Series::new(None), &o, Format::Text);
    let alarms: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("electop_election_zombie"))
        .collect();
    assert_eq!(
        alarms,
        [
            "electop_election_zombie{source=\"etcd1\",election=\"lock\",scheme=\"etcd-lease-key\"} 1.0"
        ],
        "an alarm only where raised"
    );
    let flapping = "electop_election_flapping{source=\"etcd1\",election=\"flappy\",scheme=\"etcd-lease-key\"} 1.0\n";
    assert!(text.contains(flapping), "{text}");
    for context in [None, Some("prod \"eu\"")] {
        let mut s = Series::new(context.map(String::from));
        for format in [Format::Text, Format::OpenMetrics] {
            let ours = write(&mut s, &o, format);
            assert_eq!(
                ours,
                reference(&o, context, format),
                "{format:?} {context:?}"
            );
        }
    }
}

#[test]
fn only_new_elections_have_their_labels_made() {
    let mut o = varied();
    let mut s = Series::new(None);
    write(&mut s, &o, Format::Text);
    assert_eq!(s.made, 5);
    // A change to an election already known (its ttl, its line) makes nothing again.
    let mut jobs = led("jobs", "node-a", Scheme::EtcdElection);
    jobs.candidates.clear();
    set(&mut o, vec![jobs]);
    let holders = s.holders_made;
    let text = write(&mut s, &o, Format::Text);
    assert_eq!(s.made, 5, "unchanged labels kept");
    assert_eq!(
        s.holders_made, holders,
        "the same holder: its _info labels kept"
    );
    let waiting = "electop_election_candidates_waiting{source=\"etcd1\",election=\"jobs\",scheme=\"etcd-election\"}";
    assert!(
        text.contains(&format!("{waiting} 0.0\n")),
        "the new count:\n{text}"
    );
    set(&mut o, vec![led("new", "node-z", Scheme::EtcdElection)]);
    let text = write(&mut s, &o, Format::OpenMetrics);
    assert_eq!(s.made, 6, "one new election, one label set made");
    assert_eq!(text, reference(&o, None, Format::OpenMetrics));
}

#[test]
fn a_new_holder_replaces_the_info_series() {
    let mut o = varied();
    let mut s = Series::new(None);
    let before = write(&mut s, &o, Format::Text);
    let info = |text: &str, holder: &str| {
        text.lines()
            .filter(|l| l.starts_with("electop_election_leader_info{"))
            .filter(|l| l.contains("election=\"jobs\""))
            .filter(|l| l.contains(&format!("holder=\"{holder}\"")))
            .count()
    };
    assert_eq!(info(&before, "node-a"), 1);
    set(&mut o, vec![led("jobs", "node-b", Scheme::EtcdElection)]);
    let holders = s.holders_made;
    let after = write(&mut s, &o, Format::Text);
    assert_eq!(
        s.holders_made,
        holders + 1,
        "one election's _info labels made again"
    );
    assert_eq!(info(&after, "node-a"), 0, "the old holder's series is gone");
    assert_eq!(info(&after, "node-b"), 1);
    let jobs_infos = after
        .lines()
        .filter(|l| l.starts_with("electop_election_leader_info{") && l.contains("\"jobs\""))
        .count();
    assert_eq!(jobs_infos, 1, "one _info series per election:\n{after}");
    assert_eq!(after, reference(&o, None, Format::Text));
}

#[test]
fn an_election_gone_from_the_model_loses_its_lines_and_labels() {
    let mut o = varied();
    let mut s = Series::new(None);
    assert!(write(&mut s, &o, Format::Text).contains("election=\"web\""));
    o.model.elections.remove(&(0, "web".to_string()));
    let text = write(&mut s, &o, Format::Text);
    assert!(!text.contains("election=\"web\""), "{text}");
    assert_eq!(s.labels.len(), 4, "its labels forgotten");
    assert_eq!(text, reference(&o, None, Format::Text));
}

#[test]
fn numbers_move_with_the_clock_without_new_labels() {
    let mut o = varied();
    let mut s = Series::new(None);
    let ttl = |text: &str| -> f64 {
        let line = text
            .lines()
            .find(|l| l.starts_with("electop_election_leader_ttl_seconds{") && l.contains("web"))
            .expect("a ttl line");
        line.rsplit_once(' ')
            .expect("a value")
            .1
            .parse()
            .expect("a number")
    };
    let first = ttl(&write(&mut s, &o, Format::Text));
    o.model.now += Duration::from_secs(2);
    let later = ttl(&write(&mut s, &o, Format::Text));
    assert!(first - later > 1.9, "{first} then {later}");
    assert_eq!(s.made, 5);
}

/// A sample's number is written as `dtoa` writes it, whole or not.
#[test]
fn numbers_are_written_as_dtoa_writes_them() {
    let mut out = String::new();
    let mut whole = crate::serve::sink::Whole;
    let mut w = Writer::new(&mut out, &mut whole);
    let xs = [
        0.0,
        -0.0,
        1.0,
        -3.0,
        10.0,
        6.5,
        0.001,
        1e15 - 1.0,
        1e15,
        -1e15 + 1.0,
        1e16,
        123456.789,
        f64::NAN,
        f64::INFINITY,
    ];
    for x in xs {
        w.out.clear();
        w.sample("", "", Num::F(x));
        let want = format!(" {}\n", dtoa::Buffer::new().format(x));
        assert_eq!(w.out.as_str(), want, "{x}");
    }
}

/// `n` elections, each led by its own node.
fn many(n: usize) -> Vec<Election> {
    (0..n)
        .map(|i| {
            led(
                &format!("e{i:05}"),
                &format!("node-{i}"),
                Scheme::EtcdLeaseKey,
            )
        })
        .collect()
}

/// A gzipped scrape, compressed a chunk at a time as it is written, is the text scrape
/// exactly, in both formats: with enough elections that the text is handed on many times.
#[test]
fn a_gzipped_scrape_decodes_to_the_text_scrape_however_it_was_cut() {
    use std::io::Read;
    use std::sync::{Arc, RwLock};

    let mut o = observed();
    let elections = many(3000);
    set(&mut o, elections);
    let m = crate::serve::metrics::Metrics::new(Arc::new(RwLock::new(o)), Box::new(Vec::new), None);
    for openmetrics in [false, true] {
        let text = m.encode(openmetrics).expect("the text");
        assert!(
            text.len() > 8 * crate::serve::sink::CHUNK,
            "{} bytes",
            text.len()
        );
        for _ in 0..2 {
            let z = m.encode_gzip(openmetrics, 1).expect("gzip");
            assert!(z.len() < text.len() / 5, "{} of {}", z.len(), text.len());
            let mut back = String::new();
            flate2::read::GzDecoder::new(&z[..])
                .read_to_string(&mut back)
                .expect("a gzip stream");
            assert!(
                back == text,
                "openmetrics {openmetrics}: the gzip body differs"
            );
        }
    }
}

/// Each source's `store` label is the store it is read from, from the scheme facts' one
/// list: a Redis source is never labelled `sql`, whatever else it shares with one.
#[test]
fn a_sources_store_label_is_its_own_store() {
    let now = Instant::now();
    let mut redis = SourceInfo::test_sqlite();
    (redis.id, redis.short, redis.store) = (1, "redis1".into(), crate::model::StoreKind::Redis);
    redis.scheme = Some(Scheme::RedisLock);
    let mut zk = SourceInfo::test_sqlite();
    (zk.id, zk.short, zk.store) = (2, "zk1".into(), crate::model::StoreKind::Zookeeper);
    zk.scheme = None;
    let model = ReadModel::new(
        vec![SourceInfo::test_etcd(), redis, zk],
        now,
        SystemTime::now(),
    );
    let observed = std::sync::Arc::new(std::sync::RwLock::new(Observed::new(model)));
    let metrics = crate::serve::metrics::Metrics::new(observed, Box::new(Vec::new), None);
    let text = metrics.encode(false).expect("encoded");
    for (source, store) in [("etcd1", "etcd"), ("redis1", "redis"), ("zk1", "zookeeper")] {
        let label = format!("source=\"{source}\",store=\"{store}\"");
        assert!(
            text.lines()
                .any(|l| l.starts_with("electop_source_up") && l.contains(&label)),
            "{label}\n{text}"
        );
    }
}

/// The sources', the hooks' and the build's families as `prometheus-client`'s collector
/// wrote them before the one writer.
struct SourcesReference(&'static Observed);

impl std::fmt::Debug for SourcesReference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SourcesReference")
    }
}

impl Collector for SourcesReference {
    fn encode(&self, mut enc: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        type L = Vec<(&'static str, String)>;
        let o = self.0;
        let labels = |s: &crate::state::SourceView| -> L {
            vec![
                ("source", s.info.short.clone()),
                ("store", s.info.store.label().to_string()),
            ]
        };
        for (name, help, value) in crate::serve::metrics::SOURCE_GAUGES {
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
                let mut l = labels(s);
                l.push(("kind", kind.to_string()));
                ConstCounter::new(*n).encode(m.encode_family(&l)?)?;
            }
        }
        let mut m = enc.encode_descriptor(
            "electop_hook_runs",
            "Change hooks run, by hook and outcome (ok, failed, timeout, dropped).",
            None,
            MetricType::Counter,
        )?;
        let l: L = vec![("hook", "page".into()), ("outcome", "ok".into())];
        ConstCounter::new(3u64).encode(m.encode_family(&l)?)?;
        let mut m = enc.encode_descriptor(
            "electop_build_info",
            "The electop version serving these metrics.",
            None,
            MetricType::Gauge,
        )?;
        let version: L = vec![("version", env!("CARGO_PKG_VERSION").into())];
        ConstGauge::new(1i64).encode(m.encode_family(&version)?)
    }
}

/// A whole scrape is, byte for byte, what `prometheus-client` writes for the same series,
/// in both formats, with and without a context: the elections' (as above) and then the
/// sources', the hooks' and the build's, ending as each format ends.
#[test]
fn a_whole_scrape_is_what_prometheus_client_writes() {
    use std::sync::{Arc, RwLock};
    let mut o = varied();
    o.apply(SourceEvent::Conn {
        source: 0,
        state: ConnState::Down {
            error: "refused".into(),
            retry_at: Instant::now(),
            lasting: false,
        },
    });
    let leaked: &'static Observed = Box::leak(Box::new(o.clone()));
    let hooks = || Box::new(|| vec![("page", "ok", 3u64)]) as crate::serve::metrics::HookCounts;
    for context in [None, Some("prod \"eu\"")] {
        let m = crate::serve::metrics::Metrics::new(
            Arc::new(RwLock::new(o.clone())),
            hooks(),
            context.map(String::from),
        );
        let labels = context.map(|c| (Cow::Borrowed("context"), Cow::Owned(c.to_string())));
        let mut r = Registry::with_labels(labels.into_iter());
        r.register_collector(Box::new(Reference(leaked)));
        r.register_collector(Box::new(SourcesReference(leaked)));
        for openmetrics in [false, true] {
            let mut want = String::new();
            match openmetrics {
                false => prometheus_client::encoding::prometheus_text::encode(&mut want, &r),
                true => prometheus_client::encoding::text::encode(&mut want, &r),
            }
            .expect("encode");
            let ours = m.encode(openmetrics).expect("encode");
            assert!(ours.contains("electop_source_errors"), "{ours}");
            assert_eq!(ours, want, "openmetrics {openmetrics}, context {context:?}");
        }
    }
}
