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
            &[
                "/nonexistent/electop.toml",
                "check the --config path; `electop config example` prints one",
            ],
        );
        let home = common::scratch::tempdir();
        let (out, _) = run(home.path(), &args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.matches("No such file").count(), 1, "{err}");
    }
}

/// `stderr` of a usage error, which must not hold `secret`.
fn assert_usage_error_without(args: &[&str], wants: &[&str], secret: &str) {
    assert_usage_error(args, wants);
    let home = common::scratch::tempdir();
    let (out, _) = run(home.path(), args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains(secret), "{args:?} shows the password: {err}");
    assert!(!err.contains("<unparsable"), "{args:?}: {err}");
}

/// A database URL that is no URL, or of no database electop reads, is named as given (its
/// password left out) with how to write it, exit 2, before anything is dialled; with or
/// without --scheme.
#[test]
fn a_bad_database_url_is_named_with_the_fix() {
    for scheme in [&[][..], &["--scheme", "sql-lease"]] {
        let with = |url: &'static str| {
            let mut args = vec!["--sql", url];
            args.extend_from_slice(scheme);
            args.push("status");
            args
        };
        assert_usage_error(
            &with("/tmp/el.db"),
            &[
                "`/tmp/el.db`",
                "for the SQLite file /tmp/el.db write sqlite:///tmp/el.db",
            ],
        );
        assert_usage_error(&with("el.db"), &["write sqlite://el.db"]);
        assert_usage_error_without(
            &with("foo://me:s3cret@db/app"),
            &[
                "`foo://me@db/app`",
                "must start with postgres://",
                "not foo://",
            ],
            "s3cret",
        );
        assert_usage_error_without(
            &with("me:s3cret@/tmp/el.db"),
            &["`me@/tmp/el.db`", "must start with postgres://"],
            "s3cret",
        );
    }
}

/// A ZooKeeper connect string written as a URL says so, and shows the form it takes.
#[test]
fn a_zookeeper_url_is_shown_as_a_connect_string() {
    assert_usage_error(
        &["--zk", "zk://zk1:2181/kafka", "status"],
        &[
            "no zk:// in front",
            "HOST:PORT[,HOST:PORT...][/chroot]",
            "e.g. zk1:2181/kafka",
        ],
    );
    assert_usage_error_without(
        &["--zk", "zk://me:s3cret@zk1:2181", "status"],
        &["no zk:// in front"],
        "s3cret",
    );
    let home = common::scratch::tempdir();
    let cfg = home.path().join("electop.toml");
    std::fs::write(
        &cfg,
        "[[source]]\nkind = \"zookeeper\"\nendpoints = [\"zk://zk1:2181\"]\n",
    )
    .expect("config");
    let cfg = cfg.display().to_string();
    assert_usage_error(
        &["--config", &cfg, "status"],
        &["`zk://zk1:2181`: no zk:// in front", "e.g. zk1:2181"],
    );
}

/// A flag for one store given where no source of that store is read is refused, naming the
/// flag and the sources given, instead of being silently ignored.
#[test]
fn a_flag_for_another_store_names_both() {
    let sql = ["--sql", "sqlite:///tmp/el.db"];
    let zk = ["--zk", "127.0.0.1:2181"];
    let cases: [(Vec<&str>, &[&str]); 13] = [
        (
            vec!["--etcd", "127.0.0.1:2379", "--password-env", "PW"],
            &["--password-env", "does not apply to --etcd", "--user NAME"],
        ),
        (
            [&sql[..], &["--scheme", "etcd-election"]].concat(),
            &[
                "--scheme etcd-election is an etcd scheme",
                "does not apply to --sql",
            ],
        ),
        (
            [&zk[..], &["--scheme", "sql-lease"]].concat(),
            &[
                "--scheme sql-lease is a SQL scheme",
                "does not apply to --zk",
                "--sql URL",
            ],
        ),
        (
            vec!["--etcd", "127.0.0.1:2379", "--scheme", "pg-advisory"],
            &["--scheme pg-advisory", "does not apply to --etcd"],
        ),
        (
            [&zk[..], &["--table", "t"]].concat(),
            &["--table is for --sql sources", "does not apply to --zk"],
        ),
        (
            vec!["--poll", "1s"],
            &["--poll is for --sql sources", "the default source"],
        ),
        (
            [&sql[..], &["--scheme", "sql-lease", "--user", "root"]].concat(),
            &["--user is for etcd", "does not apply to --sql"],
        ),
        (
            [&sql[..], &["--registry", "/reg/"]].concat(),
            &["--registry", "does not apply to --sql"],
        ),
        (
            vec!["--etcd", "127.0.0.1:2379", "--zk-auth", "env:ZK_AUTH"],
            &["--zk-auth is for ZooKeeper", "does not apply to --etcd"],
        ),
        (
            [&zk[..], &["--password-env", "PW"]].concat(),
            &["--password-env", "does not apply to --zk", "--zk-auth"],
        ),
        (
            [&sql[..], &["--insecure-skip-tls-verify"]].concat(),
            &["are etcd's", "do not apply to --sql", "sslmode="],
        ),
        (
            [&sql[..], &["--prefix", "/e/"]].concat(),
            &[
                "--prefix is for --etcd, --zk and --redis",
                "does not apply to --sql",
            ],
        ),
        (
            vec!["--redis", "redis://127.0.0.1:6379", "--scheme", "sql-lease"],
            &["--scheme sql-lease", "does not apply to --redis"],
        ),
    ];
    for (args, wants) in cases {
        for sub in [&["status", "--timeout", "30s"][..], &["watch"]] {
            let all = [&args[..], sub].concat();
            assert_usage_error(&all, wants);
        }
    }
}

