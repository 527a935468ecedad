use super::*;
use crate::admin::ActionKind;
use crate::config::{SourceConfig, SqlColumns, SqlSource};
use crate::model::{Candidate, Election};

/// An etcd-election line of `ids`, the first leading (the stores' plan tests share it).
pub(super) fn line(ids: &[&str]) -> Election {
    let mut e = Election::new(0, "jobs".into(), Scheme::EtcdElection);
    e.candidates = ids
        .iter()
        .enumerate()
        .map(|(i, id)| Candidate {
            id: id.to_string(),
            raw_id: id.as_bytes().to_vec(),
            key: format!("/e/jobs/{:x}", 0x10 + i),
            raw_key: format!("/e/jobs/{:x}", 0x10 + i).into_bytes(),
            lease: Some(0x10 + i as i64),
            create_revision: 5 + i as i64,
            mod_revision: 5 + i as i64,
            stamp: None,
            ttl: None,
        })
        .collect();
    e.leader = e.candidates.first().cloned();
    e
}

pub(super) fn request(kind: ActionKind, seen: Election, target: Target) -> AdminRequest {
    AdminRequest {
        source: 0,
        source_name: "store".into(),
        kind,
        seen,
        target,
    }
}

fn plan_of(kind: ActionKind, ids: &[&str]) -> Plan {
    let target = default_target(Scheme::EtcdElection).expect("etcd's");
    plan(&request(kind, line(ids), target)).expect("a plan")
}

#[test]
fn etcd_election_resign_warns_that_clients_do_not_notice() {
    let p = plan_of(ActionKind::Resign, &["node-a", "node-b"]);
    assert_eq!(
        p.writes(),
        ["txn: if create_revision(/e/jobs/10) == 5 then delete /e/jobs/10"]
    );
    let notes = p.notes.join(" ");
    for client in ["Go concurrency", "Node etcd3", "etcdctl elect"] {
        assert!(notes.contains(client), "{notes}");
    }
    assert!(
        notes.contains("do not notice")
            && notes.contains("Force a re-election instead (R, or electop reelect)")
    );
}

#[test]
fn etcd_election_deposing_ends_sessions_first_and_states_the_measured_bound() {
    let re = plan_of(ActionKind::Reelect, &["node-a", "node-b"]);
    let w = re.writes();
    assert_eq!(w.len(), 4, "{w:?}");
    assert!(w[0].starts_with("grant a hold lease"), "{w:?}");
    assert_eq!(
        w[1],
        "txn: if create_revision(/e/jobs/10) == 5 and lease(/e/jobs/10) == 10 then put \
         /e/jobs/10 on the hold lease (same value, same place in line)"
    );
    assert_eq!(w[2], "revoke lease 10 (ends the session of node-a)");
    assert!(w[3].ends_with("node-b leads"), "{w:?}");
    let target = ActionKind::ForceLeader {
        target: "node-c".into(),
    };
    let fl = plan_of(target, &["node-a", "node-b", "node-c"]);
    assert!(
        fl.writes()[2].starts_with("revoke lease 10, 11"),
        "{:?}",
        fl.writes()
    );
    assert!(
        fl.writes()[1].contains("create_revision(/e/jobs/12) == 7"),
        "the target is checked too: {:?}",
        fl.writes()
    );
    assert!(fl.notes[0].contains("Removes from the line: node-a, node-b."));
    // What the deposed may believe is said from their leases, with no measured figures
    // (those are in tests/campaigners/MEASUREMENTS.md).
    for notes in [re.notes, fl.notes] {
        assert!(
            notes
                .iter()
                .any(|n| n.contains("may believe they still lead until their next keep-alive")),
            "{notes:?}"
        );
        assert!(!notes.iter().any(|n| n.contains("measured")), "{notes:?}");
    }
}

