//! The text after each command's flags: a few examples for `-h`, more (and the exit codes)
//! for `--help`. `-h` fits a screen (tests/usage_errors.rs holds every command to it).

/// Said after the flags in every `-h`: what it leaves out.
macro_rules! more {
    () => {
        "Authentication, TLS and per-store flags: --help."
    };
}

/// The stores, for the top line and the long description.
pub(super) const ABOUT: &str = concat!(
    "Leader elections at a glance: etcd, SQL tables (PostgreSQL, MariaDB/MySQL, SQLite), ",
    "ZooKeeper, SQL session locks, Redis and Kubernetes Leases"
);

pub(super) const LONG_ABOUT: &str = concat!(
    "A terminal dashboard, and the commands around it, for \
     leader elections in etcd (etcd-election, lease keys, Patroni), SQL tables on PostgreSQL, \
     MariaDB/MySQL and SQLite (sql-lease, sql-heartbeat, ShedLock, Oban...), ZooKeeper \
     (Curator, kazoo, Kafka, Hadoop HA), SQL session locks (PostgreSQL advisory locks, MySQL ",
    "GET_LOCK), Redis (SET NX PX locks) and Kubernetes Leases (client-go's leaderelection).\n",
    "
Without a command, the dashboard."
);

pub(super) const MAIN: &str = concat!(
    "Examples:
  electop                       the dashboard on a local etcd
  electop --zk zk1:2181 --prefix /election status
",
    more!()
);

pub(super) const MAIN_LONG: &str = concat!(
    "Examples:
  electop                                 the dashboard on a local etcd (127.0.0.1:2379)
  electop --etcd 10.0.0.5:2379 --prefix /elections/
  electop --zk zk1:2181,zk2:2181 --prefix /election
",
    "  electop --redis redis://10.0.0.7:6379 --prefix 'leader:*'\n",
    "  electop --sql postgres://app@db/app --scheme sql-lease --password-env PGPASSWORD
  electop --sql sqlite:///var/lib/app/e.db  a SQLite file (its path after sqlite://)
  electop status                          every election once, as a table
  electop watch                           one line per leader change
  electop demo                            three nodes electing a leader on SQLite

In the dashboard: / filters, : runs a command (:sort, :events), ? lists every key.

Exit codes: 0 done; 1 a store could not be read or an action failed; 2 a usage or config
mistake (a bad flag, URL or config field, a flag that does not apply to the source given);
status 3: some sources read, others not."
);

pub(super) const SERVE: &str = concat!(
    "Examples:
  electop --etcd 127.0.0.1:2379 --prefix /svc/ serve
  electop --context prod serve --listen 0.0.0.0:9477 --bearer-token-file token
  curl -s 127.0.0.1:9477/metrics | promtool check metrics

",
    more!()
);

pub(super) const SERVE_LONG: &str = "Examples:
  electop --etcd 127.0.0.1:2379 --prefix /svc/ serve
  electop --context prod serve --listen 0.0.0.0:9477 --bearer-token-file /etc/electop/token
  electop serve --on-change 'logger -t electop' --webhook http://127.0.0.1:8080/hook
  curl -s 127.0.0.1:9477/metrics | promtool check metrics";

pub(super) const STATUS: &str = concat!(
    "Examples:
  electop status                          aligned table (not cut when piped)
  electop status -o json | jq '.elections[] | select(.leader == null) | .name'
  electop --sql sqlite://elections.db --scheme sql-lease status

Exit codes: 0 all sources read; 3 some; 1 none; 2 a usage or config mistake.
",
    more!()
);

pub(super) const STATUS_LONG: &str = "Examples:
  electop status                          aligned table (not cut when piped)
  electop status -o wide                  also the scheme and the leader's key
  electop status -o json | jq '.elections[] | select(.leader == null) | .name'
  electop --sql sqlite://elections.db --scheme sql-lease status

Exit codes: 0 every source was read; 3 some were, and each one that was not is named on
stderr and in the output (table: `etcd1: DOWN: why`; JSON: sources[].state \"down\" and
.error); 1 no source could be read (nothing on stdout); 2 a usage or config mistake.
A refused connection is final at once; a store that does not answer is named after
--timeout.";

pub(super) const HISTORY: &str = concat!(
    "Examples:
  electop history                         every election's last hour
  electop history sql1/jobs --since 24h   one election's last day
  electop history --since 2026-11-28T05:00:00Z --json  from a time on, as JSON

Exit codes: 0 all sources read; 3 some; 1 none; 2 a usage or config mistake.
",
    more!()
);

