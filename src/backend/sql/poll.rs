//! One poll: the database's clock and every election row, in one query; no rows at all when
//! the table's change mark says they are as last read. Rows the tracker finds unchanged are
//! matched on the text as read and go no further; only the others are copied into [`Row`]s.

use std::borrow::Cow;
use std::time::{Duration, Instant, SystemTime};

use sqlx::any::AnyRow;
use sqlx::{AnyConnection, AssertSqlSafe, Row as _};

use super::SqlSettings;
use super::errors::SqlError;
use super::tracker::{Poll, Row, SqlTracker};

/// What one poll found.
pub(super) enum Polled {
    /// The table's change mark as the last poll read left it, and no leader's deadline
    /// reached: the same rows, so none were sent or read.
    Unchanged,
    Read(Poll),
}

/// How long before a leader's deadline the rows are read again: the deadline and the clock
/// it is compared with are each rounded to the millisecond by the database.
const ROUNDING_MS: i64 = 2;

/// One poll on `conn`. When it checks for change, `mark` holds the change mark the last
/// poll read on this same connection (None: read the rows), updated when rows are read.
pub(super) async fn poll_once(
    s: &SqlSettings,
    conn: &mut AnyConnection,
    (query, keys): (&str, &[String]),
    timeout: Duration,
    tracker: &mut SqlTracker,
    mark: Option<&mut Option<String>>,
) -> Result<Polled, SqlError> {
    // The keys of a keyed poll (`SqlSettings::keyed_poll_query`), bound in order; a poll
    // checking for change binds the mark and the deadline instead (it has no keys).
    let mut q = keys
        .iter()
        .fold(sqlx::query(AssertSqlSafe(query.to_string())), |q, k| {
            q.bind(k.clone())
        });
    if let Some(mark) = mark.as_deref() {
        let runs_out = tracker.runs_out_ms().map(|d| d - ROUNDING_MS);
        q = q.bind(mark.clone()).bind(runs_out);
    }
    let rows = match tokio::time::timeout(timeout, q.fetch_all(conn)).await {
        Ok(r) => r.map_err(|e| SqlError::from_sqlx(&e, s, &s.url.0))?,
        Err(_) => {
            return Err(SqlError::PollTimeout {
                place: s.url.redacted(),
                timeout,
            });
        }
    };
    let at = SystemTime::now();
    let now = Instant::now();
    let unreadable = |why: String| SqlError::PollFailed {
        place: s.url.redacted(),
        why,
    };
    let read = if s.dialect.polls_as_json() {
        from_json(&rows, tracker, mark).map_err(unreadable)?
    } else {
        from_rows(&rows, tracker, mark).map_err(|e| unreadable(e.to_string()))?
    };
    let Some((db_now_ms, rows)) = read else {
        return Ok(Polled::Unchanged);
    };
    Ok(Polled::Read(Poll {
        db_now_ms,
        rows,
        at,
        now,
    }))
}

/// One row per election, after a row with the database's clock (and, checking for change,
/// the table's mark where a holder goes). None when the mark is still `mark` and no row came:
/// the table is as last read.
fn from_rows(
    rows: &[AnyRow],
    tracker: &mut SqlTracker,
    mark: Option<&mut Option<String>>,
) -> Result<Option<(i64, Vec<Row>)>, sqlx::Error> {
    let now_mark = match (&mark, rows.first()) {
        (Some(_), Some(header)) => header.try_get::<Option<String>, _>(2)?,
        _ => None,
    };
    if rows.len() == 1
        && mark
            .as_deref()
            .is_some_and(|m| m.is_some() && *m == now_mark)
    {
        return Ok(None);
    }
    tracker.start_poll();
    let mut db_now_ms = None;
    let mut out = Vec::new();
    for r in rows {
        let get_s = |i| r.try_get::<Option<&str>, _>(i);
        db_now_ms = db_now_ms.or(r.try_get::<Option<i64>, _>(0)?);
        let Some(key) = get_s(1)? else { continue };
        let (holder, remaining_ms, stamp) = (get_s(2)?, r.try_get(3)?, get_s(4)?);
        if tracker.keep(key, holder, stamp, remaining_ms, db_now_ms.unwrap_or(0)) {
            continue;
        }
        out.push(Row {
            key: key.to_string(),
            holder: holder.map(str::to_string),
            remaining_ms,
            stamp: stamp.map(str::to_string),
        });
    }
    if let Some(mark) = mark {
        *mark = now_mark;
    }
    Ok(Some((db_now_ms.unwrap_or(0), out)))
}

/// `[key, holder, ms left, deadline as text]`.
#[derive(serde::Deserialize)]
struct JsonRow<'a>(
    #[serde(borrow)] Option<Text<'a>>,
    #[serde(borrow)] Option<Text<'a>>,
    Option<i64>,
    #[serde(borrow)] Option<Text<'a>>,
);

/// A JSON string, borrowed from the answer unless it had escapes to undo: most rows are
/// matched as unchanged on it and never copied.
struct Text<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> serde::Deserialize<'de> for Text<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v.to_string())))
            }
            fn visit_string<E>(self, v: String) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// Walks the JSON array row by row, keeping the unchanged ones as they are parsed: nothing
/// is collected but the changed rows.
struct Walk<'t> {
    tracker: &'t mut SqlTracker,
    db_now_ms: i64,
    out: Vec<Row>,
}

impl<'de> serde::de::Visitor<'de> for &mut Walk<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an array of rows")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(JsonRow(key, holder, remaining_ms, stamp)) = seq.next_element()? {
            let Some(Text(key)) = key else { continue };
            let (holder, stamp) = (holder.map(|t| t.0), stamp.map(|t| t.0));
            let (h, st) = (holder.as_deref(), stamp.as_deref());
            if self.tracker.keep(&key, h, st, remaining_ms, self.db_now_ms) {
                continue;
            }
            self.out.push(Row {
                key: key.into_owned(),
                holder: holder.map(Cow::into_owned),
                remaining_ms,
                stamp: stamp.map(Cow::into_owned),
            });
        }
        Ok(())
    }
}

/// One row: the database's clock, the table's change mark, and every election as a JSON
/// array, or NULL for a table whose mark is still `mark` (None then: nothing to apply).
fn from_json(
    rows: &[AnyRow],
    tracker: &mut SqlTracker,
    mark: Option<&mut Option<String>>,
) -> Result<Option<(i64, Vec<Row>)>, String> {
    let Some(r) = rows.first() else {
        return Err("the poll returned no row".into());
    };
    let db_now_ms = r
        .try_get::<Option<i64>, _>(0)
        .map_err(|e| e.to_string())?
        .unwrap_or(0);
    let now_mark = r
        .try_get::<Option<String>, _>(1)
        .map_err(|e| e.to_string())?;
    let Some(text) = r.try_get::<Option<&str>, _>(2).map_err(|e| e.to_string())? else {
        // Only a mark read before on this connection can say the rows are the same.
        if mark.is_none_or(|m| m.is_none() || now_mark != *m) {
            return Err("the poll returned neither the rows nor an unchanged mark".into());
        }
        return Ok(None);
    };
    tracker.start_poll();
    let mut walk = Walk {
        tracker,
        db_now_ms,
        out: Vec::new(),
    };
    let mut de = serde_json::Deserializer::from_str(text);
    serde::Deserializer::deserialize_seq(&mut de, &mut walk)
        .and_then(|()| de.end())
        .map_err(|e| format!("the table's rows could not be read as JSON: {e}"))?;
    if let Some(mark) = mark {
        *mark = now_mark;
    }
    Ok(Some((db_now_ms, walk.out)))
}
