//! The one table: a row per store and measure, each build's figure, their ratio, the
//! store's own tool and the target.

use std::sync::Mutex;

use crate::measure::{Figures, Plan};

static ROWS: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn pct(v: Option<f64>) -> String {
    v.map_or("—".into(), |v| format!("{v:.2}%"))
}

fn num(v: Option<f64>, unit: &str) -> String {
    v.map_or("—".into(), |v| format!("{v:.1}{unit}"))
}

fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
        _ => "—".into(),
    }
}

/// A row: the measure, each build's figure (as text, and as a number for the ratio).
fn row(store: &str, what: &str, figs: &[(String, Option<f64>)], tool: &str, target: &str) {
    let ours = &figs[0];
    let (base, r) = match figs.get(1) {
        Some(b) => (b.0.clone(), ratio(ours.1, b.1)),
        None => ("".into(), "".into()),
    };
    ROWS.lock().expect("rows").push(format!(
        "| {store} | {what} | {} | {base} | {r} | {tool} | {target} |",
        ours.0
    ));
}

/// The rows of one store.
pub fn store(
    store: &str,
    rate: usize,
    figs: &[Figures],
    refs: &crate::measure::StatusRefs,
    watch_tool: Option<&str>,
) {
    let (tool, tool_ms) = refs.tool;
    let each = |f: &dyn Fn(&Figures) -> (String, Option<f64>)| -> Vec<(String, Option<f64>)> {
        figs.iter().map(f).collect()
    };
    row(
        store,
        "dashboard idle, CPU",
        &each(&|f| (pct(f.idle), f.idle)),
        "",
        "<= 0.5%",
    );
    let reached = figs[0].reached;
    row(
        store,
        &format!("dashboard at {rate}/s ({reached:.0}/s reached), CPU"),
        &each(&|f| (pct(f.churn), f.churn)),
        "",
        "<= 10%",
    );
    row(
        store,
        "dashboard RSS under churn",
        &each(&|f| (num(f.rss, " MiB"), f.rss)),
        "",
        "< 100 MB",
    );
    row(
        store,
        "dashboard write syscalls/s under churn",
        &each(&|f| (num(f.syscw, ""), f.syscw)),
        "",
        "<= 50/s",
    );
    writes_row(store, figs);
    row(
        store,
        &format!("`watch --json` at {rate}/s, CPU"),
        &each(&|f| (pct(f.watch_cpu), f.watch_cpu)),
        "",
        "<= 8%",
    );
    let after = watch_tool.unwrap_or("the write's reply");
    // The floor: a second of the store's watches after the first, in this build's window.
    let floor = match (watch_tool, figs[0].tool_lag) {
        (Some(t), Some((p50, p99, max))) => {
            format!("another {t} after it: {p50:.2} / {p99:.2} / {max:.2} ms")
        }
        _ => String::new(),
    };
    row(
        store,
        &format!("`watch --json` lag after {after}: p50 / p99 / max (missed)"),
        &each(&|f| match f.lag {
            Some((p50, p99, max, missed)) => (
                format!("{p50:.2} / {p99:.2} / {max:.2} ms ({missed})"),
                Some(p99),
            ),
            None => ("—".into(), None),
        }),
        &floor,
        "< 1 / < 5 ms",
    );
    row(
        store,
        "`status`",
        &each(&|f| match f.status_ms {
            Some(s) => (format!("{s:.1} ms ({:.2}x)", s / tool_ms), Some(s)),
            None => ("—".into(), None),
        }),
        &match refs.more {
            // Not measured (`--only` without status).
            _ if tool.is_empty() => String::new(),
            Some((what, more_ms)) => {
                format!("{tool}: {tool_ms:.1} ms; the store's answer to {what}: {more_ms:.1} ms")
            }
            None => format!("{tool}: {tool_ms:.1} ms"),
        },
        "<= 1.2x the tool",
    );
    row(
        store,
        "first frame",
        &each(&|f| (num(f.first_ms, " ms"), f.first_ms)),
        "",
        "< 100 ms",
    );
}

/// The write calls under churn by where they went (`writes.rs`).
fn writes_row(store: &str, figs: &[Figures]) {
    let figs: Vec<(String, Option<f64>)> = figs
        .iter()
        .map(|f| match f.writes {
            Some(w) => (
                format!(
                    "{:.1}; {:.1} / {:.0} / {:.0} / {:.0} (of {:.0} traced)",
                    w.journal,
                    w.disk,
                    w.network,
                    w.terminal,
                    w.wakeups,
                    w.total()
                ),
                Some(w.journal),
            ),
            None => ("— (no strace)".into(), None),
        })
        .collect();
    row(
        store,
        "  of which: the journal; other files / network / terminal / wake-ups",
        &figs,
        "",
        "journal <= 10/s (a flush per 100 ms)",
    );
}

pub fn print(builds: &[String], plan: Plan, load: &str) {
    println!(
        "\n## {} elections; CPU in % of one core over {:?} windows; medians of {} runs; load at the end {load}\n",
        plan.n, plan.window, plan.runs
    );
    println!("this build: {}", builds[0]);
    if let Some(b) = builds.get(1) {
        println!("baseline: {b} (measured in turns with this build; ratio = this / baseline)");
    }
    if crate::etcd_as_loaded() {
        println!("etcd: measured as its load left it (--etcd-as-loaded), not restarted");
    }
    println!();
    println!("| store | measure | this build | baseline | ratio | store's own tool | target |");
    println!("|---|---|---|---|---|---|---|");
    for r in ROWS.lock().expect("rows").iter() {
        println!("{r}");
    }
}
