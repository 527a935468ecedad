//! What went wrong with a ZooKeeper source, in ZooKeeper's own words.

use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub(crate) enum ZkError {
    #[error("no ZooKeeper member answered at {0} (connection refused, or nothing listening)")]
    NoHosts(String),
    /// Every member refused the TCP connection: nothing listens there now.
    #[error(
        "nothing listens at {0}: every member refused the connection (is ZooKeeper running \
         there? check the host and port)"
    )]
    Refused(String),
    #[error("no answer from ZooKeeper at {0} within {1:?}")]
    Timeout(String, Duration),
    #[error("session expired (ZooKeeper ended electop's session); starting a new one")]
    SessionExpired,
    #[error("connection to ZooKeeper lost; reconnecting")]
    ConnectionLoss,
    /// The member electop reads through took longer than a read may: it moves to another.
    #[error("ZooKeeper member {0} gave no answer within {1:?}; reading through another member")]
    Stuck(String, Duration),
    /// The member probe found the member electop reads through down: it moves to another.
    #[error("ZooKeeper member {0} is down (electop's probe); reading through another member")]
    MemberDown(String),
    #[error(
        "ZooKeeper refused to let electop read {0} (NoAuth: the node's ACL does not grant READ \
         to electop's identity). Give --zk-auth env:VAR or file:PATH naming a user:password \
         its digest ACL grants, or grant electop READ on it (zkCli: getAcl {0} shows who may)"
    )]
    NoAuth(String),
    #[error(
        "chroot {0} does not exist on ZooKeeper at {1}: every path below it answers \"no node\". \
         Check the /chroot part of --zk (zkCli: ls / lists what there is)"
    )]
    NoChroot(String, String),
    #[error(
        "not a ZooKeeper server at {0}: it did not answer ZooKeeper's handshake ({1}). Check \
         the host:port is ZooKeeper's clientPort (2181 by default)"
    )]
    NotZooKeeper(String, String),
    #[error("{0}")]
    Credentials(String),
    /// A TLS failure found by electop's own handshake (`tls::diagnose`), in words.
    #[error("{0}")]
    Tls(String),
    #[error("more than {0} znodes under {1}; give a narrower --prefix")]
    TooMany(usize, String),
    #[error("ZooKeeper: {0}")]
    Other(String),
}

impl crate::backend::engine::drive::StoreError for ZkError {
    /// A TLS mistake stays until the settings change; a member that stops answering is left
    /// for another at once (the new session is read afresh: said as an outage, without the
    /// wait); anything else is retried after the wait.
    fn failure(&self) -> crate::backend::engine::lifecycle::Failure {
        use crate::backend::engine::lifecycle::Failure;
        match self {
            ZkError::Tls(_) => Failure::Lasting,
            ZkError::Stuck(..) | ZkError::MemberDown(_) | ZkError::ConnectionLoss => Failure::Moved,
            _ => Failure::Transient,
        }
    }

    /// TLS cannot work, or nothing listens (every member refused the TCP connection):
    /// `status` says so at once. The client says `NoHosts` for a server still starting up
    /// too (it takes the connection, then closes it), which is waited out.
    fn ends_one_shot(&self) -> bool {
        matches!(self, ZkError::Tls(_) | ZkError::Refused(_))
    }
}

impl ZkError {
    /// A client error while talking to `at` (the connect string), for the path `path`.
    pub(crate) fn from_client(
        e: zookeeper_client::Error,
        at: &str,
        path: &str,
        wait: Duration,
    ) -> ZkError {
        use zookeeper_client::Error as E;
        match e {
            E::NoHosts => ZkError::NoHosts(at.to_string()),
            E::Timeout => ZkError::Timeout(at.to_string(), wait),
            E::SessionExpired => ZkError::SessionExpired,
            E::ConnectionLoss => ZkError::ConnectionLoss,
            E::NoAuth | E::AuthFailed => ZkError::NoAuth(path.to_string()),
            // The client's own connect deadline (a member that accepts and then says
            // nothing, like a frozen one) comes as a message, not a variant.
            other if other.to_string().starts_with("no response from connection") => {
                ZkError::Timeout(at.to_string(), wait)
            }
            // A connection the server closed (an expired session's, when electop was frozen
            // past it) comes as the socket's own error: told as the loss it is.
            other if broken_connection(&other.to_string()) => ZkError::ConnectionLoss,
            other => ZkError::Other(other.to_string()),
        }
    }
}

/// Whether a client error is the socket going (as the OS words it), not ZooKeeper's answer.
fn broken_connection(text: &str) -> bool {
    [
        "Broken pipe",
        "Connection reset",
        "Connection aborted",
        "early eof",
    ]
    .iter()
    .any(|words| text.contains(words))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_socket_is_told_as_a_lost_connection_and_other_words_stay_as_they_are() {
        assert!(broken_connection("Broken pipe (os error 32)"));
        assert!(broken_connection("Connection reset by peer (os error 104)"));
        assert!(!broken_connection("node not exists"));
        assert!(!broken_connection("unexpected error: bad frame"));
        assert_eq!(
            ZkError::ConnectionLoss.to_string(),
            "connection to ZooKeeper lost; reconnecting"
        );
    }
}
