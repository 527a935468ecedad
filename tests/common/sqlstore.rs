//! One face for the three SQL stores in tests: a throwaway SQLite file, PostgreSQL or
//! MariaDB; tables as the articles define them; and participants that run the articles' own
//! statements (gabihodoroaga/leaderelection's upsert, the MySQL election article's insert-on-duplicate) or their equivalent in
//! each dialect. Statements go through each database's own CLI, never through electop.

use std::path::PathBuf;
use std::process::Command;

use super::mariadb::MariaDb;
use super::postgres::Postgres;

pub enum Store {
    Sqlite {
        _dir: super::scratch::Scratch,
        path: PathBuf,
    },
    Pg(Postgres),
    My(MariaDb),
}

impl Store {
    pub fn sqlite() -> Store {
        let dir = super::scratch::tempdir();
        let path = dir.path().join("elections.db");
        let s = Store::Sqlite { _dir: dir, path };
        s.exec("PRAGMA journal_mode = WAL;");
        s
    }

    pub fn postgres() -> Store {
        Store::Pg(Postgres::start())
    }

    pub fn mariadb() -> Store {
        Store::My(MariaDb::start())
    }

    pub fn url(&self) -> String {
        match self {
            Store::Sqlite { path, .. } => format!("sqlite://{}", path.display()),
            Store::Pg(p) => p.url(),
            Store::My(m) => m.url(),
        }
    }

    pub fn try_exec(&self, sql: &str) -> Result<String, String> {
        match self {
            Store::Sqlite { path, .. } => {
                // Wait out another connection's write (electop's poll or action) as the
                // participants do, rather than fail at once with "database is locked".
                let out = Command::new("sqlite3")
                    .args(["-bail", "-cmd", ".timeout 5000"])
                    .arg(path)
                    .arg(sql)
                    .output()
                    .expect("sqlite3");
                if out.status.success() {
                    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
                } else {
                    Err(String::from_utf8_lossy(&out.stderr).into_owned())
                }
            }
            Store::Pg(p) => p.try_psql(sql),
            Store::My(m) => m.try_sql(sql),
        }
    }

