//! etcd sources: endpoints, scheme and preset, authentication and TLS.

use std::path::PathBuf;

use serde::Deserialize;

use super::endpoint::check_endpoint;
use crate::model::Scheme;
use crate::presets::Preset;

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct EtcdSource {
    /// What the source is called on screen and in `SOURCE/NAME`; `etcd1`, `etcd2`... when
    /// not named.
    #[serde(default)]
    pub name: Option<String>,
    /// `host:port` of each etcd member.
    pub endpoints: Vec<String>,
    /// Key prefix the elections live under.
    #[serde(default)]
    pub prefix: String,
    /// `etcd-election` or `etcd-lease-key`; guessed from the keys when absent.
    #[serde(default)]
    pub scheme: Option<Scheme>,
    /// A system whose keys electop knows: `patroni` (scheme patroni, prefix `/service/`
    /// unless given). `electop presets` lists them.
    #[serde(default)]
    pub preset: Option<Preset>,
    /// etcd-lease-key only: prefix of the candidate registry, `<registry><name>/<id>`.
    #[serde(default)]
    pub registry: Option<String>,
    /// Refuse admin actions on this source.
    #[serde(default)]
    pub read_only: bool,
    /// etcd user, when etcd has authentication enabled.
    #[serde(default)]
    pub user: Option<String>,
    /// The user's password from this environment variable...
    #[serde(default)]
    pub password_env: Option<String>,
    /// ...or from the first line of this file.
    #[serde(default)]
    pub password_file: Option<PathBuf>,
    /// TLS: the CA certificate(s), PEM, that sign the members' certificates.
    #[serde(default)]
    pub cacert: Option<PathBuf>,
    /// TLS: the client certificate, PEM, for etcd's `--client-cert-auth`; needs `key`.
    #[serde(default)]
    pub cert: Option<PathBuf>,
    /// TLS: the client certificate's private key, PEM.
    #[serde(default)]
    pub key: Option<PathBuf>,
    /// TLS without checking the server's certificate: encrypted, not authenticated (labs).
    #[serde(default)]
    pub insecure_skip_tls_verify: bool,
}

impl EtcdSource {
    /// Sets the scheme and default prefix of the preset; a scheme given beside it must agree.
    pub fn apply_preset(&mut self) -> Result<(), String> {
        let Some(preset) = self.preset else {
            return Ok(());
        };
        let namespace = preset
            .etcd_namespace()
            .ok_or_else(|| format!("preset {preset} is not etcd keys: {}", preset.needs()))?;
        let scheme = preset.spec().scheme;
        match self.scheme {
            None => self.scheme = Some(scheme),
            Some(s) if s == scheme => {}
            Some(other) => {
                return Err(format!(
                    "preset {preset} reads {preset}'s own layout; scheme {other} contradicts it"
                ));
            }
        }
        if self.prefix.is_empty() {
            self.prefix = namespace.to_string();
        }
        Ok(())
    }

    /// TLS is on for an `https://` endpoint, or for any endpoint once a TLS setting is
    /// given (then a bare `host:port` means TLS, as with etcdctl).
    pub fn uses_tls(&self, endpoint: &str) -> bool {
        if endpoint.starts_with("https://") {
            return true;
        }
        !endpoint.starts_with("http://") && self.tls_configured()
    }

    fn tls_configured(&self) -> bool {
        self.cacert.is_some()
            || self.cert.is_some()
            || self.key.is_some()
            || self.insecure_skip_tls_verify
    }

    /// The TLS settings can work: files readable PEM, cert and key given together and
    /// matching, no plain `http://` endpoint beside them. `dashes` is "--" when the settings
    /// came from flags, "" from the config file, so the message names what the user wrote.
    pub fn check_tls(&self, dashes: &str) -> Result<(), String> {
        crate::pem::check_pair(dashes, self.cert.as_deref(), self.key.as_deref())?;
        if let Some(ca) = &self.cacert {
            crate::pem::certificates(&format!("{dashes}cacert"), ca)?;
        }
        if self.tls_configured()
            && let Some(plain) = self.endpoints.iter().find(|e| e.starts_with("http://"))
        {
            return Err(format!(
                "endpoint {plain} is plain text but TLS settings are given: write https:// (or host:port)"
            ));
        }
        Ok(())
    }
}

/// A `[[source]] kind = "etcd"` entry of the config file: endpoints checked and normalised
/// (as [`check_endpoint`] returns them), the preset applied, the scheme an etcd one, the TLS
/// settings workable.
pub(crate) fn check_file_source(e: &mut EtcdSource) -> Result<(), String> {
    for ep in e.endpoints.iter_mut() {
        *ep = check_endpoint(ep).map_err(|err| err.to_string())?;
    }
    e.apply_preset()?;
    if e.endpoints.is_empty() {
        return Err("`endpoints` is empty; give at least one \"host:port\"".to_string());
    }
    if let Some(scheme) = e.scheme
        && !matches!(
            scheme,
            Scheme::EtcdElection | Scheme::EtcdLeaseKey | Scheme::Patroni
        )
    {
        return Err(format!(
            "scheme `{scheme}` is not an etcd scheme; use etcd-election, etcd-lease-key or patroni"
        ));
    }
    e.check_tls("")?;
    if e.registry.is_some() && e.scheme == Some(Scheme::EtcdElection) {
        return Err("`registry` only applies to scheme etcd-lease-key".to_string());
    }
    Ok(())
}
