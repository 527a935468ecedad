//! `electop demo`: the demo's options from its flags; the demo itself is `crate::demo`.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;

use super::Usage;
use crate::app::Prefs;
use crate::backend::demo::{Given, Offer};
use crate::cli::{Cli, DemoArgs, DemoStore, SourceArgs};
use crate::config::{Config, Flags, OwnFlags};

pub(super) fn run(
    cli: &Cli,
    args: &DemoArgs,
    config: &Config,
    tick: Duration,
    prefs: Prefs,
) -> Result<ExitCode> {
    // The demo makes its own source; --sql/--etcd/--scheme only choose the store.
    if let Some(ctx) = &cli.sources.context {
        return Err(Usage(format!(
            "electop demo makes its own store and reads no config context (--context {ctx}): choose the store with --store, --etcd, --zk, --redis or --sql"
        ))
        .into());
    }
    check(args, &cli.sources)?;
    let rt = tokio::runtime::Runtime::new()?;
    let timing = (tick, config.ui.min_frame());
    let options = demo_options(args, &cli.sources);
    rt.block_on(crate::demo::run(&options, timing, cli.debug_panic, prefs))?;
    Ok(ExitCode::SUCCESS)
}

/// The flags of the store `offer` runs on (`--redis URL`, `--redis-cacert`...).
fn own_flags(flags: &Flags, offer: Offer) -> Option<OwnFlags<'_>> {
    flags
        .own()
        .into_iter()
        .find(|o| o.store == offer.facts().kind)
}

/// Whether the `--spawn-` flag `flag` is given.
fn spawns(args: &DemoArgs, flag: &str) -> bool {
    args.spawns().iter().any(|(f, given)| *f == flag && *given)
}

/// What the flags give the demo of the store `offer` runs on: its own source flag and TLS
/// files, the password and the rest every store may take.
fn given(offer: Offer, src: &SourceArgs) -> Given {
    let flags = src.flags();
    let own = own_flags(&flags, offer);
    let path = |p: Option<&std::path::Path>| p.map(std::path::Path::to_path_buf);
    Given {
        source: own.as_ref().and_then(|o| o.sources.first().cloned()),
        tls: crate::demo::Tls {
            cacert: own.as_ref().and_then(|o| path(o.cacert)),
            cert: own.as_ref().and_then(|o| path(o.cert)),
            key: own.as_ref().and_then(|o| path(o.key)),
            insecure_skip_tls_verify: false,
        },
        file: own.as_ref().and_then(|o| path(o.file)),
        password_env: src.password_env.clone(),
        password_file: src.password_file.clone(),
        scheme: src.scheme.map(crate::model::Scheme::from),
        read_only: src.read_only,
    }
}

/// The demo's options from its flags.
fn demo_options(args: &DemoArgs, src: &SourceArgs) -> crate::demo::Options {
    use crate::demo::{Options, Store, Tls};
    let own = match args.store {
        DemoStore::Own(o) => Some(o),
        _ => None,
    };
    Options {
        store: match args.store {
            DemoStore::Sqlite => Store::Sqlite,
            DemoStore::Etcd => Store::Etcd,
            DemoStore::Postgres => Store::Postgres,
            DemoStore::Mysql => Store::Mysql,
            DemoStore::Zookeeper => Store::Zookeeper,
            DemoStore::Own(o) => Store::Own(o),
        },
        spawn_etcd: args.spawn_etcd,
        spawn_zookeeper: args.spawn_zookeeper,
        spawn_own: own.is_some_and(|o| spawns(args, o.facts().spawn_flag)),
        own: own.map(|o| given(o, src)).unwrap_or_default(),
        nodes: args.nodes,
        ttl: args.ttl,
        renew: args.renew,
        retry: args.retry,
        scheme: src.scheme.map(crate::model::Scheme::from),
        etcd: src.etcd.first().cloned(),
        sql: src.sql.first().cloned(),
        zk: src.zk.first().cloned(),
        table: src.table.clone(),
        password_env: src.password_env.clone(),
        password_file: src.password_file.clone(),
        tls: Tls {
            cacert: src.cacert.clone(),
            cert: src.cert.clone(),
            key: src.key.clone(),
            insecure_skip_tls_verify: src.insecure_skip_tls_verify,
        },
        zk_auth: src.zk_auth.clone(),
        zk_tls: Tls {
            cacert: src.zk_cacert.clone(),
            cert: src.zk_cert.clone(),
            key: src.zk_key.clone(),
            insecure_skip_tls_verify: false,
        },
        read_only: src.read_only,
    }
}

