//! Prints how fast the hot paths are: diffing watch events into elections, and drawing a
//! frame of a large dashboard. Figures, not assertions: `cargo bench --bench throughput`.
//! Under `cargo test` it runs one small round so it stays compiled and working.

use std::collections::HashMap;
use std::time::{Instant, SystemTime};

use electop::app::{self, App, Msg};
use electop::backend::etcd::election::EtcdElection;
use electop::backend::etcd::layout::Kv;
use electop::backend::etcd::tracker::{Change, Observed, Tracker};
use electop::model::{Scheme, SourceEvent, SourceInfo};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (elections, per, rounds) = if full { (2_000, 5, 20) } else { (20, 3, 1) };

    // Watch events: every election gets `per` candidates, then its leader leaves.
    let mut tracker = Tracker::new(
        0,
        "bench".into(),
        Box::new(EtcdElection {
            prefix: b"/b/".to_vec(),
        }),
        200,
    );
    let mut rev = 1;
    let mut changes = Vec::new();
    for e in 0..elections {
        for c in 0..per {
            rev += 1;
            changes.push(Change::Put(Kv {
                key: format!("/b/e{e}/{c:x}").into_bytes(),
                value: format!("node-{c}").into_bytes(),
                create_revision: rev,
                mod_revision: rev,
                lease: (e * per + c + 1) as i64,
            }));
        }
        rev += 1;
        changes.push(Change::Delete {
            key: format!("/b/e{e}/0").into_bytes(),
            revision: rev,
        });
    }
    let n = changes.len();
    let seen = Observed {
        at: Some(SystemTime::now()),
        now: Instant::now(),
        replayed: false,
    };
    let t = Instant::now();
    let (updated, events) = tracker.apply(changes, &HashMap::new(), seen);
    let dt = t.elapsed();
    println!(
        "tracker.apply: {n} changes -> {} elections, {} events in {:.1} ms ({:.0} changes/s)",
        updated.len(),
        events.len(),
        dt.as_secs_f64() * 1e3,
        n as f64 / dt.as_secs_f64()
    );

    // Drawing: a full dashboard at 200x50.
    let info = SourceInfo {
        id: 0,
        name: "bench".into(),
        label: "/b/".into(),
        short: "etcd1".into(),
        endpoints: "-".into(),
        scheme: Some(Scheme::EtcdElection),
        read_only: false,
        clustered: false,
        idle_is_normal: false,
        notice: None,
    };
    let mut app = App::new(vec![info], Instant::now(), SystemTime::now());
    app::update(
        &mut app,
        Msg::Source(SourceEvent::Elections {
            source: 0,
            elections: updated,
        }),
    );
    let mut term = Terminal::new(TestBackend::new(200, 50)).expect("terminal");
    let t = Instant::now();
    for _ in 0..rounds {
        term.draw(|f| electop::ui::view(&app, f)).expect("draw");
    }
    let per_frame = t.elapsed().as_secs_f64() * 1e3 / rounds as f64;
    println!("ui::view: {elections} elections at 200x50: {per_frame:.2} ms per frame");
    if let Some(kib) = peak_rss_kib() {
        println!("peak RSS: {:.1} MiB", kib as f64 / 1024.0);
    }
}
