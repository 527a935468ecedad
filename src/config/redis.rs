//! Redis sources: one server (`redis://[user[:password]@]host:port[/db]`, `rediss://` for
//! TLS with the CA and client certificate files beside), the key pattern the lock keys
//! match, and where the password is read from (`password_env`/`password_file`, as for SQL).
//! The password is never shown: the source's label is built without it.

use std::path::PathBuf;

use serde::Deserialize;

use super::{Flags, OwnFlags};
use crate::model::StoreKind;

/// Said when etcd's TLS flags are given where only Redis is read.
const NOT_ETCD_TLS: &str = concat!(
    "--cacert/--cert/--key/--insecure-skip-tls-verify are etcd's; ",
    "for a Redis tls-port write rediss://host:port and give --redis-cacert (and \
     --redis-cert/--redis-key for a client certificate)"
);

/// `--redis` and the `--redis-` TLS files, as given.
pub(super) fn own_flags(f: &Flags) -> OwnFlags<'_> {
    OwnFlags {
        store: StoreKind::Redis,
        flag: "--redis",
        sources: &f.redis,
        tls_prefix: "--redis-",
        cacert: f.redis_cacert.as_deref(),
        cert: f.redis_cert.as_deref(),
        key: f.redis_key.as_deref(),
        not_etcd_tls: NOT_ETCD_TLS,
        tls_not_for: |what| {
            format!(
                "--redis-cacert/--redis-cert/--redis-key are for Redis sources, and do not \
                 apply to {what}: give --redis rediss://host:port"
            )
        },
        other: None,
        file: None,
    }
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RedisSource {
    /// What the source is called on screen and in `SOURCE/NAME`; `redis1`, `redis2`...
    #[serde(default)]
    pub name: Option<String>,
    /// `redis://[user[:password]@]host[:port][/db]`.
    pub url: super::DbUrl,
    /// The pattern the lock keys match, as `SCAN MATCH` takes it (`leader:*`); a prefix
    /// without a wildcard gets `*` added. Every key when not given.
    #[serde(default)]
    pub prefix: String,
    /// Refuse admin actions on this source.
    #[serde(default)]
    pub read_only: bool,
    /// Read the password from this environment variable instead of the URL...
    #[serde(default)]
    pub password_env: Option<String>,
    /// ...or from the first line of this file.
    #[serde(default)]
    pub password_file: Option<PathBuf>,
    /// `rediss://` only: the CA certificate (PEM) that signs the server's (the system's
    /// roots without it).
    #[serde(default)]
    pub cacert: Option<PathBuf>,
    /// `rediss://` only: a client certificate (PEM), for `tls-auth-clients yes`; with `key`.
    #[serde(default)]
    pub cert: Option<PathBuf>,
    #[serde(default)]
    pub key: Option<PathBuf>,
}

/// Where a checked source connects to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedisTarget {
    pub host: String,
    pub port: u16,
    pub db: i64,
    pub user: Option<String>,
    /// The password the URL itself holds (discouraged: `ps` shows it).
    pub url_password: Option<String>,
    /// `rediss://`: TLS.
    pub tls: bool,
}

impl RedisSource {
    /// A source from `--redis URL` and a `--prefix`.
    pub fn from_url(url: &str, prefix: Option<String>) -> Result<RedisSource, String> {
        let mut src = RedisSource {
            name: None,
            url: super::DbUrl(url.to_string()),
            prefix: prefix.unwrap_or_default(),
            read_only: false,
            password_env: None,
            password_file: None,
            cacert: None,
            cert: None,
            key: None,
        };
        src.check()?;
        Ok(src)
    }

    /// Checks the URL and normalizes the pattern, before anything is dialled.
    pub fn check(&mut self) -> Result<(), String> {
        self.target()?;
        if self.password_env.is_some() && self.password_file.is_some() {
            return Err("give password_env or password_file, not both".to_string());
        }
        self.prefix = pattern_of(&self.prefix)?;
        self.check_tls("")
    }

    /// The TLS files can work: readable PEM, cert and key a matching pair, and given only
    /// with `rediss://`. `dashes` is "--redis-" for flags, "" for config keys, so the
    /// message names what the user wrote.
    pub fn check_tls(&self, dashes: &str) -> Result<(), String> {
        crate::pem::check_pair(dashes, self.cert.as_deref(), self.key.as_deref())?;
        if let Some(ca) = &self.cacert {
            crate::pem::certificates(&format!("{dashes}cacert"), ca)?;
        }
        let files = self.cacert.is_some() || self.cert.is_some();
        if files && !self.target()?.tls {
            return Err(format!(
                "{dashes}cacert/{dashes}cert/{dashes}key are for TLS, and {} is redis:// \
                 (plain): write rediss://host:port for the server's tls-port",
                self.url.redacted()
            ));
        }
        Ok(())
    }

