//! `electop node`: one participant, in one election in one store.

use std::process::ExitCode;

use anyhow::Result;
use clap::ValueEnum;

use super::Usage;
use crate::cli::{DemoStore, NodeArgs, SchemeArg};
use crate::config::SourceConfig;

/// `electop node`: one participant, in one election in one store.
pub(super) async fn node(
    scheme: Option<SchemeArg>,
    args: &NodeArgs,
    sources: Vec<SourceConfig>,
    source_given: bool,
) -> Result<ExitCode> {
    let [source] = <[_; 1]>::try_from(sources).map_err(|s: Vec<_>| {
        Usage(format!(
            "electop node takes part in one election in one store; {} sources were given",
            s.len()
        ))
    })?;
    if let Some(store) = args.store {
        check_store(store, &source, source_given)?;
    }
    if args.create_table && !matches!(source, SourceConfig::Sql(_)) {
        return Err(Usage(format!(
            "--create-table is for a SQL table (--sql), and does not apply to the node's {} \
             source: leave it out",
            source.label()
        ))
        .into());
    }
    // A preset (or the config's source) already says which scheme its store uses.
    let scheme = scheme.map(crate::model::Scheme::from).or(source.scheme()).ok_or_else(|| {
        Usage("electop node needs --scheme (etcd-election, etcd-lease-key, sql-lease, sql-heartbeat, pg-advisory or mysql-lock) or a SQL --preset".into())
    })?;
    if scheme == crate::model::Scheme::Patroni {
        return Err(Usage(
            "Patroni's members are Patroni itself: electop node does not join them (electop --preset patroni watches them)".into(),
        )
        .into());
    }
    let options = crate::node::Options {
        election: args.election.clone(),
        id: args.id.clone(),
        json: args.json,
        ttl: args.ttl,
        renew: args.renew,
        retry: args.retry,
        create_table: args.create_table,
    };
    crate::backend::participate(&options, scheme, &source).await?;
    Ok(ExitCode::SUCCESS)
}

/// `--store` names the store the source flags point at: `--store zookeeper` with `--etcd`
/// is a mistake worth stopping at before anything joins an election.
fn check_store(store: DemoStore, source: &SourceConfig, source_given: bool) -> Result<(), Usage> {
    let name = |s: DemoStore| {
        s.to_possible_value()
            .map(|v| v.get_name().to_string())
            .unwrap_or_default()
    };
    let (is, flag) = source.store_flag();
    if is == name(store) {
        return Ok(());
    }
    let wanted = store.source_flag();
    // No source flag at all reads the local etcd (127.0.0.1:2379): say so, not "--etcd".
    let given = match is {
        "etcd" if !source_given => "no source flag reads the local etcd".to_string(),
        _ => format!("{flag} gives {is}"),
    };
    Err(Usage(format!(
        "--store {} needs {wanted}, and {given}; give the one or the other",
        name(store),
    )))
}
