//! The leadership timeline at scale (issue 32, item 6): 10,000 elections, each with 24 h of
//! history at one change a minute (1,440 changes). Prints the figures docs/PERFORMANCE.md
//! quotes; asserts nothing about time. `cargo bench --bench timeline` (release). Under
//! `cargo test --benches` it runs one small round so it stays compiled and working.
//!
//! - the dashboard: opening the timeline view (`t` and its first frame at 200x50), a redraw
//!   at 200x50 into ratatui's TestBackend, at the 24 h window too, and the memory the read
//!   model holds (bytes allocated and still live, counted by this binary's allocator) with
//!   the history each election keeps: the dashboard's default bound (200 changes) and a
//!   whole day (`--history-limit 1440`);
//! - `electop history ELECTION --json --since 24h`, the release binary run on a SQLite table
//!   of 10,000 rows and its journal in the history database holding 200 and 400 changes per
//!   election (a run keeps 200: 400 is what two runs' copies hold), the database's size;
//!   `electop status --json` on the same journal (it reads every election's history back, as
//!   the dashboard's start does, and trims the journal to its bound); both with an empty
//!   journal for the floor. Wall and CPU time of each run.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime};

use electop::app::{self, Action, App, Msg};
use electop::model::{
    Candidate, Cause, ConnState, Election, HistoryEntry, Scheme, SourceEvent, SourceInfo,
};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

/// Counts the bytes allocated and not yet freed, and every allocation.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static ALLOCS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed on to the system allocator unchanged; only counted.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size(), Ordering::Relaxed);
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: as the caller promised for `l`.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        // SAFETY: as the caller promised for `p` and `l`.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        LIVE.fetch_add(new, Ordering::Relaxed);
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: as the caller promised for `p`, `l` and `new`.
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Changes a day at one a minute.
const DAY: usize = 1_440;

fn info() -> SourceInfo {
    SourceInfo {
        store: electop::model::StoreKind::Sql,
        id: 0,
        name: "sqlite:///bench/elections.db leaderlock".into(),
        label: "sqlite leaderlock".into(),
        short: "sql1".into(),
        endpoints: "sqlite:///bench/elections.db".into(),
        scheme: Some(Scheme::SqlLease),
        read_only: false,
        clustered: false,
        idle_is_normal: false,
        notice: None,
    }
}

/// Who holds after change `i` of election `e`: three nodes in turn, every tenth change to
/// nobody (a gap of a minute).
fn holder(e: usize, i: usize) -> Option<String> {
    (i % 10 != 9).then(|| format!("node-{}", (e + i) % 3 + 1))
}

/// Change `i` of election `e`, `DAY - i` minutes before `now`.
fn change(e: usize, i: usize, now: SystemTime) -> HistoryEntry {
    let to = holder(e, i);
    let from = i.checked_sub(1).and_then(|p| holder(e, p));
    let cause = match (&from, &to) {
        (None, _) => Cause::Elected,
        (Some(_), None) => Cause::LeaseExpired,
        (Some(_), Some(_)) => Cause::TakenOver,
    };
    HistoryEntry {
        at: Some(now - Duration::from_secs(60 * (DAY - i) as u64)),
        revision: None,
        from,
        to,
        cause,
        by: None,
    }
}

fn election(e: usize, kept: usize, now: SystemTime) -> Election {
    let mut el = Election::new(0, format!("e{e:05}"), Scheme::SqlLease);
    for i in DAY - kept..DAY {
        el.record(change(e, i, now), kept);
    }
    if let Some(id) = holder(e, DAY - 1) {
        let c = Candidate::plain(&id, &el.name);
        el.leader = Some(c.clone());
        el.candidates = vec![c];
    }
    el
}

