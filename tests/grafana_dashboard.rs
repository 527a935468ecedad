//! The shipped Grafana dashboard (`assets/grafana/electop.json`): importable (schema 39,
//! its Prometheus data source an import input), the panels an operator looks for, and
//! queries that parse and use only the metric names `electop serve` exposes.

mod common;

use std::path::Path;
use std::process::Command;

use std::time::Duration;

use common::metric_names::{SAMPLE_METRICS, metric_names_in, unknown_metric_names};
use common::prometheus::Prometheus;
use serde_json::Value;

fn dashboard() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/grafana/electop.json");
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// Every value under a key named `key`, anywhere in `v`.
fn all_under<'a>(v: &'a Value, key: &str, out: &mut Vec<&'a Value>) {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                if k == key {
                    out.push(child);
                }
                all_under(child, key, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|item| all_under(item, key, out)),
        _ => {}
    }
}

/// The PromQL of every panel target, with the panel's title.
fn panel_exprs(dash: &Value) -> Vec<(String, String)> {
    let panels = dash["panels"].as_array().expect("panels array");
    panels
        .iter()
        .flat_map(|p| {
            let title = p["title"].as_str().unwrap_or("?").to_string();
            p["targets"].as_array().into_iter().flatten().map(move |t| {
                let expr = t["expr"].as_str();
                let expr = expr.unwrap_or_else(|| panic!("a target without expr in {title}"));
                (title.clone(), expr.to_string())
            })
        })
        .collect()
}

#[test]
fn the_dashboard_is_importable_with_a_prometheus_input() {
    let dash = dashboard();
    assert_eq!(dash["schemaVersion"], 39);
    assert_eq!(dash["uid"], "electop");
    let inputs = dash["__inputs"].as_array().expect("__inputs");
    assert!(
        inputs
            .iter()
            .any(|i| i["name"] == "DS_PROMETHEUS" && i["pluginId"] == "prometheus"),
        "a DS_PROMETHEUS input: {inputs:?}"
    );
    // Grafana's own built-in annotations aside, every query reads the imported source.
    let mut sources = Vec::new();
    all_under(&dash["panels"], "datasource", &mut sources);
    all_under(&dash["templating"], "datasource", &mut sources);
    assert!(!sources.is_empty());
    for ds in sources {
        assert_eq!(
            ds["uid"], "${DS_PROMETHEUS}",
            "every query reads the imported data source: {ds}"
        );
    }
    let mut ids: Vec<i64> = dash["panels"]
        .as_array()
        .expect("panels")
        .iter()
        .map(|p| p["id"].as_i64().expect("panel id"))
        .collect();
    let count = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), count, "panel ids are unique");
}

#[test]
fn the_dashboard_has_the_panels_an_operator_looks_for() {
    let dash = dashboard();
    let titles: Vec<&str> = dash["panels"]
        .as_array()
        .expect("panels")
        .iter()
        .filter_map(|p| p["title"].as_str())
        .collect();
    for wanted in [
        "Leader per election",
        "Elections without a leader",
        "Leader changes by cause",
        "Leaderless seconds",
        "Candidates waiting",
        "Deposed holders",
        "Sources up",
        "Source staleness",
        "Hook failures",
        "Who led when",
    ] {
        assert!(titles.contains(&wanted), "panel {wanted:?} in {titles:?}");
    }
    // Who led when: a state timeline of each election whose states are the holders' names,
    // from leader_info joined by its `holder` label.
    let timeline = dash["panels"]
        .as_array()
        .and_then(|p| p.iter().find(|p| p["title"] == "Who led when"))
        .expect("the who-led-when panel");
    assert_eq!(timeline["type"], "state-timeline", "{timeline:#}");
    let join = &timeline["transformations"][0];
    assert_eq!(join["id"], "joinByLabels", "{timeline:#}");
    assert_eq!(join["options"]["value"], "holder", "{timeline:#}");
    let exprs = panel_exprs(&dash);
    let leader = exprs
        .iter()
        .find(|(title, _)| title == "Leader per election")
        .expect("leader panel query");
    assert_eq!(
        metric_names_in(&leader.1),
        ["electop_election_leader_info"],
        "the leader table reads who leads from leader_info: {leader:?}"
    );
    let causes = exprs
        .iter()
        .find(|(title, _)| title == "Leader changes by cause")
        .expect("changes panel query");
    assert!(
        causes.1.contains("by (cause)"),
        "changes are split by cause: {causes:?}"
    );
}

#[test]
fn every_dashboard_query_uses_only_the_metric_names_electop_serve_exposes() {
    let dash = dashboard();
    let mut exprs = panel_exprs(&dash);
    for var in dash["templating"]["list"].as_array().expect("templating") {
        let query = var["definition"].as_str().expect("variable definition");
        exprs.push((format!("variable {}", var["name"]), query.to_string()));
    }
    assert!(exprs.len() >= 10, "{exprs:#?}");
    for (title, expr) in &exprs {
        assert!(
            !metric_names_in(expr).is_empty(),
            "{title}: no metric name found in {expr:?}"
        );
        let unknown = unknown_metric_names(expr);
        assert!(
            unknown.is_empty(),
            "{title}: {expr:?} uses {unknown:?}, which electop serve does not expose"
        );
    }
}

