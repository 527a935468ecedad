//! SQL: what a poll of a 10,000-row SQLite table costs electop, before and after a deep
//! history.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::procs;

fn sqlite(db: &Path, sql: &str) {
    let out = Command::new("sqlite3")
        .arg(db)
        .arg(sql)
        .output()
        .expect("sqlite3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Rows in gabihodoroaga/leaderelection's table, each held for an hour.
fn create(db: &Path, rows: usize) {
    sqlite(
        db,
        "PRAGMA journal_mode = WAL; CREATE TABLE leaderlock (key TEXT PRIMARY KEY, leader_id TEXT NOT NULL, valid_until TIMESTAMP NOT NULL);",
    );
    sqlite(
        db,
        &format!(
            "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < {rows}) \
             INSERT INTO leaderlock SELECT printf('e%06d', i), 'node-' || i, \
             strftime('%Y-%m-%d %H:%M:%f', 'now', '+3600 seconds') FROM n;"
        ),
    );
}

/// CPU per poll (ms) of the dashboard over `secs`, polling every 500 ms.
fn per_poll(pid: u32, secs: u64) -> f64 {
    let pct = procs::cpu_percent(pid, Duration::from_secs(secs));
    // percent of a core over the window, at two polls a second
    pct * 10.0 / 2.0
}

pub fn run(home: &Path) {
    let db = home.join("bench.db");
    let rows = 10_000;
    create(&db, rows);
    let url = format!("sqlite://{}", db.display());
    let args = ["--sql", &url, "--scheme", "sql-lease", "--poll", "500ms"]
        .map(String::from)
        .to_vec();
    let t = crate::tui::start(home, &args);
    t.tmux
        .wait_screen("the rows", Duration::from_secs(30), |s| {
            s.contains(&format!("{rows} elections"))
        });
    let before = per_poll(t.pid, 10);
    let rss_before = procs::rss_mib(t.pid);
    // Every leader changes 20 times: 200,000 changes in the history.
    for round in 0..20 {
        sqlite(
            &db,
            &format!("UPDATE leaderlock SET leader_id = 'r{round}-' || key;"),
        );
        let want = format!("r{round}-");
        t.tmux
            .wait_screen("the round", Duration::from_secs(30), |s| s.contains(&want));
    }
    // The WAL the updates left behind slows every read of the table, electop's or not:
    // folded back first, so what is left to see is electop's own history.
    sqlite(&db, "PRAGMA wal_checkpoint(TRUNCATE);");
    let after = per_poll(t.pid, 10);
    let select = crate::procs::median(3, || {
        crate::procs::time(
            Command::new("sqlite3")
                .arg(&db)
                .arg("SELECT * FROM leaderlock;"),
        )
    });
    let rss_after = procs::rss_mib(t.pid);
    // A minute on, the changes have left the flapping window: rates stop moving.
    std::thread::sleep(Duration::from_secs(60));
    let later = per_poll(t.pid, 10);
    let rss_later = procs::rss_mib(t.pid);
    println!("\n## SQL: SQLite, {rows} rows, TUI polling every 500 ms, nothing changing\n");
    println!("| history | CPU per poll | RSS |");
    println!("|---|---|---|");
    println!("| none | {before:.1} ms | {rss_before:.0} MiB |");
    println!("| 200,000 changes (20 per row), at once | {after:.1} ms | {rss_after:.0} MiB |");
    println!("| the same, a minute later | {later:.1} ms | {rss_later:.0} MiB |");
    println!(
        "\n`sqlite3` reading the same table: {:.1} ms",
        select.as_secs_f64() * 1000.0
    );
}
