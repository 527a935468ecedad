//! `electop node` on Redis: a single-instance Redis lock, as redis-py's `Lock` and `redlock`
//! take one. The lock key is `--election`; the token is `electop-node:<id>:<random>` (see
//! `token`), unique per run and shown as the id.
//!
//! - A follower tries every `--retry`: `SET key token NX PX ttl`, with `GET` and `PTTL` in the
//!   same `MULTI`, so the answer also says who holds it.
//! - The leader renews every `--renew` with a compare-then-`PEXPIRE` script (redis-py
//!   `reacquire`): only while the key still holds its token. A script that finds the key gone
//!   or holding another token deposes it, and says why: deleted under a running term (an
//!   operator's `reelect`/`resign`, which delete the key), or expired because it did not renew
//!   in time (it was paused, or cut off, past its TTL).
//! - Its term counts from the send of the request that set or renewed the key (`node::term`),
//!   so when Redis cannot be reached it says so and keeps leading only while its key must
//!   still be there; then it stops believing it leads (`Reporter::enforce_term`).
//! - SIGINT/SIGTERM release the lock with compare-then-`DEL`, so the next try by anyone wins.

use std::time::Instant;

use anyhow::{Result, bail};
use redis::Value;
use redis::aio::MultiplexedConnection;
use tokio_util::sync::CancellationToken;

use super::read::Server;
use super::token;
use crate::config::RedisSource;
use crate::model::escape_bytes;
use crate::node::{Belief, Options, RESIGN_LIMIT, Reporter, Timing, term};

/// redis-py `Lock.reacquire`: extends the key only while it holds our token. Otherwise, who
/// holds it now and for how long, read in the same script.
const RENEW: &str = "if redis.call('GET', KEYS[1]) == ARGV[1] then \
     redis.call('PEXPIRE', KEYS[1], ARGV[2]) return {1, tonumber(ARGV[2])} end \
     return {0, redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1])}";

/// What a leader whose key was deleted while its term ran believes.
const DELETED: &str =
    "my key was deleted while my TTL ran (an operator's reelect or resign, or a client's DEL)";

/// Takes part in the election on the lock key `args.election` until stopped.
pub(super) async fn run(
    cfg: &RedisSource,
    args: &Options,
    t: Timing,
    report: &Reporter,
    stop: CancellationToken,
) -> Result<()> {
    let key = lock_key(cfg, &args.election)?;
    let token = token::for_node(&args.id)
        .map_err(|e| anyhow::anyhow!("reading /dev/urandom for my lock token: {e}"))?;
    // Every call must end while our key could still be ours (see `Timing::call_limit`).
    let server = Server::new(cfg, t.call_limit()).map_err(|e| anyhow::anyhow!("{e}"))?;
    report.say(&format!(
        "campaigning for {} on redis {} with SET NX PX {} ms (token {token})",
        escape_bytes(&key),
        server.addr,
        t.ttl.as_millis()
    ));
    let mut node = Lock {
        server,
        key,
        token,
        t,
        conn: None,
        led: None,
        unreachable: false,
    };
    loop {
        // Rounds start every interval, however long each takes.
        let started = Instant::now();
        let outcome = tokio::select! {
            r = node.round() => r,
            _ = stop.cancelled() => return node.stopped(report).await,
        };
        node.believe(outcome, report)?;
        let wait = if node.led.is_some() { t.renew } else { t.retry };
        tokio::select! {
            _ = tokio::time::sleep_until((started + wait).into()) => {}
            _ = stop.cancelled() => return node.stopped(report).await,
        }
    }
}

/// The lock key: `--election`, which the source's `--prefix` pattern must match, or the
/// dashboard on the same flags would not show it.
fn lock_key(cfg: &RedisSource, election: &str) -> Result<Vec<u8>> {
    // Mistakes in the flags: exit 2, as the others.
    use crate::config::Usage;
    if election.is_empty() || election.chars().any(char::is_control) {
        return Err(Usage(format!(
            "--election {}: on Redis the election is the lock key, like locks:jobs",
            escape_bytes(election.as_bytes())
        ))
        .into());
    }
    if !glob(cfg.prefix.as_bytes(), election.as_bytes()) {
        return Err(Usage(format!(
            "--election {election} does not match --prefix {}: electop on that pattern would not \
             see the lock; name a key the pattern matches (or change --prefix)",
            cfg.prefix
        ))
        .into());
    }
    Ok(election.as_bytes().to_vec())
}

