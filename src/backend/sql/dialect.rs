//! Every difference between PostgreSQL, MySQL/MariaDB and SQLite that electop relies on, in
//! one place: identifier quoting, the clock, time arithmetic, text casts, schema lookups and
//! the participants' statements. Identifiers are validated before they are quoted, and only
//! validated identifiers and numbers are ever pasted into SQL (values are bound).

pub(crate) use crate::config::{Dialect, Ident};

impl Dialect {
    pub fn quote(self, id: &Ident) -> String {
        let q = match self {
            Dialect::MySql => '`',
            _ => '"',
        };
        id.parts()
            .iter()
            .map(|p| format!("{q}{p}{q}"))
            .collect::<Vec<_>>()
            .join(".")
    }

    /// Run on every new connection. sqlx puts MySQL sessions in UTC; participants write
    /// DATETIMEs with `NOW()` in the server's zone, so electop's `NOW()` must be in it too.
    pub fn session_setup(self) -> Option<&'static str> {
        match self {
            Dialect::MySql => Some("SET time_zone = @@global.time_zone"),
            _ => None,
        }
    }

    /// The i-th (1-based) bind placeholder.
    pub fn param(self, i: usize) -> String {
        match self {
            Dialect::Postgres => format!("${i}"),
            _ => "?".to_string(),
        }
    }

    /// The database's clock as milliseconds since the Unix epoch (BIGINT).
    pub fn now_ms(self) -> &'static str {
        match self {
            Dialect::Postgres => "CAST(EXTRACT(EPOCH FROM now()) * 1000 AS BIGINT)",
            Dialect::MySql => "CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)",
            Dialect::Sqlite => "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)",
        }
    }

    /// Milliseconds from the database's now until the timestamp `col` (negative when past),
    /// computed by the database so only its clock counts. SQLite timestamps may be text
    /// (`datetime('now')`) or Unix seconds.
    ///
    /// A PostgreSQL `timestamp without time zone` is read as UTC, the way gabihodoroaga/leaderelection writes it
    /// (`NOW() at time zone 'utc'`), so the server's and session's time zones do not matter.
    pub fn ms_until(self, col: &str, col_type: &str) -> String {
        match self {
            Dialect::Postgres if col_type.contains("without time zone") => format!(
                "CAST(EXTRACT(EPOCH FROM ({col} - (now() AT TIME ZONE 'UTC'))) * 1000 AS BIGINT)"
            ),
            Dialect::Postgres => {
                format!("CAST(EXTRACT(EPOCH FROM ({col} - now())) * 1000 AS BIGINT)")
            }
            Dialect::MySql => format!("TIMESTAMPDIFF(MICROSECOND, NOW(6), {col}) DIV 1000"),
            Dialect::Sqlite => format!(
                "CAST((CASE WHEN typeof({col}) IN ('integer', 'real') THEN {col} / 86400.0 + 2440587.5 \
                 ELSE julianday({col}) END - julianday('now')) * 86400000 AS INTEGER)"
            ),
        }
    }

    /// Whether a poll reads the table as one JSON text instead of a row per election.
    /// SQLite's driver hands each row from its worker thread and converts it for the `Any`
    /// driver, which costs many times SQLite's own read; one value costs one. PostgreSQL's
    /// rows come in batches off a socket, but each is still converted for the `Any` driver
    /// (its columns, its values, an allocation each): over many rows that conversion was
    /// most of an idle dashboard's CPU (docs/PERFORMANCE.md). MariaDB caps `JSON_ARRAYAGG`
    /// at `group_concat_max_len`, so MySQL stays a row per election.
    pub fn polls_as_json(self) -> bool {
        matches!(self, Dialect::Sqlite | Dialect::Postgres)
    }

    /// The poll of `table`: the clock (`now_ms`) and each row's `[key, holder, ms left,
    /// deadline text]`; as one JSON row where [`Dialect::polls_as_json`], else a row with the
    /// clock alone followed by a row per election.
    ///
    /// A JSON poll `checking` is also a change check, binding the last poll's change mark and the
    /// database time at which a leader it read runs out (NULL for none): its row is the
    /// clock, the mark now, and the rows only when the mark moved or that time came, NULL
    /// otherwise. SQLite's mark is `PRAGMA data_version` (moves when another connection
    /// commits; only comparable on one connection), PostgreSQL's an md5 of every row's key,
    /// holder and deadline text in order, computed in the server (not the time left: it moves each
    /// call). The rows are a subquery the server evaluates only when the mark says to. One
    /// not checking (`status`, which polls once) has a NULL mark and the rows. MySQL's
    /// poll, a row per election, checks with a header row holding the clock and the mark
    /// (the row count and a sum of each row's hash), followed by the rows only when the
    /// mark moved or that time came.
    pub fn poll_query(
        self,
        [key, holder, remaining, stamp]: [&str; 4],
        table: &str,
        checking: bool,
    ) -> String {
        let now = self.now_ms();
        let (mark, at) = (self.param(1), self.param(2));
        if self == Dialect::Postgres && !checking {
            format!(
                "SELECT {now}, CAST(NULL AS TEXT), CAST(COALESCE(json_agg(json_build_array({key}, {holder}, {remaining}, {stamp})), '[]') AS TEXT) FROM {table}"
            )
        } else if self == Dialect::Sqlite && !checking {
            format!(
                "SELECT {now}, NULL, json_group_array(json_array({key}, {holder}, {remaining}, {stamp})) FROM {table}"
            )
        } else if self == Dialect::Postgres {
            // Each value with its length before it, NULL as `-`: two different tables never
            // make the same text. Not JSON: building it cost far more than the table's scan.
            let field = |c: &str| format!("COALESCE(length({c}) || ':' || {c}, '-')");
            let row = format!("concat({}, {}, {})", field("k"), field("h"), field("s"));
            let c = "COLLATE \"C\"";
            format!(
                "SELECT d.now_ms, d.mark, CASE WHEN d.mark IS DISTINCT FROM {mark} OR d.now_ms >= {at} THEN \
                 (SELECT CAST(COALESCE(json_agg(json_build_array({key}, {holder}, {remaining}, {stamp})), '[]') AS TEXT) FROM {table}) END \
                 FROM (SELECT {now} AS now_ms, md5(COALESCE(string_agg({row}, ',' ORDER BY k {c}, h {c}, s {c}), '')) AS mark \
                 FROM (SELECT {key} AS k, {holder} AS h, {stamp} AS s FROM {table}) AS r) AS d"
            )
        } else if self.polls_as_json() {
            format!(
                "SELECT {now}, CAST(d.data_version AS TEXT), CASE WHEN CAST(d.data_version AS TEXT) IS NOT {mark} OR {now} >= {at} THEN \
                 (SELECT json_group_array(json_array({key}, {holder}, {remaining}, {stamp})) FROM {table}) END \
                 FROM pragma_data_version() AS d"
            )
        } else if checking {
            // MariaDB cuts a text aggregate at `group_concat_max_len`, so the mark is the
            // row count and a sum of each row's hash (the first 60 bits of its md5), which
            // no length caps. The header row carries it where the holder goes.
            let field = |c: &str| format!("COALESCE(CONCAT(LENGTH({c}), ':', {c}), '-')");
            let row = format!("CONCAT({}, {}, {})", field("k"), field("h"), field("s"));
            let hash = format!("CAST(CONV(LEFT(MD5({row}), 15), 16, 10) AS UNSIGNED)");
            // Names no table of the participants' is likely to use: the rows are read
            // joined with it.
            let d = "electop_poll";
            format!(
                "WITH {d} AS (SELECT {now} AS {d}_now, CONCAT(COUNT(*), ':', COALESCE(SUM({hash}), 0)) AS {d}_mark \
                 FROM (SELECT {key} AS k, {holder} AS h, {stamp} AS s FROM {table}) AS r) \
                 SELECT {d}_now, NULL, {d}_mark, NULL, NULL FROM {d} UNION ALL \
                 SELECT {now}, {key}, {holder}, {remaining}, {stamp} FROM {table}, {d} \
                 WHERE NOT ({d}_mark <=> {mark}) OR {d}_now >= {at}"
            )
        } else {
            format!(
                "SELECT {now}, NULL, NULL, NULL, NULL UNION ALL SELECT {now}, {key}, {holder}, {remaining}, {stamp} FROM {table}"
            )
        }
    }

    pub fn as_text(self, col: &str) -> String {
        match self {
            Dialect::MySql => format!("CAST({col} AS CHAR)"),
            _ => format!("CAST({col} AS TEXT)"),
        }
    }

    /// The database's now plus `ms` milliseconds, as a value for a deadline column of type
    /// `col_type`, written the way the participants write it (UTC for a PostgreSQL timestamp
    /// without zone; Unix seconds for a SQLite column that holds numbers).
    pub fn now_plus_ms(self, col_type: &str, sqlite_numeric: bool, ms: i64) -> String {
        match self {
            Dialect::Postgres if col_type.contains("without time zone") => {
                format!("((now() AT TIME ZONE 'UTC') + interval '{ms} milliseconds')")
            }
            Dialect::Postgres => format!("(now() + interval '{ms} milliseconds')"),
            Dialect::MySql => format!("(NOW(3) + INTERVAL {} MICROSECOND)", ms * 1000),
            Dialect::Sqlite if sqlite_numeric => {
                format!(
                    "((julianday('now') - 2440587.5) * 86400.0 + {:.3})",
                    ms as f64 / 1000.0
                )
            }
            Dialect::Sqlite => format!(
                "strftime('%Y-%m-%d %H:%M:%f', 'now', '{:+.3} seconds')",
                ms as f64 / 1000.0
            ),
        }
    }

    /// gabihodoroaga/leaderelection's acquire-or-renew for `sql-lease`, in this dialect: binds key then id; the
    /// row is taken when free (term over) or already ours. Read the row back to know who
    /// holds it (MySQL reports matched rows, not changed ones).
    pub fn lease_upsert(
        self,
        t: &str,
        k: &str,
        l: &str,
        v: &str,
        col_type: &str,
        term_ms: i64,
    ) -> String {
        let until = self.now_plus_ms(col_type, false, term_ms);
        let now = self.now_plus_ms(col_type, false, 0);
        match self {
            Dialect::Postgres => format!(
                "INSERT INTO {t} AS t ({k}, {l}, {v}) VALUES ($1, $2, {until}) ON CONFLICT ({k}) DO UPDATE \
                 SET {l} = EXCLUDED.{l}, {v} = EXCLUDED.{v} WHERE t.{v} < {now} OR t.{l} = EXCLUDED.{l}"
            ),
            Dialect::MySql => format!(
                "INSERT INTO {t} ({k}, {l}, {v}) VALUES (?, ?, {until}) ON DUPLICATE KEY UPDATE \
                 {l} = IF({v} < {now} OR {l} = VALUES({l}), VALUES({l}), {l}), \
                 {v} = IF({l} = VALUES({l}), VALUES({v}), {v})"
            ),
            Dialect::Sqlite => format!(
                "INSERT INTO {t} ({k}, {l}, {v}) VALUES (?, ?, {until}) ON CONFLICT ({k}) DO UPDATE \
                 SET {l} = excluded.{l}, {v} = excluded.{v} WHERE {t}.{v} < {now} OR {t}.{l} = excluded.{l}"
            ),
        }
    }

    /// The MySQL election article's periodic insert-on-duplicate for `sql-heartbeat`, in this dialect: binds
    /// anchor then id. (PostgreSQL and SQLite evaluate SET against the old row, MySQL left to
    /// right, hence the repeated takeover test.)
    pub fn heartbeat_upsert(
        self,
        t: &str,
        k: &str,
        l: &str,
        v: &str,
        col_type: &str,
        timeout_ms: i64,
    ) -> String {
        let now = self.now_plus_ms(col_type, false, 0);
        let dead = self.now_plus_ms(col_type, false, -timeout_ms);
        match self {
            Dialect::MySql => format!(
                "INSERT IGNORE INTO {t} ({k}, {l}, {v}) VALUES (?, ?, {now}) ON DUPLICATE KEY UPDATE \
                 {l} = IF({v} < {dead}, VALUES({l}), {l}), {v} = IF({l} = VALUES({l}), VALUES({v}), {v})"
            ),
            Dialect::Postgres => format!(
                "INSERT INTO {t} AS t ({k}, {l}, {v}) VALUES ($1, $2, {now}) ON CONFLICT ({k}) DO UPDATE SET \
                 {l} = CASE WHEN t.{v} < {dead} THEN EXCLUDED.{l} ELSE t.{l} END, \
                 {v} = CASE WHEN t.{l} = EXCLUDED.{l} OR t.{v} < {dead} THEN EXCLUDED.{v} ELSE t.{v} END"
            ),
            Dialect::Sqlite => format!(
                "INSERT INTO {t} ({k}, {l}, {v}) VALUES (?, ?, {now}) ON CONFLICT ({k}) DO UPDATE SET \
                 {l} = CASE WHEN {t}.{v} < {dead} THEN excluded.{l} ELSE {t}.{l} END, \
                 {v} = CASE WHEN {t}.{l} = excluded.{l} OR {t}.{v} < {dead} THEN excluded.{v} ELSE {t}.{v} END"
            ),
        }
    }

    /// A table for `scheme` as its article defines it (gabihodoroaga/leaderelection's `leaderlock` with a UTC
    /// timestamp, the MySQL election article's `service_election`).
    pub fn create_table(self, t: &str, k: &str, l: &str, v: &str, heartbeat: bool) -> String {
        let key = if heartbeat {
            match self {
                Dialect::MySql => "tinyint(3) unsigned",
                _ => "integer",
            }
        } else {
            match self {
                Dialect::MySql => "varchar(128)",
                _ => "text",
            }
        };
        let stamp = match (self, heartbeat) {
            (Dialect::Postgres, false) => "timestamp",
            (Dialect::Postgres, true) => "timestamptz",
            (Dialect::MySql, false) => "datetime(3)",
            (Dialect::MySql, true) => "timestamp(3)",
            (Dialect::Sqlite, _) => "TIMESTAMP",
        };
        let id = if self == Dialect::MySql {
            "varchar(128)"
        } else {
            "text"
        };
        format!(
            "CREATE TABLE IF NOT EXISTS {t} ({k} {key} NOT NULL PRIMARY KEY, {l} {id} NOT NULL, {v} {stamp} NOT NULL)"
        )
    }

    /// A query listing `(column name, type)` of `table`, readable without privileges on it.
    /// Empty when the table does not exist (or, on MySQL, is not visible to this user).
    pub fn columns_query(self, table: &Ident) -> String {
        // Ident parts are validated [A-Za-z0-9_], so they are safe inside a string literal.
        match self {
            Dialect::Postgres => {
                let reg = match table.schema() {
                    Some(s) => format!("{s}.{}", table.name()),
                    None => table.name().to_string(),
                };
                format!(
                    "SELECT CAST(attname AS TEXT), CAST(format_type(atttypid, atttypmod) AS TEXT) \
                     FROM pg_attribute WHERE attrelid = to_regclass('{reg}') AND attnum > 0 \
                     AND NOT attisdropped ORDER BY attnum"
                )
            }
            Dialect::MySql => {
                let schema = match table.schema() {
                    Some(s) => format!("'{s}'"),
                    None => "DATABASE()".to_string(),
                };
                format!(
                    "SELECT CAST(COLUMN_NAME AS CHAR), CAST(DATA_TYPE AS CHAR) FROM information_schema.COLUMNS \
                     WHERE TABLE_SCHEMA = {schema} AND TABLE_NAME = '{}' ORDER BY ORDINAL_POSITION",
                    table.name()
                )
            }
            Dialect::Sqlite => format!(
                "SELECT CAST(name AS TEXT), CAST(type AS TEXT) FROM pragma_table_info('{}')",
                table.name()
            ),
        }
    }

    /// Does a declared column type hold a point in time?
    pub fn is_timestamp_type(self, ty: &str) -> bool {
        let t = ty.to_ascii_lowercase();
        match self {
            Dialect::Postgres => t.starts_with("timestamp"),
            Dialect::MySql => t == "datetime" || t == "timestamp",
            // SQLite is dynamically typed: text dates and Unix seconds both work.
            Dialect::Sqlite => {
                t.is_empty()
                    || ["date", "time", "text", "char", "int", "real", "num"]
                        .iter()
                        .any(|k| t.contains(k))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_validated_and_quoted_per_dialect() {
        let t = Ident::table("public.leaderlock").expect("valid");
        assert_eq!(Dialect::Postgres.quote(&t), "\"public\".\"leaderlock\"");
        assert_eq!(Dialect::MySql.quote(&t), "`public`.`leaderlock`");
        assert_eq!(t.schema(), Some("public"));
        for bad in [
            "",
            "x;drop table y",
            "a\"b",
            "1abc",
            "a.b.c",
            "naïve",
            &"x".repeat(64),
        ] {
            assert!(Ident::table(bad).is_err(), "{bad:?} must be refused");
        }
        let e = Ident::column("x y").expect_err("space");
        assert!(
            e.to_string().contains("`x y` is not a usable SQL name"),
            "{e}"
        );
    }

    #[test]
    fn urls_pick_the_dialect() {
        assert_eq!(
            Dialect::from_url("postgres://u@h/db"),
            Some(Dialect::Postgres)
        );
        assert_eq!(Dialect::from_url("mysql://u@h/db"), Some(Dialect::MySql));
        assert_eq!(
            Dialect::from_url("sqlite:///tmp/x.db"),
            Some(Dialect::Sqlite)
        );
        assert_eq!(Dialect::from_url("redis://h"), None);
    }

    #[test]
    fn sqlite_and_postgres_are_polled_as_one_json_row_mysql_a_row_per_election() {
        let cols = ["k", "h", "r", "s"];
        let q = Dialect::Sqlite.poll_query(cols, "t", true);
        assert!(
            q.contains("(SELECT json_group_array(json_array(k, h, r, s)) FROM t) END"),
            "{q}"
        );
        assert!(
            q.contains("IS NOT ? OR") && q.contains("FROM pragma_data_version()"),
            "{q}"
        );
        assert!(!q.contains("UNION"), "one row: {q}");
        let q = Dialect::Postgres.poll_query(cols, "t", true);
        assert!(
            q.contains(
                "CAST(COALESCE(json_agg(json_build_array(k, h, r, s)), '[]') AS TEXT) FROM t) END"
            ),
            "{q}"
        );
        assert!(
            q.contains("(SELECT k AS k, h AS h, s AS s FROM t) AS r")
                && q.contains("IS DISTINCT FROM $1 OR d.now_ms >= $2"),
            "the mark leaves out the time left: {q}"
        );
        assert!(!q.contains("UNION"), "one row: {q}");
        let q = Dialect::MySql.poll_query(cols, "t", false);
        assert!(
            q.contains("UNION ALL SELECT") && q.ends_with("k, h, r, s FROM t"),
            "{q}"
        );
        let q = Dialect::MySql.poll_query(cols, "t", true);
        assert!(
            q.contains("(SELECT k AS k, h AS h, s AS s FROM t) AS r")
                && q.ends_with(
                    "FROM t, electop_poll WHERE NOT (electop_poll_mark <=> ?) OR electop_poll_now >= ?"
                ),
            "the mark leaves out the time left, the rows only when it moved: {q}"
        );
        assert!(!Dialect::MySql.polls_as_json());
        for d in [Dialect::Sqlite, Dialect::Postgres] {
            let q = d.poll_query(cols, "t", false);
            assert!(!q.contains('?') && !q.contains('$'), "no mark: {q}");
            assert!(
                q.contains("_array(k, h, r, s))") && q.ends_with("FROM t"),
                "{q}"
            );
        }
    }
}
