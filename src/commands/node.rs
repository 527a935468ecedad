//! `electop node`: one participant, in one election in one store.

use std::process::ExitCode;

use anyhow::Result;

use super::Usage;
use crate::cli::{NodeArgs, SchemeArg};
use crate::config::SourceConfig;

/// `electop node`: one participant, in one election in one store.
pub(super) async fn node(
    scheme: Option<SchemeArg>,
    args: &NodeArgs,
    sources: Vec<SourceConfig>,
) -> Result<ExitCode> {
    let [source] = <[_; 1]>::try_from(sources).map_err(|s: Vec<_>| {
        Usage(format!(
            "electop node takes part in one election in one store; {} sources were given",
            s.len()
        ))
    })?;
    // A preset (or the config's source) already says which scheme its store uses.
    let scheme = scheme.map(crate::model::Scheme::from).or(source.scheme()).ok_or_else(|| {
        Usage("electop node needs --scheme (etcd-election, etcd-lease-key, sql-lease or sql-heartbeat) or a SQL --preset".into())
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
