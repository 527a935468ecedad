//! Prints how fast the hot paths are: diffing watch events into elections, and drawing a
//! frame of a large dashboard. Figures, not assertions: `cargo bench --bench throughput`.
//! Under `cargo test` it runs one small round so it stays compiled and working.

use std::collections::HashMap;
use std::time::{Instant, SystemTime};

use electop::app::{self, App, Msg};
use electop::backend::etcd::election::EtcdElection;
use electop::backend::etcd::layout::Kv;
use electop::backend::etcd::tracker::{Change, Observation, Tracker};
use electop::model::{
    Candidate, Cause, Deadline, Election, HistoryEntry, Scheme, SourceEvent, SourceInfo,
};
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
    let now = Instant::now();
    let seen = Observation {
        at: Some(SystemTime::now()),
        now,
        since: now,
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
        store: electop::model::StoreKind::Etcd,
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
    let sizes: &[usize] = if full {
        &[1_000, 10_000, 100_000]
    } else {
        &[100]
    };
    println!(
        "\n| elections | load | update: 1 change | update: 100 changes | frame, nothing changed | frame after 1 change | next second |"
    );
    println!("|---|---|---|---|---|---|---|");
    for &n in sizes {
        scale(n, if full { 50 } else { 2 });
    }
    if let Some(kib) = peak_rss_kib() {
        println!("peak RSS: {:.1} MiB", kib as f64 / 1024.0);
    }
}

fn ms(d: std::time::Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

/// A SQL-like election: one holder with a lease of `ttl_ms`.
fn election(i: usize, holder: &str, ttl_ms: i64, now: Instant) -> Election {
    let mut e = Election::new(0, format!("e{i:06}"), Scheme::SqlLease);
    let c = Candidate {
        id: holder.to_string(),
        raw_id: holder.as_bytes().to_vec(),
        key: e.name.clone(),
        raw_key: e.name.as_bytes().to_vec(),
        lease: None,
        create_revision: 0,
        mod_revision: 0,
        stamp: None,
        ttl: Some(Deadline {
            granted_ms: 60_000,
            remaining_ms: ttl_ms,
            read_at: now,
        }),
    };
    e.leader = Some(c.clone());
    e.candidates = vec![c];
    e
}

fn changed(app: &App, i: usize, round: usize, now: Instant, wall: SystemTime) -> Election {
    let name = format!("e{i:06}");
    let mut e = app
        .model
        .elections
        .get(&(0, name))
        .cloned()
        .expect("loaded election");
    let to = format!("r{round}");
    e.record(
        HistoryEntry {
            at: Some(wall),
            revision: None,
            from: e.leader.as_ref().map(|l| l.id.clone()),
            to: Some(to.clone()),
            cause: Cause::TakenOver,
            by: None,
        },
        100,
    );
    if let Some(l) = e.leader.as_mut() {
        l.id = to;
        l.ttl = Some(Deadline {
            granted_ms: 60_000,
            remaining_ms: 30_000 + (round as i64 * 7919 % 20_000),
            read_at: now,
        });
    }
    e
}

/// What the dashboard costs at `n` elections, as the runtime drives it: events are taken in
/// (`update`), then before each frame a tick settles the rows and the frame is drawn.
fn scale(n: usize, rounds: usize) {
    let now = Instant::now();
    let wall = SystemTime::now();
    let info = SourceInfo {
        store: electop::model::StoreKind::Etcd,
        id: 0,
        name: "bench".into(),
        label: "t".into(),
        short: "sql1".into(),
        endpoints: "-".into(),
        scheme: Some(Scheme::SqlLease),
        read_only: false,
        clustered: false,
        idle_is_normal: false,
        notice: None,
    };
    let mut app = App::new(vec![info], now, wall);
    // As the runtime runs it: events are taken in, the rows settled at the frame's tick.
    app.rows_index.defer = true;
    app::update(
        &mut app,
        Msg::Resize {
            width: 200,
            height: 50,
        },
    );
    let all: Vec<Election> = (0..n)
        .map(|i| {
            election(
                i,
                &format!("node-{}", i % 7),
                10_000 + (i as i64 * 31 % 50_000),
                now,
            )
        })
        .collect();
    let t = Instant::now();
    app::update(
        &mut app,
        Msg::Source(SourceEvent::Elections {
            source: 0,
            elections: all,
        }),
    );
    app::update(&mut app, Msg::Tick { now, wall });
    let load = t.elapsed();
    let mut term = Terminal::new(TestBackend::new(200, 50)).expect("terminal");
    let mut frame = |app: &mut App, now: Instant, wall: SystemTime| {
        app::update(app, Msg::Tick { now, wall });
        term.draw(|f| electop::ui::view(app, f)).expect("draw");
    };
    frame(&mut app, now, wall);
    let median = |mut v: Vec<std::time::Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let (mut one, mut hundred, mut idle, mut after) = (vec![], vec![], vec![], vec![]);
    for round in 0..rounds {
        let i = round * 7919 % n;
        let e = changed(&app, i, round, now, wall);
        let t = Instant::now();
        app::update(
            &mut app,
            Msg::Source(SourceEvent::Elections {
                source: 0,
                elections: vec![e],
            }),
        );
        one.push(t.elapsed());
        let t = Instant::now();
        frame(&mut app, now, wall);
        after.push(t.elapsed());
        let batch: Vec<Election> = (0..100.min(n))
            .map(|j| changed(&app, (i + j * 13) % n, round, now, wall))
            .collect();
        let t = Instant::now();
        app::update(
            &mut app,
            Msg::Source(SourceEvent::Elections {
                source: 0,
                elections: batch,
            }),
        );
        app::update(&mut app, Msg::Tick { now, wall });
        hundred.push(t.elapsed());
        let t = Instant::now();
        frame(&mut app, now, wall);
        idle.push(t.elapsed());
    }
    // Rates and ages move once a second: the first frame of each new second, while the
    // changes above are inside the flapping window.
    let second = median(
        (1..=9)
            .map(|i| {
                let t = Instant::now();
                frame(&mut app, now, wall + std::time::Duration::from_secs(i));
                t.elapsed()
            })
            .collect(),
    );
    println!(
        "| {n} | {} | {} | {} | {} | {} | {} |",
        ms(load),
        ms(median(one)),
        ms(median(hundred)),
        ms(median(idle)),
        ms(median(after)),
        ms(second)
    );
}