fn custom_sql(url: &str, scheme: Scheme) -> Target {
    let cfg = SourceConfig::Sql(
        SqlSource::new(crate::config::SqlSpec {
            name: None,
            url: crate::config::DbUrl(url.into()),
            scheme,
            table: Some("locks".into()),
            columns: SqlColumns {
                key: Some("lock_name".into()),
                leader_id: Some("owner".into()),
                valid_until: Some("until_at".into()),
            },
            password_env: None,
            password_file: None,
            timeout: None,
            poll: None,
            read_only: false,
            preset: None,
        })
        .expect("valid settings"),
    );
    crate::backend::target(&cfg)
}

/// A SQL row held by node-a, whose term runs.
fn row(scheme: Scheme) -> Election {
    let mut e = line(&["node-a"]);
    e.scheme = scheme;
    e.leader = e.candidates.first().cloned();
    e
}

#[test]
fn sql_confirmation_names_the_configured_table_and_columns() {
    let target = custom_sql("postgres://db/x", Scheme::SqlLease);
    let kind = ActionKind::ForceLeader {
        target: "node-b".into(),
    };
    let p = plan(&request(kind, row(Scheme::SqlLease), target)).expect("a plan");
    assert_eq!(
        p.writes(),
        [
            "UPDATE \"locks\" SET \"owner\" = $1, \"until_at\" = ⟨the database's now + 15000 ms⟩ \
             WHERE CAST(\"lock_name\" AS TEXT) = $2 AND CAST(\"owner\" AS TEXT) = $3  \
             [#1 = 'node-b', #2 = 'jobs', #3 = 'node-a']; 1 row means done, none that the row \
             changed"
        ]
    );
    let target = custom_sql("mysql://db/x", Scheme::SqlHeartbeat);
    let p = plan(&request(
        ActionKind::Resign,
        row(Scheme::SqlHeartbeat),
        target,
    ))
    .unwrap();
    let w = p.writes().join("\n");
    assert!(
        w.starts_with("UPDATE `locks` SET `until_at` = ⟨the database's now - 21000 ms⟩")
            && !w.contains("last_seen_active")
            && !w.contains("anchor"),
        "{w}"
    );
}

/// Resign and re-election act on a leader: a row whose term is over has none, and nothing
/// is planned (resign wrote the row's deadline and reported a leader).
#[test]
fn resign_and_reelect_without_a_leader_are_refused() {
    let target = custom_sql("postgres://db/x", Scheme::SqlLease);
    let mut over = row(Scheme::SqlLease);
    over.leader = None;
    for kind in [ActionKind::Resign, ActionKind::Reelect] {
        let why = plan(&request(kind.clone(), over.clone(), target.clone())).unwrap_err();
        assert!(
            why.starts_with("jobs has no leader (node-a's term is over)"),
            "{kind:?}: {why}"
        );
    }
    let force = ActionKind::ForceLeader {
        target: "node-b".into(),
    };
    assert!(
        plan(&request(force, over, target)).is_ok(),
        "a leader may be forced"
    );
}

#[test]
fn a_plan_for_another_kind_of_store_is_refused() {
    let target = default_target(Scheme::EtcdElection).expect("etcd's");
    let why = plan(&request(ActionKind::Reelect, row(Scheme::SqlLease), target)).unwrap_err();
    assert!(why.contains("not a scheme of this source"), "{why}");
}

