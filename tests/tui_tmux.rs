//! The real binary, end to end, in tmux: it shows the live election, follows a failover,
//! answers keys, and gives the terminal back when it quits.

mod common;

use std::time::Duration;

use common::etcd::{EtcdServer, campaign_in_order};
use common::tmux::Tmux;

use common::T;

/// `q` in the demo asks first (quitting stops the nodes); `y` confirms.
fn quit_demo(tmux: &Tmux) {
    tmux.send(&["q"]);
    tmux.wait_screen("the question", T, |s| {
        s.contains("Quit?") && s.contains("stops every node")
    });
    tmux.send(&["y"]);
}

fn shell(home: &std::path::Path, args: &str) -> String {
    format!(
        "env RUST_BACKTRACE=0 XDG_CONFIG_HOME={h}/config XDG_DATA_HOME={h}/data {bin} {args}; echo ELECTOP-EXITED $?; sleep 60",
        h = home.display(),
        bin = common::electop::bin(),
    )
}

#[test]
fn dashboard_follows_a_failover_and_quits_cleanly() {
    let etcd = EtcdServer::start();
    let [mut a, mut b] = campaign_in_order(&etcd, "/tui/jobs", ["node-a", "node-b"]);

    let home = common::scratch::tempdir();
    let tmux = Tmux::start(
        100,
        30,
        &shell(
            home.path(),
            &format!("--etcd {} --prefix /tui/", etcd.endpoint()),
        ),
    );
    let screen = tmux.wait_screen("the election", T, |s| {
        s.contains("jobs") && s.contains("node-a")
    });
    assert!(screen.contains("node-b"), "node-b waits in line:\n{screen}");
    assert!(
        screen.contains(&etcd.endpoint()),
        "status bar names the endpoint:\n{screen}"
    );

    a.resign();
    assert!(b.wait_elected(T));
    let screen = tmux.wait_screen("the handover in the history", T, |s| s.contains("resigned"));
    let row = screen
        .lines()
        .find(|l| l.contains("jobs") && l.contains("election"))
        .unwrap_or("");
    assert!(
        row.contains("node-b"),
        "table shows the new leader: {row:?}\n{screen}"
    );

    tmux.send(&["?"]);
    tmux.wait_screen("help", T, |s| s.contains("Keys") && s.contains("quit"));
    tmux.send(&["Escape"]);
    tmux.wait_screen("help closed", T, |s| !s.contains(" Keys "));
    tmux.send(&["q"]);
    let screen = tmux.wait_screen("exit", T, |s| s.contains("ELECTOP-EXITED"));
    assert!(
        screen.contains("ELECTOP-EXITED 0"),
        "exit status 0:\n{screen}"
    );
    assert!(
        !screen.contains("Elections"),
        "alternate screen left, terminal restored:\n{screen}"
    );
}

#[test]
fn a_tiny_terminal_gets_a_message_and_still_quits() {
    let home = common::scratch::tempdir();
    let port = common::free_port();
    let tmux = Tmux::start(
        40,
        10,
        &shell(home.path(), &format!("--etcd 127.0.0.1:{port}")),
    );
    tmux.wait_screen("too-small message", T, |s| s.contains("too small"));
    tmux.send(&["C-c"]);
    let screen = tmux.wait_screen("exit", T, |s| s.contains("ELECTOP-EXITED"));
    assert!(screen.contains("ELECTOP-EXITED 0"), "{screen}");
}

#[test]
fn an_unreachable_store_is_shown_with_its_retry() {
    let home = common::scratch::tempdir();
    let port = common::free_port();
    let tmux = Tmux::start(
        120,
        30,
        &shell(
            home.path(),
            &format!("--etcd 127.0.0.1:{port} --prefix /x/"),
        ),
    );
    let screen = tmux.wait_screen("the outage", T, |s| {
        s.contains("DOWN") && s.contains("retry in")
    });
    assert!(screen.contains(&format!("127.0.0.1:{port}")), "{screen}");
    tmux.send(&["q"]);
    tmux.wait_screen("exit", T, |s| s.contains("ELECTOP-EXITED 0"));
}

#[test]
fn a_panic_restores_the_terminal() {
    let home = common::scratch::tempdir();
    let port = common::free_port();
    let tmux = Tmux::start(
        100,
        30,
        &shell(
            home.path(),
            &format!("--etcd 127.0.0.1:{port} --debug-panic"),
        ),
    );
    let screen = tmux.wait_screen("exit", T, |s| s.contains("ELECTOP-EXITED"));
    assert!(
        screen.contains("ELECTOP-EXITED 101"),
        "a panic exits non-zero:\n{screen}"
    );
    assert!(
        screen.contains("--debug-panic"),
        "the panic message is readable:\n{screen}"
    );
    assert!(
        !screen.contains("Elections"),
        "alternate screen left:\n{screen}"
    );
    // Raw mode is off again: the terminal echoes what is typed (raw mode would not).
    tmux.send(&["typed-after-panic"]);
    tmux.wait_screen("echo", T, |s| s.contains("typed-after-panic"));
}

