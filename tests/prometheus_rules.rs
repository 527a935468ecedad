//! The shipped alert rules (`assets/prometheus/electop-rules.yml`): promtool accepts them
//! and their unit tests pass, the copy with short `for:` that later tests load is still
//! valid, and in a real Prometheus scraping electop's metric names they fire and reach
//! Alertmanager where they should and only there.

mod common;

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use common::alert_rules::{rules_with_for, shipped_rule_tests, shipped_rules, with_for};
use common::metric_names::SAMPLE_METRICS;
use common::prometheus::{Alertmanager, Prometheus};

/// `promtool ARGS`, run in `dir`; panics if it cannot be started.
fn promtool(dir: &Path, args: &[&str]) -> Output {
    Command::new("promtool")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run promtool (is prometheus installed? run scripts/install-deps.sh)")
}

/// Asserts promtool succeeded, printing everything it said if not.
fn assert_success(what: &str, out: &Output) -> String {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{text}",
        out.status
    );
    text
}

/// How many alerts the shipped file defines (one `- alert:` line each).
fn alert_count(rules: &str) -> usize {
    rules
        .lines()
        .filter(|l| l.trim_start().starts_with("- alert:"))
        .count()
}

#[test]
fn promtool_checks_the_shipped_rules() {
    let path = shipped_rules();
    let text = std::fs::read_to_string(&path).expect("read the rules");
    let out = promtool(
        path.parent().expect("assets dir"),
        &["check", "rules", path.to_str().expect("UTF-8 path")],
    );
    let said = assert_success("promtool check rules", &out);
    assert_eq!(alert_count(&text), 8, "the eight alerts:\n{text}");
    assert!(
        said.contains("SUCCESS: 8 rules found"),
        "promtool found all eight: {said}"
    );
}

#[test]
fn promtool_unit_tests_of_the_shipped_rules_pass() {
    let tests = shipped_rule_tests();
    let out = promtool(
        tests.parent().expect("assets dir"),
        &["test", "rules", tests.to_str().expect("UTF-8 path")],
    );
    let said = assert_success("promtool test rules", &out);
    assert!(said.contains("SUCCESS"), "{said}");
}

#[test]
fn every_shipped_alert_waits_and_the_shortened_copy_waits_one_second() {
    let text = std::fs::read_to_string(shipped_rules()).expect("read the rules");
    let (_, fors) = with_for(&text, "1s");
    assert_eq!(
        fors,
        alert_count(&text),
        "every alert has a `for:`:\n{text}"
    );

    let dir = common::scratch::tempdir();
    let short = rules_with_for(dir.path(), "1s");
    let copied = std::fs::read_to_string(&short).expect("read the copy");
    let durations: Vec<&str> = copied
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("for:"))
        .map(str::trim)
        .collect();
    assert_eq!(durations, vec!["1s"; alert_count(&text)], "{copied}");
    // Only the `for:` lines changed.
    assert_eq!(
        copied.lines().count(),
        text.lines().count(),
        "same lines otherwise"
    );
    let out = promtool(dir.path(), &["check", "rules", "electop-rules.yml"]);
    assert_success("promtool check rules on the shortened copy", &out);
}

#[test]
fn the_shortened_rules_fire_in_prometheus_and_reach_alertmanager_only_where_they_should() {
    let exporter = common::http::serve_static(SAMPLE_METRICS.to_string());
    let dir = common::scratch::tempdir();
    let rules = rules_with_for(dir.path(), "1s");
    let alertmanager = Alertmanager::start();
    let prometheus = Prometheus::start(&[exporter], &[rules], Some(&alertmanager));

    let expected = ["ElectopNoLeader", "ElectopPossibleSplitBrain"];
    common::wait_for(
        "Alertmanager holds ElectopNoLeader and ElectopPossibleSplitBrain",
        Duration::from_secs(15),
        || match alertmanager.alert_names() {
            names if names == expected => Ok(()),
            names => Err(format!(
                "Alertmanager holds {names:?}; Prometheus's alerts: {:?}",
                prometheus.alerts()
            )),
        },
    );
    // By now every rule has been evaluated several times with `for: 1s`: anything else
    // would be pending or firing too. Both alerts are about etcd1's jobs, none about web
    // (it has a leader, renewing) or sql1 (idle is its resting state).
    let alerts = prometheus.alerts();
    assert_eq!(alerts.len(), 2, "only the two expected alerts: {alerts:?}");
    for alert in &alerts {
        assert_eq!(alert["state"], "firing", "{alert}");
        assert_eq!(alert["labels"]["source"], "etcd1", "{alert}");
        assert_eq!(alert["labels"]["election"], "jobs", "{alert}");
    }
    let held = alertmanager.alerts();
    let no_leader = held
        .iter()
        .find(|a| a["labels"]["alertname"] == "ElectopNoLeader")
        .expect("ElectopNoLeader held");
    assert_eq!(no_leader["labels"]["severity"], "critical", "{no_leader}");
    assert_eq!(
        no_leader["annotations"]["summary"], "etcd1/jobs has no leader",
        "{no_leader}"
    );
    let runbook = no_leader["annotations"]["runbook"].as_str().unwrap_or("");
    assert!(
        runbook.contains("electop reelect etcd1/jobs"),
        "the runbook names the verb and the election: {runbook}"
    );
}

#[test]
fn the_shipped_rules_use_only_the_metric_names_electop_serve_exposes() {
    let text = std::fs::read_to_string(shipped_rules()).expect("read the rules");
    let exprs = common::alert_rules::rule_exprs(&text);
    assert_eq!(
        exprs.len(),
        alert_count(&text),
        "one expr per alert: {exprs:#?}"
    );
    for expr in &exprs {
        let names = common::metric_names::metric_names_in(expr);
        assert!(!names.is_empty(), "no metric name found in {expr:?}");
        let unknown = common::metric_names::unknown_metric_names(expr);
        assert!(
            unknown.is_empty(),
            "{expr:?} uses {unknown:?}, which electop serve does not expose"
        );
    }
}
