//! PEM files for TLS: certificates and private keys, read with errors that name the file and
//! say what is wrong with it. A leaf module (config validation and the etcd connector both
//! use it), and nothing read from a key file ever reaches a message: a parse error's text
//! can quote the file, so only its kind is told.

use std::path::Path;

use rustls_pki_types::pem::{Error as PemError, PemObject};
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

/// Every certificate in the PEM file at `path`; `flag` (`--cacert`, `--cert`) names the
/// setting in messages.
pub(crate) fn certificates(
    flag: &str,
    path: &Path,
) -> Result<Vec<CertificateDer<'static>>, String> {
    let shown = path.display();
    let iter = CertificateDer::pem_file_iter(path).map_err(|e| unreadable(flag, path, e))?;
    let certs = iter
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{flag} {shown}: {}", pem_problem(e)))?;
    if certs.is_empty() {
        return Err(format!(
            "{flag} {shown}: not a PEM certificate file (no -----BEGIN CERTIFICATE----- block)"
        ));
    }
    Ok(certs)
}

/// The first private key (PKCS#8, PKCS#1 or SEC1) in the PEM file at `path`.
pub(crate) fn private_key(flag: &str, path: &Path) -> Result<PrivateKeyDer<'static>, String> {
    let shown = path.display();
    match PrivateKeyDer::from_pem_file(path) {
        Ok(k) => Ok(k),
        Err(PemError::NoItemsFound) => Err(format!(
            "{flag} {shown}: not a PEM private key file (no -----BEGIN ... PRIVATE KEY----- block)"
        )),
        Err(PemError::Io(e)) => Err(unreadable(flag, path, PemError::Io(e))),
        Err(e) => Err(format!("{flag} {shown}: {}", pem_problem(e))),
    }
}

/// A client certificate and its key, given together (`dashes` names them as the user wrote
/// them: "--", "--zk-", or "" for config keys), readable and a matching pair.
pub(crate) fn check_pair(
    dashes: &str,
    cert: Option<&Path>,
    key: Option<&Path>,
) -> Result<(), String> {
    match (cert, key) {
        (Some(cert), None) => Err(format!(
            "{dashes}cert {} needs {dashes}key: the client certificate's private key",
            cert.display()
        )),
        (None, Some(key)) => Err(format!(
            "{dashes}key {} needs {dashes}cert: the client certificate it belongs to",
            key.display()
        )),
        (Some(cert), Some(key)) => check_identity(dashes, cert, key),
        (None, None) => Ok(()),
    }
}

/// Checks a client certificate and key as a pair: both readable, and the key is the
/// certificate's (a mismatch would otherwise only show as a refused handshake). `dashes` is
/// "--" for flags, "" for config keys.
pub(crate) fn check_identity(dashes: &str, cert: &Path, key: &Path) -> Result<(), String> {
    let chain = certificates(&format!("{dashes}cert"), cert)?;
    let der = private_key(&format!("{dashes}key"), key)?;
    let provider = rustls::crypto::ring::default_provider();
    let signer = provider.key_provider.load_private_key(der).map_err(|_| {
        format!(
            "{dashes}key {}: a key type rustls cannot use (RSA, ECDSA P-256/P-384 or Ed25519 work)",
            key.display()
        )
    })?;
    let certified = rustls::sign::CertifiedKey::new(chain, signer);
    match certified.keys_match() {
        // Unknown: the key cannot say its public half; the server will judge.
        Ok(()) | Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::Unknown)) => Ok(()),
        Err(_) => Err(format!(
            "{dashes}key {} is not the private key of {dashes}cert {}",
            key.display(),
            cert.display()
        )),
    }
}

fn unreadable(flag: &str, path: &Path, e: PemError) -> String {
    match e {
        PemError::Io(io) => format!("{flag} {}: cannot read: {io}", path.display()),
        other => format!("{flag} {}: {}", path.display(), pem_problem(other)),
    }
}

/// What is wrong, in words, without quoting the file.
fn pem_problem(e: PemError) -> String {
    match e {
        PemError::Io(io) => format!("cannot read: {io}"),
        PemError::MissingSectionEnd { .. } => "a PEM block has no -----END----- line".to_string(),
        PemError::IllegalSectionStart { .. } => "a malformed -----BEGIN----- line".to_string(),
        PemError::Base64Decode(_) => "a PEM block is not valid base64".to_string(),
        PemError::SectionTooLarge => "a PEM block is larger than 256 MB".to_string(),
        _ => "not valid PEM".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> tempfile::NamedTempFile {
        let f = tempfile::NamedTempFile::new().expect("temp file");
        std::fs::write(f.path(), text).expect("write");
        f
    }

    #[test]
    fn problems_name_the_file_and_never_its_contents() {
        let missing = Path::new("/nonexistent/ca.pem");
        let msg = certificates("--cacert", missing).expect_err("missing");
        assert!(
            msg.contains("/nonexistent/ca.pem") && msg.contains("cannot read"),
            "{msg}"
        );

        let text = file("hello, not a certificate\n");
        let msg = certificates("--cacert", text.path()).expect_err("not PEM");
        assert!(msg.contains("not a PEM certificate file"), "{msg}");
        assert!(msg.contains(&text.path().display().to_string()), "{msg}");

        let secret =
            "-----BEGIN PRIVATE KEY-----\nc2VjcmV0LXNlY3JldA!!\n-----END PRIVATE KEY-----\n";
        let key = file(secret);
        let msg = private_key("--key", key.path()).expect_err("bad base64");
        assert!(msg.contains("not valid base64"), "{msg}");
        assert!(!msg.contains("c2VjcmV0"), "key material in {msg}");

        let msg = private_key("--key", text.path()).expect_err("no key");
        assert!(msg.contains("not a PEM private key file"), "{msg}");
    }
}
