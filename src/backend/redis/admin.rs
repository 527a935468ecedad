//! Carries out a Redis plan as it is (`plan.rs` builds it): one Lua script, atomic on the
//! server, deletes the lock key only if it still holds the token shown; then what the key
//! holds now is read back.

use std::time::Duration;

use super::plan::DelIfValue;
use super::read::Server;
use crate::admin::{AdminRequest, Outcome, changed_since};
use crate::config::RedisSource;
use crate::model::{escape_bytes, truncate_display};

/// The holder's own release, as redis-py and redlock write it.
pub(super) const DEL_IF_VALUE: &str = "if redis.call('GET', KEYS[1]) == ARGV[1] then \
     return redis.call('DEL', KEYS[1]) else return 0 end";

pub(crate) async fn execute(cfg: &RedisSource, req: &AdminRequest, timeout: Duration) -> Outcome {
    let plan = match super::plan::plan(req) {
        Ok(p) => p,
        Err(reason) => return Outcome::Refused { reason },
    };
    let DelIfValue { key, value, shown } = match plan.only_step_of::<DelIfValue>() {
        Ok(script) => script,
        Err(why) => {
            return Outcome::Refused {
                reason: format!("{} is not a Redis scheme: {why}", req.seen.scheme),
            };
        }
    };
    let failed = |e: super::error::RedisError| Outcome::Failed {
        error: e.to_string(),
    };
    let server = match Server::new(cfg, timeout) {
        Ok(s) => s,
        Err(e) => return failed(e),
    };
    let mut conn = match server.connect().await {
        Ok(c) => c,
        Err(e) => return failed(e),
    };
    let mut eval = redis::cmd("EVAL");
    eval.arg(DEL_IF_VALUE).arg(1).arg(&key.raw).arg(value);
    let deleted: i64 = match server.within(eval.query_async(&mut conn)).await {
        Ok(n) => n,
        Err(e) => {
            return Outcome::Failed {
                error: format!("{e}; if the script ran, look at the election before trying again"),
            };
        }
    };
    if deleted == 0 {
        return Outcome::Changed {
            detail: changed_since(&format!("{} no longer holds {shown}", key.shown)),
        };
    }
    let mut get = redis::cmd("GET");
    get.arg(&key.raw);
    let now = match server
        .within(get.query_async::<Option<Vec<u8>>>(&mut conn))
        .await
    {
        Ok(None) => format!("{} is free", key.shown),
        Ok(Some(v)) => format!(
            "{} is held by {} already",
            key.shown,
            truncate_display(&escape_bytes(&v), crate::model::SHOWN_MAX)
        ),
        Err(e) => format!("it could not be read back: {e}"),
    };
    Outcome::Done {
        detail: format!("{}; {now}", plan.writes().join("; ")),
    }
}