#[test]
fn sql_elections_show_on_the_dashboard() {
    let store = common::sqlstore::Store::sqlite();
    store.create_lease_table("leaderlock");
    assert!(store.lease_attempt("leaderlock", "jobs", "node-a", 60));
    let home = common::scratch::tempdir();
    let args = format!("--sql {} --scheme sql-lease --poll 100ms", store.url());
    let tmux = Tmux::start(100, 30, &shell(home.path(), &args));
    let screen = tmux.wait_screen("the SQL election", T, |s| {
        s.contains("jobs") && s.contains("node-a")
    });
    assert!(screen.contains("sql-lease"), "{screen}");
    store.exec("UPDATE leaderlock SET leader_id = 'node-b'");
    tmux.wait_screen("the takeover", T, |s| {
        s.contains("unknown") && s.contains("node-b")
    });
    tmux.send(&["q"]);
    tmux.wait_screen("exit", T, |s| s.contains("ELECTOP-EXITED 0"));
}

/// The demo on embedded SQLite: kill the leader, see the new leader and the failover time
/// on screen, quit, and find no child process left.
#[test]
fn demo_fails_over_when_the_leader_is_killed_and_leaves_nothing_running() {
    let home = common::scratch::tempdir();
    let tmux = Tmux::start(
        160,
        40,
        &shell(home.path(), "demo --ttl 2s --renew 500ms --retry 300ms"),
    );
    let leader_row = |s: &str| -> Option<String> {
        s.lines()
            .find(|l| l.contains("demo") && l.contains("sql-lease") && l.contains("node-"))
            .and_then(|l| {
                l.split_whitespace()
                    .find(|w| w.starts_with("node-"))
                    .map(str::to_string)
            })
    };
    let screen = tmux.wait_screen("a leader", T, |s| {
        leader_row(s).is_some() && s.contains("LEADER")
    });
    let old = leader_row(&screen).expect("leader");
    let dir = screen
        .split_whitespace()
        .find_map(|w| {
            w.strip_prefix("sqlite://")
                .and_then(|p| p.strip_suffix("/elections.db"))
        })
        .expect("the demo's directory on screen")
        .to_string();
    let digit = old.trim_start_matches("node-").to_string();
    tmux.send(&[&digit, "x"]);
    let screen = tmux.wait_screen("a new leader and the failover time", T, |s| {
        leader_row(s).is_some_and(|l| l != old) && s.contains("failover")
    });
    assert!(screen.contains("KILLED"), "{screen}");
    assert!(screen.contains(&format!("failover {old} →")), "{screen}");
    // Killed, it believes nothing from the kill on: no overlap with its successor.
    assert!(screen.contains("split brains: 0"), "{screen}");
    let running = || {
        let out = std::process::Command::new("pgrep")
            .args(["-f", &dir])
            .output()
            .expect("pgrep");
        String::from_utf8_lossy(&out.stdout).lines().count()
    };
    assert_eq!(running(), 2, "two nodes left running before quitting");
    quit_demo(&tmux);
    tmux.wait_screen("exit", T, |s| s.contains("ELECTOP-EXITED 0"));
    assert_eq!(running(), 0, "no child process left after quit");
    assert!(
        !std::path::Path::new(&dir).exists(),
        "the demo's directory is removed"
    );
}

/// The demo on a local etcd it starts itself: three etcd-election nodes, one leader, and on
/// quit neither the nodes nor etcd are left running.
#[test]
fn demo_on_a_spawned_etcd_cleans_up_after_itself() {
    let home = common::scratch::tempdir();
    let tmux = Tmux::start(
        160,
        40,
        &shell(
            home.path(),
            "demo --store etcd --spawn-etcd --ttl 2s --renew 500ms",
        ),
    );
    let endpoint_of = |screen: &str| {
        let mut words = screen.split_whitespace().skip_while(|w| *w != "etcd");
        let endpoint = words.nth(1).filter(|w| w.starts_with("127.0.0.1:"));
        endpoint.map(str::to_string)
    };
    // The endpoint is waited for too: a frame caught half drawn may not have it yet.
    let screen = tmux.wait_screen("an elected leader and the spawned etcd", T, |s| {
        s.contains("LEADER") && s.contains("etcd-election on etcd") && endpoint_of(s).is_some()
    });
    let endpoint = endpoint_of(&screen).expect("the spawned etcd's endpoint on screen");
    let count = |pattern: &str| {
        let out = std::process::Command::new("pgrep")
            .args(["-f", "--", pattern])
            .output()
            .expect("pgrep");
        String::from_utf8_lossy(&out.stdout).lines().count()
    };
    let port = endpoint.trim_start_matches("127.0.0.1:").to_string();
    assert!(
        count(&format!("listen-client-urls http://127.0.0.1:{port}")) == 1,
        "etcd runs"
    );
    // The nodes start once the dashboard has read the store: the table's header is on
    // screen a moment before the last of them has started.
    let nodes = format!("--etcd {endpoint}");
    common::wait_for("three nodes run", T, || match count(&nodes) {
        3 => Ok(()),
        n => Err(format!("{n} nodes run")),
    });
    quit_demo(&tmux);
    tmux.wait_screen("exit", T, |s| s.contains("ELECTOP-EXITED 0"));
    assert_eq!(count(&format!("--etcd {endpoint}")), 0, "no node left");
    assert_eq!(
        count(&format!("listen-client-urls http://127.0.0.1:{port}")),
        0,
        "no etcd left"
    );
}

