//! The history database: its schema, a batch written in one transaction, a journal read
//! back, and what is kept (by `DELETE`).

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, SystemTime};

use rusqlite::{Connection, OptionalExtension, params};

use super::{Bound, Entry, Keep, MARKS_KEPT, encode};

/// The schema's version (`PRAGMA user_version`); a database of a later one is read, never
/// written, by this electop.
const SCHEMA: i64 = 1;

const TABLES: &str = "
CREATE TABLE IF NOT EXISTS journals (id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS records (
    id INTEGER PRIMARY KEY,
    journal INTEGER NOT NULL REFERENCES journals (id),
    run INTEGER NOT NULL,
    kind TEXT NOT NULL,
    election TEXT,
    at INTEGER,
    line TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS records_by_journal ON records (journal);
CREATE INDEX IF NOT EXISTS records_by_election ON records (journal, election, at);
CREATE INDEX IF NOT EXISTS records_by_kind ON records (journal, kind, run, at);
CREATE TABLE IF NOT EXISTS imported (file TEXT PRIMARY KEY, records INTEGER NOT NULL);
";

/// Records a journal takes between two trims.
const TRIM_EVERY: usize = 10_000;

/// One record as stored.
#[derive(Debug)]
pub(super) struct Row {
    journal: String,
    run: i64,
    kind: &'static str,
    election: Option<String>,
    at: Option<i64>,
    line: String,
}

impl Row {
    pub(super) fn of(journal: &str, run: i64, e: &Entry) -> Row {
        Row {
            journal: journal.to_string(),
            run,
            kind: kind(e),
            election: e.election().map(str::to_string),
            at: e.at().map(ns),
            line: encode(e),
        }
    }
}

fn kind(e: &Entry) -> &'static str {
    match e {
        Entry::Change { .. } => "change",
        Entry::Seen { .. } => "seen",
        Entry::Watching(_) => "watching",
        Entry::Stopped(_) => "stopped",
        Entry::Alive(_) => "alive",
        Entry::Outage { .. } => "outage",
        Entry::Deposed(_) => "deposed",
    }
}

/// A time as stored: ns since the epoch, so a record's time read from the column is the
/// record's own (a run's last change ends a stretch at that change, not a moment before).
fn ns(t: SystemTime) -> i64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

pub(super) struct Db {
    conn: Connection,
    /// Written by a later electop: read, never written.
    later: bool,
    /// Per journal: records written since its last trim, and the bound it was trimmed to.
    since_trim: HashMap<String, (usize, Option<Bound>)>,
    /// Each journal's key's id (`journals`): a record holds the id, not the key.
    ids: HashMap<String, i64>,
}

impl Db {
    pub(super) fn open(path: &Path) -> rusqlite::Result<Db> {
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let conn = Connection::open(path)?;
        // Another electop writing waits its turn rather than failing.
        conn.busy_timeout(Duration::from_secs(5))?;
        // Large pages: a burst's records and index entries fill few of them, and each page a
        // transaction touches is its own writes to the WAL (a new database only: a page
        // size is fixed once WAL mode is on). The checkpoint after as many bytes as the
        // default's.
        conn.pragma_update(None, "page_size", 65_536)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "wal_autocheckpoint", 64)?;
        // In WAL mode a commit survives the process's kill; only a power cut may take the
        // last ones back.
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        let later = version > SCHEMA;
        if !later {
            conn.execute_batch(TABLES)?;
            conn.pragma_update(None, "user_version", SCHEMA)?;
        }
        Ok(Db {
            conn,
            later,
            since_trim: HashMap::new(),
            ids: HashMap::new(),
        })
    }

    /// The id of the journal `key`, made at its first use.
    fn id(&mut self, key: &str) -> rusqlite::Result<i64> {
        if let Some(id) = self.ids.get(key) {
            return Ok(*id);
        }
        let find = "SELECT id FROM journals WHERE key = ?1";
        let found = self.conn.query_row(find, [key], |r| r.get(0)).optional()?;
        let id = match found {
            Some(id) => id,
            None if self.later => return Ok(-1),
            None => {
                self.conn
                    .execute("INSERT OR IGNORE INTO journals (key) VALUES (?1)", [key])?;
                self.conn.query_row(find, [key], |r| r.get(0))?
            }
        };
        self.ids.insert(key.to_string(), id);
        Ok(id)
    }

    /// Writes `rows` in one transaction. A run's `alive` record replaces its last: only
    /// the newest says how long it watched.
    pub(super) fn write(&mut self, rows: &[Row], keep: Keep) -> rusqlite::Result<()> {
        if self.later {
            return Err(later());
        }
        let ids = rows
            .iter()
            .map(|r| self.id(&r.journal))
            .collect::<rusqlite::Result<Vec<i64>>>()?;
        let tx = self.conn.transaction()?;
        {
            let mut alive = tx.prepare_cached(
                "DELETE FROM records INDEXED BY records_by_kind
                 WHERE journal = ?1 AND kind = 'alive' AND run = ?2",
            )?;
            let mut insert = tx.prepare_cached(
                "INSERT INTO records (journal, run, kind, election, at, line)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?;
            for (r, j) in rows.iter().zip(ids) {
                if r.kind == "alive" {
                    alive.execute(params![j, r.run])?;
                }
                insert.execute(params![j, r.run, r.kind, r.election, r.at, r.line])?;
            }
        }
        tx.commit()?;
        let mut due = Vec::new();
        for r in rows {
            let (n, bound) = self.since_trim.entry(r.journal.clone()).or_default();
            *n += 1;
            if *n >= TRIM_EVERY {
                due.push((r.journal.clone(), bound.unwrap_or(Bound::changes(1, keep))));
            }
        }
        for (journal, bound) in due {
            self.trim(&journal, bound)?;
        }
        Ok(())
    }

    /// The records of `journal` in the order written, with their runs: of the elections
    /// in `only` and the source as a whole, or all of them.
    pub(super) fn read(
        &mut self,
        journal: &str,
        only: &[String],
    ) -> rusqlite::Result<Vec<(i64, Entry)>> {
        let journal = self.id(journal)?;
        let mut out = Vec::new();
        let mut push = |run: i64, line: String| {
            if let Some(e) = super::decode(&line) {
                out.push((run, e));
            }
        };
        if only.is_empty() {
            let mut q = self.conn.prepare_cached(
                "SELECT run, line FROM records INDEXED BY records_by_journal
                     WHERE journal = ?1 ORDER BY id",
            )?;
            let rows = q.query_map(params![journal], |r| Ok((r.get(0)?, r.get(1)?)))?;
            for r in rows {
                let (run, line) = r?;
                push(run, line);
            }
            return Ok(out);
        }
        let names = serde_json::to_string(only).unwrap_or_default();
        // Two searches of the election index, not one scan of the journal (which the
        // planner would choose for the order it gives).
        let mut q = self.conn.prepare_cached(
            "SELECT id, run, line FROM records INDEXED BY records_by_election
               WHERE journal = ?1 AND election IS NULL
             UNION ALL
             SELECT id, run, line FROM records INDEXED BY records_by_election
               WHERE journal = ?1 AND election IN (SELECT value FROM json_each(?2))
             ORDER BY 1",
        )?;
        let rows = q.query_map(params![journal, names], |r| Ok((r.get(1)?, r.get(2)?)))?;
        for r in rows {
            let (run, line) = r?;
            push(run, line);
        }
        Ok(out)
    }

    /// The records of `journal` but its changes and revision times (what says the runs,
    /// outages and deposed stretches), in the order written, with their runs; and in place
    /// of each run's changes its last one's time (the run watched then), as `alive`.
    pub(super) fn read_marks(&mut self, journal: &str) -> rusqlite::Result<Vec<(i64, Entry)>> {
        let journal = self.id(journal)?;
        let mut q = self.conn.prepare_cached(
            "SELECT id, run, line, NULL FROM records INDEXED BY records_by_kind
               WHERE journal = ?1 AND kind IN ('watching', 'alive', 'stopped', 'outage', 'deposed')
             UNION ALL
             SELECT max(id), run, NULL, max(at) FROM records
               WHERE journal = ?1 AND kind = 'change' AND at IS NOT NULL GROUP BY run
             ORDER BY 1",
        )?;
        let rows = q.query_map(params![journal], |r| {
            Ok((
                r.get::<_, i64>(1)?,
                r.get::<_, Option<String>>(2)?,
                r.get::<_, Option<i64>>(3)?,
            ))
        })?;
        let mut out = Vec::new();
        for r in rows {
            let entry = match r? {
                (run, Some(line), _) => super::decode(&line).map(|e| (run, e)),
                (run, None, Some(at)) => {
                    let at = SystemTime::UNIX_EPOCH + Duration::from_nanos(at.max(0) as u64);
                    Some((run, Entry::Alive(at)))
                }
                _ => None,
            };
            out.extend(entry);
        }
        Ok(out)
    }

    /// The elections of `journal` with a change recorded since `since`.
    pub(super) fn elections_since(
        &mut self,
        journal: &str,
        since: SystemTime,
    ) -> rusqlite::Result<Vec<String>> {
        let journal = self.id(journal)?;
        let mut q = self.conn.prepare_cached(
            "SELECT DISTINCT election FROM records INDEXED BY records_by_election
               WHERE journal = ?1 AND election IS NOT NULL AND at >= ?2 AND kind = 'change'",
        )?;
        let rows = q.query_map(params![journal, ns(since)], |r| r.get(0))?;
        rows.collect()
    }

    /// The runs of `journal` but `run` that said they watched (started, or were alive)
    /// since `since`, and did not stop.
    pub(super) fn others_since(
        &mut self,
        journal: &str,
        run: i64,
        since: SystemTime,
    ) -> rusqlite::Result<Vec<i64>> {
        let journal = self.id(journal)?;
        let mut q = self.conn.prepare_cached(
            "SELECT DISTINCT run FROM records r INDEXED BY records_by_kind WHERE journal = ?1
               AND kind IN ('alive', 'watching') AND run NOT IN (0, ?2) AND at >= ?3
               AND NOT EXISTS (SELECT 1 FROM records s WHERE s.journal = ?1
                 AND s.kind = 'stopped' AND s.run = r.run)",
        )?;
        let rows = q.query_map(params![journal, run, ns(since)], |r| r.get(0))?;
        rows.collect()
    }

    /// Keeps `journal` within `bound`: nothing older than the retention (a change with no
    /// time stays), of each run the newest changes of each election, revision times,
    /// outages and deposed stretches; then the whole database within the size bound, its
    /// oldest records going first.
    pub(super) fn trim(&mut self, journal: &str, bound: Bound) -> rusqlite::Result<()> {
        if self.later {
            return Ok(());
        }
        self.since_trim
            .insert(journal.to_string(), (0, Some(bound)));
        let journal = self.id(journal)?;
        let tx = self.conn.transaction()?;
        if let Some(cutoff) = bound.keep.cutoff(SystemTime::now()) {
            tx.execute(
                "DELETE FROM records WHERE journal = ?1 AND at < ?2",
                params![journal, ns(cutoff)],
            )?;
        }
        let newest = |kind: &str, by: &str, n: usize| {
            tx.execute(
                &format!(
                    "DELETE FROM records WHERE id IN (SELECT id FROM (SELECT id, row_number()
                       OVER (PARTITION BY run{by} ORDER BY id DESC) AS n FROM records
                       WHERE journal = ?1 AND kind = ?2) WHERE n > ?3)"
                ),
                params![journal, kind, n as i64],
            )
        };
        newest("change", ", election", bound.per_election)?;
        newest("seen", "", bound.seen)?;
        newest("outage", "", MARKS_KEPT)?;
        newest("deposed", ", election", MARKS_KEPT)?;
        over_size(&tx, bound.keep.max_bytes)?;
        tx.commit()
    }
}

