//! Presets: the layouts of elections that well-known projects already keep, so an operator
//! names the project (`--preset shedlock`, `preset = "shedlock"`) instead of working out the
//! scheme, table and columns. One entry per preset in [`PRESETS`]; `electop presets` prints
//! them all. Presets only fill in what the user left out: a `--table` or a column given
//! explicitly wins, because projects let their users rename their tables.

use std::time::Duration;

use serde::Deserialize;

use crate::model::Scheme;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Preset {
    /// ShedLock's `shedlock` table (JVM scheduled-task locks).
    Shedlock,
    /// Oban's `oban_peers` table (Elixir job queue leadership).
    Oban,
    /// orchestrator's `active_node` table (MySQL topology manager, HA via a shared backend).
    Orchestrator,
    /// Patroni's keys in etcd (PostgreSQL HA, `etcd3:` DCS).
    Patroni,
    /// Kafka's ZooKeeper-mode controller (`/controller`, `/controller_epoch`).
    KafkaZk,
    /// Hadoop HA's ActiveStandbyElector (`/hadoop-ha/<nameservice>/ActiveStandbyElectorLock`).
    HadoopHa,
}

/// Where a preset's elections live and how they read.
#[derive(Debug)]
pub enum PresetLayout {
    /// One row per election in a SQL table.
    Sql(SqlTable),
    /// Keys in etcd under a namespace (the default prefix).
    Etcd { namespace: &'static str },
    /// Znodes in ZooKeeper under a parent (the default prefix); one ephemeral znode holds
    /// the leader.
    Zookeeper {
        parent: &'static str,
        /// What the listing says of the znodes read.
        layout: &'static str,
    },
}

#[derive(Debug)]
pub struct SqlTable {
    pub table: &'static str,
    /// The election's name.
    pub key: &'static str,
    /// The leader's id.
    pub leader: &'static str,
    /// The term's end (sql-lease) or the last heartbeat (sql-heartbeat).
    pub stamp: &'static str,
    /// sql-heartbeat: the project's own expiry, which is in its code, not in the table.
    pub timeout: Option<Duration>,
}

#[derive(Debug)]
pub struct PresetSpec {
    pub preset: Preset,
    pub name: &'static str,
    /// The project and what it elects a leader for.
    pub about: &'static str,
    pub scheme: Scheme,
    pub layout: PresetLayout,
    /// "No holder" is the resting state (a lock between runs), not a lost leader: shown as
    /// idle, without the no-leader alarm.
    pub idle_is_normal: bool,
}

pub(crate) const PRESETS: &[PresetSpec] = &[
    PresetSpec {
        preset: Preset::Shedlock,
        name: "shedlock",
        about: "ShedLock: a lock per scheduled task (JVM)",
        scheme: Scheme::SqlLease,
        layout: PresetLayout::Sql(SqlTable {
            table: "shedlock",
            key: "name",
            leader: "locked_by",
            stamp: "lock_until",
            timeout: None,
        }),
        idle_is_normal: true,
    },
    PresetSpec {
        preset: Preset::Oban,
        name: "oban",
        about: "Oban: the leader among the nodes of an Oban instance (Elixir)",
        scheme: Scheme::SqlLease,
        layout: PresetLayout::Sql(SqlTable {
            table: "oban_peers",
            key: "name",
            leader: "node",
            stamp: "expires_at",
            timeout: None,
        }),
        idle_is_normal: false,
    },
    PresetSpec {
        preset: Preset::Orchestrator,
        name: "orchestrator",
        about: "orchestrator: the active node of a shared-backend HA setup (MySQL topology manager)",
        scheme: Scheme::SqlHeartbeat,
        layout: PresetLayout::Sql(SqlTable {
            table: "active_node",
            key: "anchor",
            leader: "hostname",
            stamp: "last_seen_active",
            // orchestrator's ActiveNodeExpireSeconds: another node takes over after it.
            timeout: Some(Duration::from_secs(5)),
        }),
        idle_is_normal: false,
    },
    PresetSpec {
        preset: Preset::Patroni,
        name: "patroni",
        about: "Patroni: the primary of each PostgreSQL HA cluster (etcd3 DCS)",
        scheme: Scheme::Patroni,
        layout: PresetLayout::Etcd {
            namespace: "/service/",
        },
        idle_is_normal: false,
    },
    PresetSpec {
        preset: Preset::KafkaZk,
        name: "kafka-zk",
        about: "Kafka: the controller broker of a ZooKeeper-mode cluster",
        scheme: Scheme::KafkaZk,
        layout: PresetLayout::Zookeeper {
            parent: "/",
            layout: "the controller in /controller (JSON brokerid), its epoch in \
                     /controller_epoch; a chroot as in Kafka's zookeeper.connect (--zk H:P/kafka)",
        },
        idle_is_normal: false,
    },
    PresetSpec {
        preset: Preset::HadoopHa,
        name: "hadoop-ha",
        about: "Hadoop HA: the active NameNode (or ResourceManager) per nameservice",
        scheme: Scheme::HadoopHa,
        layout: PresetLayout::Zookeeper {
            parent: "/hadoop-ha",
            layout: "election <nameservice>/, active in ActiveStandbyElectorLock, the last \
                     active in ActiveBreadCrumb (YARN: --prefix /yarn-leader-election)",
        },
        idle_is_normal: false,
    },
];

impl Preset {
    pub fn spec(self) -> &'static PresetSpec {
        PRESETS
            .iter()
            .find(|p| p.preset == self)
            .unwrap_or_else(|| unreachable!("every preset has an entry in PRESETS"))
    }

