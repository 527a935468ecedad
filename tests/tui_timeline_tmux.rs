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

/// The demo's node lines at 80x24: `N node-N LEADER`; the node that leads.
fn demo_leader(screen: &str) -> Option<String> {
    screen.lines().find_map(|l| {
        let mut w = l.split_whitespace().skip_while(|w| !w.starts_with("node-"));
        let id = w.next()?;
        (w.next() == Some("LEADER")).then(|| id.to_string())
    })
}

/// The runs of `░` on a timeline row, as lengths.
fn gap_runs(row: &str) -> Vec<usize> {
    row.split(|c| c != '░')
        .filter(|r| !r.is_empty())
        .map(|r| r.chars().count())
        .collect()
}

/// `electop demo` at 80x24: the timeline shows the three nodes' election; killing the
/// leader, then pausing the next, each shows as a gap of about the time nobody led (a
/// column is 5 s of a 5-minute window), followed by the next leader's tenure.
#[test]
fn in_the_demo_a_kill_and_a_pause_of_the_leader_show_as_gaps() {
    let home = common::scratch::tempdir();
    let args = "demo --ttl 2s --renew 500ms --retry 300ms";
    let tmux = Tmux::start(80, 24, &shell(home.path(), args));
    let screen = tmux.wait_screen("a leader", T, |s| demo_leader(s).is_some());
    let first = demo_leader(&screen).unwrap_or_default();
    tmux.send(&["t"]);
    tmux.wait_screen("the demo's election on the timeline", T, |s| {
        s.contains("Timeline · 5m to now")
            && row(s, "demo").is_some_and(|r| r.contains('━') && !r.contains('░'))
    });
    let mut leader = first;
    // The kill's gap is the first, the pause's the second.
    for (gaps, key) in [(1, "x"), (2, "p")] {
        let started = std::time::Instant::now();
        tmux.send(&[leader.trim_start_matches("node-"), key]);
        // At once, while the store still names it (its lease runs 2 s more): nobody leads.
        let how = if key == "x" {
            "killed (SIGKILL)"
        } else {
            "paused (SIGSTOP)"
        };
        let said = format!("demo: NO LEADER at work: {leader} {how}");
        tmux.wait_screen("the stopped leader said leading nothing", T, |s| {
            s.contains(&said) && row(s, "demo").is_some_and(|r| r.ends_with("░│"))
        });
        let screen = tmux.wait_screen("the gap, then the next leader", T, |s| {
            row(s, "demo")
                .is_some_and(|r| gap_runs(&r).len() == gaps && r.rfind('━') > r.rfind('░'))
                && demo_leader(s).is_some_and(|l| l != leader)
        });
        let took = started.elapsed().as_secs_f64();
        let r = row(&screen, "demo").unwrap_or_default();
        let last = gap_runs(&r).last().copied().unwrap_or(0);
        // The strip is 80 - 2 borders - 9 for the name: 69 columns over 300 s.
        let most = (took * 69.0 / 300.0).ceil() as usize + 1;
        assert!(
            (1..=most).contains(&last),
            "{key}: {took:.1} s without a leader is {last} columns, at most {most}: {r}\n{screen}"
        );
        // The next leader's tenure long enough for its name (3 columns, 15 s), so the next
        // gap is a run of its own.
        let next = demo_leader(&screen).unwrap_or_default();
        tmux.wait_screen("the next leader named on the strip", 2 * T, |s| {
            row(s, "demo").is_some_and(|r| r[r.rfind('░').unwrap_or(0)..].contains(&next))
        });
        leader = next;
    }
    tmux.send(&["p"]);
    tmux.send(&["q"]);
    tmux.wait_screen("the question", T, |s| s.contains("stops every node"));
    tmux.send(&["y"]);
    tmux.wait_screen("exit", T, |s| s.contains("ELECTOP-EXITED 0"));
}
