//! Each request's deadline on a member's channel. tonic's own (`Endpoint::timeout`) ends a
//! request with a status that reads "Timeout expired (Cancelled)" and keeps no trace of how
//! long it waited; this one fails with [`NoAnswer`], which says both, so the error can be put
//! as "no answer from HOST:PORT within 2s".

use std::time::Duration;

use tonic::transport::Channel;
use tower::ServiceExt;

/// A request the member did not answer in time.
#[derive(Debug, thiserror::Error)]
#[error("no answer within {within:?}")]
pub(crate) struct NoAnswer {
    pub within: Duration,
}

/// `channel`, each request failing with [`NoAnswer`] after `within` (the response's head,
/// as tonic's timeout: a watch stream may stay open for as long as it lives).
pub(super) fn with_deadline(channel: Channel, within: Duration) -> etcd_client::Channel {
    let timed = channel.map_future(move |answer| async move {
        match tokio::time::timeout(within, answer).await {
            Ok(r) => r.map_err(tower::BoxError::from),
            Err(_) => Err(Box::new(NoAnswer { within }) as tower::BoxError),
        }
    });
    etcd_client::Channel::Custom(tower::util::BoxCloneSyncService::new(timed))
}