/// The demo on PostgreSQL with the heartbeat scheme: it creates the table, elects a leader,
/// and the dashboard and the node panes agree.
#[test]
fn demo_on_postgres_with_heartbeats() {
    let pg = common::postgres::Postgres::start();
    let home = common::scratch::tempdir();
    let args = format!(
        "demo --store postgres --sql {} --scheme sql-heartbeat --ttl 2s --renew 300ms --retry 300ms",
        pg.url()
    );
    let tmux = Tmux::start(160, 40, &shell(home.path(), &args));
    // Two panes follow the leader, and the dashboard names it.
    let screen = tmux.wait_screen("an elected leader", T, |s| {
        s.matches("follower of node-").count() >= 2
            && s.lines()
                .any(|l| l.contains("heartbeat") && l.contains("node-"))
    });
    assert!(
        screen.contains("sql-heartbeat on postgres://tester@127.0.0.1"),
        "{screen}"
    );
    assert!(
        !screen.contains("s3cret-pw"),
        "no password on screen:\n{screen}"
    );
    quit_demo(&tmux);
    tmux.wait_screen("exit", T, |s| s.contains("ELECTOP-EXITED 0"));
    assert_eq!(
        pg.psql("SELECT count(*) FROM service_election"),
        "1",
        "the demo's table holds the election"
    );
}

/// An admin action from the dashboard: confirmed, carried out, shown in place, and its
/// leader change labelled `forced` in the history.
#[test]
fn reelect_from_the_dashboard_is_confirmed_done_and_labelled_forced() {
    let etcd = EtcdServer::start();
    let [mut a, mut b] = campaign_in_order(&etcd, "/tuiadm/jobs", ["node-a", "node-b"]);
    let home = common::scratch::tempdir();
    let tmux = Tmux::start(
        120,
        30,
        &shell(
            home.path(),
            &format!("--etcd {} --prefix /tuiadm/", etcd.endpoint()),
        ),
    );
    tmux.wait_screen("the election", T, |s| {
        s.contains("jobs") && s.contains("node-a")
    });
    tmux.send(&["R"]);
    tmux.wait_screen("the confirmation, with its keys", T, |s| {
        s.contains("Force a re-election of jobs") && s.contains("y: do it")
    });
    // The whole plan is one key away, and yes still confirms from there.
    tmux.send(&["d"]);
    tmux.wait_screen("the whole plan", T, |s| {
        s.contains("revoke lease") && s.contains("d/Esc: back")
    });
    tmux.send(&["y"]);
    tmux.wait_screen("the outcome in place", T, |s| {
        s.contains("done: revoked lease")
    });
    // node-a's key is held until it must have noticed: a third of etcdctl's 60 s TTL + 2 s.
    // Meanwhile nobody leads, and the row counts the hold down.
    tmux.wait_screen("the hold on the row", T, |s| {
        s.contains("⏳ node-b next in") && s.contains("deposed node-a")
    });
    assert!(
        b.wait_elected(std::time::Duration::from_secs(35)),
        "node-b takes over"
    );
    tmux.wait_screen("the forced change, then node-b's election", T, |s| {
        s.lines()
            .any(|l| l.contains("node-a → ∅") && l.contains("forced"))
            && s.contains("∅ → node-b")
            && !s.contains("⏳")
    });
    common::wait_until(
        "etcdctl notices",
        std::time::Duration::from_secs(30),
        || !a.is_running(),
    );
    tmux.send(&["q"]);
    tmux.wait_screen("exit", T, |s| s.contains("ELECTOP-EXITED 0"));
    let audit =
        std::fs::read_to_string(home.path().join("data/electop/audit.jsonl")).expect("audit log");
    assert!(
        audit.contains("\"action\":\"reelect\"") && audit.contains("\"outcome\":\"done\""),
        "{audit}"
    );
}

/// Quitting while an admin action is under way waits for it, saying so, instead of aborting
/// it: the action (slowed by a proxy to the store) completes and is audited after the quit.
#[test]
fn quitting_waits_for_an_admin_action_in_flight() {
    let store = common::sqlstore::Store::postgres();
    store.create_lease_table("leaderlock");
    assert!(store.lease_attempt("leaderlock", "jobs", "node-a", 60));
    let port = match &store {
        common::sqlstore::Store::Pg(p) => p.port(),
        _ => unreachable!("postgres"),
    };
    let proxy = common::proxy::Proxy::start(port, Duration::from_secs(60));
    let url = store
        .url()
        .replace(&format!(":{port}/"), &format!(":{}/", proxy.port()));
    let home = common::scratch::tempdir();
    let args = format!("--sql {url} --scheme sql-lease --poll 200ms");
    let tmux = Tmux::start(120, 30, &shell(home.path(), &args));
    tmux.wait_screen("the election", T, |s| {
        s.contains("jobs") && s.contains("node-a")
    });
    // From now on the action's own connection takes a couple of seconds to set up.
    proxy.delay_both(Duration::from_millis(100), Duration::from_millis(100));
    tmux.send(&["R"]);
    tmux.wait_screen("the confirmation", T, |s| {
        s.contains("Force a re-election of jobs")
    });
    tmux.send(&["y"]);
    tmux.send(&["C-c"]);
    tmux.wait_screen("the notice", T, |s| {
        s.contains("waiting for reelect jobs to finish")
    });
    tmux.wait_screen("exit", T, |s| s.contains("ELECTOP-EXITED 0"));
    assert_eq!(
        store.exec("SELECT count(*) FROM leaderlock WHERE key = 'jobs'"),
        "0",
        "the re-election went through after the quit"
    );
    let audit =
        std::fs::read_to_string(home.path().join("data/electop/audit.jsonl")).expect("audit log");
    let outcomes: Vec<String> = audit
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("JSON");
            v["outcome"].as_str().unwrap_or("").to_string()
        })
        .collect();
    assert_eq!(outcomes, ["attempt", "done"], "{audit}");
}