/// `demo --store`'s name for `store`.
fn store_name(store: DemoStore) -> String {
    use clap::ValueEnum;
    store
        .to_possible_value()
        .map(|v| v.get_name().to_string())
        .unwrap_or_default()
}

/// The demo's flags fit the store it runs on: found here, before anything starts, as
/// usage mistakes (exit 2); the demo checks what it uses again where it uses it.
fn check(args: &DemoArgs, src: &SourceArgs) -> Result<(), Usage> {
    check_spawn(args)?;
    check_sources(args, src)?;
    check_urls(src)?;
    check_dialect(args.store, src)?;
    check_scheme(args.store, src)?;
    let ignored = [
        ("--prefix", !src.prefix.is_empty()),
        ("--preset", src.preset.is_some()),
        ("--registry", src.registry.is_some()),
        ("--heartbeat-timeout", src.heartbeat_timeout.is_some()),
        ("--poll", src.poll.is_some()),
    ];
    if let Some((flag, _)) = ignored.iter().find(|(_, given)| *given) {
        return Err(Usage(format!(
            "{flag} does not apply to electop demo: the demo makes its own elections; leave it out"
        )));
    }
    Ok(())
}

/// `--spawn-X` goes with `--store X`.
fn check_spawn(args: &DemoArgs) -> Result<(), Usage> {
    let mut flags = vec![
        (args.spawn_etcd, DemoStore::Etcd, "--spawn-etcd", "an etcd"),
        (
            args.spawn_zookeeper,
            DemoStore::Zookeeper,
            "--spawn-zookeeper",
            "a ZooKeeper",
        ),
    ];
    flags.extend(crate::backend::DEMOS.iter().map(|o| {
        let f = o.facts();
        let given = spawns(args, f.spawn_flag);
        (given, DemoStore::Own(*o), f.spawn_flag, f.spawns)
    }));
    for (given, store, flag, what) in flags {
        if given && args.store != store {
            let n = store_name(store);
            return Err(Usage(format!(
                "{flag} starts {what} for --store {n}, and the demo runs on --store {}; add --store {n}",
                store_name(args.store)
            )));
        }
    }
    Ok(())
}

/// The store's own source flag is given (or its server spawned), and no other store's
/// flags are: they would be ignored.
fn check_sources(args: &DemoArgs, src: &SourceArgs) -> Result<(), Usage> {
    use DemoStore as S;
    let store = args.store;
    let flags = src.flags();
    let needs = match store {
        S::Etcd if src.etcd.is_empty() && !args.spawn_etcd => {
            Some("--etcd HOST:PORT, or --spawn-etcd to start a local one".to_string())
        }
        S::Zookeeper if src.zk.is_empty() && !args.spawn_zookeeper => {
            Some("--zk HOST:PORT, or --spawn-zookeeper to start a local one".to_string())
        }
        S::Own(o)
            if own_flags(&flags, o).is_none_or(|f| f.sources.is_empty())
                && !spawns(args, o.facts().spawn_flag) =>
        {
            Some(o.needs())
        }
        S::Postgres | S::Mysql if src.sql.is_empty() => Some("--sql URL".to_string()),
        _ => None,
    };
    if let Some(needs) = needs {
        return Err(Usage(format!(
            "--store {} needs {needs}",
            store_name(store)
        )));
    }
    match applying(store, src, &flags)
        .iter()
        .find(|(_, given, applies)| *given && !applies)
    {
        Some((flag, _, _)) => Err(Usage(format!(
            "{flag} does not apply to the demo's --store {}: leave it out, or choose the \
             store it is for with --store",
            store_name(store)
        ))),
        None => Ok(()),
    }
}

