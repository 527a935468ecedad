//! `sql-lease` (gabihodoroaga/leaderelection): `leaderlock(key, leader_id, valid_until)`, one row per election;
//! the leader's term ends at `valid_until`.

use super::dialect::Dialect;
use super::{Columns, SqlScheme};
use crate::model::Scheme;

pub(crate) struct SqlLease {
    pub columns: Columns,
}

impl SqlScheme for SqlLease {
    fn scheme(&self) -> Scheme {
        Scheme::SqlLease
    }

    fn columns(&self) -> &Columns {
        &self.columns
    }

    fn remaining_ms(&self, d: Dialect, stamp: &str, stamp_type: &str) -> String {
        d.ms_until(stamp, stamp_type)
    }

    fn term_ms(&self) -> Option<i64> {
        None
    }
}
