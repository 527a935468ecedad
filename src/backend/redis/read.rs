//! Talking to one Redis server: connecting (the password from where the config says, never
//! shown), asking whether keyspace events are on, a bounded `SCAN` of the lock keys, and
//! `GET` + `PTTL` of each, pipelined.

use std::time::{Duration, Instant};

use redis::aio::{MultiplexedConnection, PubSub};
use redis::{AsyncConnectionConfig, Client, IntoConnectionInfo, RedisConnectionInfo, Value};

use super::error::RedisError;
use super::tls::Tls;
use super::tracker::Read;
use crate::backend::probe::Answerer;
use crate::config::{RedisSource, read_password};
use crate::model::StoreKind;

/// Keys asked per `SCAN` call, and per pipeline of reads.
const BATCH: usize = 1_000;
/// At most this many keys are read: a pattern that matches a whole cache is a typo.
pub(crate) const MAX_KEYS: usize = 100_000;

/// How electop learns of changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// `notify-keyspace-events` has K and the classes a lock's life touches.
    Events,
    /// Otherwise: a re-read every second; why, in words.
    Poll(String),
}

impl Mode {
    /// The source's notice: which way it is followed.
    pub(crate) fn notice(&self) -> String {
        match self {
            Mode::Events => "live: keyspace events".to_string(),
            Mode::Poll(why) => format!("polled every 1 s: {why}"),
        }
    }
}

/// The password, from the variable or file the source names, else from the URL; `None`
/// without. Errors name where it looked, never the password.
fn password(cfg: &RedisSource) -> Result<Option<String>, String> {
    let given = read_password(cfg.password_env.as_deref(), cfg.password_file.as_deref())?;
    Ok(given.or(cfg.target()?.url_password))
}

/// `127.0.0.1:6379/0`: where the source's server is, without user or password.
pub(crate) fn address(cfg: &RedisSource) -> String {
    match cfg.target() {
        Ok(t) if t.host.contains(':') => format!("[{}]:{}/{}", t.host, t.port, t.db),
        Ok(t) => format!("{}:{}/{}", t.host, t.port, t.db),
        Err(_) => cfg.url.redacted(),
    }
}

/// One server, as the config gives it.
pub(crate) struct Server {
    pub client: Client,
    /// `host:port/db`, for messages.
    pub addr: String,
    pub db: i64,
    pub timeout: Duration,
    /// `host:port`, as dialled.
    endpoint: String,
    host: String,
    /// `rediss://`: the handshake electop makes itself.
    tls: Option<Tls>,
    /// The user, password and database each connection starts with.
    settings: RedisConnectionInfo,
}

impl Server {
    pub(crate) fn new(cfg: &RedisSource, timeout: Duration) -> Result<Server, RedisError> {
        let t = cfg.target().map_err(RedisError::Config)?;
        let password = password(cfg).map_err(RedisError::Config)?;
        let addr = address(cfg);
        let info = format!("redis://{}:{}/{}", host_in_url(&t.host), t.port, t.db)
            .into_connection_info()
            .map_err(|e| RedisError::from_client(&e, &addr))?;
        let mut settings = info.redis_settings().clone().set_skip_set_lib_name();
        if let Some(user) = &t.user {
            settings = settings.set_username(user);
        }
        if let Some(pw) = &password {
            settings = settings.set_password(pw);
        }
        let tls = Tls::new(cfg, &t.host)?;
        let endpoint = format!("{}:{}", host_in_url(&t.host), t.port);
        let info = info.set_redis_settings(settings.clone());
        let client = Client::open(info).map_err(|e| RedisError::from_client(&e, &addr))?;
        Ok(Server {
            client,
            addr,
            db: t.db,
            timeout,
            endpoint,
            host: t.host,
            tls,
            settings,
        })
    }

    pub(crate) fn err(&self, e: &redis::RedisError) -> RedisError {
        RedisError::from_client(e, &self.addr)
    }