pub(super) const HISTORY_LONG: &str = concat!(
    "Examples:
  electop history                         every election's last hour
  electop history sql1/jobs --since 24h   one election's last day
  electop history jobs --since 90m --json | jq '.elections[].summary'
  electop history --since 2026-11-28T05:00:00Z --until 2026-11-28T06:00:00Z

Each tenure (holder, start, end, duration, the cause that began and ended it) and each gap
without a leader, then per election: failovers, time without a leader (total, longest,
p50, p95) and forced actions. Only what the history holds is shown: before its oldest
change, who led is named without a start; changes with no time (etcd revisions from before
any electop saw them) are left out and counted. ",
    "SQL, ZooKeeper and Redis history is what\n",
    "an electop (dashboard, serve, watch) recorded in its journal. docs/history.md, in electop's
source, says more.

Exit codes: 0 every source was read; 3 some were (each one that was not is named on
stderr); 1 no source could be read, or ELECTION is in none of those read while some were
not; 2 a usage or config mistake, or ELECTION is in no source (every one read)."
);

pub(super) const WATCH: &str = concat!(
    "Examples:
  electop watch               23:01:02.345 etcd1 jobs leader a → b (lease_expired) ttl 9.5s
  electop watch --json | jq -c 'select(.kind == \"leader_changed\")'

",
    more!()
);

pub(super) const WATCH_LONG: &str = "Examples:
  electop watch               23:01:02.345 etcd1 jobs leader a → b (lease_expired) ttl 9.5s
  electop watch --json | jq -c 'select(.kind == \"leader_changed\")'
  electop --prefix /elections/ watch | grep --line-buffered jobs";

macro_rules! force_examples {
    () => {
        "Examples:
  electop force-leader jobs node-b        asks before writing
  electop force-leader etcd2/jobs node-b -y --expect-leader node-a"
    };
}

pub(super) const FORCE: &str = concat!(force_examples!(), "\n\n", more!());

pub(super) const FORCE_LONG: &str = force_examples!();

macro_rules! reelect_examples {
    () => {
        "Examples:
  electop reelect jobs
  electop --sql sqlite://e.db --scheme sql-lease reelect jobs -y"
    };
}

pub(super) const REELECT: &str = concat!(reelect_examples!(), "\n\n", more!());

pub(super) const REELECT_LONG: &str = reelect_examples!();

macro_rules! resign_examples {
    () => {
        "Examples:
  electop resign jobs
  electop resign sql1/jobs -y --expect-leader node-a"
    };
}

pub(super) const RESIGN: &str = concat!(resign_examples!(), "\n\n", more!());

pub(super) const RESIGN_LONG: &str = resign_examples!();

pub(super) const NODE: &str = concat!(
    "Examples:
  electop --etcd 127.0.0.1:2379 --scheme etcd-election node --election /e/jobs --id n1
  electop --sql sqlite://e.db --scheme sql-lease node --election jobs --id n1 --create-table

",
    more!()
);

pub(super) const NODE_LONG: &str = concat!(
    "Examples:
  electop --etcd 127.0.0.1:2379 --scheme etcd-election node --election /e/jobs --id node-1
  electop --sql sqlite://e.db --scheme sql-lease node --election jobs --id node-1 --create-table
  electop --zk 127.0.0.1:2181 --prefix /election node --election jobs --id node-1 --ttl 6s
",
    "  electop --redis redis://127.0.0.1:6379 --prefix 'locks:*' node --election locks:jobs --id node-1"
);

pub(super) const DEMO: &str = concat!(
    "Examples:
  electop demo                            on an embedded SQLite file
  electop demo --store etcd --spawn-etcd  on a throwaway local etcd
  electop demo --ttl 2s --renew 500ms     faster failovers

",
    more!()
);

pub(super) const DEMO_LONG: &str = concat!(
    "Examples:
  electop demo                            on an embedded SQLite file
  electop demo --store etcd --spawn-etcd  on a throwaway local etcd
  electop demo --store zookeeper --spawn-zookeeper   on a throwaway local ZooKeeper
",
    "  electop demo --store redis --spawn-redis  on a throwaway local redis-server\n",
    "  electop demo --ttl 2s --renew 500ms     faster failovers"
);

pub(super) const PRESETS: &str = "Examples:
  electop presets                         the presets and the table each reads
  electop --sql postgres://app@db/app --preset shedlock
  electop --etcd db1:2379 --preset patroni
  electop --zk zk1:2181/kafka --preset kafka-zk
  electop --zk zk1:2181 --preset hadoop-ha";

pub(super) const CONTEXTS: &str = "Examples:
  electop --config ~/.config/electop/config.toml contexts
  electop --context prod                  the dashboard on the context prod
  electop --context staging status        ... or once, as a table";

pub(super) const CONFIG: &str = "Examples:
  electop config example > ~/.config/electop/config.toml   then edit it
  electop config example | less           every key, its default and what it does";

pub(super) const COMPLETIONS: &str = "Examples:
  electop completions bash > /etc/bash_completion.d/electop
  electop completions zsh > ~/.zfunc/_electop";
