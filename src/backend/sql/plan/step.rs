//! A SQL table's step, one statement, and the words the confirmation shows for it.

use crate::admin::StoreStep;

/// A SQL statement; `sql` holds [`DEADLINE`] where the deadline value goes, written at
/// execution time for the deadline column's declared type (read from the schema then).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Statement {
    pub sql: String,
    pub binds: Vec<String>,
    /// The database's now plus this many ms, for [`DEADLINE`]; `numeric` when the seen stamp
    /// was a number (SQLite rows written as Unix seconds).
    pub deadline: Option<(i64, bool)>,
    /// Rows that mean done; fewer mean the row changed since it was seen.
    pub expect_rows: u64,
}

/// Where a statement's deadline value goes.
pub const DEADLINE: &str = "{deadline}";

/// What a SQL table's plan reads back after it wrote: the row of this election.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row(pub String);

impl Statement {
    /// The SQL as sent, with the deadline written by `now_plus` (ms, numeric) -> SQL.
    pub fn sql_with(&self, now_plus: impl Fn(i64, bool) -> String) -> String {
        match self.deadline {
            Some((ms, numeric)) => self.sql.replace(DEADLINE, &now_plus(ms, numeric)),
            None => self.sql.clone(),
        }
    }
}

/// The statement with its deadline in words (its SQL depends on the column's declared type,
/// read when executing) and its binds in place.
impl StoreStep for Statement {
    fn line(&self) -> String {
        let sql = self.sql_with(|ms, _| match ms {
            0 => "⟨the database's now⟩".to_string(),
            ms if ms < 0 => format!("⟨the database's now - {} ms⟩", -ms),
            ms => format!("⟨the database's now + {ms} ms⟩"),
        });
        debug_assert!(!sql.contains(DEADLINE));
        let binds: Vec<String> = self
            .binds
            .iter()
            .enumerate()
            .map(|(i, b)| format!("#{} = '{b}'", i + 1))
            .collect();
        format!(
            "{sql}  [{}]; {} row means done, none that the row changed",
            binds.join(", "),
            self.expect_rows
        )
    }
}