/// A backend task that panics (on purpose here) is a lasting error on screen, not a frozen
/// source; the dashboard goes on, and when it quits, the terminal is back and electop exits
/// non-zero, saying what panicked.
#[test]
fn a_panicking_backend_task_shows_and_exits_non_zero() {
    let store = common::sqlstore::Store::sqlite();
    store.create_lease_table("leaderlock");
    let home = common::scratch::tempdir();
    let args = format!("--sql {} --scheme sql-lease", store.url());
    let tmux = Tmux::start(
        160,
        30,
        &format!(
            "env ELECTOP_DEBUG_PANIC=backend {}",
            shell(home.path(), &args)
        ),
    );
    tmux.wait_screen("the lasting error", T, |s| {
        s.contains("backend task panicked")
    });
    tmux.send(&["q"]);
    let screen = tmux.wait_screen("exit", T, |s| s.contains("ELECTOP-EXITED"));
    assert!(
        screen.contains("ELECTOP-EXITED 101"),
        "a panic in a task exits non-zero:\n{screen}"
    );
    assert!(
        screen.contains("a task panicked") && screen.contains("ELECTOP_DEBUG_PANIC"),
        "says what panicked once the terminal is back:\n{screen}"
    );
    assert!(
        !screen.contains("Elections"),
        "alternate screen left:\n{screen}"
    );
}

/// The seconds in `… · 1.4s` or `…, 1.4s` right after `marker` on screen.
fn secs_after(screen: &str, marker: &str) -> Option<f64> {
    let rest = &screen[screen.find(marker)? + marker.len()..];
    let end = rest.find('s')?;
    rest[..end].trim().parse().ok()
}

/// Split brain in the demo: the leader paused (SIGSTOP) until another node takes over still
/// believes it leads, so the two overlap, flagged while it lasts; resumed, it notices, and
/// the overlap is counted, timed and recorded in the events and in the log.
#[test]
fn demo_flags_a_split_brain_while_a_paused_leader_still_believes_it_leads() {
    let home = common::scratch::tempdir();
    let tmux = Tmux::start(
        160,
        40,
        &shell(home.path(), "demo --ttl 2s --renew 500ms --retry 300ms"),
    );
    let leader_row = |s: &str| -> Option<String> {
        s.lines()
            .find(|l| l.contains("demo") && l.contains("sql-lease") && l.contains("node-"))
            .and_then(|l| l.split_whitespace().find(|w| w.starts_with("node-")))
            .map(str::to_string)
    };
    let screen = tmux.wait_screen("a leader", T, |s| {
        leader_row(s).is_some() && s.contains("LEADER") && s.contains("split brains: 0")
    });
    let leader = leader_row(&screen).expect("the leader in the table");
    tmux.send(&[leader.trim_start_matches("node-"), "p"]);
    // Paused, it cannot notice anything: it believes it leads when another takes over.
    let banner = format!("SPLIT BRAIN: {leader} and node-");
    tmux.wait_screen("the split brain flagged", T, |s| s.contains(&banner));
    // Its duration counts up on screen while it lasts.
    let screen = tmux.wait_screen("a split brain of a second", T, |s| {
        secs_after(s, "both believe they lead ·").is_some_and(|d| d >= 1.0)
    });
    assert!(screen.contains(&banner), "{screen}");
    assert!(screen.contains("LEADER · SPLIT BRAIN"), "{screen}");
    let shown = secs_after(&screen, "both believe they lead ·").expect("its duration");
    tmux.send(&["p"]);
    let screen = tmux.wait_screen("the split brain over and counted", T, |s| {
        s.contains("SPLIT BRAIN over:") && !s.contains("both believe they lead")
    });
    let over = format!("SPLIT BRAIN over: {leader} and node-");
    assert!(screen.contains(&over), "recorded in the events:\n{screen}");
    assert!(
        screen.contains("split brains: 1, longest"),
        "counted once:\n{screen}"
    );
    let recorded = screen
        .lines()
        .find(|l| l.contains(&over))
        .and_then(|l| secs_after(l, ", "));
    let longest = secs_after(&screen, "split brains: 1, longest");
    assert_eq!(
        recorded, longest,
        "the event and the summary agree:\n{screen}"
    );
    assert!(
        longest.is_some_and(|l| l >= shown),
        "it lasted at least as long as shown while it went on ({shown}s):\n{screen}"
    );
    quit_demo(&tmux);
    tmux.wait_screen("exit", T, |s| s.contains("ELECTOP-EXITED 0"));
    let log = std::fs::read_to_string(home.path().join("data/electop/electop.log"))
        .expect("the demo's log");
    assert!(
        log.contains(&format!("split brain: {leader} and node-")),
        "recorded in the log:\n{log}"
    );
}

