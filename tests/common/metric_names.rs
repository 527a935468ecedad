//! The metric names `electop serve` exposes (fixed; docs/serve.md's "Metrics"
//! and the serve code use the same list), and the metric names a PromQL expression uses, so
//! that the shipped rules and dashboard can be checked against them.

use regex::Regex;

/// Every metric name `electop serve` exposes.
pub const METRIC_NAMES: &[&str] = &[
    // Per election.
    "electop_election_has_leader",
    "electop_election_leader_info",
    "electop_election_leader_ttl_seconds",
    "electop_election_leader_term_seconds",
    "electop_election_leader_changes_total",
    "electop_election_last_change_age_seconds",
    "electop_election_leaderless_current_seconds",
    "electop_election_leaderless_seconds_total",
    "electop_election_candidates_waiting",
    "electop_election_deposed_holders",
    "electop_election_holder_expired",
    "electop_election_zombie",
    "electop_election_flapping",
    // Per source.
    "electop_source_up",
    "electop_source_idle_is_normal",
    "electop_source_stale_seconds",
    "electop_source_last_contact_timestamp_seconds",
    "electop_source_members_up",
    "electop_source_members",
    "electop_source_errors_total",
    // The process.
    "electop_hook_runs_total",
    "electop_build_info",
];

/// What `electop serve` could expose for two sources (a stand-in until tests scrape the real
/// one): etcd1's `jobs` has no leader and a deposed holder whose lease lives, its `web` a
/// leader renewing; sql1 is a ShedLock-like source whose lock is idle, which is normal for
/// it; a webhook has failed twice.
pub const SAMPLE_METRICS: &str = "\
electop_election_has_leader{source=\"etcd1\",election=\"jobs\",scheme=\"etcd-election\"} 0
electop_election_deposed_holders{source=\"etcd1\",election=\"jobs\",scheme=\"etcd-election\"} 1
electop_election_has_leader{source=\"etcd1\",election=\"web\",scheme=\"etcd-lease-key\"} 1
electop_election_leader_info{source=\"etcd1\",election=\"web\",scheme=\"etcd-lease-key\",holder=\"node-b\"} 1
electop_election_leader_ttl_seconds{source=\"etcd1\",election=\"web\",scheme=\"etcd-lease-key\"} 9
electop_election_leader_term_seconds{source=\"etcd1\",election=\"web\",scheme=\"etcd-lease-key\"} 10
electop_election_deposed_holders{source=\"etcd1\",election=\"web\",scheme=\"etcd-lease-key\"} 0
electop_election_has_leader{source=\"sql1\",election=\"nightly-report\",scheme=\"sql-lease\"} 0
electop_election_deposed_holders{source=\"sql1\",election=\"nightly-report\",scheme=\"sql-lease\"} 0
electop_source_up{source=\"etcd1\",store=\"etcd\"} 1
electop_source_idle_is_normal{source=\"etcd1\",store=\"etcd\"} 0
electop_source_stale_seconds{source=\"etcd1\",store=\"etcd\"} 0
electop_source_up{source=\"sql1\",store=\"sql\"} 1
electop_source_idle_is_normal{source=\"sql1\",store=\"sql\"} 1
electop_source_stale_seconds{source=\"sql1\",store=\"sql\"} 0
electop_election_leader_changes_total{source=\"etcd1\",election=\"jobs\",scheme=\"etcd-election\",cause=\"lease_expired\"} 3
electop_hook_runs_total{hook=\"webhook\",outcome=\"failed\"} 2
electop_build_info{version=\"0.1.0\"} 1
";

/// PromQL's keywords that stand where a metric name could: not metric names.
const KEYWORDS: &[&str] = &[
    "and", "or", "unless", "bool", "offset", "atan2", "inf", "nan",
];

/// The metric names `expr` selects (PromQL, possibly with Grafana's `$variables`, or
/// Grafana's `label_values(METRIC, label)`), in order of appearance. Strings, label
/// matchers, ranges, the label lists of by/without/on/ignoring/group_left/group_right and
/// function names are not metric names.
pub fn metric_names_in(expr: &str) -> Vec<String> {
    let label_values = Regex::new(r"label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)[^)]*\)")
        .expect("label_values regex");
    let expr = label_values.replace_all(expr, " $1 ");
    let strings = Regex::new(r#""(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`"#).expect("regex");
    let expr = strings.replace_all(&expr, " ");
    let matchers = Regex::new(r"\{[^}]*\}|\[[^\]]*\]").expect("regex");
    let expr = matchers.replace_all(&expr, " ");
    let label_lists =
        Regex::new(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
            .expect("regex");
    let expr = label_lists.replace_all(&expr, " ");
    let idents = Regex::new(r"\$?\b[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?").expect("regex");
    idents
        .find_iter(&expr)
        .map(|m| m.as_str())
        .filter(|tok| !tok.starts_with('$') && !tok.ends_with('('))
        .filter(|tok| !KEYWORDS.contains(&tok.to_ascii_lowercase().as_str()))
        .map(str::to_string)
        .collect()
}

/// The names in `expr` that `electop serve` does not expose.
pub fn unknown_metric_names(expr: &str) -> Vec<String> {
    metric_names_in(expr)
        .into_iter()
        .filter(|name| !METRIC_NAMES.contains(&name.as_str()))
        .collect()
}