    /// The SQL table layout, or why this preset is not one.
    pub fn sql_table(self) -> Result<&'static SqlTable, String> {
        match &self.spec().layout {
            PresetLayout::Sql(t) => Ok(t),
            _ => Err(format!(
                "preset {self} is not a SQL table: {}",
                self.needs()
            )),
        }
    }

    /// The kind of source this preset reads, as the user gives it.
    pub fn needs(self) -> &'static str {
        match self.spec().layout {
            PresetLayout::Sql(_) => "it reads a SQL table (--sql URL, kind = \"sql\")",
            PresetLayout::Etcd { .. } => "it reads etcd keys (--etcd HOST:PORT, kind = \"etcd\")",
            PresetLayout::Zookeeper { .. } => {
                "it reads ZooKeeper znodes (--zk HOST:PORT[/chroot], kind = \"zookeeper\")"
            }
        }
    }

    /// The default prefix of a preset whose elections are in ZooKeeper; `None` otherwise.
    pub fn zk_parent(self) -> Option<&'static str> {
        match self.spec().layout {
            PresetLayout::Zookeeper { parent, .. } => Some(parent),
            _ => None,
        }
    }
}

impl Preset {
    /// The default prefix of a preset whose elections are in etcd; `None` for SQL tables.
    pub fn etcd_namespace(self) -> Option<&'static str> {
        match self.spec().layout {
            PresetLayout::Etcd { namespace } => Some(namespace),
            _ => None,
        }
    }
}

impl std::fmt::Display for Preset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.spec().name)
    }
}

/// The scheme of a SQL source from its preset and the scheme given (`flag` names where, for
/// the message): the preset fixes it, so a different one is a mistake, not an override.
pub(crate) fn sql_scheme(
    preset: Option<Preset>,
    given: Option<Scheme>,
    flag: &str,
) -> Result<Scheme, String> {
    match (preset, given) {
        (Some(p), Some(s)) if s != p.spec().scheme => Err(format!(
            "preset {p} is a {} table, but {flag} is {s}: leave {flag} out",
            p.spec().scheme
        )),
        (Some(p), _) => {
            p.sql_table()?;
            Ok(p.spec().scheme)
        }
        (None, Some(s)) => Ok(s),
        (None, None) => Err(format!(
            "a SQL source needs {flag} (sql-lease or sql-heartbeat) or a preset ({})",
            names()
        )),
    }
}