/// The issue's own steps: in the demo (sql-lease), press `R`, let the leader renew its row,
/// then confirm. A renewal is not a change: the re-election is done, not refused.
#[test]
fn demo_reelect_confirmed_after_a_renewal_is_done() {
    let home = common::scratch::tempdir();
    let tmux = Tmux::start(
        160,
        40,
        &shell(home.path(), "demo --ttl 2s --renew 500ms --retry 300ms"),
    );
    let screen = tmux.wait_screen("a leader in the table", T, |s| {
        s.lines()
            .any(|l| l.contains("demo") && l.contains("sql-lease") && l.contains("node-"))
    });
    let db = screen
        .split_whitespace()
        .find_map(|w| w.strip_prefix("sqlite://"))
        .filter(|p| p.ends_with("/elections.db"))
        .expect("the demo's database on screen")
        .to_string();
    tmux.send(&["R"]);
    tmux.wait_screen("the confirmation", T, |s| {
        s.contains("Force a re-election of demo")
    });
    let valid_until = || {
        let out = std::process::Command::new("sqlite3")
            .args(["-cmd", ".timeout 5000", &db])
            .arg("SELECT valid_until FROM leaderlock WHERE key = 'demo'")
            .output()
            .expect("sqlite3");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let seen = valid_until();
    common::wait_until("the leader renews after the dialog opened", T, || {
        let now = valid_until();
        !now.is_empty() && now != seen
    });
    tmux.send(&["y"]);
    let screen = tmux.wait_screen("the outcome", T, |s| {
        s.contains("done:") || s.contains("changed:")
    });
    assert!(
        // The row is gone, or already taken again by the next node: either way, done.
        screen.contains("done: row demo"),
        "a renewal is not a change:\n{screen}"
    );
    quit_demo(&tmux);
    tmux.wait_screen("exit", T, |s| s.contains("ELECTOP-EXITED 0"));
}

/// The row of `name` in the elections table on screen (its line index).
fn row_of(screen: &str, name: &str) -> Option<usize> {
    screen
        .lines()
        .position(|l| l.split_whitespace().any(|w| w == name) && l.contains("sql-lease"))
}

/// k9s-style keys on the real binary: `/` filters and Esc clears, `:sort name` orders the
/// rows and says so in the header, `:events` shows a takeover, and a mouse click selects
/// the row under it.
#[test]
fn filter_sort_events_and_a_click_on_the_dashboard() {
    let store = common::sqlstore::Store::sqlite();
    store.create_lease_table("leaderlock");
    for (election, id) in [
        ("jobs", "node-a"),
        ("billing", "node-b"),
        ("cron", "node-c"),
    ] {
        assert!(store.lease_attempt("leaderlock", election, id, 60));
    }
    let home = common::scratch::tempdir();
    let args = format!("--sql {} --scheme sql-lease --poll 100ms", store.url());
    let tmux = Tmux::start(120, 30, &shell(home.path(), &args));
    tmux.wait_screen("three elections", T, |s| {
        ["jobs", "billing", "cron"]
            .iter()
            .all(|n| row_of(s, n).is_some())
    });

    tmux.send(&["/", "bill"]);
    let screen = tmux.wait_screen("the filter", T, |s| s.contains("/bill (1 of 3)"));
    assert!(row_of(&screen, "jobs").is_none(), "{screen}");
    tmux.send(&["Enter"]);
    tmux.send(&["Escape"]);
    tmux.wait_screen("the filter cleared", T, |s| {
        !s.contains("/bill") && row_of(s, "jobs").is_some()
    });

    tmux.send(&[":", "sort na", "Tab", "Enter"]);
    let screen = tmux.wait_screen("sorted by name", T, |s| s.contains("ELECTION▲"));
    let order = |s: &str| {
        [
            row_of(s, "billing").unwrap_or(0),
            row_of(s, "cron").unwrap_or(0),
            row_of(s, "jobs").unwrap_or(0),
        ]
    };
    let rows = order(&screen);
    assert!(rows[0] < rows[1] && rows[1] < rows[2], "{screen}");

    assert!(
        screen.contains("┌ billing · sql-lease"),
        "first row selected:\n{screen}"
    );
    // A click on the third row (SGR mouse report; 1-based column and row).
    let y = rows[2] + 1;
    tmux.send(&["-l", &format!("\x1b[<0;10;{y}M\x1b[<0;10;{y}m")]);
    tmux.wait_screen("jobs selected", T, |s| s.contains("┌ jobs · sql-lease"));

    store.exec("UPDATE leaderlock SET leader_id = 'node-z' WHERE key = 'jobs'");
    tmux.send(&[":", "events", "Enter"]);
    let screen = tmux.wait_screen("the takeover in the events", T, |s| {
        s.contains("Events ·") && s.contains("leader node-a → node-z")
    });
    assert!(screen.contains("(unknown)"), "{screen}");
    tmux.send(&["Escape"]);
    tmux.wait_screen("back on the elections", T, |s| s.contains("ELECTION▲"));
    // Esc on the main screen does nothing: the dashboard goes on (a key right after Esc
    // could be read as Alt+key, so the store, not a key, shows it is still running).
    tmux.send(&["Escape"]);
    store.exec("UPDATE leaderlock SET leader_id = 'node-y' WHERE key = 'cron'");
    tmux.wait_screen("still running", T, |s| {
        s.lines()
            .any(|l| l.contains("cron") && l.contains("node-y"))
    });
    tmux.send(&["q"]);
    tmux.wait_screen("exit", T, |s| s.contains("ELECTOP-EXITED 0"));
}

/// Two contexts in the config, one on etcd and one on a SQLite file: `:ctx` lists them,
/// Tab completes a name, and switching shows the other context's elections, the header
/// saying which context is shown.
#[test]
fn ctx_switches_live_between_an_etcd_and_a_sqlite_context() {
    let etcd = EtcdServer::start();
    let [_a] = campaign_in_order(&etcd, "/ctx/jobs", ["node-a"]);
    let store = common::sqlstore::Store::sqlite();
    store.create_lease_table("leaderlock");
    assert!(store.lease_attempt("leaderlock", "billing", "node-s", 60));

    let home = common::scratch::tempdir();
    let cfg = home.path().join("contexts.toml");
    std::fs::write(
        &cfg,
        format!(
            r#"current-context = "lab"

[[source]]
name = "lab-etcd"
kind = "etcd"
endpoints = ["{etcd}"]
prefix = "/ctx/"

[[source]]
name = "local-db"
kind = "sql"
url = "{url}"
scheme = "sql-lease"
poll = "100ms"

[[context]]
name = "lab"
sources = ["lab-etcd"]

[[context]]
name = "local"
sources = ["local-db"]
"#,
            etcd = etcd.endpoint(),
            url = store.url()
        ),
    )
    .expect("config");
    let args = format!("--config {}", cfg.display());
    let tmux = Tmux::start(100, 30, &shell(home.path(), &args));
    tmux.wait_screen("the lab context", T, |s| {
        s.contains("ctx lab") && s.contains("jobs") && s.contains("node-a")
    });

    tmux.send(&[":", "c", "t", "x", "Enter"]);
    tmux.wait_screen("the contexts listed", T, |s| s.contains("*lab local"));

    tmux.send(&[":", "c", "t", "x", "Space", "l", "o", "Tab"]);
    tmux.wait_screen("the name completed", T, |s| s.contains(":ctx local"));
    tmux.send(&["Enter"]);
    let screen = tmux.wait_screen("the local context's elections", T, |s| {
        s.contains("ctx local") && s.contains("billing") && s.contains("node-s")
    });
    assert!(
        !screen.contains("jobs"),
        "the lab's elections are gone:\n{screen}"
    );
    assert!(
        screen.contains("sqlite:"),
        "the status bar names the new source:\n{screen}"
    );

    tmux.send(&["q"]);
    tmux.wait_screen("exit", T, |s| s.contains("ELECTOP-EXITED 0"));
}

/// `:ctx NAME` while an admin action is under way: the running action holds the screen (its
/// dialog takes the keys), so the switch cannot start before the action is done and
/// audited; afterwards it does.
#[test]
fn ctx_cannot_drop_an_admin_action_in_flight() {
    let store = common::sqlstore::Store::postgres();
    store.create_lease_table("leaderlock");
    assert!(store.lease_attempt("leaderlock", "jobs", "node-a", 60));
    let port = match &store {
        common::sqlstore::Store::Pg(p) => p.port(),
        _ => unreachable!("postgres"),
    };
    let proxy = common::proxy::Proxy::start(port, Duration::from_secs(60));
    let url = store
        .url()
        .replace(&format!(":{port}/"), &format!(":{}/", proxy.port()));
    let local = common::sqlstore::Store::sqlite();
    local.create_lease_table("leaderlock");
    assert!(local.lease_attempt("leaderlock", "billing", "node-s", 60));
    let home = common::scratch::tempdir();
    let cfg = home.path().join("contexts.toml");
    std::fs::write(
        &cfg,
        format!(
            "[[source]]\nname = \"pg\"\nkind = \"sql\"\nurl = \"{url}\"\nscheme = \"sql-lease\"\npoll = \"200ms\"\n\n\
             [[source]]\nname = \"lite\"\nkind = \"sql\"\nurl = \"{}\"\nscheme = \"sql-lease\"\npoll = \"100ms\"\n\n\
             [[context]]\nname = \"remote\"\nsources = [\"pg\"]\n\n\
             [[context]]\nname = \"local\"\nsources = [\"lite\"]\n",
            local.url()
        ),
    )
    .expect("config");
    let args = format!("--config {}", cfg.display());
    let tmux = Tmux::start(120, 30, &shell(home.path(), &args));
    tmux.wait_screen("the election", T, |s| {
        s.contains("ctx remote") && s.contains("jobs") && s.contains("node-a")
    });
    // From now on the action's own connection takes a couple of seconds to set up.
    proxy.delay_both(Duration::from_millis(100), Duration::from_millis(100));
    tmux.send(&["R"]);
    tmux.wait_screen("the confirmation", T, |s| {
        s.contains("Force a re-election of jobs")
    });
    tmux.send(&["y"]);
    let ctx = [
        ":", "c", "t", "x", "Space", "l", "o", "c", "a", "l", "Enter",
    ];
    tmux.send(&ctx);
    let screen = tmux.wait_screen("the outcome", T, |s| s.contains("done: "));
    assert!(
        screen.contains("ctx remote") && !screen.contains("switching"),
        "the keys typed while the action ran asked for no switch:\n{screen}"
    );
    assert_eq!(
        store.exec("SELECT count(*) FROM leaderlock WHERE key = 'jobs'"),
        "0",
        "the re-election went through before the switch"
    );
    let audit = home.path().join("data/electop/audit.jsonl");
    common::wait_until("the action audited as done", T, || {
        std::fs::read_to_string(&audit).is_ok_and(|a| a.contains("\"outcome\":\"done\""))
    });
    tmux.send(&ctx);
    tmux.wait_screen("the local context", T, |s| {
        s.contains("ctx local") && s.contains("billing") && s.contains("node-s")
    });
    tmux.send(&["q"]);
    tmux.wait_screen("exit", T, |s| s.contains("ELECTOP-EXITED 0"));
}

/// The demo at 80x24, stacked: each node's whole belief on its line; `F` offers the nodes
/// (SQLite keeps no line of candidates); Esc closes the dialog and does not quit; a click on
/// a node's line picks it, so `x` kills that one; quitting leaves no node running.
#[test]
fn demo_at_80x24_offers_the_nodes_to_force_and_a_click_picks_a_node() {
    let home = common::scratch::tempdir();
    let tmux = Tmux::start(
        80,
        24,
        &shell(home.path(), "demo --ttl 2s --renew 500ms --retry 300ms"),
    );
    // `▶1 node-1 LEADER` / ` 2 node-2 follower of node-1`: a node's line in the block.
    let node_line = |s: &str, what: &str| -> Option<(usize, String)> {
        s.lines().enumerate().find_map(|(y, l)| {
            let mut w = l.trim_start_matches(['▶', ' ']).split_whitespace();
            let (_, id, rest) = (w.next()?, w.next()?, w.collect::<Vec<_>>().join(" "));
            (id.starts_with("node-") && rest.starts_with(what)).then(|| (y, id.to_string()))
        })
    };
    // The leader in the elections table: `│   demo   sql-lease   node-1 …` (the scheme
    // shows where it fits).
    let in_table = |s: &str| -> Option<String> {
        s.lines().find_map(|l| {
            let mut w = l.split_whitespace().skip_while(|w| *w != "demo");
            w.next()?;
            let id = w.find(|w| !w.starts_with("sql-") && !w.starts_with("etcd"))?;
            (l.starts_with('│') && id.starts_with("node-")).then(|| id.to_string())
        })
    };
    let screen = tmux.wait_screen("a leader, in the table too, and two followers", T, |s| {
        node_line(s, "LEADER").is_some_and(|(_, l)| in_table(s) == Some(l))
            && s.matches("follower of node-").count() == 2
    });
    let (_, leader) = node_line(&screen, "LEADER").expect("the leader's line");
    assert!(
        screen.contains(&format!("follower of {leader}")),
        "the followers' beliefs are whole:\n{screen}"
    );
    let dir = screen
        .split_whitespace()
        .find_map(|w| {
            w.strip_prefix("sqlite://")
                .and_then(|p| p.strip_suffix("/elections.db"))
        })
        .expect("the demo's directory on screen")
        .to_string();

    tmux.send(&["F"]);
    let screen = tmux.wait_screen("the nodes offered", T, |s| s.contains("Who should lead?"));
    // The first word of each row inside the dialog, from its text's column on.
    let (top, col) = screen
        .lines()
        .enumerate()
        .find_map(|(y, l)| {
            let byte = l.find("Who should lead?")?;
            Some((y, l[..byte].chars().count()))
        })
        .expect("the dialog");
    let offered: Vec<String> = screen
        .lines()
        .skip(top + 1)
        .take_while(|l| l.chars().nth(col).is_none_or(|c| c != '─'))
        .filter_map(|l| {
            let inside: String = l.chars().skip(col).collect();
            let word = inside
                .trim_start_matches(['▶', ' '])
                .split_whitespace()
                .next()?;
            word.starts_with("node-").then(|| word.to_string())
        })
        .collect();
    assert_eq!(offered.len(), 2, "the two other nodes:\n{screen}");
    assert!(!offered.contains(&leader), "{screen}");
    // Ctrl-C inside the dialog asks too (quitting stops every node); Esc stays.
    tmux.send(&["C-c"]);
    tmux.wait_screen("the quit question over the dialog", T, |s| {
        s.contains("Quit?") && s.contains("stops every node") && !s.contains("Who should lead?")
    });
    tmux.send(&["Escape"]);
    let closed = tmux.wait_screen("the dialog closed, the demo still running", T, |s| {
        !s.contains("Who should lead?") && !s.contains("Quit?") && node_line(s, "LEADER").is_some()
    });
    // Esc on the main screen does not quit either: the leader's countdown goes on moving.
    tmux.send(&["Escape"]);
    tmux.wait_screen("the screen still drawn after Esc", T, |s| {
        s != closed && in_table(s).is_some() && !s.contains("ELECTOP-EXITED")
    });

    let (y, follower) = node_line(&tmux.capture(), "follower of").expect("a follower");
    // A click on its line (SGR mouse report; 1-based column and row).
    let row = y + 1;
    tmux.send(&["-l", &format!("\x1b[<0;6;{row}M\x1b[<0;6;{row}m")]);
    let digit = follower.trim_start_matches("node-");
    tmux.wait_screen("the clicked node picked", T, |s| {
        s.contains(&format!("▶{digit} {follower}"))
    });
    tmux.send(&["x"]);
    let screen = tmux.wait_screen("the picked node killed", T, |s| {
        s.contains(&format!("{follower} KILLED"))
    });
    // Its line says when it was killed, not when it last believed something.
    let killed = screen
        .lines()
        .find(|l| l.contains(&format!("{follower} KILLED")))
        .unwrap_or_default();
    assert!(
        killed.contains("killed (SIGKILL) at "),
        "{killed}\n{screen}"
    );
    assert!(
        node_line(&screen, "LEADER").is_some_and(|(_, l)| l == leader),
        "a follower was killed, the leader leads on:\n{screen}"
    );
    quit_demo(&tmux);
    tmux.wait_screen("exit", T, |s| s.contains("ELECTOP-EXITED 0"));
    let out = std::process::Command::new("pgrep")
        .args(["-f", &dir])
        .output()
        .expect("pgrep");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().count(),
        0,
        "no node left after quit"
    );
}

