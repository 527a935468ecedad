//! What went wrong talking to Redis, in words that name the server and the fix; never the
//! password.

use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub(crate) enum RedisError {
    #[error(
        "redis {0}: connection refused (is redis-server running there? check the host and port)"
    )]
    Refused(String),
    #[error("redis {0}: no answer within {1:?}")]
    Timeout(String, Duration),
    #[error(
        "redis {0}: authentication failed ({1}); check the user and --password-env/--password-file"
    )]
    Auth(String, String),
    /// A TLS problem, in words naming the setting to change (`tls.rs`).
    #[error("{0}")]
    Tls(String),
    /// The ACL user may not run a command electop needs.
    #[error(
        "redis {0}: the user may not run {1} ({2}); electop needs, on the lock keys: \
         +ping +scan +get +pttl +psubscribe (and +config|get to use keyspace events; +eval \
         +del for reelect), e.g. ACL SETUSER <user> +ping +@read +psubscribe +config|get \
         ~<pattern> &__keyspace@<db>__:<pattern>"
    )]
    NoPerm(String, String, String),
    /// A server electop does not read as one source (a cluster node, a sentinel).
    #[error("redis {0}: {1}")]
    Unsupported(String, String),
    /// Another kind of server listens there (etcd, PostgreSQL): what it answered.
    #[error("redis {0}: the server there is not Redis: {1}; is this Redis's port (6379)?")]
    NotRedis(String, String),
    #[error("redis {0}: the connection was lost")]
    Lost(String),
    #[error("redis {0}: {1}")]
    Other(String, String),
    #[error("{0}")]
    Config(String),
}

impl RedisError {
    pub(crate) fn from_client(e: &redis::RedisError, addr: &str) -> RedisError {
        let addr = addr.to_string();
        if e.is_connection_refusal() {
            return RedisError::Refused(addr);
        }
        let text = e.to_string();
        let code = e.code().unwrap_or("");
        if matches!(e.kind(), redis::ErrorKind::AuthenticationFailed)
            || matches!(code, "WRONGPASS" | "NOAUTH")
        {
            return RedisError::Auth(addr, text);
        }
        if e.to_string().contains("executing the script can't run") {
            let detail = e.detail().unwrap_or("").to_string();
            let what = "a command of the script (GET, DEL)".to_string();
            return RedisError::NoPerm(addr, what, detail);
        }
        if code == "NOPERM" {
            let detail = e.detail().unwrap_or("NOPERM").to_string();
            return RedisError::NoPerm(addr, command_in(&detail), format!("NOPERM {detail}"));
        }
        if e.is_connection_dropped() || e.is_io_error() {
            return RedisError::Lost(addr);
        }
        RedisError::Other(addr, text)
    }

    /// Will not go away by waiting (a refused password).
    pub(crate) fn lasting(&self) -> bool {
        matches!(
            self,
            RedisError::Auth(..)
                | RedisError::Config(_)
                | RedisError::Tls(_)
                | RedisError::NoPerm(..)
                | RedisError::Unsupported(..)
                | RedisError::NotRedis(..)
        )
    }
}

impl crate::backend::engine::drive::StoreError for RedisError {
    fn failure(&self) -> crate::backend::engine::lifecycle::Failure {
        use crate::backend::engine::lifecycle::Failure;
        if self.lasting() {
            Failure::Lasting
        } else {
            Failure::Transient
        }
    }

    /// A refused connection ends a one-shot read at once, as a SQL or etcd one does.
    fn ends_one_shot(&self) -> bool {
        matches!(self, RedisError::Refused(_)) || self.lasting()
    }
}

/// The command a `NOPERM` names (`... permissions to run the 'pttl' command`), upper case;
/// "a command" when it names none.
pub(crate) fn command_in(detail: &str) -> String {
    detail
        .split('\'')
        .nth(1)
        .map(str::to_uppercase)
        .unwrap_or_else(|| "a command".to_string())
}
