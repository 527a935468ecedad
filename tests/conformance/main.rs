//! Conformance: one list of scenarios run against every store and scheme electop reads,
//! each (scenario, store) cell its own test, named `<scenario>::<store>`. In every cell the
//! leader and the changes must be the same in `status --json`, the `status` table,
//! `watch --json`, `serve`'s `/api/v1/elections` and `/api/v1/events`, and `/metrics`.
//! One server per store serves every cell of the binary. The matrix of results is
//! docs/CONFORMANCE.md.

mod admin;
#[path = "../common/mod.rs"]
mod common;
mod deposed;
mod frozen;
mod participants;
mod scenarios;
mod servers;
mod stores;
mod twice;
mod views;

/// `cells!(scenario)`: a module per scenario, a test per store and scheme;
/// `cells!(scenario: store, ...)` for the stores it applies to.
macro_rules! cells {
    ($scenario:ident) => {
        cells!($scenario: etcd_election, etcd_lease_key, sql_lease_sqlite, sql_heartbeat_sqlite,
            sql_lease_postgres, zookeeper, zookeeper_kazoo, redis_events, redis_poll,
            pg_advisory, mysql_lock, kubernetes);
    };
    ($scenario:ident: $($(#[$m:meta])* $store:ident),* $(,)?) => {
        mod $scenario {
            $(
                #[test]
                $(#[$m])*
                fn $store() {
                    crate::scenarios::$scenario(crate::stores::Kind::$store)
                }
            )*
        }
    };
}

cells!(elected);
cells!(failover);
cells!(resign);
cells!(store_down);
cells!(other_source_down);
cells!(release_acquire);
cells!(reelect);
cells!(reelect_later);
cells!(reelect_early_serve: etcd_election, etcd_lease_key,
    sql_lease_sqlite,
    sql_heartbeat_sqlite,
    sql_lease_postgres,
    zookeeper,
    zookeeper_kazoo,
    redis_events, redis_poll, pg_advisory, mysql_lock, kubernetes);
cells!(force_leader);
cells!(member_frozen: etcd_election, etcd_lease_key, zookeeper, zookeeper_kazoo);
cells!(two_changes);
cells!(remembered);