/// Waits until tmux's newest paste buffer holds `want` (an OSC 52 copy lands there).
fn wait_buffer(tmux: &Tmux, want: &str) {
    let deadline = std::time::Instant::now() + T;
    loop {
        let buffer = tmux.run(&["show-buffer"]);
        if buffer == want {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "tmux's buffer never held {want:?}; last: {buffer:?}\n{}",
            tmux.capture()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `Enter` opens the detail of the selected election, `y` copies the leader's id and `Y`
/// its key into tmux's paste buffer through OSC 52, `Esc` closes, and a double click on a
/// row opens it again.
#[test]
fn enter_opens_the_detail_and_y_copies_the_leader_through_osc52() {
    let etcd = EtcdServer::start();
    let [_a, _b] = campaign_in_order(&etcd, "/tui/jobs", ["node-a", "node-b"]);
    let home = common::scratch::tempdir();
    let tmux = Tmux::start(
        100,
        30,
        &shell(
            home.path(),
            &format!("--etcd {} --prefix /tui/", etcd.endpoint()),
        ),
    );
    // tmux keeps what applications copy (OSC 52) as a paste buffer with this on.
    tmux.run(&["set", "-s", "set-clipboard", "on"]);
    tmux.wait_screen("the election", T, |s| {
        s.contains("jobs") && s.contains("node-b")
    });

    tmux.send(&["Enter"]);
    let screen = tmux.wait_screen("the detail", T, |s| {
        s.contains("Revisions") && s.contains("Candidates · 1 waiting behind the leader")
    });
    assert!(screen.contains("┌ jobs · 1-"), "{screen}");
    let key_line = screen
        .lines()
        .find(|l| l.contains("Key ") && l.contains("/tui/jobs/"))
        .unwrap_or_else(|| panic!("the leader's key:\n{screen}"));
    let key = key_line
        .split_whitespace()
        .find(|w| w.starts_with("/tui/jobs/"))
        .unwrap_or("")
        .trim_end_matches('│')
        .to_string();

    tmux.send(&["y"]);
    tmux.wait_screen("the copy flash", T, |s| {
        s.contains("copied leader id node-a")
    });
    wait_buffer(&tmux, "node-a");
    tmux.send(&["Y"]);
    wait_buffer(&tmux, &key);

    tmux.send(&["Escape"]);
    let screen = tmux.wait_screen("the dashboard again", T, |s| {
        s.contains("ELECTION") && !s.contains("Revisions")
    });
    // A double click on the row (SGR mouse reports; 1-based column and row).
    let row = screen
        .lines()
        .position(|l| l.contains("jobs") && l.contains("node-a"))
        .expect("the row of jobs")
        + 1;
    let click = format!("\x1b[<0;10;{row}M\x1b[<0;10;{row}m");
    tmux.send(&["-l", &format!("{click}{click}")]);
    tmux.wait_screen("the detail from a double click", T, |s| {
        s.contains("Revisions")
    });
    tmux.send(&["Escape"]);
    tmux.wait_screen("closed", T, |s| !s.contains("Revisions"));
    tmux.send(&["q"]);
    tmux.wait_screen("exit", T, |s| s.contains("ELECTOP-EXITED 0"));
}