    /// The server, database and user of the URL. Errors show the URL without its password.
    pub fn target(&self) -> Result<RedisTarget, String> {
        let shown = self.url.redacted();
        if several_hosts(&self.url.0) {
            return Err(format!(
                "--redis {shown}: one server per --redis: electop follows the lock keys of \
                 one server; repeat --redis for each (a lock taken with Redlock on several \
                 masters shows as one election per server)"
            ));
        }
        let u = url::Url::parse(&self.url.0).map_err(|e| {
            format!("--redis {shown}: not a URL ({e}); write redis://host:port[/db]")
        })?;
        let tls = match u.scheme() {
            "redis" => false,
            "rediss" => true,
            "redis+sentinel" | "rediss+sentinel" => {
                return Err(format!(
                    "--redis {shown}: Redis Sentinel is not supported: a sentinel holds no lock \
                 keys; give the master it names (redis-cli -p 26379 SENTINEL \
                 get-master-addr-by-name NAME) as redis://host:port"
                ));
            }
            other => {
                return Err(format!(
                    "--redis {shown}: `{other}://` is not a Redis URL; write redis://host:port[/db] \
                     (rediss:// for TLS)"
                ));
            }
        };
        let host = u
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| format!("--redis {shown}: no host; write redis://host:port[/db]"))?;
        let db = match u.path().trim_start_matches('/') {
            "" => 0,
            d => d.parse::<i64>().ok().filter(|d| *d >= 0).ok_or_else(|| {
                format!(
                    "--redis {shown}: the database `/{d}` is not a number (redis://host:port/0)"
                )
            })?,
        };
        if u.query().is_some() || u.fragment().is_some() {
            return Err(format!(
                "--redis {shown}: nothing may follow the database number"
            ));
        }
        let decode = |s: &str| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8_lossy()
                .into_owned()
        };
        Ok(RedisTarget {
            host: host.trim_matches(['[', ']']).to_string(),
            port: u.port().unwrap_or(6379),
            db,
            user: Some(u.username()).filter(|s| !s.is_empty()).map(decode),
            url_password: u.password().map(decode),
            tls,
        })
    }
}

/// `redis://h1:1,h2:2`: several servers in one URL (as Sentinel and cluster clients write
/// them).
fn several_hosts(url: &str) -> bool {
    let rest = url.split_once("://").map(|(_, r)| r).unwrap_or(url);
    let authority = rest.split('/').next().unwrap_or("");
    authority.rsplit('@').next().unwrap_or("").contains(',')
}

/// The `SCAN MATCH` pattern of a `--prefix`: as given when it holds a wildcard, else the
/// prefix followed by `*`; every key (`*`) when empty.
fn pattern_of(prefix: &str) -> Result<String, String> {
    if prefix.chars().any(char::is_control) {
        return Err(format!(
            "the key pattern `{}` holds control characters",
            crate::model::escape_bytes(prefix.as_bytes())
        ));
    }
    let wild = prefix.contains(['*', '?', '[']);
    Ok(if wild {
        prefix.to_string()
    } else {
        format!("{prefix}*")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_file_source_is_checked_and_named_redis1() {
        let text = "[[source]]\nkind = \"redis\"\nurl = \"redis://127.0.0.1:6379/1\"\n\
                    prefix = \"leader:\"\npassword_env = \"REDIS_PW\"\n\n\
                    [[context]]\nname = \"cache\"\nsources = [\"redis1\"]\n";
        let c = crate::config::Config::parse(text, std::path::Path::new("c.toml")).expect("ok");
        let crate::config::SourceConfig::Redis(r) = &c.sources[0] else {
            panic!("a redis source: {c:?}")
        };
        assert_eq!(
            (r.prefix.as_str(), r.name.as_deref()),
            ("leader:*", Some("redis1"))
        );
        assert_eq!(c.select(Some("cache")).expect("context").sources.len(), 1);
        let bad = "[[source]]\nkind = \"redis\"\nurl = \"redis://h:1\"\ncacert = \"ca.pem\"\n";
        let e = crate::config::Config::parse(bad, std::path::Path::new("c.toml"))
            .expect_err("a CA for a plain URL");
        assert!(
            e.to_string().contains("[[source]] #1") && e.to_string().contains("ca.pem"),
            "{e}"
        );
    }

    #[test]
    fn urls_patterns_and_passwords() {
        let s = RedisSource::from_url(
            "redis://app:s3cret@127.0.0.1:6400/2",
            Some("leader:".into()),
        )
        .expect("valid");
        assert_eq!(s.prefix, "leader:*");
        let t = s.target().expect("valid");
        assert_eq!((t.user.as_deref(), t.db), (Some("app"), 2));
        assert_eq!(t.url_password.as_deref(), Some("s3cret"));
        assert!(!format!("{s:?}").contains("s3cret"), "Debug hides it");
        let s =
            RedisSource::from_url("redis://localhost", Some("lock:*:owner".into())).expect("ok");
        assert_eq!(s.prefix, "lock:*:owner");
        let t = RedisSource::from_url("rediss://h:1", None).expect("TLS");
        assert!(t.target().expect("valid").tls);
        assert_eq!(
            RedisSource::from_url("redis://h:1", None)
                .expect("ok")
                .prefix,
            "*"
        );
        for (bad, says) in [
            (
                "redis+sentinel://u:pw@h:26379/mymaster",
                "Sentinel is not supported",
            ),
            ("redis://u:pw@h1:1,h2:2/0", "one server per --redis"),
            ("http://h:1", "not a Redis URL"),
            ("redis://h:1/x", "not a number"),
            ("redis://:pw@h:1/0?x=1", "nothing may follow"),
        ] {
            let e = RedisSource::from_url(bad, None).expect_err(bad);
            assert!(e.contains(says) && !e.contains("pw"), "{bad}: {e}");
        }
    }
}