/// The dashboard with `n` elections keeping `kept` changes each, the live bytes it holds,
/// and how long it took to build.
fn dashboard(n: usize, kept: usize) -> (App, usize, Duration) {
    let (at, wall) = (Instant::now(), SystemTime::now());
    let live = LIVE.load(Ordering::Relaxed);
    let t0 = Instant::now();
    let mut a = App::new(vec![info()], at, wall);
    let elections = (0..n).map(|e| election(e, kept, wall)).collect();
    for ev in [
        SourceEvent::Elections {
            source: 0,
            elections,
        },
        SourceEvent::Conn {
            source: 0,
            state: ConnState::Connected,
        },
        SourceEvent::Synced { source: 0 },
        SourceEvent::Contact {
            source: 0,
            at,
            wall,
            next_within: Duration::from_millis(500),
        },
    ] {
        app::update(&mut a, Msg::Source(ev));
    }
    app::update(&mut a, Msg::Tick { now: at, wall });
    let built = t0.elapsed();
    (a, LIVE.load(Ordering::Relaxed).saturating_sub(live), built)
}

fn terminal() -> Terminal<TestBackend> {
    Terminal::new(TestBackend::new(200, 50)).expect("a test terminal")
}

fn draw(t: &mut Terminal<TestBackend>, a: &App) {
    t.draw(|f| electop::ui::view(a, f)).expect("draw");
}

/// This thread's CPU time: on a shared machine a frame's wall time includes the time other
/// processes ran.
fn cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for the call to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Times `f`: wall and this thread's CPU.
fn timed(f: impl FnOnce()) -> (Duration, Duration) {
    let (w, c) = (Instant::now(), cpu());
    f();
    (w.elapsed(), cpu().saturating_sub(c))
}

/// `median wall (CPU), max wall`.
fn figures(times: Vec<(Duration, Duration)>) -> String {
    let (wall, cpu): (Vec<Duration>, Vec<Duration>) = times.into_iter().unzip();
    let ((w, max), (c, _)) = (spread(wall), spread(cpu));
    format!("median {} ({} CPU), max {}", ms(w), ms(c), ms(max))
}

/// The median and the slowest of `times`.
fn spread(mut times: Vec<Duration>) -> (Duration, Duration) {
    times.sort();
    (times[times.len() / 2], times[times.len() - 1])
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

/// Opening the timeline (`t`, then its first frame) and redrawing it, at 5 min and 24 h.
fn views(n: usize, kept: usize, rounds: usize) {
    let (mut a, live, built) = dashboard(n, kept);
    app::update(
        &mut a,
        Msg::Resize {
            width: 200,
            height: 50,
        },
    );
    let mut t = terminal();
    draw(&mut t, &a);
    println!(
        "{n} elections x {kept} changes kept: read model {:.0} MiB live ({:.0} B a change), built in {}",
        live as f64 / 1048576.0,
        live as f64 / (n * kept) as f64,
        ms(built)
    );
    let mut open = Vec::new();
    for _ in 0..rounds {
        let allocs = ALLOCS.load(Ordering::Relaxed);
        open.push(timed(|| {
            app::update(&mut a, Msg::Action(Action::ToggleTimeline));
            draw(&mut t, &a);
        }));
        if open.len() == 1 {
            let made = ALLOCS.load(Ordering::Relaxed) - allocs;
            println!("  allocations to open the view and draw it: {made}");
        }
        app::update(&mut a, Msg::Action(Action::Back));
        draw(&mut t, &a);
    }
    println!(
        "  open the timeline (t + first frame 200x50): {}",
        figures(open)
    );
    app::update(&mut a, Msg::Action(Action::ToggleTimeline));
    for zoom in ["5m", "1h", "24h"] {
        let redraw = (0..rounds).map(|_| timed(|| draw(&mut t, &a))).collect();
        println!("  redraw 200x50 at {zoom}: {}", figures(redraw));
        app::update(&mut a, Msg::Action(Action::ZoomOut));
    }
}

fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (n, rounds) = if full { (10_000, 20) } else { (30, 2) };
    let only = std::env::var("ELECTOP_BENCH_ONLY").unwrap_or_default();
    if only.is_empty() || only == "views" {
        for kept in [200, DAY] {
            views(n, kept, rounds);
            if let Some(rss) = peak_rss_mib() {
                println!("  peak RSS of this process so far: {rss:.0} MiB");
            }
        }
    }
    if only.is_empty() || only == "journal" {
        journal::run(n, if full { 3 } else { 1 });
    }
}

