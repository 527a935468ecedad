//! The Prometheus and Alertmanager harness works: Prometheus scrapes a static target and
//! answers a query about it, and an alert from a rule that always fires reaches
//! Alertmanager. The tests of `electop serve`'s metrics and the shipped rules build on it.

mod common;

use std::time::{Duration, Instant};

use common::prometheus::{Alertmanager, JOB, Prometheus};

/// A rule file with one alert that fires from the first evaluation on.
const ALWAYS_FIRING: &str = "\
groups:
  - name: harness
    rules:
      - alert: HarnessAlwaysFiring
        expr: vector(1) > 0
        labels:
          severity: info
        annotations:
          summary: fires from the first evaluation on
";

#[test]
fn prometheus_scrapes_queries_and_sends_alerts_to_alertmanager() {
    let started = Instant::now();
    let dir = common::scratch::tempdir();
    let rules = dir.path().join("always.yml");
    std::fs::write(&rules, ALWAYS_FIRING).expect("write rules");

    let alertmanager = Alertmanager::start();
    // Alertmanager's own /metrics is the static target: a scrape that works shows as up 1.
    let prometheus = Prometheus::start(
        &[alertmanager.address()],
        std::slice::from_ref(&rules),
        Some(&alertmanager),
    );

    let up = format!("up{{job=\"{JOB}\"}}");
    let result = prometheus.wait_query(
        &up,
        |r| {
            r.as_array()
                .is_some_and(|v| v.len() == 1 && v[0]["value"][1] == "1")
        },
        Duration::from_secs(10),
    );
    assert_eq!(
        result[0]["metric"]["instance"],
        alertmanager.address(),
        "the scraped target is the one configured: {result}"
    );
    // A scraped series, not only the synthetic `up`: Alertmanager's own build info.
    let scraped = prometheus.query("alertmanager_build_info");
    assert_eq!(
        scraped.as_array().map(Vec::len),
        Some(1),
        "alertmanager_build_info scraped: {scraped}"
    );

    common::wait_for(
        "Prometheus fires HarnessAlwaysFiring",
        Duration::from_secs(10),
        || match prometheus.alert_names("firing") {
            names if names == ["HarnessAlwaysFiring"] => Ok(()),
            names => Err(format!("firing: {names:?}")),
        },
    );
    common::wait_for(
        "Alertmanager holds HarnessAlwaysFiring",
        Duration::from_secs(10),
        || match alertmanager.alert_names() {
            names if names == ["HarnessAlwaysFiring"] => Ok(()),
            names => Err(format!(
                "held: {names:?}\nprometheus log:\n{}\nalertmanager log:\n{}",
                prometheus.log_tail(20),
                alertmanager.log_tail(20)
            )),
        },
    );
    let alerts = alertmanager.alerts();
    assert_eq!(alerts[0]["labels"]["severity"], "info", "{alerts:?}");
    assert_eq!(alerts[0]["status"]["state"], "active", "{alerts:?}");

    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the harness round trip took {:?}",
        started.elapsed()
    );
}

#[test]
fn a_rule_file_prometheus_rejects_fails_the_start_with_its_log() {
    let dir = common::scratch::tempdir();
    let rules = dir.path().join("bad.yml");
    std::fs::write(
        &rules,
        "groups:\n  - name: bad\n    rules:\n      - alert: Bad\n        expr: sum(\n",
    )
    .expect("write rules");
    let Err(panic) =
        std::panic::catch_unwind(|| Prometheus::start(&[], std::slice::from_ref(&rules), None))
    else {
        panic!("Prometheus must not start with a broken rule file");
    };
    let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        message.contains("prometheus exited early") && message.contains("bad.yml"),
        "the panic names the exit and the rule file: {message}"
    );
}
