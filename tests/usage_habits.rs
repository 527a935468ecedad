//! What a new user brings along, through the real binary: the stores' own tools' flags
//! (etcdctl's `--endpoints`, zkCli's `-server`, psql's `--dbname`) get clap's tip naming
//! electop's flag, and the example config, which `cargo install` does not install, is
//! printed by `electop config example`.

mod common;

use common::electop::command;

/// `electop ARGS`: exit code and stderr.
fn refused(args: &[&str]) -> (Option<i32>, String) {
    let home = common::scratch::tempdir();
    let out = command(home.path())
        .args(args)
        .output()
        .expect("run electop");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn another_tools_flag_gets_a_tip_naming_electops() {
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["--endpoints", "127.0.0.1:2379", "status"],
            &[
                "unexpected argument '--endpoints' found",
                "tip: a similar argument exists: '--etcd'",
                "tip: --endpoints is etcdctl's flag; electop's: --etcd HOST:PORT",
            ],
        ),
        (
            &["status", "--endpoints=127.0.0.1:2379"],
            &["tip: a similar argument exists: '--etcd'"],
        ),
        (
            &["-server", "127.0.0.1:2181"],
            &["tip: -server is zkCli's flag; electop's: --zk HOST:PORT"],
        ),
        (
            &["--dbname", "app"],
            &["tip: a similar argument exists: '--sql'", "postgres://"],
        ),
        (
            &["--redis", "redis://h:6379", "--pass", "x"],
            &["--pass is redis-cli's flag", "--password-env VAR"],
        ),
    ];
    for (args, wants) in cases {
        let (code, err) = refused(args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        for want in *wants {
            assert!(err.contains(want), "{args:?}: `{want}` missing from: {err}");
        }
    }
}

#[test]
fn config_example_prints_the_example_config() {
    let home = common::scratch::tempdir();
    let out = command(home.path())
        .args(["config", "example"])
        .output()
        .expect("run electop");
    assert_eq!(out.status.code(), Some(0));
    let printed = String::from_utf8(out.stdout).expect("UTF-8");
    let shipped = include_str!("../config.example.toml");
    assert_eq!(printed, shipped);
    // What it prints is a config electop reads.
    let path = home.path().join("config.toml");
    std::fs::write(&path, &printed).expect("write the config");
    let out = command(home.path())
        .args(["--config", &path.to_string_lossy(), "contexts"])
        .output()
        .expect("run electop");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
}
