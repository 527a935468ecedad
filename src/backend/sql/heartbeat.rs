//! `sql-heartbeat` ("Leader election using MySQL"): `service_election(anchor, service_id, last_seen_active)`, one
//! row per election; the leader is deposed once `last_seen_active` is older than a timeout
//! that lives in the configuration, not the table.

use super::dialect::Dialect;
use super::{Columns, SqlScheme};
use crate::model::Scheme;

pub(crate) struct SqlHeartbeat {
    pub columns: Columns,
    pub timeout_ms: i64,
}

impl SqlScheme for SqlHeartbeat {
    fn scheme(&self) -> Scheme {
        Scheme::SqlHeartbeat
    }

    fn columns(&self) -> &Columns {
        &self.columns
    }

    /// `last_seen_active + timeout - now`, on the database's clock.
    fn remaining_ms(&self, d: Dialect, stamp: &str, stamp_type: &str) -> String {
        format!("({} + {})", d.ms_until(stamp, stamp_type), self.timeout_ms)
    }

    fn term_ms(&self) -> Option<i64> {
        Some(self.timeout_ms)
    }
}
