//! The metric names `electop serve` exposes (fixed; the README's "Prometheus and Grafana"
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
    "electop_election_leaderless_seconds",
    "electop_election_leaderless_seconds_total",
    "electop_election_candidates_waiting",
    "electop_election_deposed_holders",
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