    fn timed_out(&self) -> RedisError {
        RedisError::Timeout(self.addr.clone(), self.timeout)
    }

    /// Runs `f` within the request timeout.
    pub(crate) async fn within<T>(
        &self,
        f: impl std::future::Future<Output = redis::RedisResult<T>>,
    ) -> Result<T, RedisError> {
        match tokio::time::timeout(self.timeout, f).await {
            Err(_) => Err(self.timed_out()),
            Ok(r) => r.map_err(|e| self.err(&e)),
        }
    }

    /// A connection that answered `PING`, to a server electop reads as one source.
    pub(crate) async fn connect(&self) -> Result<MultiplexedConnection, RedisError> {
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.timeout))
            .set_response_timeout(Some(self.timeout));
        let mut conn = match &self.tls {
            Some(tls) => {
                let stream = tls.dial(&self.endpoint, &self.addr, self.timeout).await?;
                let (conn, driver) = self
                    .within(MultiplexedConnection::new_with_config(
                        &self.settings,
                        stream,
                        config,
                    ))
                    .await?;
                tokio::spawn(driver);
                conn
            }
            None => {
                let dialled = self
                    .client
                    .get_multiplexed_async_connection_with_config(&config);
                match self.within(dialled).await {
                    Ok(c) => c,
                    Err(e) => return Err(self.plain_failed(e).await),
                }
            }
        };
        if let Err(e) = self.ping(&mut conn).await {
            return Err(self.plain_failed(e).await);
        }
        self.one_server(&mut conn).await?;
        Ok(conn)
    }

    /// A plain connection dropped at once: a `tls-port` answers a plain client so, which
    /// is said as such. Dropped, unanswered or answered in words no Redis says: another
    /// kind of server (etcd, PostgreSQL) may be what listens there, which is named.
    async fn plain_failed(&self, e: RedisError) -> RedisError {
        let dropped = matches!(e, RedisError::Lost(_));
        if self.tls.is_none()
            && dropped
            && super::tls::speaks_tls(&self.endpoint, &self.host, self.timeout).await
        {
            return RedisError::Tls(format!(
                "redis {} speaks TLS (a tls-port), and the URL is redis:// (plain): write \
                 rediss://{}, with --redis-cacert FILE when a private CA signs its \
                 certificate; or give the server's plain port",
                self.addr, self.endpoint
            ));
        }
        let unclear = matches!(
            e,
            RedisError::Lost(_) | RedisError::Timeout(..) | RedisError::Other(..)
        );
        if self.tls.is_none() && unclear {
            let within = self.timeout.min(Duration::from_secs(1));
            let port = self
                .endpoint
                .rsplit_once(':')
                .and_then(|(_, p)| p.parse().ok());
            let probe =
                crate::backend::probe::what_answers(&self.host, port.unwrap_or(6379), within);
            match probe.await {
                None
                | Some(Answerer::Recognised {
                    store: StoreKind::Redis,
                    ..
                }) => {}
                Some(other) => return RedisError::NotRedis(self.addr.clone(), other.said()),
            }
        }
        e
    }

    /// A cluster node or a sentinel is refused, with the reason (`INFO server`'s
    /// `redis_mode`); a user who may not run `INFO` is taken at its word.
    async fn one_server(&self, conn: &mut MultiplexedConnection) -> Result<(), RedisError> {
        let mut info = redis::cmd("INFO");
        info.arg("server");
        let Ok(Ok(text)) =
            tokio::time::timeout(self.timeout, info.query_async::<String>(conn)).await
        else {
            return Ok(());
        };
        let mode = text
            .lines()
            .find_map(|l| l.strip_prefix("redis_mode:"))
            .unwrap_or("standalone")
            .trim();
        let why = match mode {
            "cluster" => {
                "a Redis Cluster node (redis_mode:cluster), and electop does not follow a \
                 cluster: the lock keys a pattern matches are spread over the shards' slots, \
                 and one node holds only some of them, so a source on it would show part of \
                 the elections as if it were all; Redis Cluster is not supported"
            }
            "sentinel" => {
                "a Redis Sentinel (redis_mode:sentinel), which holds no lock keys: give the \
                 master it names (SENTINEL get-master-addr-by-name NAME) as redis://host:port"
            }
            _ => return Ok(()),
        };
        Err(RedisError::Unsupported(self.addr.clone(), why.to_string()))
    }

    /// A connection for the keyspace-event subscription.
    pub(crate) async fn pubsub(&self) -> Result<PubSub, RedisError> {
        match &self.tls {
            Some(tls) => {
                let stream = tls.dial(&self.endpoint, &self.addr, self.timeout).await?;
                self.within(PubSub::new(&self.settings, stream)).await
            }
            None => self.within(self.client.get_async_pubsub()).await,
        }
    }

    pub(crate) async fn ping(&self, conn: &mut MultiplexedConnection) -> Result<(), RedisError> {
        self.within(redis::cmd("PING").query_async::<Value>(conn))
            .await
            .map(drop)
    }

    /// Keyspace events, when the server has them on for what a lock's life does: set,
    /// expiry changes and deletes (g), `SET` ($), expiry (x) and eviction (e).
    pub(crate) async fn mode(&self, conn: &mut MultiplexedConnection) -> Mode {
        let mut ask = redis::cmd("CONFIG");
        ask.arg("GET").arg("notify-keyspace-events");
        let asked = ask.query_async::<Vec<String>>(conn);
        match tokio::time::timeout(self.timeout, asked).await {
            Err(_) => Mode::Poll("CONFIG GET notify-keyspace-events did not answer".into()),
            Ok(Err(e)) => Mode::Poll(format!(
                "CONFIG GET notify-keyspace-events was refused ({}), so electop cannot tell \
                 whether keyspace events are on",
                e.detail().unwrap_or(e.code().unwrap_or("error"))
            )),
            Ok(Ok(v)) => events_mode(v.get(1).map(String::as_str).unwrap_or("")),
        }
    }

    /// `notify-keyspace-events` as the server has it now, asked on a connection in use: an
    /// operator may turn the events on (or off) while electop follows. `None`: it may not be
    /// asked (refused), which the first `mode` said already. Its answer is contact too.
    pub(crate) async fn events_now(
        &self,
        conn: &mut MultiplexedConnection,
    ) -> Result<Option<Mode>, RedisError> {
        let mut ask = redis::cmd("CONFIG");
        ask.arg("GET").arg("notify-keyspace-events");
        match self.within(ask.query_async::<Vec<String>>(conn)).await {
            Ok(v) => Ok(Some(events_mode(
                v.get(1).map(String::as_str).unwrap_or(""),
            ))),
            Err(RedisError::NoPerm(..) | RedisError::Other(..)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The string keys matching `pattern`, at most [`MAX_KEYS`] (`true`: there were more).
    pub(crate) async fn scan(
        &self,
        conn: &mut MultiplexedConnection,
        pattern: &str,
    ) -> Result<(Vec<Vec<u8>>, bool), RedisError> {
        let mut keys = Vec::new();
        let mut cursor: u64 = 0;
        loop {
            let (next, batch) = self.scan_step(conn, pattern, cursor).await?;
            keys.extend(batch);
            if keys.len() > MAX_KEYS {
                keys.sort();
                keys.dedup();
                keys.truncate(MAX_KEYS);
                return Ok((keys, true));
            }
            if next == 0 {
                break;
            }
            cursor = next;
        }
        // SCAN may return a key more than once.
        keys.sort();
        keys.dedup();
        Ok((keys, false))
    }

    /// One `SCAN` call from `cursor`: the next cursor (0: done) and the keys it gave, which
    /// a later call may give again.
    pub(crate) async fn scan_step(
        &self,
        conn: &mut MultiplexedConnection,
        pattern: &str,
        cursor: u64,
    ) -> Result<(u64, Vec<Vec<u8>>), RedisError> {
        self.within(
            redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(pattern)
                .arg("COUNT")
                .arg(BATCH)
                .arg("TYPE")
                .arg("string")
                .query_async(conn),
        )
        .await
    }

    /// `GET` and `PTTL` of each key, pipelined; a key gone or not a string reads as gone.
    pub(crate) async fn read(
        &self,
        conn: &mut MultiplexedConnection,
        keys: &[Vec<u8>],
    ) -> Result<Vec<Read>, RedisError> {
        let mut out = Vec::with_capacity(keys.len());
        for chunk in keys.chunks(BATCH) {
            let at = Instant::now();
            let mut pipe = redis::pipe();
            pipe.ignore_errors();
            for k in chunk {
                pipe.cmd("GET").arg(k).cmd("PTTL").arg(k);
            }
            let values: Vec<Value> = self.within(pipe.query_async(conn)).await?;
            for (k, pair) in chunk.iter().zip(values.chunks(2)) {
                refused(pair, &self.addr)?;
                let held = match pair {
                    [Value::BulkString(v), Value::Int(pttl)] if *pttl != -2 => {
                        Some((v.clone(), *pttl))
                    }
                    _ => None,
                };
                out.push(Read {
                    key: k.clone(),
                    held,
                    at,
                });
            }
        }
        Ok(out)
    }
}

/// A command of the pipeline the ACL user may not run: an error, not a key read as gone.
fn refused(pair: &[Value], addr: &str) -> Result<(), RedisError> {
    for v in pair {
        if let Value::ServerError(e) = v
            && e.code() == "NOPERM"
        {
            let detail = e.details().unwrap_or("NOPERM").to_string();
            let command = super::error::command_in(&detail);
            return Err(RedisError::NoPerm(
                addr.to_string(),
                command,
                format!("NOPERM {detail}"),
            ));
        }
    }
    Ok(())
}

/// `[::1]` in a URL for an IPv6 host.
fn host_in_url(host: &str) -> String {
    if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_string()
    }
}

/// The mode `notify-keyspace-events` (as `CONFIG GET` gives it) allows.
fn events_mode(flags: &str) -> Mode {
    let all = flags.contains('A');
    let has = |c: char| flags.contains(c) || (all && c != 'K');
    let missing: String = ['K', 'g', '$', 'x', 'e']
        .into_iter()
        .filter(|c| !has(*c))
        .collect();
    if missing.is_empty() {
        return Mode::Events;
    }
    if flags.is_empty() {
        return Mode::Poll("notify-keyspace-events is off".into());
    }
    Mode::Poll(format!(
        "notify-keyspace-events is \"{flags}\", without {missing} (needs K, g, $, x and e, \
         e.g. \"Kg$xe\")"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_address_leaves_user_and_password_out_and_the_password_is_the_urls() {
        let s = RedisSource::from_url(
            "redis://app:s3cret@127.0.0.1:6400/2",
            Some("leader:".into()),
        )
        .expect("valid");
        assert_eq!(address(&s), "127.0.0.1:6400/2");
        assert_eq!(
            password(&s).expect("from the URL").as_deref(),
            Some("s3cret")
        );
        let s =
            RedisSource::from_url("redis://localhost", Some("lock:*:owner".into())).expect("ok");
        assert_eq!(
            (s.prefix.as_str(), address(&s).as_str()),
            ("lock:*:owner", "localhost:6379/0")
        );
    }

    #[test]
    fn keyspace_events_are_used_only_with_every_class_a_lock_needs() {
        assert_eq!(events_mode("AK"), Mode::Events);
        assert_eq!(events_mode("gxeK$"), Mode::Events);
        assert_eq!(
            events_mode(""),
            Mode::Poll("notify-keyspace-events is off".into())
        );
        let Mode::Poll(why) = events_mode("AE") else {
            panic!("no K")
        };
        assert!(why.contains("without K"), "{why}");
        let Mode::Poll(why) = events_mode("gK$") else {
            panic!("no x, e")
        };
        assert!(why.contains("without xe"), "{why}");
    }
}