/// Each flag that points at a store, whether it is given, and whether it applies to the
/// demo's `store`: the source flags, then the credentials and TLS, each store's own after
/// the demo's own stores'.
fn applying(store: DemoStore, src: &SourceArgs, flags: &Flags) -> Vec<(String, bool, bool)> {
    use DemoStore as S;
    let is_sql = matches!(store, S::Postgres | S::Mysql | S::Sqlite);
    let own = flags.own();
    let is_own = |o: &OwnFlags| matches!(store, S::Own(d) if d.facts().kind == o.store);
    let mut table = vec![
        ("--etcd".to_string(), !src.etcd.is_empty(), store == S::Etcd),
        (
            "--zk".to_string(),
            !src.zk.is_empty(),
            store == S::Zookeeper,
        ),
    ];
    table.extend(
        own.iter()
            .map(|o| (o.flag.to_string(), !o.sources.is_empty(), is_own(o))),
    );
    let plain = [
        (
            "--sql",
            !src.sql.is_empty(),
            matches!(store, S::Postgres | S::Mysql),
        ),
        ("--table", src.table.is_some(), is_sql),
        ("--user", src.user.is_some(), store == S::Etcd),
        ("--zk-auth", src.zk_auth.is_some(), store == S::Zookeeper),
        (
            "--cacert",
            src.cacert.is_some() || src.cert.is_some(),
            store == S::Etcd,
        ),
        (
            "--insecure-skip-tls-verify",
            src.insecure_skip_tls_verify,
            store == S::Etcd,
        ),
        (
            "--zk-cacert",
            src.zk_cacert.is_some() || src.zk_cert.is_some(),
            store == S::Zookeeper,
        ),
    ];
    table.extend(plain.map(|(flag, given, applies)| (flag.to_string(), given, applies)));
    table.extend(own.iter().map(|o| {
        let flag = format!("{}cacert", o.tls_prefix);
        (flag, o.tls_given(), is_own(o))
    }));
    let password = matches!(store, S::Etcd | S::Postgres | S::Mysql)
        || matches!(store, S::Own(o) if o.facts().takes_password);
    table.push((
        "--password-env/--password-file".to_string(),
        src.password_env.is_some() || src.password_file.is_some(),
        password,
    ));
    table
}

/// The store's address reads as one, as it would for any other command.
fn check_urls(src: &SourceArgs) -> Result<(), Usage> {
    use crate::config::{DbUrl, Dialect, SqlConfigError, ZkSource};
    if let Some(zk) = src.zk.first() {
        ZkSource::from_connect(zk, None, None).map_err(|e| Usage(format!("--zk: {e}")))?;
    }
    let flags = src.flags();
    for demo in crate::backend::DEMOS {
        if let Some(address) = own_flags(&flags, *demo).and_then(|o| o.sources.first()) {
            demo.0.check_address(address).map_err(Usage)?;
        }
    }
    if let Some(url) = src.sql.first()
        && Dialect::from_url(url).is_none()
    {
        let e = SqlConfigError::url(&DbUrl(url.clone()));
        return Err(Usage(format!("--sql: {e}")));
    }
    Ok(())
}

/// `--store postgres` wants a postgres:// URL and `--store mysql` a mysql:// one.
fn check_dialect(store: DemoStore, src: &SourceArgs) -> Result<(), Usage> {
    use crate::config::{DbUrl, Dialect};
    let (Some(url), Some(want)) = (
        src.sql.first(),
        match store {
            DemoStore::Postgres => Some((Dialect::Postgres, "postgres://")),
            DemoStore::Mysql => Some((Dialect::MySql, "mysql://")),
            _ => None,
        },
    ) else {
        return Ok(());
    };
    match Dialect::from_url(url) {
        Some(d) if d == want.0 => Ok(()),
        _ => Err(Usage(format!(
            "--store {} needs a {} URL, and --sql is {}: give the one or the other",
            store_name(store),
            want.1,
            DbUrl(url.clone()).redacted()
        ))),
    }
}

/// `--scheme` runs on the store: etcd's on etcd, a SQL table's on a SQL store, a session
/// lock on its own server; ZooKeeper's nodes, and those of a store's own demo, have one way
/// of their own.
fn check_scheme(store: DemoStore, src: &SourceArgs) -> Result<(), Usage> {
    use crate::model::Server;
    use DemoStore as S;
    let Some(scheme) = src.scheme.map(crate::model::Scheme::from) else {
        return Ok(());
    };
    let server = scheme.facts().server;
    let runs = match store {
        S::Etcd => !scheme.is_sql() && !scheme.is_session_lock(),
        S::Sqlite => scheme.is_sql(),
        S::Postgres => scheme.is_sql() || server == Some(Server::Postgres),
        S::Mysql => scheme.is_sql() || server == Some(Server::MySql),
        S::Zookeeper | S::Own(_) => false,
    };
    match runs {
        true => Ok(()),
        false => Err(Usage(format!(
            "--scheme {scheme} does not run on the demo's --store {}: {}",
            store_name(store),
            match store {
                S::Etcd => "use etcd-election or etcd-lease-key",
                S::Zookeeper | S::Own(_) =>
                    "leave --scheme out: its nodes have one way of their own",
                _ =>
                    "use sql-lease or sql-heartbeat (pg-advisory with --store postgres, \
                     mysql-lock with --store mysql)",
            }
        ))),
    }
}