/// `[[source]]` is read through its `kind`: an unknown key in it is still shown on its own
/// line, not at the table's header.
#[test]
fn an_unknown_config_key_is_shown_on_its_own_line() {
    let home = common::scratch::tempdir();
    let cfg = home.path().join("electop.toml");
    std::fs::write(
        &cfg,
        "[ui]\ntick_ms = 100\n\n[[source]]\nname = \"a\"\nkind = \"etcd\"\n\
         endpoints = [\"127.0.0.1:2379\"]\nprefx = \"/e/\"\n",
    )
    .expect("config");
    let cfg = cfg.display().to_string();
    assert_usage_error(
        &["--config", &cfg, "status"],
        &[
            "line 8, column 1",
            "8 | prefx = \"/e/\"",
            "  | ^^^^^",
            "unknown field `prefx`",
        ],
    );
}

/// Mistakes found further on (the demo's store, a webhook, a node's election) are usage
/// errors too: exit 2, before anything starts.
#[test]
fn later_usage_mistakes_exit_2_too() {
    let cases: [(&[&str], &[&str]); 11] = [
        (
            &[
                "--etcd",
                "127.0.0.1:9",
                "--scheme",
                "etcd-election",
                "node",
                "--election",
                "/e/",
                "--id",
                "a",
                "--create-table",
            ],
            &["--create-table is for a SQL table", "etcd (--etcd)"],
        ),
        (&["status", "-o", "wide", "--json"], &["--json"]),
        (
            &["demo", "--store", "postgres"],
            &["--store postgres needs --sql URL"],
        ),
        (&["demo", "--spawn-etcd"], &["add --store etcd"]),
        (&["demo", "--nodes", "0"], &["--nodes"]),
        (
            &[
                "demo",
                "--store",
                "etcd",
                "--spawn-etcd",
                "--scheme",
                "sql-lease",
            ],
            &["--scheme sql-lease does not run on the demo's --store etcd"],
        ),
        (
            &["demo", "--zk-auth", "env:X"],
            &["--zk-auth does not apply to the demo's --store sqlite"],
        ),
        (
            &["demo", "--store", "zookeeper", "--zk", "zk://h:2181"],
            &["no zk:// in front"],
        ),
        (
            &["demo", "--prefix", "/x/"],
            &["--prefix does not apply to electop demo"],
        ),
        (
            &["serve", "--webhook", "ftp://h/x"],
            &["webhook 1", "not http:"],
        ),
        (
            &[
                "--redis",
                "redis://127.0.0.1:9",
                "--prefix",
                "locks:*",
                "node",
                "--election",
                "jobs",
                "--id",
                "a",
            ],
            &["--election jobs does not match --prefix locks:*"],
        ),
    ];
    for (args, wants) in cases {
        assert_usage_error(args, wants);
    }
}

/// A secret given where it cannot be read, or not given where it must be, is a mistake in
/// how it is given (exit 2, before anything is dialled), never a store that is down; and
/// `--store` with a source of another kind names what was given.
#[test]
fn secrets_that_cannot_be_read_and_mismatched_stores_exit_2() {
    let unset = "ELECTOP_TEST_SURELY_UNSET_VAR";
    let cases: [(&[&str], &[&str]); 6] = [
        (
            &[
                "--etcd",
                "127.0.0.1:9",
                "--user",
                "root",
                "--password-env",
                unset,
                "status",
            ],
            &["--password-env", unset, "is not set"],
        ),
        (
            &["--etcd", "127.0.0.1:9", "--user", "root", "status"],
            &["etcd user `root` needs a password"],
        ),
        (
            &[
                "--sql",
                "postgres://u@127.0.0.1:9/db",
                "--password-env",
                unset,
                "status",
            ],
            &["--password-env", unset, "is not set"],
        ),
        (
            &[
                "--zk",
                "127.0.0.1:9",
                "--zk-auth",
                &["env:", unset].concat(),
                "status",
            ],
            &["the ZooKeeper source", "is not set"],
        ),
        (
            &[
                "demo",
                "--store",
                "mysql",
                "--sql",
                "postgres://u:pw@127.0.0.1:9/db",
            ],
            &[
                "--store mysql needs a mysql:// URL",
                "postgres://u@127.0.0.1:9/db",
            ],
        ),
        (
            &[
                "node",
                "--store",
                "zookeeper",
                "--election",
                "x",
                "--id",
                "a",
            ],
            &[
                "--store zookeeper needs --zk",
                "no source flag reads the local etcd",
            ],
        ),
    ];
    for (args, wants) in cases {
        assert_usage_error(args, wants);
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
const SUBCOMMANDS: [(&str, &[&str]); 13] = [
    ("", &[]),
    ("status", &["--output", "--json", "--history", "--timeout"]),
    (
        "history",
        &["[ELECTION]", "--since", "--until", "--json", "--timeout"],
    ),
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
