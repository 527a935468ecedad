//! SQL over TLS. The URL's own parameters choose it, as libpq and the MySQL clients spell
//! them: `sslmode=` with `sslrootcert=` (PostgreSQL), `ssl-mode=` with `ssl-ca=`
//! (MySQL/MariaDB), and sqlx (with rustls) does the handshake. Here they are checked before
//! anything is dialled, and a failed handshake is put in words: which check failed and which
//! parameter changes it. Only file paths are ever named, never what a key file holds.

use rustls::CertificateError;

use super::dialect::Dialect;
use super::errors::SqlError;
use crate::config::sql_tls::{Names, Params, names, params};

/// Every TLS failure message holds this, so the operator reads at once what kind of failure
/// it is (its kind, `SqlError::Tls`, is what decides it is lasting).
pub(crate) const MARKER: &str = ": TLS: ";

/// Before connecting: every certificate file the URL names can be read. A missing one is a
/// lasting TLS error naming the parameter and the path; sqlx would report it as an I/O
/// error, alike to an unreachable server.
pub(crate) fn check_files(url: &str, d: Dialect, where_: &str) -> Result<(), SqlError> {
    let Some(n) = names(d) else {
        return Ok(());
    };
    let p = params(url);
    for (param, path) in [(n.ca, &p.ca), (n.cert, &p.cert), (n.key, &p.key)] {
        let Some(path) = path else { continue };
        // sqlx also takes the PEM text itself in place of a path.
        if path.trim_start().starts_with("-----BEGIN") {
            continue;
        }
        if let Err(e) = std::fs::File::open(path) {
            return Err(SqlError::Tls(format!(
                "{where_}{MARKER}cannot read {param}={path}: {e}"
            )));
        }
    }
    Ok(())
}

/// A failed TLS connection in words, or `None` when `e` is not about TLS.
pub(crate) fn describe(e: &sqlx::Error, d: Dialect, url: &str, where_: &str) -> Option<String> {
    let n = names(d)?;
    let p = params(url);
    let why = match e {
        sqlx::Error::Tls(inner) => match inner.downcast_ref::<rustls::Error>() {
            Some(r) => rustls_words(r, &n, &p, url),
            None => tls_words(&inner.to_string(), &n, &p),
        },
        sqlx::Error::Io(io) => {
            let r = io.get_ref()?.downcast_ref::<rustls::Error>()?;
            rustls_words(r, &n, &p, url)
        }
        _ => return None,
    };
    Some(format!("{where_}{MARKER}{why}"))
}

/// sqlx's own TLS errors, which come as text.
fn tls_words(text: &str, n: &Names, p: &Params) -> String {
    if text.contains("does not support TLS") {
        let mode = p.mode.as_deref().unwrap_or("?");
        return format!(
            "the server does not offer TLS, but {}={mode} asks for it; turn TLS on in the server, or use {}=disable to connect in plain text",
            n.mode, n.mode,
        );
    }
    if text.starts_with("Invalid certificate") {
        return format!(
            "the CA file in {}={} holds no readable PEM certificate",
            n.ca,
            p.ca.as_deref().unwrap_or("?")
        );
    }
    format!(
        "{text} (check {}, {}, {} and {})",
        n.mode, n.ca, n.cert, n.key
    )
}

fn rustls_words(e: &rustls::Error, n: &Names, p: &Params, url: &str) -> String {
    let ca = match &p.ca {
        Some(path) => format!("the CA in {}={path}", n.ca),
        None => format!(
            "the public CAs electop knows (give yours with {}=FILE)",
            n.ca
        ),
    };
    let cert = match e {
        rustls::Error::InvalidCertificate(c) => c,
        rustls::Error::AlertReceived(alert) => {
            return format!(
                "the server refused the handshake ({alert:?}); if it asks for a client certificate, give {}=FILE and {}=FILE",
                n.cert, n.key
            );
        }
        other => return format!("the handshake failed: {other}"),
    };
    match cert {
        CertificateError::UnknownIssuer => {
            format!("the server's certificate is signed by an unknown CA (not by {ca})")
        }
        CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
            let host = url::Url::parse(url)
                .ok()
                .and_then(|u| u.host_str().map(str::to_string))
                .unwrap_or_default();
            format!(
                "the server's certificate is not valid for the host name `{host}`; connect by a name the certificate holds, or use {} to check the CA only",
                n.verify_ca
            )
        }
        CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
            "the server's certificate has expired".to_string()
        }
        CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
            "the server's certificate is not valid yet; check the clocks".to_string()
        }
        CertificateError::Revoked => "the server's certificate has been revoked".to_string(),
        other => format!("the server's certificate was refused: {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::sql_tls::{TlsConfigError, check};

    const PG: Dialect = Dialect::Postgres;
    const MY: Dialect = Dialect::MySql;

    #[test]
    fn certificate_files_must_be_readable() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ca = dir.path().join("ca.pem");
        std::fs::write(&ca, "-----BEGIN CERTIFICATE-----\n").expect("ca");
        let ok = format!(
            "postgres://h/db?sslmode=verify-ca&sslrootcert={}",
            ca.display()
        );
        assert_eq!(check(&ok, PG), Ok(()));
        assert_eq!(check_files(&ok, PG, "pg"), Ok(()));
        let missing = format!("mysql://h/db?ssl-ca={}/nope.pem", dir.path().display());
        assert_eq!(
            check(&missing, MY),
            Ok(()),
            "files are read when connecting"
        );
        let e = check_files(&missing, MY, "my").expect_err("missing");
        assert_eq!(e.kind(), crate::backend::sql::errors::SqlErrorKind::Tls);
        let e = e.to_string();
        assert!(
            e.starts_with("my: TLS: cannot read ssl-ca=") && e.contains("nope.pem"),
            "{e}"
        );
        let half = format!("postgres://h/db?sslcert={}", ca.display());
        assert_eq!(
            check(&half, PG),
            Err(TlsConfigError::Pair("sslcert", "sslkey"))
        );
    }

    fn io_error(e: rustls::Error) -> sqlx::Error {
        sqlx::Error::Io(std::io::Error::new(std::io::ErrorKind::InvalidData, e))
    }

    #[test]
    fn handshake_failures_say_which() {
        let url = "postgres://u@db.internal/x?sslmode=verify-full&sslrootcert=/etc/ca.pem";
        let said = |e: sqlx::Error| describe(&e, PG, url, "pg").expect("about TLS");
        let unknown = said(io_error(CertificateError::UnknownIssuer.into()));
        assert!(
            unknown.contains("unknown CA") && unknown.contains("/etc/ca.pem"),
            "{unknown}"
        );
        let name = said(io_error(CertificateError::NotValidForName.into()));
        assert!(
            name.contains("`db.internal`") && name.contains("verify-ca"),
            "{name}"
        );
        let expired = said(io_error(CertificateError::Expired.into()));
        assert!(expired.contains("expired"), "{expired}");
        let plain = said(sqlx::Error::Tls("server does not support TLS".into()));
        assert!(
            plain.contains("does not offer TLS") && plain.contains("sslmode=verify-full"),
            "{plain}"
        );
        for m in [unknown, name, expired, plain] {
            assert!(m.starts_with("pg: TLS: "), "{m}");
        }
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert_eq!(describe(&sqlx::Error::Io(refused), PG, url, "pg"), None);
        let my = describe(
            &io_error(CertificateError::NotValidForName.into()),
            MY,
            "mysql://h/x",
            "my",
        )
        .expect("about TLS");
        assert!(my.contains("ssl-mode=VERIFY_CA"), "{my}");
    }
}
