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
        if e.is_connection_dropped() || e.is_io_error() {
            return RedisError::Lost(addr);
        }
        RedisError::Other(addr, text)
    }

    /// Will not go away by waiting (a refused password).
    pub(crate) fn lasting(&self) -> bool {
        matches!(self, RedisError::Auth(..) | RedisError::Config(_))
    }
}
