//! The real binary, end to end, in tmux: it shows the live election, follows a failover,
//! answers keys, and gives the terminal back when it quits.

mod common;

use std::time::Duration;

use common::etcd::{EtcdServer, campaign_in_order};
use common::tmux::Tmux;

const T: Duration = Duration::from_secs(10);

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

    let home = tempfile::tempdir().expect("tempdir");
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
    let home = tempfile::tempdir().expect("tempdir");
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
    let home = tempfile::tempdir().expect("tempdir");
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
    let home = tempfile::tempdir().expect("tempdir");
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
    let home = tempfile::tempdir().expect("tempdir");
    let args = format!("--sql {} --scheme sql-lease --poll 100ms", store.url());
    let tmux = Tmux::start(100, 30, &shell(home.path(), &args));
    let screen = tmux.wait_screen("the SQL election", T, |s| {
        s.contains("jobs") && s.contains("node-a")
    });
    assert!(screen.contains("sql-lease"), "{screen}");
    store.exec("UPDATE leaderlock SET leader_id = 'node-b'");
    tmux.wait_screen("the takeover", T, |s| {
        s.contains("taken_over") && s.contains("node-b")
    });
    tmux.send(&["q"]);
    tmux.wait_screen("exit", T, |s| s.contains("ELECTOP-EXITED 0"));
}

/// The demo on embedded SQLite: kill the leader, see the new leader and the failover time
/// on screen, quit, and find no child process left.
#[test]
fn demo_fails_over_when_the_leader_is_killed_and_leaves_nothing_running() {
    let home = tempfile::tempdir().expect("tempdir");
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
    let running = || {
        let out = std::process::Command::new("pgrep")
            .args(["-f", &dir])
            .output()
            .expect("pgrep");
        String::from_utf8_lossy(&out.stdout).lines().count()
    };
    assert_eq!(running(), 2, "two nodes left running before quitting");
    tmux.send(&["q"]);
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
    let home = tempfile::tempdir().expect("tempdir");
    let tmux = Tmux::start(
        160,
        40,
        &shell(
            home.path(),
            "demo --store etcd --spawn-etcd --ttl 2s --renew 500ms",
        ),
    );
    let screen = tmux.wait_screen("an elected leader", T, |s| {
        s.contains("LEADER") && s.contains("etcd-election on etcd")
    });
    let endpoint = screen
        .split_whitespace()
        .skip_while(|w| *w != "etcd")
        .nth(1)
        .filter(|w| w.starts_with("127.0.0.1:"))
        .expect("the spawned etcd's endpoint on screen")
        .to_string();
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
    assert_eq!(count(&format!("--etcd {endpoint}")), 3, "three nodes run");
    tmux.send(&["q"]);
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
    let home = tempfile::tempdir().expect("tempdir");
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
    tmux.send(&["q"]);
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
    let home = tempfile::tempdir().expect("tempdir");
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
    tmux.wait_screen("the confirmation", T, |s| {
        s.contains("force a re-election of jobs") && s.contains("revoke lease")
    });
    tmux.send(&["y"]);
    tmux.wait_screen("the outcome in place", T, |s| {
        s.contains("done: revoked lease")
    });
    // node-a's key is held until it must have noticed: a third of etcdctl's 60 s TTL + 2 s.
    assert!(
        b.wait_elected(std::time::Duration::from_secs(35)),
        "node-b takes over"
    );
    tmux.wait_screen("the forced change in the history", T, |s| {
        s.contains("node-a → node-b forced")
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
