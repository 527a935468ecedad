//! Hand-built states for the screen snapshot tests: a source, a candidate with a running
//! countdown, and a fixed wall clock, so every snapshot file draws the same things alike.

use std::time::{Duration, Instant, SystemTime};

use electop::model::{Candidate, Deadline, Scheme, SourceInfo};

/// Source `id` (`etcd1`, `sql2`...) under `prefix`, on PostgreSQL for a SQL scheme.
pub fn info(id: usize, prefix: &str, scheme: Scheme) -> SourceInfo {
    let sql = scheme.is_sql() || scheme.is_session_lock();
    let (store, at) = match scheme {
        Scheme::ZkRecipe => ("zk", "zookeeper 127.0.0.1:2181"),
        _ if sql => ("sql", "postgres 127.0.0.1:5432"),
        _ => ("etcd", "etcd 127.0.0.1:2379"),
    };
    SourceInfo {
        store: scheme.store(),
        id,
        name: format!("{at} {prefix}"),
        label: prefix.to_string(),
        short: format!("{store}{}", id + 1),
        endpoints: if store == "zk" {
            "127.0.0.1:2181"
        } else {
            "127.0.0.1:2379"
        }
        .into(),
        scheme: Some(scheme),
        read_only: false,
        clustered: false,
        idle_is_normal: false,
        notice: None,
    }
}

/// The fixed wall clock the snapshots are drawn at.
pub fn wall() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000)
}

/// A candidate with 42.3 s left of a 60 s lease, as read at `now`.
pub fn candidate(id: &str, key: &str, lease: Option<i64>, rev: i64, now: Instant) -> Candidate {
    Candidate {
        id: id.to_string(),
        raw_id: id.as_bytes().to_vec(),
        key: key.to_string(),
        raw_key: key.as_bytes().to_vec(),
        lease,
        create_revision: rev,
        mod_revision: rev + 1,
        stamp: None,
        ttl: Some(Deadline {
            granted_ms: 60_000,
            remaining_ms: 42_300,
            read_at: now,
        }),
    }
}