/// The confirmation's three lines come from the plan each store builds: who leads next,
/// how long there is no leader, what the deposed may believe, from the election as seen.
#[test]
fn each_plan_says_in_three_lines_who_leads_how_long_without_and_what_the_deposed_believe() {
    let mut e = line(&["node-a", "node-b", "node-c"]);
    for c in &mut e.candidates {
        c.ttl = Some(crate::model::Deadline {
            granted_ms: 60_000,
            remaining_ms: 40_000,
            read_at: std::time::Instant::now(),
        });
    }
    e.leader = e.candidates.first().cloned();
    let etcd = default_target(Scheme::EtcdElection).expect("etcd's");
    let gist = |kind: ActionKind, e: &Election, t: &Target| {
        let p = plan(&request(kind, e.clone(), t.clone())).expect("a plan");
        assert!(p.gist.lines().len() <= 3, "{:?}", p.gist);
        p.gist
    };
    let force = |t: &str| ActionKind::ForceLeader { target: t.into() };
    // The hold of the plan is the gap: a third of the 60 s TTL + 2 s.
    let g = gist(force("node-c"), &e, &etcd);
    assert_eq!(
        g.next,
        "node-c leads next; node-a and node-b leave the line."
    );
    assert_eq!(
        g.gap,
        "No leader for 22 s, while the keys of node-a and node-b are held."
    );
    assert_eq!(
        g.deposed.as_deref(),
        Some("node-a may believe it still leads for up to 20 s, never beside node-c.")
    );
    let g = gist(ActionKind::Reelect, &e, &etcd);
    assert!(g.next.starts_with("node-b leads next"), "{g:?}");
    assert!(g.gap.starts_with("No leader for 22 s"), "{g:?}");
    let g = gist(ActionKind::Resign, &e, &etcd);
    assert!(g.gap.starts_with("No gap"), "{g:?}");
    assert!(g.deposed.is_some_and(|d| d.contains("does not notice")));

    let sql = custom_sql("postgres://db/x", Scheme::SqlLease);
    let held = row(Scheme::SqlLease);
    let g = gist(force("node-b"), &held, &sql);
    assert!(g.next.starts_with("node-b holds the row at once"), "{g:?}");
    let g = gist(ActionKind::Reelect, &held, &sql);
    assert!(g.gap.starts_with("No leader until"), "{g:?}");
    assert!(g.deposed.is_some_and(|d| d.contains("node-a may believe")));
}

/// The dashboard without a config (the demo) plans on the defaults of the scheme's store:
/// every scheme has one, in the store that keeps it.
#[test]
fn every_scheme_has_its_stores_default_target() {
    for scheme in Scheme::ALL {
        let target = default_target(scheme);
        let store = target.as_ref().map(|t| {
            if t.is::<etcd::EtcdTarget>() {
                "etcd"
            } else if t.is::<sql::SqlTarget>() || t.is::<session_lock::SessionLockTarget>() {
                "sql"
            } else if t.is::<zookeeper::ZkTarget>() {
                "zookeeper"
            } else if t.is::<redis::RedisKeys>() {
                "redis"
            } else if t.is::<kubernetes::LeaseSource>() {
                "kubernetes"
            } else {
                "no store's"
            }
        });
        assert_eq!(store, Some(scheme.store().label()), "{scheme}");
    }
    assert!(
        default_target(Scheme::PgAdvisory)
            .is_some_and(|t| t.is::<session_lock::SessionLockTarget>())
    );
    assert!(matches!(
        default_target(Scheme::SqlHeartbeat)
            .as_ref()
            .and_then(|t| t.get::<sql::SqlTarget>()),
        Some(sql::SqlTarget {
            heartbeat_ms: Some(20_000),
            ..
        })
    ));
}

/// A store executes only its own steps: another store's is refused, named by its words.
#[test]
fn a_store_reads_its_own_steps_and_names_another_stores() {
    let p = plan_of(ActionKind::Resign, &["node-a", "node-b"]);
    let why = p.steps_of::<sql::Statement>().expect_err("etcd's steps");
    assert_eq!(
        why,
        "the step `txn: if create_revision(/e/jobs/10) == 5 then delete /e/jobs/10` is another \
         store's"
    );
    assert!(p.only_step_of::<sql::Statement>().is_err());
    assert!(p.readback_of::<sql::Row>().is_none());
}

/// Only a resign its participants would not notice (an etcd-election's) offers a
/// re-election instead.
#[test]
fn only_a_resign_election_clients_miss_offers_a_reelection() {
    assert!(plan_of(ActionKind::Resign, &["node-a", "node-b"]).reelect_instead);
    assert!(!plan_of(ActionKind::Reelect, &["node-a", "node-b"]).reelect_instead);
    let sql = custom_sql("postgres://db/x", Scheme::SqlLease);
    let p = plan(&request(ActionKind::Resign, row(Scheme::SqlLease), sql)).expect("a plan");
    assert!(!p.reelect_instead);
}