    /// Runs SQL as the administrator; panics on failure.
    pub fn exec(&self, sql: &str) -> String {
        self.try_exec(sql).unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    /// Lets the test user (the one in `url()`) use `table`.
    pub fn grant(&self, table: &str) {
        match self {
            Store::Sqlite { .. } => {}
            Store::Pg(_) => {
                self.exec(&format!("GRANT ALL ON {table} TO tester"));
            }
            Store::My(_) => {}
        }
    }

    /// gabihodoroaga/leaderelection's `leaderlock`: PostgreSQL as in the article (a UTC `timestamp`).
    pub fn create_lease_table(&self, table: &str) {
        self.create_lease_table_private(table);
        self.grant(table);
    }

    fn revoke(&self, table: &str) {
        // The harness grants new PostgreSQL tables to the test user by default.
        if let Store::Pg(_) = self {
            self.exec(&format!("REVOKE ALL ON {table} FROM tester"));
        }
    }

    /// The same table, which the test user may not read (MariaDB: give it as
    /// `other.NAME`, in a database the user has no rights on).
    pub fn create_lease_table_private(&self, table: &str) {
        if let (Store::My(_), Some((db, _))) = (self, table.split_once('.')) {
            self.exec(&format!("CREATE DATABASE IF NOT EXISTS {db}"));
        }
        let sql = match self {
            Store::Pg(_) => format!(
                "CREATE TABLE {table} (key text PRIMARY KEY, leader_id text NOT NULL, valid_until timestamp NOT NULL)"
            ),
            Store::My(_) => format!(
                "CREATE TABLE {table} (`key` varchar(128) PRIMARY KEY, leader_id varchar(128) NOT NULL, valid_until datetime(3) NOT NULL)"
            ),
            Store::Sqlite { .. } => format!(
                "CREATE TABLE {table} (key TEXT PRIMARY KEY, leader_id TEXT NOT NULL, valid_until TIMESTAMP NOT NULL)"
            ),
        };
        self.exec(&sql);
        self.revoke(table);
    }

    /// the MySQL election article's `service_election`: MySQL as in the article.
    pub fn create_heartbeat_table(&self, table: &str) {
        let sql = match self {
            Store::My(_) => format!(
                "CREATE TABLE {table} ( anchor tinyint(3) unsigned NOT NULL, service_id varchar(128) NOT NULL, \
                 last_seen_active timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP, PRIMARY KEY (anchor) ) ENGINE=InnoDB"
            ),
            Store::Pg(_) => format!(
                "CREATE TABLE {table} (anchor int PRIMARY KEY, service_id text NOT NULL, last_seen_active timestamptz NOT NULL)"
            ),
            Store::Sqlite { .. } => format!(
                "CREATE TABLE {table} (anchor INTEGER PRIMARY KEY, service_id TEXT NOT NULL, last_seen_active TIMESTAMP NOT NULL)"
            ),
        };
        self.exec(&sql);
        self.grant(table);
    }

    /// One attempt of gabihodoroaga/leaderelection's leader: take or renew `key` for `term_s` seconds. True when
    /// `id` holds it afterwards (read back: MySQL's affected rows cannot tell).
    pub fn lease_attempt(&self, table: &str, key: &str, id: &str, term_s: u32) -> bool {
        let sql = match self {
            Store::Pg(_) => format!(
                "INSERT INTO {table} as t (key, leader_id, valid_until) VALUES ('{key}', '{id}', NOW() at time zone 'utc' + {term_s} * INTERVAL '1 seconds' ) \
                 ON CONFLICT (key) DO UPDATE SET leader_id = '{id}', valid_until = NOW() at time zone 'utc' + {term_s} * INTERVAL '1 seconds' \
                 WHERE t.valid_until < NOW() at time zone 'utc' OR t.leader_id = '{id}'"
            ),
            Store::My(_) => format!(
                "INSERT INTO {table} (`key`, leader_id, valid_until) VALUES ('{key}', '{id}', NOW(3) + INTERVAL {term_s} SECOND) \
                 ON DUPLICATE KEY UPDATE leader_id = IF(valid_until < NOW(3) OR leader_id = VALUES(leader_id), VALUES(leader_id), leader_id), \
                 valid_until = IF(leader_id = VALUES(leader_id), VALUES(valid_until), valid_until)"
            ),
            Store::Sqlite { .. } => format!(
                "INSERT INTO {table} (key, leader_id, valid_until) VALUES ('{key}', '{id}', strftime('%Y-%m-%d %H:%M:%f', 'now', '+{term_s} seconds')) \
                 ON CONFLICT(key) DO UPDATE SET leader_id = excluded.leader_id, valid_until = excluded.valid_until \
                 WHERE {table}.valid_until < strftime('%Y-%m-%d %H:%M:%f', 'now') OR {table}.leader_id = excluded.leader_id"
            ),
        };
        self.exec(&sql);
        let key_col = if matches!(self, Store::My(_)) {
            "`key`"
        } else {
            "key"
        };
        self.exec(&format!(
            "SELECT leader_id FROM {table} WHERE {key_col} = '{key}'"
        )) == id
    }

    /// One beat of the MySQL election article's service: claim or keep `anchor` with a `timeout_s` timeout.
    /// True when `id` holds it afterwards.
    pub fn heartbeat(&self, table: &str, anchor: u32, id: &str, timeout_s: u32) -> bool {
        let sql = match self {
            Store::My(_) => format!(
                "insert ignore into {table} ( anchor, service_id, last_seen_active ) values ( {anchor}, '{id}', now() ) \
                 on duplicate key update service_id = if(last_seen_active < now() - interval {timeout_s} second, values(service_id), service_id), \
                 last_seen_active = if(service_id = values(service_id), values(last_seen_active), last_seen_active)"
            ),
            // PostgreSQL and SQLite evaluate SET against the old row, unlike MySQL's left to
            // right: the takeover condition is repeated for the timestamp.
            Store::Pg(_) => format!(
                "INSERT INTO {table} AS t (anchor, service_id, last_seen_active) VALUES ({anchor}, '{id}', now()) \
                 ON CONFLICT (anchor) DO UPDATE SET \
                 service_id = CASE WHEN t.last_seen_active < now() - interval '{timeout_s} seconds' THEN EXCLUDED.service_id ELSE t.service_id END, \
                 last_seen_active = CASE WHEN t.service_id = EXCLUDED.service_id OR t.last_seen_active < now() - interval '{timeout_s} seconds' \
                 THEN EXCLUDED.last_seen_active ELSE t.last_seen_active END"
            ),
            Store::Sqlite { .. } => format!(
                "INSERT INTO {table} (anchor, service_id, last_seen_active) VALUES ({anchor}, '{id}', strftime('%Y-%m-%d %H:%M:%f', 'now')) \
                 ON CONFLICT(anchor) DO UPDATE SET \
                 service_id = CASE WHEN {table}.last_seen_active < strftime('%Y-%m-%d %H:%M:%f', 'now', '-{timeout_s} seconds') THEN excluded.service_id ELSE {table}.service_id END, \
                 last_seen_active = CASE WHEN {table}.service_id = excluded.service_id OR {table}.last_seen_active < strftime('%Y-%m-%d %H:%M:%f', 'now', '-{timeout_s} seconds') \
                 THEN excluded.last_seen_active ELSE {table}.last_seen_active END"
            ),
        };
        self.exec(&sql);
        self.exec(&format!(
            "SELECT service_id FROM {table} WHERE anchor = {anchor}"
        )) == id
    }

    pub fn stop(&mut self) {
        match self {
            Store::Sqlite { .. } => {}
            Store::Pg(p) => p.stop(),
            Store::My(m) => m.stop(),
        }
    }

    pub fn restart(&mut self) {
        match self {
            Store::Sqlite { .. } => {}
            Store::Pg(p) => p.restart(),
            Store::My(m) => m.restart(),
        }
    }

    /// SIGSTOP (`true`) or SIGCONT (`false`) the server: PostgreSQL's postmaster and every
    /// backend it forked (an open connection is served by its own process), MariaDB's one
    /// process.
    pub fn freeze(&self, stop: bool) {
        let pid = match self {
            Store::Sqlite { .. } => return,
            Store::Pg(p) => p.pid(),
            Store::My(m) => m.pid(),
        };
        let Some(pid) = pid else { return };
        let children = std::process::Command::new("pgrep")
            .args(["-P", &pid.to_string()])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        let sig = if stop { "-STOP" } else { "-CONT" };
        let mut pids: Vec<String> = children.split_whitespace().map(str::to_string).collect();
        pids.push(pid.to_string());
        let status = std::process::Command::new("kill")
            .arg(sig)
            .args(&pids)
            .status()
            .expect("kill");
        assert!(status.success(), "kill {sig} {pids:?}");
    }
}