/// Redis's glob (`SCAN MATCH`, `KEYS`): `*`, `?`, `[abc]`, `[a-z]`, `[^a]`, `\x`.
pub(super) fn glob(pat: &[u8], s: &[u8]) -> bool {
    match pat.split_first() {
        None => s.is_empty(),
        Some((b'*', rest)) => (0..=s.len()).any(|i| glob(rest, &s[i..])),
        Some((b'?', rest)) => !s.is_empty() && glob(rest, &s[1..]),
        Some((b'[', rest)) => {
            let Some(end) = rest.iter().skip(1).position(|b| *b == b']').map(|p| p + 1) else {
                return s.first() == Some(&b'[') && glob(rest, &s[1..]);
            };
            let (set, after) = (&rest[..end], &rest[end + 1..]);
            let (negate, set) = match set.split_first() {
                Some((b'^', set)) => (true, set),
                _ => (false, set),
            };
            let Some(c) = s.first() else { return false };
            let within = set
                .windows(3)
                .any(|w| w[1] == b'-' && (w[0]..=w[2]).contains(c))
                || set.contains(c);
            within != negate && glob(after, &s[1..])
        }
        Some((b'\\', rest)) if !rest.is_empty() => {
            s.first() == Some(&rest[0]) && glob(&rest[1..], &s[1..])
        }
        Some((c, rest)) => s.first() == Some(c) && glob(rest, &s[1..]),
    }
}

/// What one round found.
#[derive(Debug, PartialEq, Eq)]
enum Seen {
    /// The key holds our token, for `granted` ms from (at the latest) `sent`.
    Ours { sent: Instant, granted: i64 },
    /// It holds another token (`None`: nothing), with `pttl` ms left.
    Other { holder: Option<Vec<u8>>, pttl: i64 },
}

struct Lock {
    server: Server,
    key: Vec<u8>,
    token: String,
    t: Timing,
    conn: Option<MultiplexedConnection>,
    /// While we hold the key: until when (our clock) it must still be ours.
    led: Option<Option<Instant>>,
    /// Redis could not be reached at the last round (said once per outage).
    unreachable: bool,
}

impl Lock {
    /// The leader renews, anyone else tries to take the key.
    async fn round(&mut self) -> Result<Seen, super::error::RedisError> {
        let conn = match self.conn.take() {
            Some(conn) => conn,
            None => self.server.connect().await?,
        };
        let conn = self.conn.insert(conn);
        let ms = self.t.ttl.as_millis() as u64;
        let sent = Instant::now();
        let reply: Vec<Value> = if self.led.is_some() {
            let mut eval = redis::cmd("EVAL");
            eval.arg(RENEW)
                .arg(1)
                .arg(&self.key)
                .arg(&self.token)
                .arg(ms);
            self.server.within(eval.query_async(conn)).await?
        } else {
            let mut pipe = redis::pipe();
            pipe.atomic()
                .cmd("SET")
                .arg(&self.key)
                .arg(&self.token)
                .arg("NX")
                .arg("PX")
                .arg(ms)
                .cmd("GET")
                .arg(&self.key)
                .cmd("PTTL")
                .arg(&self.key);
            self.server.within(pipe.query_async(conn)).await?
        };
        Ok(parse(
            &reply,
            self.token.as_bytes(),
            sent,
            self.led.is_some(),
        ))
    }

    /// Says what the round means, and keeps what we now hold. Errors only when waiting
    /// cannot help (a refused password, a key that is not a string).
    fn believe(
        &mut self,
        outcome: Result<Seen, super::error::RedisError>,
        report: &Reporter,
    ) -> Result<()> {
        match outcome {
            Ok(Seen::Ours { sent, granted }) => {
                let until = term::granted_ms(granted).and_then(|g| term::lead_until(sent, g));
                self.unreachable = false;
                self.led = Some(until);
                report.lead(until);
            }
            Ok(Seen::Other { holder, .. }) => {
                self.unreachable = false;
                if let Some(until) = self.led.take() {
                    let reason = deposed_reason(holder.as_deref(), until, Instant::now());
                    report.believe(Belief::Deposed { reason });
                }
                let leader = holder.as_deref().map(token::holder);
                report.believe(Belief::Follower { leader });
            }
            Err(e) => {
                // Asked again on a new connection next round.
                self.conn = None;
                if e.lasting() {
                    bail!("{e}");
                }
                if e.to_string().contains("WRONGTYPE") {
                    bail!(
                        "the key {} holds a value that is not a string, so it is no lock: \
                         name another key with --election",
                        escape_bytes(&self.key)
                    );
                }
                let error = e.to_string();
                match self.led {
                    // Our key stays ours until its TTL: we cannot know more, and say so; the
                    // term's end, if no renewal gets through before it, ends our belief.
                    Some(_) if !self.unreachable => report.say(&format!(
                        "cannot renew: {error}; I lead only until my TTL would have run out"
                    )),
                    Some(_) => {}
                    None => report.believe(Belief::NoContact { error }),
                }
                self.unreachable = true;
            }
        }
        Ok(())
    }

    /// Asked to stop: no longer a leader from now on, and a leader deletes its key if it
    /// still holds our token, within a bound, so the next try by anyone wins.
    async fn stopped(&mut self, report: &Reporter) -> Result<()> {
        report.believe(Belief::Stopped);
        if self.led.is_none() {
            return Ok(());
        }
        let release = async {
            let conn = match self.conn.take() {
                Some(conn) => conn,
                None => self.server.connect().await?,
            };
            let conn = self.conn.insert(conn);
            let mut eval = redis::cmd("EVAL");
            eval.arg(super::admin::DEL_IF_VALUE)
                .arg(1)
                .arg(&self.key)
                .arg(&self.token);
            self.server.within(eval.query_async::<i64>(conn)).await
        };
        report.say(match tokio::time::timeout(RESIGN_LIMIT, release).await {
            Ok(Ok(1)) => "resigned",
            Ok(Ok(_)) => "my key no longer held my token: nothing to release",
            _ => "could not resign in time: my key will expire",
        });
        Ok(())
    }
}