#[test]
fn every_dashboard_query_is_promql_that_prometheus_parses() {
    // Grafana's variables, replaced by what they are at "All" and a typical interval; each
    // query becomes a recording rule for `promtool check rules`, which parses its PromQL.
    let dash = dashboard();
    let mut rules = String::from("groups:\n  - name: dashboard\n    rules:\n");
    for (i, (title, expr)) in panel_exprs(&dash).iter().enumerate() {
        let expr = at_all(expr);
        rules.push_str(&format!(
            "      # {title}\n      - record: dashboard_query_{i}\n        expr: {}\n",
            Value::from(expr)
        ));
    }
    let dir = common::scratch::tempdir();
    std::fs::write(dir.path().join("dashboard.yml"), &rules).expect("write rules");
    let out = Command::new("promtool")
        .args(["check", "rules", "dashboard.yml"])
        .current_dir(dir.path())
        .output()
        .expect("run promtool (is prometheus installed? run scripts/install-deps.sh)");
    assert!(
        out.status.success(),
        "a dashboard query does not parse:\n{}{}\n{rules}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `expr` as Grafana sends it with every selector at "All" and a 1 min rate interval.
fn at_all(expr: &str) -> String {
    expr.replace("$__rate_interval", "1m")
        .replace("$instance", ".*")
        .replace("$source", ".*")
}

/// The instant query of the panel titled `title` (its first target).
fn panel_query(dash: &Value, title: &str) -> String {
    let (_, expr) = panel_exprs(dash)
        .into_iter()
        .find(|(t, _)| t == title)
        .unwrap_or_else(|| panic!("no panel {title:?}"));
    at_all(&expr)
}

#[test]
fn the_dashboard_queries_answer_from_a_prometheus_scraping_electop_metrics() {
    let dash = dashboard();
    let exporter = common::http::serve_static(SAMPLE_METRICS.to_string());
    let prometheus = Prometheus::start(std::slice::from_ref(&exporter), &[], None);
    prometheus.wait_query(
        "electop_build_info",
        |r| r.as_array().is_some_and(|v| v.len() == 1),
        Duration::from_secs(10),
    );

    // Who leads: web's node-b, one row; jobs (leaderless) and the idle lock have none.
    let leaders = prometheus.query(&panel_query(&dash, "Leader per election"));
    let rows = leaders.as_array().expect("a vector");
    assert_eq!(rows.len(), 1, "{leaders}");
    assert_eq!(rows[0]["metric"]["election"], "web", "{leaders}");
    assert_eq!(rows[0]["metric"]["holder"], "node-b", "{leaders}");

    // Who led when reads the same series: web's node-b, labelled by its holder.
    let led = prometheus.query(&panel_query(&dash, "Who led when"));
    let rows = led.as_array().expect("a vector");
    assert_eq!(rows.len(), 1, "{led}");
    assert_eq!(rows[0]["metric"]["holder"], "node-b", "{led}");

    // Without a leader: jobs only, the idle ShedLock-like lock is not counted.
    let without = prometheus.query(&panel_query(&dash, "Elections without a leader"));
    assert_eq!(without[0]["value"][1], "1", "{without}");
    let deposed = prometheus.query(&panel_query(&dash, "Deposed holders"));
    assert_eq!(deposed[0]["value"][1], "1", "{deposed}");

    // Every other query runs (Prometheus answers it; an error would panic with its reason).
    for (title, expr) in panel_exprs(&dash) {
        let result = prometheus.query(&at_all(&expr));
        assert!(result.is_array(), "{title}: {result}");
    }
    for var in dash["templating"]["list"].as_array().expect("templating") {
        let definition = var["definition"].as_str().expect("definition");
        let selector = definition
            .strip_prefix("label_values(")
            .and_then(|rest| rest.rsplit_once(',').map(|(metric, _)| at_all(metric)))
            .unwrap_or_else(|| panic!("a label_values variable: {definition}"));
        let found = prometheus.query(&selector);
        assert!(
            found.as_array().is_some_and(|v| !v.is_empty()),
            "variable {}: {selector} finds series: {found}",
            var["name"]
        );
    }
}

#[test]
fn the_sample_metrics_use_only_electop_serve_names() {
    for line in SAMPLE_METRICS.lines() {
        let name = line.split(['{', ' ']).next().unwrap_or_default();
        assert!(
            common::metric_names::METRIC_NAMES.contains(&name),
            "{name} in the sample is not an electop serve metric"
        );
    }
}

#[test]
fn the_metric_name_check_sees_names_and_only_names() {
    assert_eq!(
        metric_names_in(
            r#"sum by (cause) (rate(electop_election_leader_changes_total{source=~"$source", x="up"}[$__rate_interval])) * 60"#
        ),
        ["electop_election_leader_changes_total"]
    );
    assert_eq!(
        metric_names_in(
            "count(electop_election_has_leader == 0 unless on(job, source) electop_source_idle_is_normal == 1) or vector(0)"
        ),
        [
            "electop_election_has_leader",
            "electop_source_idle_is_normal"
        ]
    );
    assert_eq!(
        metric_names_in("label_values(electop_build_info, instance)"),
        ["electop_build_info"]
    );
    assert_eq!(
        unknown_metric_names("electop_source_up + on(instance) up * 1e3"),
        ["up"],
        "a name electop does not expose is caught"
    );
    assert_eq!(
        unknown_metric_names("electop_election_leader{source=\"a\"}"),
        ["electop_election_leader"],
        "a misspelt electop name is caught"
    );
}
