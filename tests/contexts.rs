//! Named sources and contexts on the real binary against real SQLite files: `--context`
//! picks the sources, and the names given in the config are what `status` (table and JSON),
//! `watch` and the admin verbs' `SOURCE/NAME` say.

mod common;

use std::process::Stdio;

use common::electop::{command, spawn_lines, status_json};
use common::sqlstore::Store;

use common::T;

/// Two SQLite files, `ops-db` named and the other unnamed (`sql2`), in contexts `ops`
/// (both) and `solo` (the unnamed one alone, current).
fn config(home: &std::path::Path, ops: &Store, other: &Store) -> String {
    let path = home.join("contexts.toml");
    std::fs::write(
        &path,
        format!(
            "current-context = \"solo\"\n\n\
             [[source]]\nname = \"ops-db\"\nkind = \"sql\"\nurl = \"{}\"\nscheme = \"sql-lease\"\npoll = \"100ms\"\n\n\
             [[source]]\nkind = \"sql\"\nurl = \"{}\"\nscheme = \"sql-lease\"\npoll = \"100ms\"\n\n\
             [[context]]\nname = \"ops\"\nsources = [\"ops-db\", \"sql2\"]\n\n\
             [[context]]\nname = \"solo\"\nsources = [\"sql2\"]\n",
            ops.url(),
            other.url()
        ),
    )
    .expect("config");
    path.display().to_string()
}

fn stores() -> (Store, Store) {
    let (ops, other) = (Store::sqlite(), Store::sqlite());
    for (s, name, id) in [(&ops, "jobs", "node-a"), (&other, "billing", "node-b")] {
        s.create_lease_table("leaderlock");
        assert!(s.lease_attempt("leaderlock", name, id, 60));
    }
    (ops, other)
}

#[test]
fn status_reads_the_chosen_context_under_the_configured_names() {
    let (ops, other) = stores();
    let home = common::scratch::tempdir();
    let cfg = config(home.path(), &ops, &other);

    let solo = status_json(home.path(), &["--config", &cfg]);
    let ids: Vec<&str> = solo["sources"]
        .as_array()
        .expect("sources")
        .iter()
        .filter_map(|s| s["id"].as_str())
        .collect();
    assert_eq!(ids, ["sql2"], "current-context: {solo:#}");

    let both = status_json(home.path(), &["--config", &cfg, "--context", "ops"]);
    let ids: Vec<&str> = both["sources"]
        .as_array()
        .expect("sources")
        .iter()
        .filter_map(|s| s["id"].as_str())
        .collect();
    assert_eq!(ids, ["ops-db", "sql2"], "{both:#}");

    let out = command(home.path())
        .args(["--config", &cfg, "--context", "ops", "status"])
        .output()
        .expect("status");
    let text = String::from_utf8_lossy(&out.stdout);
    let row = text.lines().find(|l| l.contains(" jobs ")).unwrap_or("");
    assert!(row.starts_with("ops-db "), "the name in SOURCE:\n{text}");

    let out = command(home.path())
        .args(["--config", &cfg, "contexts"])
        .output()
        .expect("contexts");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("ops-db, sql2")
            && text
                .lines()
                .any(|l| l.starts_with('*') && l.contains("solo")),
        "{text}"
    );
}

#[test]
fn watch_lines_and_admin_verbs_use_the_configured_names() {
    let (ops, other) = stores();
    let home = common::scratch::tempdir();
    let cfg = config(home.path(), &ops, &other);
    let (mut child, lines) =
        spawn_lines(command(home.path()).args(["--config", &cfg, "--context", "ops", "watch"]));
    let mut synced = 0;
    while synced < 2 {
        let l = lines.recv_timeout(T).expect("watch syncs both sources");
        synced += usize::from(l.contains("synced"));
    }
    ops.exec("UPDATE leaderlock SET leader_id = 'node-c' WHERE key = 'jobs'");
    let line = lines.recv_timeout(T).expect("the takeover");
    let _ = child.kill();
    let _ = child.wait();
    let rest = line.split_once(' ').map(|(_, r)| r).unwrap_or("");
    assert!(
        rest.starts_with("ops-db jobs leader node-a → node-c"),
        "{line}"
    );

    // An unknown SOURCE in SOURCE/NAME lists the configured names.
    let out = command(home.path())
        .args([
            "--config",
            &cfg,
            "--context",
            "ops",
            "reelect",
            "nope/jobs",
            "-y",
        ])
        .stdin(Stdio::null())
        .output()
        .expect("reelect");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("ops-db"), "{err}");
}

/// A context whose etcd refuses connections beside a healthy SQLite source: `status` prints
/// the SQLite election and names the etcd as down (exit 3), `watch` does too, and the
/// dashboard shows the etcd as DOWN in its header and its table, never as an empty store, at
/// 80x24 and 120x35.
#[test]
fn a_context_with_one_source_down_shows_the_others_and_names_it() {
    let (ops, _) = stores();
    let home = common::scratch::tempdir();
    let endpoint = format!("127.0.0.1:{}", common::free_port());
    let path = home.path().join("down.toml");
    std::fs::write(
        &path,
        format!(
            "current-context = \"both\"\n\n\
             [[source]]\nname = \"cluster\"\nkind = \"etcd\"\nendpoints = [\"{endpoint}\"]\nprefix = \"/e/\"\n\n\
             [[source]]\nname = \"ops-db\"\nkind = \"sql\"\nurl = \"{}\"\nscheme = \"sql-lease\"\npoll = \"100ms\"\n\n\
             [[context]]\nname = \"both\"\nsources = [\"cluster\", \"ops-db\"]\n",
            ops.url()
        ),
    )
    .expect("config");
    let cfg = path.display().to_string();

    let out = command(home.path())
        .args(["--config", &cfg, "status"])
        .output()
        .expect("status");
    let (text, err) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(3), "some down: {err}\n{text}");
    assert!(text.contains("node-a"), "the SQLite election:\n{text}");
    assert!(text.contains("cluster: DOWN:"), "named:\n{text}");
    assert!(err.contains(&endpoint), "{err}");

    let mut cmd = command(home.path());
    cmd.args(["--config", &cfg, "watch"]).stdin(Stdio::null());
    let (mut child, lines) = spawn_lines(&mut cmd);
    let mut seen = Vec::new();
    let deadline = std::time::Instant::now() + T;
    while !(seen.iter().any(|l: &String| l.contains("node-a"))
        && seen
            .iter()
            .any(|l| l.contains("cluster") && l.contains(&endpoint)))
    {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match lines.recv_timeout(left) {
            Ok(l) => seen.push(l),
            Err(_) => panic!("watch named neither or not both: {seen:#?}"),
        }
    }
    let _ = child.kill();
    let _ = child.wait();

    for (w, h) in [(80, 24), (120, 35)] {
        let shell = format!(
            "env XDG_CONFIG_HOME={d}/config XDG_DATA_HOME={d}/data {bin} --config {cfg}; sleep 60",
            d = home.path().display(),
            bin = common::electop::bin(),
        );
        let tmux = common::tmux::Tmux::start(w, h, &shell);
        let screen = tmux.wait_screen("the live source and the down one", T, |s| {
            s.contains("node-a") && s.contains("DOWN")
        });
        assert!(
            screen.contains("cluster DOWN: not shown"),
            "the table names the down source at {w}x{h}:\n{screen}"
        );
        assert!(!screen.contains("0 elections"), "never empty:\n{screen}");
    }
}