/// The SQL table presets, for the SQL sources' messages: `shedlock, oban, orchestrator`.
pub(crate) fn names() -> String {
    PRESETS
        .iter()
        .filter(|p| matches!(p.layout, PresetLayout::Sql(_)))
        .map(|p| p.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// A table electop knows by name, as `--sql URL` alone looks for it in the catalog: the
/// two SQL schemes' default tables and the SQL presets' tables.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KnownTable {
    pub scheme: Scheme,
    /// The project whose table it is; `None` for a scheme's own default table.
    pub preset: Option<Preset>,
    pub table: String,
    /// The election's name, the leader's id, the deadline (or last heartbeat).
    pub columns: [String; 3],
}

impl KnownTable {
    /// `leaderlock(key, leader_id, valid_until)`.
    pub fn layout(&self) -> String {
        format!("{}({})", self.table, self.columns.join(", "))
    }

    /// What it reads as: `sql-lease`, or `preset shedlock`.
    pub fn what(&self) -> String {
        match self.preset {
            Some(p) => format!("preset {p}"),
            None => self.scheme.to_string(),
        }
    }
}

/// The tables `--sql URL` alone looks for, in this order: the schemes' own, then the
/// presets'. With `table` (`--table`), that table under either scheme's columns.
pub(crate) fn known_tables(table: Option<&str>) -> Vec<KnownTable> {
    let own = |scheme, t: &str, c: [&str; 3]| KnownTable {
        scheme,
        preset: None,
        table: t.to_string(),
        columns: c.map(str::to_string),
    };
    let lease = ["key", "leader_id", "valid_until"];
    let heartbeat = ["anchor", "service_id", "last_seen_active"];
    let mut out = vec![
        own(Scheme::SqlLease, table.unwrap_or("leaderlock"), lease),
        own(
            Scheme::SqlHeartbeat,
            table.unwrap_or("service_election"),
            heartbeat,
        ),
    ];
    if table.is_some() {
        return out;
    }
    for p in PRESETS {
        if let PresetLayout::Sql(t) = &p.layout {
            out.push(KnownTable {
                scheme: p.scheme,
                preset: Some(p.preset),
                table: t.table.to_string(),
                columns: [t.key, t.leader, t.stamp].map(str::to_string),
            });
        }
    }
    out
}

/// What `electop presets` prints: each preset, its scheme and where its elections are.
pub(crate) fn listing() -> String {
    let mut out = String::new();
    for p in PRESETS {
        // `as_str`: Scheme's Display ignores padding.
        out.push_str(&format!(
            "{:<14}{:<15}{}\n",
            p.name,
            p.scheme.as_str(),
            p.about
        ));
        match &p.layout {
            PresetLayout::Sql(t) => {
                let stamp = match t.timeout {
                    Some(d) => format!(
                        "last heartbeat {} (deposed {}s after it; --heartbeat-timeout to change)",
                        t.stamp,
                        d.as_secs()
                    ),
                    None => format!("term ends at {}", t.stamp),
                };
                out.push_str(&format!(
                    "{:29}table {}: election {}, leader {}, {stamp}\n",
                    "", t.table, t.key, t.leader
                ));
            }
            PresetLayout::Etcd { namespace } => out.push_str(&format!(
                "{:29}etcd keys under {namespace} (--prefix to change): election <scope>/, leader \
                 <scope>/leader, members <scope>/members/<name>\n",
                ""
            )),
            PresetLayout::Zookeeper { parent, layout } => out.push_str(&format!(
                "{:29}znodes under {parent} (--prefix to change): {layout}\n",
                ""
            )),
        }
        if p.idle_is_normal {
            out.push_str(&format!(
                "{:29}no holder between runs is normal: shown as idle, not as a lost leader\n",
                ""
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_has_one_entry_named_as_on_the_command_line() {
        use clap::ValueEnum;
        for p in Preset::value_variants() {
            let name = p.to_possible_value().map(|v| v.get_name().to_string());
            assert_eq!(name.as_deref(), Some(p.spec().name));
            assert_eq!(PRESETS.iter().filter(|s| s.preset == *p).count(), 1);
        }
    }

    #[test]
    fn a_preset_fixes_the_scheme() {
        let shed = Some(Preset::Shedlock);
        assert_eq!(sql_scheme(shed, None, "--scheme"), Ok(Scheme::SqlLease));
        assert_eq!(
            sql_scheme(shed, Some(Scheme::SqlLease), "--scheme"),
            Ok(Scheme::SqlLease)
        );
        let e = sql_scheme(shed, Some(Scheme::SqlHeartbeat), "--scheme").unwrap_err();
        assert!(
            e.contains("sql-lease") && e.contains("leave --scheme out"),
            "{e}"
        );
        let e = sql_scheme(None, None, "scheme").unwrap_err();
        assert!(e.contains("shedlock, oban, orchestrator"), "{e}");
    }

    #[test]
    fn the_listing_names_every_table_and_the_heartbeat_timeout() {
        let text = listing();
        for t in [
            "shedlock      sql-lease      ShedLock",
            "orchestrator  sql-heartbeat  orchestrator",
            "table shedlock: election name, leader locked_by",
            "table oban_peers: election name, leader node",
            "table active_node: election anchor, leader hostname",
            "deposed 5s after it",
            "patroni       patroni        Patroni",
            "etcd keys under /service/",
            "kafka-zk      kafka-zk       Kafka",
            "hadoop-ha     hadoop-ha      Hadoop HA",
            "znodes under /hadoop-ha",
            "shown as idle",
        ] {
            assert!(text.contains(t), "{t} missing from:\n{text}");
        }
    }
}