mod journal {
    use super::*;

    /// The release binary next to this bench.
    fn bin() -> PathBuf {
        PathBuf::from(env!("CARGO_BIN_EXE_electop"))
    }

    /// The CPU time (user and system) of the children waited for so far.
    fn children_cpu() -> Duration {
        // SAFETY: a zeroed rusage is a valid value for the call to fill.
        let mut u: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `u` is a valid rusage for the call to fill.
        unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) };
        let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
        tv(u.ru_utime) + tv(u.ru_stime)
    }

    /// One run of the binary: its wall time, its CPU time, and its output.
    fn electop(home: &Path, args: &[&str]) -> ((Duration, Duration), std::process::Output) {
        let db = format!("sqlite://{}", home.join("elections.db").display());
        let (t0, c0) = (Instant::now(), children_cpu());
        let out = Command::new(bin())
            .env("XDG_DATA_HOME", home.join("data"))
            .env("XDG_CONFIG_HOME", home.join("config"))
            .args(["--sql", &db, "--scheme", "sql-lease"])
            .args(args)
            .output()
            .expect("run electop");
        ((t0.elapsed(), children_cpu().saturating_sub(c0)), out)
    }

    /// Every run's wall (CPU) time, in order, and the journal's size after the last.
    fn each(times: &[(Duration, Duration)]) -> String {
        let runs: Vec<String> = times
            .iter()
            .map(|(w, c)| format!("{} ({} CPU)", ms(*w), ms(*c)))
            .collect();
        runs.join(", ")
    }

    /// A SQLite table of `n` elections, each led by its last holder.
    fn table(home: &Path, n: usize) {
        let sql = format!(
            "CREATE TABLE leaderlock (key TEXT PRIMARY KEY, leader_id TEXT NOT NULL, valid_until TIMESTAMP NOT NULL);
             WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < {last})
             INSERT INTO leaderlock SELECT printf('e%05d', i), 'node-' || ((i + {day} - 1) % 3 + 1),
             strftime('%Y-%m-%d %H:%M:%f', 'now', '+1 day') FROM k;",
            last = n - 1,
            day = DAY,
        );
        let ok = Command::new("sqlite3")
            .arg(home.join("elections.db"))
            .arg(sql)
            .status()
            .expect("sqlite3 (apt-get install sqlite3)");
        assert!(ok.success(), "the table made");
    }

    /// The history database under `home`.
    fn database(home: &Path) -> rusqlite::Connection {
        let path = home.join("data/electop/history.sqlite3");
        rusqlite::Connection::open(path).expect("the history database")
    }

    /// The journal `key` holding, for `n` elections, their last `kept` changes, in the order
    /// a run records them (minute by minute), as docs/history.md gives the format. The
    /// database's size in use after.
    fn fill(home: &Path, key: &str, n: usize, kept: usize, now: SystemTime) -> u64 {
        let mut db = database(home);
        let id: i64 = db
            .query_row("SELECT id FROM journals WHERE key = ?1", [key], |r| {
                r.get(0)
            })
            .expect("the journal's id");
        let tx = db.transaction().expect("a transaction");
        tx.execute("DELETE FROM records WHERE journal = ?1", [id])
            .expect("emptied");
        {
            let mut insert = tx
                .prepare(
                    "INSERT INTO records (journal, run, kind, election, at, line)
                     VALUES (?1, 1, 'change', ?2, ?3, ?4)",
                )
                .expect("insert");
            for i in DAY - kept..DAY {
                for e in 0..n {
                    let h = change(e, i, now);
                    let at = h.at.expect("timed");
                    let election = format!("e{e:05}");
                    let mut line = serde_json::json!({
                        "v": 2,
                        "kind": "change",
                        "at": rfc3339(at),
                        "election": election,
                        "cause": h.cause,
                    });
                    for (k, v) in [("from", h.from), ("to", h.to)] {
                        if let Some(v) = v {
                            line[k] = v.into();
                        }
                    }
                    let ms = at
                        .duration_since(SystemTime::UNIX_EPOCH)
                        .expect("after")
                        .as_millis() as i64;
                    let row = rusqlite::params![id, election, ms, line.to_string()];
                    insert.execute(row).expect("inserted");
                }
            }
        }
        tx.commit().expect("committed");
        size(&db)
    }

    fn size(db: &rusqlite::Connection) -> u64 {
        let q = "SELECT (page_count - freelist_count) * page_size \
                 FROM pragma_page_count, pragma_freelist_count, pragma_page_size";
        db.query_row(q, [], |r| r.get::<_, i64>(0)).expect("size") as u64
    }

    fn rfc3339(t: SystemTime) -> String {
        time::OffsetDateTime::from(t)
            .format(&time::format_description::well_known::Rfc3339)
            .expect("a time")
    }

    /// `rounds` runs of `electop args`, each succeeding: their times, and the last's output.
    fn succeeding(
        home: &Path,
        args: &[&str],
        rounds: usize,
    ) -> (Vec<(Duration, Duration)>, std::process::Output) {
        let mut times = Vec::new();
        let mut last = None;
        for _ in 0..rounds.max(1) {
            let (took, out) = electop(home, args);
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            times.push(took);
            last = Some(out);
        }
        (times, last.expect("one run at least"))
    }

    /// `electop history` for one election, timed, from journals as runs keep them.
    pub(super) fn run(n: usize, rounds: usize) {
        let home = tempfile::tempdir().expect("a temp dir");
        table(home.path(), n);
        // A first run names the source's journal (`status`: `history ELECTION` only reads).
        let (_, out) = electop(home.path(), &["status", "--json", "--timeout", "60s"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let key: String = database(home.path())
            .query_row("SELECT key FROM journals LIMIT 1", [], |r| r.get(0))
            .expect("the journal");
        let history = [
            "history",
            &format!("e{:05}", n / 2),
            "--json",
            "--since",
            "24h",
            "--timeout",
            "120s",
        ];
        let status = ["status", "--json", "--timeout", "120s"];
        // What the commands cost with nothing in the journal: the floor under any reading.
        for (what, args) in [("history ELECTION", &history[..]), ("status", &status[..])] {
            let times: Vec<_> = (0..rounds).map(|_| electop(home.path(), args).0).collect();
            println!("`{what}` with an empty journal: {}", each(&times));
        }
        for kept in [200, 400] {
            let bytes = fill(home.path(), &key, n, kept, SystemTime::now());
            let (times, out) = succeeding(home.path(), &history, rounds);
            let doc: serde_json::Value =
                serde_json::from_slice(&out.stdout).expect("history's JSON");
            let shown = doc["elections"][0]["segments"]
                .as_array()
                .map_or(0, Vec::len);
            println!(
                "journal of {n} elections x {kept} changes: the database {:.1} MiB ({} B a \
                 change); `history ELECTION --json --since 24h` ({shown} segments): {}",
                bytes as f64 / 1048576.0,
                bytes / (n * kept) as u64,
                each(&times),
            );
            // `status` reads every election's history back, as the dashboard's start does;
            // it trims the journal to its bound first.
            let (times, _) = succeeding(home.path(), &status, rounds);
            println!(
                "  `status --json` from that journal: {}; the database then {:.1} MiB",
                each(&times),
                size(&database(home.path())) as f64 / 1048576.0,
            );
            let times: Vec<_> = (0..rounds)
                .map(|_| electop(home.path(), &history).0)
                .collect();
            println!("  `history ELECTION` after it: {}", each(&times));
        }
    }
}
