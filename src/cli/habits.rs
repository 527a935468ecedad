//! Flags of the stores' own tools (etcdctl, redis-cli, psql, mysql, zkCli) typed from habit:
//! clap's "unexpected argument" error gets a tip in clap's own words naming electop's flag
//! for the same thing, where clap's likeness finds none (`--endpoints` is far from `--etcd`).

use clap::builder::StyledStr;
use clap::error::{ContextKind, ContextValue, ErrorKind};

/// A habit: the flag typed, whose it is, electop's flag for it (when one), and how.
struct Habit {
    typed: &'static str,
    tool: &'static str,
    flag: Option<&'static str>,
    how: &'static str,
}

const fn habit(
    typed: &'static str,
    tool: &'static str,
    flag: Option<&'static str>,
    how: &'static str,
) -> Habit {
    Habit {
        typed,
        tool,
        flag,
        how,
    }
}

const HABITS: &[Habit] = &[
    habit(
        "--endpoints",
        "etcdctl",
        Some("--etcd"),
        "--etcd HOST:PORT[,HOST:PORT...]",
    ),
    habit(
        "--endpoint",
        "etcdctl",
        Some("--etcd"),
        "--etcd HOST:PORT[,HOST:PORT...]",
    ),
    habit("--ca-file", "etcdctl", Some("--cacert"), "--cacert FILE"),
    habit(
        "--trusted-ca-file",
        "etcd",
        Some("--cacert"),
        "--cacert FILE",
    ),
    habit("--cert-file", "etcd", Some("--cert"), "--cert FILE"),
    habit("--key-file", "etcd", Some("--key"), "--key FILE"),
    habit(
        "-server",
        "zkCli",
        Some("--zk"),
        "--zk HOST:PORT[,HOST:PORT...][/chroot]",
    ),
    habit(
        "--server",
        "zookeeper-shell",
        Some("--zk"),
        "--zk HOST:PORT",
    ),
    habit(
        "--dbname",
        "psql",
        Some("--sql"),
        "--sql postgres://USER@HOST:PORT/DB",
    ),
    habit(
        "--database",
        "mysql",
        Some("--sql"),
        "--sql mysql://USER@HOST:PORT/DB",
    ),
    habit(
        "--username",
        "psql",
        Some("--user"),
        "the URL's USER@ (or --user for etcd)",
    ),
    habit(
        "--pass",
        "redis-cli",
        None,
        "--password-env VAR or --password-file FILE",
    ),
    habit(
        "--password",
        "mysql",
        None,
        "--password-env VAR or --password-file FILE",
    ),
    habit(
        "--askpass",
        "redis-cli",
        None,
        "--password-file FILE (or --password-env VAR)",
    ),
    habit(
        "--tls",
        "redis-cli",
        None,
        "a rediss:// URL (https:// for etcd)",
    ),
    habit(
        "--host",
        "psql",
        None,
        "the store's flag: --etcd, --sql URL, --zk or --redis URL",
    ),
    habit(
        "--port",
        "psql",
        None,
        "HOST:PORT in the store's flag or URL",
    ),
];

/// `e` with a tip naming electop's flag when the argument clap did not know is another
/// tool's; `args` are the command line as given (`-server` reads as `-s` to clap).
pub fn hint(mut e: clap::Error, args: &[String]) -> clap::Error {
    if e.kind() != ErrorKind::UnknownArgument {
        return e;
    }
    let invalid = match e.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(a)) => a.split('=').next().unwrap_or_default().to_string(),
        _ => return e,
    };
    let typed = |h: &&Habit| {
        h.typed == invalid
            || (h.typed == "-server" && invalid == "-s" && args.iter().any(|a| a == "-server"))
    };
    let Some(h) = HABITS.iter().find(typed) else {
        return e;
    };
    if let Some(flag) = h.flag {
        e.insert(ContextKind::SuggestedArg, ContextValue::String(flag.into()));
    }
    let mut tips = vec![StyledStr::from(format!(
        "{} is {}'s flag; electop's: {}",
        h.typed, h.tool, h.how
    ))];
    if let Some(ContextValue::StyledStrs(more)) = e.get(ContextKind::Suggested) {
        tips.extend(more.iter().cloned());
    }
    e.insert(ContextKind::Suggested, ContextValue::StyledStrs(tips));
    e
}
