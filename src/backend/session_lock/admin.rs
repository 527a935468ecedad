//! Carries out a session-lock plan as it is (`plan.rs` builds it): each session ended in one
//! statement compared on its id and start, in order; then who holds the lock now is read
//! back (the server frees a lock as the ended session exits, a moment later).

use std::time::{Duration, Instant};

use super::plan::{EndSession, Lock};
use super::{Flavor, end_session, read, resolve};
use crate::admin::{AdminRequest, Outcome, changed_since};
use crate::backend::sql::{SqlSettings, open};
use crate::config::SqlSource;

pub(crate) async fn execute(cfg: &SqlSource, req: &AdminRequest, timeout: Duration) -> Outcome {
    let plan = match crate::backend::plan(req) {
        Ok(p) => p,
        Err(reason) => return Outcome::Refused { reason },
    };
    let ends = match plan.steps_of::<EndSession>() {
        Ok(ends) => ends,
        Err(why) => {
            return Outcome::Refused {
                reason: format!("{} is not a session-lock scheme: {why}", req.seen.scheme),
            };
        }
    };
    let flavor = Flavor::of(cfg.scheme);
    let s = SqlSettings::new(cfg);
    let pool = match open(&s, timeout).await {
        Ok(p) => p,
        Err(e) => {
            return Outcome::Failed {
                error: e.to_string(),
            };
        }
    };
    let mut done: Vec<String> = Vec::new();
    for end in ends {
        let ended =
            tokio::time::timeout(timeout, end_session(flavor, &pool, &s, end.id, &end.start)).await;
        let ended = match ended {
            Ok(Ok(ended)) => ended,
            Ok(Err(e)) => return partial(&done, e.to_string()),
            Err(_) => return partial(&done, format!("no answer within {timeout:?}")),
        };
        if !ended {
            let what = format!(
                "the session of {} (id {}) is gone or is another session now",
                end.who, end.id
            );
            if done.is_empty() {
                return Outcome::Changed {
                    detail: changed_since(&what),
                };
            }
            return partial(&done, what);
        }
        done.push(end.who.clone());
    }
    let now = match plan.readback_of::<Lock>() {
        Some(Lock(name)) => holder_now(flavor, &pool, &s, cfg, name, &done, timeout).await,
        None => String::new(),
    };
    pool.close().await;
    Outcome::Done {
        detail: format!("{}; {now}", plan.writes().join("; ")),
    }
}

/// Stopped part way: what was ended already, and what stopped it.
fn partial(done: &[String], why: String) -> Outcome {
    let error = if done.is_empty() {
        format!("{why}; nothing was ended")
    } else {
        format!(
            "ended the session of {} already, then stopped: {why}; look at the election \
             before trying again",
            done.join(", ")
        )
    };
    Outcome::Failed { error }
}

/// Who holds `name` once the ended sessions are gone from the lock (up to a second).
async fn holder_now(
    flavor: Flavor,
    pool: &sqlx::AnyPool,
    s: &SqlSettings,
    cfg: &SqlSource,
    name: &str,
    ended: &[String],
    timeout: Duration,
) -> String {
    let naming = match resolve(flavor, pool, s, cfg.locks()).await {
        Ok(n) => n,
        Err(e) => return format!("it could not be read back: {e}"),
    };
    let until = Instant::now() + Duration::from_secs(1).min(timeout);
    loop {
        let locks = match read(flavor, pool, s, &naming).await {
            Ok(l) => l,
            Err(e) => return format!("it could not be read back: {e}"),
        };
        let lock = locks.into_iter().find(|l| l.name == name);
        let holder = lock
            .as_ref()
            .and_then(|l| l.holder.as_ref())
            .map(|h| h.shown());
        let settled = holder.as_ref().is_none_or(|h| !ended.contains(h));
        if settled || Instant::now() >= until {
            return match holder {
                Some(h) => format!("{name} is held by {h} now"),
                None => format!("{name} is free now"),
            };
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
