//! The one TLS crypto provider electop uses, ring. `zookeeper-client`'s `tls` feature also
//! compiles rustls's aws-lc-rs provider in, and that client builds its config with the
//! process's default provider, which two compiled-in providers leave undecided (rustls
//! panics); so ring is installed as the default before anything dials.

use std::sync::Arc;

use rustls::crypto::CryptoProvider;

/// The provider every rustls config of electop's is built with.
pub(crate) fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Makes ring the process's default provider. Idempotent: a later call (or one after
/// another part installed it) finds it there and leaves it.
pub fn install_default_provider() {
    if CryptoProvider::get_default().is_none() {
        // Racing another thread's install is fine: either way one is installed.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}
