//! Carries out a ZooKeeper plan as it is (`plan.rs` builds it): the nodes' czxid and mzxid
//! read in one multi-read and compared with what was seen, then one `multi` that deletes
//! (and checks) each at the data version that read found, so a node changed since is left
//! untouched and nothing at all is written. `step::Multi` says what is and is not atomic.

use std::time::Duration;

use zookeeper_client::{
    Client, Error as E, MultiReadResult, MultiWriteError, MultiWriteResult, Stat,
};

use super::error::ZkError;
use super::layout;
use super::step::{Multi, Znode};
use crate::admin::{AdminRequest, Check, Compare, Key, Outcome, changed_since};
use crate::config::ZkSource;
use crate::model::escape_bytes;

/// electop's own session while it acts: it holds no ephemeral node, so it may be short.
const SESSION: Duration = Duration::from_secs(10);

pub(crate) async fn execute(cfg: &ZkSource, req: &AdminRequest, timeout: Duration) -> Outcome {
    let plan = match super::plan::plan(req) {
        Ok(p) => p,
        Err(reason) => return Outcome::Refused { reason },
    };
    let Multi {
        compares,
        delete,
        keep,
    } = match plan.only_step_of::<Multi>() {
        Ok(multi) => multi,
        Err(why) => {
            return Outcome::Refused {
                reason: format!("{} is not a ZooKeeper scheme: {why}", req.seen.scheme),
            };
        }
    };
    let connect = cfg.connect_string();
    let failed = |e: ZkError| Outcome::Failed {
        error: e.to_string(),
    };
    let client = match dial(cfg, timeout).await {
        Ok(c) => c,
        Err(e) => return failed(e),
    };
    let err = |e: E, path: &str| ZkError::from_client(e, &connect, path, timeout);
    let nodes: Vec<&Key> = delete.iter().chain(keep).collect();
    let stats = match bounded(timeout, &connect, read(&client, &nodes)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return failed(err(e, &nodes[0].shown)),
        Err(e) => return failed(e),
    };
    if let Some(why) = differs(compares, &nodes, &stats) {
        return Outcome::Changed {
            detail: changed_since(&why),
        };
    }
    let written = bounded(timeout, &connect, write(&client, delete, keep, &stats)).await;
    match written {
        Ok(Ok(())) => {}
        Ok(Err(MultiWriteError::OperationFailed { index, source })) => {
            let what = ops(delete, keep).get(index).copied().unwrap_or("a node");
            return Outcome::Changed {
                detail: changed_since(&format!(
                    "{what} changed between the read and the multi ({source})"
                )),
            };
        }
        Ok(Err(MultiWriteError::RequestFailed { source })) => {
            return Outcome::Failed {
                error: format!(
                    "{}; if the multi was applied, look at the election before trying again",
                    err(source, &nodes[0].shown)
                ),
            };
        }
        Err(e) => {
            return Outcome::Failed {
                error: format!(
                    "{e}; if the multi was applied, look at the election before trying again"
                ),
            };
        }
    }
    let now = match plan.readback_of::<Znode>() {
        Some(Znode(parent)) => {
            match bounded(timeout, &connect, leader_now(&client, parent)).await {
                Ok(Ok(now)) => now,
                Ok(Err(e)) => format!("it could not be read back: {e}"),
                Err(_) => "it could not be read back in time".into(),
            }
        }
        None => String::new(),
    };
    Outcome::Done {
        detail: format!("{}; {now}", plan.writes().join("; ")),
    }
}

/// A session for one action, with the source's credentials and TLS. Fails at once when no
/// member answers, rather than trying the members round and round.
async fn dial(cfg: &ZkSource, timeout: Duration) -> Result<Client, ZkError> {
    let dialer = super::dial::dialer(cfg)?.timeouts(SESSION, timeout);
    dialer.connect(cfg, timeout).await
}

async fn bounded<T>(
    timeout: Duration,
    connect: &str,
    f: impl std::future::Future<Output = T>,
) -> Result<T, ZkError> {
    tokio::time::timeout(timeout, f)
        .await
        .map_err(|_| ZkError::Timeout(connect.to_string(), timeout))
}

fn path(k: &Key) -> String {
    String::from_utf8_lossy(&k.raw).into_owned()
}

/// Each node's stat, in one multi-read (one consistent read of them all); `None`: gone.
async fn read(client: &Client, nodes: &[&Key]) -> Result<Vec<Option<Stat>>, E> {
    let mut reader = client.new_multi_reader();
    for k in nodes {
        reader.add_get_data(&path(k))?;
    }
    let got = reader.commit().await?;
    got.into_iter()
        .map(|r| match r {
            MultiReadResult::Data { stat, .. } => Ok(Some(stat)),
            MultiReadResult::Error { err: E::NoNode } => Ok(None),
            MultiReadResult::Error { err } => Err(err),
            _ => Err(E::UnexpectedError(
                "a multi-read answered a get with children".into(),
            )),
        })
        .collect()
}

/// What differs from what was seen, if anything: the first compare that fails.
fn differs(compares: &[Compare], nodes: &[&Key], stats: &[Option<Stat>]) -> Option<String> {
    compares.iter().find_map(|c| {
        let i = nodes.iter().position(|k| **k == c.key)?;
        let k = &c.key.shown;
        let Some(stat) = &stats[i] else {
            return Some(format!("{k} is gone"));
        };
        match c.check {
            Check::CreateRevision(z) if stat.czxid != z => Some(format!(
                "{k} is another node now (czxid 0x{:x}, seen 0x{z:x})",
                stat.czxid
            )),
            Check::ModRevision(z) if stat.mzxid != z => Some(format!(
                "{k} was written since (mzxid 0x{:x}, seen 0x{z:x})",
                stat.mzxid
            )),
            _ => None,
        }
    })
}

/// The multi: each delete and check at the data version the read found.
async fn write(
    client: &Client,
    delete: &[Key],
    keep: &[Key],
    stats: &[Option<Stat>],
) -> Result<(), MultiWriteError> {
    let version = |i: usize| stats[i].as_ref().map_or(0, |s| s.version);
    let mut w = client.new_multi_writer();
    for (i, k) in delete.iter().enumerate() {
        w.add_delete(&path(k), Some(version(i)))?;
    }
    for (i, k) in keep.iter().enumerate() {
        w.add_check_version(&path(k), version(delete.len() + i))?;
    }
    let results = w.commit().await?;
    debug_assert!(
        results
            .iter()
            .all(|r| matches!(r, MultiWriteResult::Delete | MultiWriteResult::Check))
    );
    Ok(())
}

/// The multi's operations in order, by the node they are on.
fn ops<'a>(delete: &'a [Key], keep: &'a [Key]) -> Vec<&'a str> {
    delete
        .iter()
        .chain(keep)
        .map(|k| k.shown.as_str())
        .collect()
}

/// Who leads the election at `parent` now: its lowest sequence node's data.
async fn leader_now(client: &Client, parent: &str) -> Result<String, E> {
    let names = client.list_children(parent).await?;
    let first = names
        .iter()
        .filter_map(|n| Some((layout::sequence(n)?, n)))
        .min()
        .map(|(_, n)| n.clone());
    let Some(name) = first else {
        return Ok("nobody is in line now".into());
    };
    let node = super::read::join(parent, &name);
    let (data, _) = client.get_data(&node).await?;
    let id = if data.is_empty() {
        escape_bytes(name.as_bytes())
    } else {
        escape_bytes(&data)
    };
    Ok(format!("leader now {id}"))
}
