//! The timeline view of the real binary, in tmux, against a real etcd with real
//! campaigners (`etcdctl elect`): a failover with time nobody led shows as a gap (`░`, not
//! colour alone: capture-pane has none) on the election's row, where it was not before.

mod common;

use std::time::Duration;

use common::T;
use common::etcd::{Campaigner, EtcdServer};
use common::tmux::Tmux;

fn shell(home: &std::path::Path, args: &str) -> String {
    format!(
        "env RUST_BACKTRACE=0 XDG_CONFIG_HOME={h}/config XDG_DATA_HOME={h}/data {bin} {args}; echo ELECTOP-EXITED $?; sleep 60",
        h = home.display(),
        bin = common::electop::bin(),
    )
}

/// The timeline's row of `name`: the line starting with it inside the view's border.
fn row(screen: &str, name: &str) -> Option<String> {
    screen
        .lines()
        .find(|l| l.starts_with(&format!("│{name} ")))
        .map(str::to_string)
}

#[test]
fn a_failover_shows_as_a_gap_on_the_elections_row() {
    let etcd = EtcdServer::start();
    let mut a = Campaigner::start(&etcd, "/tl/jobs", "node-a");
    assert!(a.wait_elected(T), "node-a elected: {}", a.stderr());
    let home = common::scratch::tempdir();
    let args = format!("--etcd {} --prefix /tl/", etcd.endpoint());
    let tmux = Tmux::start(100, 30, &shell(home.path(), &args));
    tmux.wait_screen("the election", T, |s| {
        s.contains("jobs") && s.contains("node-a")
    });
    tmux.send(&["t"]);
    let screen = tmux.wait_screen("the timeline", T, |s| {
        s.contains("Timeline · 5m to now") && row(s, "jobs").is_some()
    });
    let before = row(&screen, "jobs").unwrap_or_default();
    assert!(!before.contains('░'), "no gap yet: {before}\n{screen}");

    // node-a resigns; nobody leads until node-b campaigns, a few seconds later.
    a.resign();
    tmux.wait_screen("the gap opening", T, |s| {
        row(s, "jobs").is_some_and(|r| r.contains('░')) && s.contains("jobs: NO LEADER since")
    });
    // The gap's length is the point here: time passes with nobody leading.
    std::thread::sleep(Duration::from_secs(3));
    let mut b = Campaigner::start(&etcd, "/tl/jobs", "node-b");
    assert!(b.wait_elected(T), "node-b elected: {}", b.stderr());
    let screen = tmux.wait_screen("node-b after the gap", T, |s| {
        row(s, "jobs").is_some_and(|r| {
            let gap = r.find('░');
            gap.is_some() && r.rfind('━') > gap
        }) && s.contains("jobs: node-b led since")
    });
    assert!(
        screen.contains("(elected), still leads"),
        "the cursor's line says why node-b leads:\n{screen}"
    );
    // The help of this view names its keys.
    tmux.send(&["?"]);
    tmux.wait_screen("the timeline's keys", T, |s| {
        s.contains("Keys · timeline") && s.contains("pan back")
    });
    tmux.send(&["Escape"]);
    tmux.wait_screen("the help closed", T, |s| !s.contains("Keys · timeline"));
    tmux.send(&["Escape"]);
    tmux.wait_screen("back to the elections", T, |s| !s.contains("Timeline ·"));
    tmux.send(&["q"]);
    let screen = tmux.wait_screen("exit", T, |s| s.contains("ELECTOP-EXITED"));
    assert!(screen.contains("ELECTOP-EXITED 0"), "{screen}");
}

/// The same on SQLite: node-a's lease runs out with nobody renewing it (no leader: a gap),
/// then node-b takes the row.
#[test]
fn an_expired_sql_lease_shows_as_a_gap_until_the_next_holder() {
    let store = common::sqlstore::Store::sqlite();
    store.create_lease_table("leaderlock");
    assert!(store.lease_attempt("leaderlock", "jobs", "node-a", 2));
    let home = common::scratch::tempdir();
    let args = format!("--sql {} --scheme sql-lease --poll 100ms", store.url());
    let tmux = Tmux::start(100, 30, &shell(home.path(), &args));
    tmux.wait_screen("the SQL election", T, |s| {
        s.contains("jobs") && s.contains("node-a")
    });
    tmux.send(&["t"]);
    tmux.wait_screen("the lease running out, as a gap", T, |s| {
        row(s, "jobs").is_some_and(|r| r.contains('░')) && s.contains("jobs: NO LEADER since")
    });
    assert!(store.lease_attempt("leaderlock", "jobs", "node-b", 60));
    tmux.wait_screen("node-b after the gap", T, |s| {
        row(s, "jobs").is_some_and(|r| {
            let gap = r.find('░');
            gap.is_some() && r.rfind('━') > gap
        }) && s.contains("jobs: node-b led since")
    });
    tmux.send(&["q"]);
    tmux.wait_screen("exit", T, |s| s.contains("ELECTOP-EXITED 0"));
}
