//! Mistakes in the flags or the config file end the real binary at once with exit 2 and a
//! message naming what is wrong, whatever the subcommand: nothing is dialled, no timeout is
//! waited out.

mod common;

use std::process::Output;
use std::time::{Duration, Instant};

use common::electop::command;

/// Far below any store timeout (5 s by default): only a check before dialling is this quick.
const QUICK: Duration = Duration::from_secs(3);

fn run(home: &std::path::Path, args: &[&str]) -> (Output, Duration) {
    let started = Instant::now();
    let out = command(home)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run electop");
    (out, started.elapsed())
}

fn assert_usage_error(args: &[&str], wants: &[&str]) {
    let home = common::scratch::tempdir();
    let (out, took) = run(home.path(), args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    for want in wants {
        assert!(err.contains(want), "{args:?}: `{want}` missing from: {err}");
    }
    assert!(took < QUICK, "{args:?} took {took:?}");
    assert!(out.stdout.is_empty(), "{args:?}");
}

#[test]
fn bad_etcd_flags_fail_at_once_in_every_subcommand() {
    let subcommands: [&[&str]; 7] = [
        &[],
        &["status", "--timeout", "30s"],
        &["watch"],
        &["reelect", "jobs", "--yes", "--timeout", "30s"],
        &["force-leader", "jobs", "node-a", "--yes"],
        &[
            "node",
            "--election",
            "/e/",
            "--id",
            "a",
            "--scheme",
            "etcd-election",
        ],
        &["demo", "--store", "etcd"],
    ];
    for sub in subcommands {
        let mut args = vec!["--etcd", "127.0.0.1:99999"];
        args.extend_from_slice(sub);
        assert_usage_error(&args, &["127.0.0.1:99999", "1 to 65535"]);
    }
    for (etcd, wants) in [
        ("localhost", &["`localhost` has no port"][..]),
        ("127.0.0.1:2379,,127.0.0.1:2380", &["is empty"]),
        ("127.0.0.1:2379,", &["is empty"]),
        ("", &["is empty"]),
        ("ftp://127.0.0.1:2379", &["unknown scheme `ftp://`"]),
        ("::1:2379", &["needs brackets"]),
        ("host name:2379", &["`host name` is not a host name"]),
    ] {
        assert_usage_error(&["--etcd", etcd, "status", "--timeout", "30s"], wants);
    }
}

#[test]
fn bad_config_endpoints_fail_at_once() {
    let home = common::scratch::tempdir();
    let cfg = home.path().join("electop.toml");
    std::fs::write(
        &cfg,
        "[[source]]\nkind = \"etcd\"\nendpoints = [\"127.0.0.1:2379\", \"etcd-2\"]\n",
    )
    .expect("config");
    let cfg = cfg.display().to_string();
    for sub in [&["status", "--timeout", "30s"][..], &["watch"], &[]] {
        let mut args = vec!["--config", cfg.as_str()];
        args.extend_from_slice(sub);
        assert_usage_error(&args, &[cfg.as_str(), "#1", "`etcd-2` has no port"]);
    }
}

/// Other mistakes in the flags that are found before dialling are usage errors too.
#[test]
fn other_flag_mistakes_exit_2() {
    assert_usage_error(
        &[
            "--sql",
            "sqlite:///x.db",
            "--preset",
            "shedlock",
            "--scheme",
            "sql-heartbeat",
            "status",
        ],
        &["preset shedlock is a sql-lease table", "leave --scheme out"],
    );
    assert_usage_error(&["--preset", "oban", "status"], &["give --sql URL"]);
    assert_usage_error(
        &[
            "--sql",
            "postgres://me@127.0.0.1:5432/app?sslmode=verify_full",
            "--scheme",
            "sql-lease",
            "status",
        ],
        &["sslmode=verify_full", "verify-full"],
    );
    assert_usage_error(
        &[
            "--etcd",
            "127.0.0.1:2379",
            "node",
            "--election",
            "e",
            "--id",
            "a",
        ],
        &["needs --scheme"],
    );
    assert_usage_error(
        &[
            "--etcd",
            "127.0.0.1:2379",
            "--preset",
            "patroni",
            "node",
            "--election",
            "e",
            "--id",
            "a",
        ],
        &["Patroni's members are Patroni itself"],
    );
    assert_usage_error(
        &["--context", "prod", "demo"],
        &["demo makes its own store", "--context prod", "--store"],
    );
}

/// `--context NAME` naming no context fails at once, listing the contexts there are, in every
/// subcommand that reads sources; with flag sources beside it, the clash is named.
#[test]
fn an_unknown_context_fails_at_once_listing_the_known_ones() {
    let home = common::scratch::tempdir();
    let cfg = home.path().join("electop.toml");
    std::fs::write(
        &cfg,
        "[[source]]\nname = \"prod-etcd\"\nkind = \"etcd\"\nendpoints = [\"127.0.0.1:2379\"]\n\n\
         [[source]]\nname = \"lab-etcd\"\nkind = \"etcd\"\nendpoints = [\"127.0.0.1:2380\"]\n\n\
         [[context]]\nname = \"prod\"\nsources = [\"prod-etcd\"]\n\n\
         [[context]]\nname = \"lab\"\nsources = [\"lab-etcd\"]\n",
    )
    .expect("config");
    let cfg = cfg.display().to_string();
    for sub in [
        &["status", "--timeout", "30s"][..],
        &["watch"],
        &[],
        &["reelect", "jobs", "--yes", "--timeout", "30s"],
    ] {
        let mut args = vec!["--config", cfg.as_str(), "--context", "qa"];
        args.extend_from_slice(sub);
        assert_usage_error(&args, &["unknown context `qa`", "prod, lab"]);
    }
    assert_usage_error(
        &[
            "--config",
            &cfg,
            "--context",
            "prod",
            "--etcd",
            "127.0.0.1:2379",
            "status",
        ],
        &["--context prod", "give one or the other"],
    );
    assert_usage_error(
        &["--context", "prod", "status"],
        &["no contexts configured", "[[context]]"],
    );
}

/// A config file named with `--config` that is not there is said once, with the path and
/// where to look, in every subcommand that reads sources.
#[test]
fn a_missing_config_file_is_named_once_with_the_fix() {
    for sub in [&[][..], &["status"], &["contexts"]] {
        let mut args = vec!["--config", "/nonexistent/electop.toml"];
        args.extend_from_slice(sub);
        assert_usage_error(
            &args,
            &["/nonexistent/electop.toml", "check the --config path"],
        );
        let home = common::scratch::tempdir();
        let (out, _) = run(home.path(), &args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.matches("No such file").count(), 1, "{err}");
    }
}
