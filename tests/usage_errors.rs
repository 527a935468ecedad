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

/// Every command's help, as a person at an 80-column terminal sees it.
fn help(args: &[&str]) -> String {
    let home = common::scratch::tempdir();
    let out = command(home.path())
        .args(args)
        .env("COLUMNS", "80")
        .env("LINES", "45")
        .output()
        .expect("run electop");
    assert_eq!(out.status.code(), Some(0), "{args:?}");
    String::from_utf8(out.stdout).expect("UTF-8 help")
}

/// Each subcommand and its own flags, as `-h` must list them (before the source flags).
const SUBCOMMANDS: [(&str, &[&str]); 12] = [
    ("", &[]),
    ("status", &["--output", "--json", "--history", "--timeout"]),
    ("watch", &["--json", "--changes-only"]),
    (
        "serve",
        &[
            "--listen",
            "--bearer-token-file",
            "--basic-auth-file",
            "--tls-cert",
            "--tls-key",
            "--on-change",
            "--webhook",
            "--hook-timeout",
            "--log-format",
        ],
    ),
    (
        "force-leader",
        &[
            "<ELECTION>",
            "<ID>",
            "--allow-unseen",
            "--expect-leader",
            "--yes",
        ],
    ),
    (
        "reelect",
        &["<ELECTION>", "--expect-leader", "--yes", "--timeout"],
    ),
    (
        "resign",
        &["<ELECTION>", "--expect-leader", "--yes", "--timeout"],
    ),
    (
        "node",
        &["--store", "--election", "--id", "--ttl", "--create-table"],
    ),
    ("demo", &["--store", "--spawn-etcd", "--nodes", "--ttl"]),
    ("presets", &[]),
    ("contexts", &[]),
    ("completions", &["<SHELL>"]),
];

/// `-h` fits a screen (45 lines of 80 columns) for every subcommand, and lists the
/// subcommand's own flags first, then the source flags and electop's own under headings of
/// their own; `--help` has every flag, the authentication and TLS ones under theirs.
#[test]
fn short_help_fits_a_screen_own_flags_first() {
    for (sub, own) in SUBCOMMANDS {
        let args: Vec<&str> = [sub, "-h"].into_iter().filter(|a| !a.is_empty()).collect();
        let text = help(&args);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines.len() <= 45,
            "{args:?}: {} lines:\n{text}",
            lines.len()
        );
        for line in &lines {
            assert!(line.chars().count() <= 80, "{args:?}: too wide: {line}");
        }
        let sources = text.find("\nSources:\n").expect("a Sources heading");
        let general = text.find("\nConfig and logging:\n").expect("its heading");
        assert!(sources < general, "{args:?}:\n{text}");
        for flag in ["--etcd", "--zk", "--sql", "--redis", "--prefix", "--scheme"] {
            let at = text.find(&format!("  {flag} ")).expect(flag);
            assert!(at > sources, "{args:?}: {flag} before Sources:\n{text}");
        }
        for flag in own {
            let at = text
                .find(&format!(" {flag}"))
                .unwrap_or_else(|| panic!("{args:?}: {flag} missing:\n{text}"));
            assert!(at < sources, "{args:?}: {flag} after the sources:\n{text}");
        }
        assert!(
            !text.contains("--tls-cert") || sub == "serve",
            "{args:?}: {text}"
        );

        let args: Vec<&str> = [sub, "--help"]
            .into_iter()
            .filter(|a| !a.is_empty())
            .collect();
        let text = help(&args);
        let sources = text.find("\nSources:\n").expect("Sources");
        let auth = text.find("\nAuthentication:\n").expect("Authentication");
        let tls = text.find("\nTLS:\n").expect("TLS");
        assert!(sources < auth && auth < tls, "{args:?}:\n{text}");
        for flag in ["--zk-auth", "--password-env", "--user"] {
            let at = text.find(&format!("  {flag} ")).expect(flag);
            assert!(auth < at && at < tls, "{args:?}: {flag}");
        }
        for flag in [
            "--cacert",
            "--zk-cacert",
            "--redis-cacert",
            "--insecure-skip-tls-verify",
        ] {
            assert!(text.find(&format!("  {flag}")).expect(flag) > tls, "{flag}");
        }
        for line in text.lines() {
            assert!(line.chars().count() <= 80, "{args:?}: too wide: {line}");
        }
    }
}

/// The top line names every store electop reads.
#[test]
fn the_top_line_names_every_store() {
    let text = help(&["-h"]);
    let about: String = text.split("\n\n").next().expect("about").replace('\n', " ");
    for store in [
        "etcd",
        "PostgreSQL",
        "MariaDB",
        "SQLite",
        "ZooKeeper",
        "session locks",
        "Redis",
    ] {
        assert!(about.contains(store), "{store} missing from: {about}");
    }
}
