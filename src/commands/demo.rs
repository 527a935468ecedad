//! `electop demo`: the demo's options from its flags; the demo itself is `crate::demo`.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;

use super::Usage;
use crate::app::Prefs;
use crate::cli::{Cli, DemoArgs, SourceArgs};
use crate::config::Config;

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
    let rt = tokio::runtime::Runtime::new()?;
    let timing = (tick, config.ui.min_frame());
    let options = demo_options(args, &cli.sources);
    rt.block_on(crate::demo::run(&options, timing, cli.debug_panic, prefs))?;
    Ok(ExitCode::SUCCESS)
}

/// The demo's options from its flags.
fn demo_options(args: &DemoArgs, src: &SourceArgs) -> crate::demo::Options {
    use crate::cli::DemoStore;
    use crate::demo::{Options, Store, Tls};
    Options {
        store: match args.store {
            DemoStore::Sqlite => Store::Sqlite,
            DemoStore::Etcd => Store::Etcd,
            DemoStore::Postgres => Store::Postgres,
            DemoStore::Mysql => Store::Mysql,
            DemoStore::Zookeeper => Store::Zookeeper,
            DemoStore::Redis => Store::Redis,
        },
        spawn_etcd: args.spawn_etcd,
        spawn_zookeeper: args.spawn_zookeeper,
        spawn_redis: args.spawn_redis,
        nodes: args.nodes,
        ttl: args.ttl,
        renew: args.renew,
        retry: args.retry,
        scheme: src.scheme.map(crate::model::Scheme::from),
        etcd: src.etcd.first().cloned(),
        sql: src.sql.first().cloned(),
        zk: src.zk.first().cloned(),
        redis: src.redis.first().cloned(),
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
        redis_tls: Tls {
            cacert: src.redis_cacert.clone(),
            cert: src.redis_cert.clone(),
            key: src.redis_key.clone(),
            insecure_skip_tls_verify: false,
        },
        read_only: src.read_only,
    }
}