/// Past `max_bytes` (the pages in use), the oldest half of the records goes.
fn over_size(tx: &rusqlite::Transaction<'_>, max_bytes: u64) -> rusqlite::Result<()> {
    let used: i64 = tx.query_row(
        "SELECT (page_count - freelist_count) * page_size
         FROM pragma_page_count, pragma_freelist_count, pragma_page_size",
        [],
        |r| r.get(0),
    )?;
    if (used as u64) <= max_bytes {
        return Ok(());
    }
    tx.execute(
        "DELETE FROM records WHERE id <= (SELECT id FROM records ORDER BY id
           LIMIT 1 OFFSET (SELECT count(*) / 2 FROM records))",
        [],
    )?;
    Ok(())
}

fn later() -> rusqlite::Error {
    rusqlite::Error::InvalidParameterName(
        "written by a later electop: this one reads it and leaves it as it is".into(),
    )
}

/// Whether `file` was imported before (or this electop never writes the database).
pub(super) fn imported(db: &Db, file: &str) -> rusqlite::Result<bool> {
    if db.later {
        return Ok(true);
    }
    let q = "SELECT EXISTS (SELECT 1 FROM imported WHERE file = ?1)";
    db.conn.query_row(q, [file], |r| r.get(0))
}

/// Inserts an earlier release's records of `journal` as run 0, and notes `file` imported,
/// in one transaction: false when it was imported before.
pub(super) fn import(
    db: &mut Db,
    file: &str,
    journal: &str,
    entries: &[Entry],
) -> rusqlite::Result<bool> {
    if db.later {
        return Ok(false);
    }
    let tx = db.conn.transaction()?;
    let done = tx.execute(
        "INSERT OR IGNORE INTO imported (file, records) VALUES (?1, ?2)",
        params![file, entries.len() as i64],
    )?;
    if done == 0 {
        return Ok(false);
    }
    tx.execute(
        "INSERT OR IGNORE INTO journals (key) VALUES (?1)",
        [journal],
    )?;
    let id: i64 = tx.query_row("SELECT id FROM journals WHERE key = ?1", [journal], |r| {
        r.get(0)
    })?;
    {
        let mut insert = tx.prepare_cached(
            "INSERT INTO records (journal, run, kind, election, at, line)
             VALUES (?1, 0, ?2, ?3, ?4, ?5)",
        )?;
        for e in entries {
            let r = Row::of(journal, 0, e);
            insert.execute(params![id, r.kind, r.election, r.at, r.line])?;
        }
    }
    tx.commit()?;
    Ok(true)
}