/// The reply of a renewal (`{1, ms}` or `{0, value, pttl}`) or of `SET NX PX` + `GET` +
/// `PTTL`, as what we hold. The value read, not whether `SET` wrote, says who holds the key.
fn parse(reply: &[Value], token: &[u8], sent: Instant, renewal: bool) -> Seen {
    let int = |v: Option<&Value>| match v {
        Some(Value::Int(n)) => *n,
        _ => -2,
    };
    let bytes = |v: Option<&Value>| match v {
        Some(Value::BulkString(b)) => Some(b.clone()),
        Some(Value::SimpleString(s)) => Some(s.as_bytes().to_vec()),
        _ => None,
    };
    if renewal && int(reply.first()) == 1 {
        return Seen::Ours {
            sent,
            granted: int(reply.get(1)),
        };
    }
    let (holder, pttl) = (bytes(reply.get(1)), int(reply.get(2)));
    match holder {
        Some(h) if h == token => Seen::Ours {
            sent,
            granted: pttl,
        },
        holder => Seen::Other { holder, pttl },
    }
}

/// Why a leader that finds its key gone, or holding `holder`'s token, no longer leads: its
/// term (`until`) still running at `now` means someone removed the key; over means it
/// expired before we renewed it.
fn deposed_reason(holder: Option<&[u8]>, until: Option<Instant>, now: Instant) -> String {
    let expired = until.is_none_or(|u| now >= u);
    let by = holder.map(token::holder);
    match (expired, by) {
        (false, None) => DELETED.to_string(),
        (false, Some(h)) => {
            format!("my key holds {h}'s token now (deleted and taken, or written over)")
        }
        (true, None) => {
            "my key expired before I renewed it (I was paused or cut off past my TTL)".to_string()
        }
        (true, Some(h)) => format!(
            "my key expired before I renewed it (I was paused or cut off past my TTL) and {h} holds it now"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn redis_globs() {
        for (p, s) in [
            ("*", "anything"),
            ("locks:*", "locks:jobs"),
            ("l?cks:*", "locks:"),
            ("[lm]ocks:[a-c]*", "mocks:b1"),
            ("[^x]ocks", "locks"),
            ("a\\*b", "a*b"),
        ] {
            assert!(glob(p.as_bytes(), s.as_bytes()), "{p} matches {s}");
        }
        for (p, s) in [
            ("locks:*", "jobs"),
            ("[^l]ocks", "locks"),
            ("a\\*b", "axb"),
            ("?", ""),
        ] {
            assert!(!glob(p.as_bytes(), s.as_bytes()), "{p} does not match {s}");
        }
    }

    #[test]
    fn the_value_read_says_who_holds_the_key() {
        let now = Instant::now();
        let ok = Value::Okay;
        let mine = Value::BulkString(b"tok".to_vec());
        let theirs = Value::BulkString(b"other".to_vec());
        let ours = |granted| Seen::Ours { sent: now, granted };
        assert_eq!(
            parse(&[ok, mine.clone(), Value::Int(5_000)], b"tok", now, false),
            ours(5_000)
        );
        assert_eq!(
            parse(&[Value::Nil, mine, Value::Int(4_000)], b"tok", now, false),
            ours(4_000),
            "already ours (a reply lost before)"
        );
        assert_eq!(
            parse(
                &[Value::Nil, theirs.clone(), Value::Int(-1)],
                b"tok",
                now,
                false
            ),
            Seen::Other {
                holder: Some(b"other".to_vec()),
                pttl: -1
            }
        );
        assert_eq!(
            parse(&[Value::Int(1), Value::Int(3_000)], b"tok", now, true),
            ours(3_000)
        );
        assert_eq!(
            parse(
                &[Value::Int(0), Value::Nil, Value::Int(-2)],
                b"tok",
                now,
                true
            ),
            Seen::Other {
                holder: None,
                pttl: -2
            }
        );
    }

    #[test]
    fn a_lost_key_says_whether_it_was_removed_or_expired() {
        let now = Instant::now();
        let running = Some(now + Duration::from_secs(3));
        let over = Some(now - Duration::from_millis(1));
        assert_eq!(deposed_reason(None, running, now), DELETED);
        let tok = token::for_node("node-2").expect("urandom");
        let taken = deposed_reason(Some(tok.as_bytes()), running, now);
        assert!(taken.contains("node-2's token"), "{taken}");
        assert!(deposed_reason(None, over, now).contains("expired"));
        let r = deposed_reason(Some(tok.as_bytes()), over, now);
        assert!(
            r.contains("expired") && r.contains("node-2 holds it"),
            "{r}"
        );
    }
}
