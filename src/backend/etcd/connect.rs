//! Connections to etcd members, one member per client: electop picks the member itself so a
//! dead one is skipped (and retried in the background) instead of failing the whole client.

use std::time::Duration;

use etcd_client::Client;

use super::error::EtcdError;
use crate::config::EtcdSource;

/// A client bound to one member; `status` has already answered, so the member is up.
pub async fn connect_member(
    cfg: &EtcdSource,
    endpoint: &str,
    timeout: Duration,
) -> Result<Client, EtcdError> {
    let options = cfg
        .connect_options(timeout)
        .map_err(|m| EtcdError::lasting(endpoint, m))?;
    let fut = async {
        let mut client = Client::connect([endpoint], Some(options))
            .await
            .map_err(|e| EtcdError::from_client(endpoint, e))?;
        client
            .status()
            .await
            .map_err(|e| EtcdError::from_client(endpoint, e))?;
        Ok(client)
    };
    match tokio::time::timeout(timeout, fut).await {
        Ok(r) => r,
        Err(_) => Err(EtcdError::Timeout {
            endpoint: endpoint.to_string(),
            timeout,
        }),
    }
}

/// The first member that answers, trying them in order from `start`. A lasting error (TLS,
/// credentials) is returned at once: another member will refuse the same way.
pub async fn connect_any(
    cfg: &EtcdSource,
    start: usize,
    timeout: Duration,
) -> Result<(Client, usize), EtcdError> {
    let n = cfg.endpoints.len();
    let mut last = None;
    for k in 0..n {
        let i = (start + k) % n;
        match connect_member(cfg, &cfg.endpoints[i], timeout).await {
            Ok(c) => return Ok((c, i)),
            Err(e) if e.is_lasting() => return Err(e),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| EtcdError::lasting("-", "no etcd endpoints configured")))
}
