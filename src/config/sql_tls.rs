//! The TLS parameters of a database URL, checked as written when the config loads: a known
//! mode for the dialect, a client certificate together with its key. The backend reads the
//! same parameters to name them when a handshake fails.

use super::sql_names::Dialect;

/// A TLS setting in a database URL that cannot work.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TlsConfigError {
    #[error("{param}={value} in the database URL is not a TLS mode; use one of {allowed}")]
    Mode {
        param: &'static str,
        value: String,
        allowed: &'static str,
    },
    #[error("{0} and {1} in the database URL go together: give both or neither")]
    Pair(&'static str, &'static str),
}

/// The parameter names and modes of one dialect, for checks and messages.
pub(crate) struct Names {
    pub(crate) mode: &'static str,
    pub(crate) ca: &'static str,
    pub(crate) cert: &'static str,
    pub(crate) key: &'static str,
    /// The mode that checks the CA but not the host name.
    pub(crate) verify_ca: &'static str,
    pub(crate) modes: &'static [&'static str],
}

pub(crate) fn names(d: Dialect) -> Option<Names> {
    match d {
        Dialect::Postgres => Some(Names {
            mode: "sslmode",
            ca: "sslrootcert",
            cert: "sslcert",
            key: "sslkey",
            verify_ca: "sslmode=verify-ca",
            modes: &[
                "disable",
                "allow",
                "prefer",
                "require",
                "verify-ca",
                "verify-full",
            ],
        }),
        Dialect::MySql => Some(Names {
            mode: "ssl-mode",
            ca: "ssl-ca",
            cert: "ssl-cert",
            key: "ssl-key",
            verify_ca: "ssl-mode=VERIFY_CA",
            modes: &[
                "DISABLED",
                "PREFERRED",
                "REQUIRED",
                "VERIFY_CA",
                "VERIFY_IDENTITY",
            ],
        }),
        Dialect::Sqlite => None,
    }
}

/// The TLS parameters of a URL by meaning, under every spelling sqlx accepts.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Params {
    pub(crate) mode: Option<String>,
    pub(crate) ca: Option<String>,
    pub(crate) cert: Option<String>,
    pub(crate) key: Option<String>,
}

pub(crate) fn params(url: &str) -> Params {
    let mut p = Params::default();
    let Ok(u) = url::Url::parse(url) else {
        return p;
    };
    for (k, v) in u.query_pairs() {
        let slot = match k.as_ref() {
            "sslmode" | "ssl-mode" => &mut p.mode,
            "sslrootcert" | "ssl-root-cert" | "sslca" | "ssl-ca" => &mut p.ca,
            "sslcert" | "ssl-cert" => &mut p.cert,
            "sslkey" | "ssl-key" => &mut p.key,
            _ => continue,
        };
        *slot = Some(v.into_owned());
    }
    p
}

/// Checks the URL's TLS parameters as written: a known mode, a client certificate together
/// with its key. The files are read only when connecting ([`check_files`]), as a config
/// written for another machine must still load.
pub(crate) fn check(url: &str, d: Dialect) -> Result<(), TlsConfigError> {
    let Some(n) = names(d) else {
        return Ok(());
    };
    let p = params(url);
    if let Some(mode) = &p.mode
        && !n.modes.iter().any(|m| m.eq_ignore_ascii_case(mode))
    {
        return Err(TlsConfigError::Mode {
            param: n.mode,
            value: crate::model::escape_bytes(mode.as_bytes()),
            allowed: if d == Dialect::Postgres {
                "disable, allow, prefer, require, verify-ca, verify-full"
            } else {
                "DISABLED, PREFERRED, REQUIRED, VERIFY_CA, VERIFY_IDENTITY"
            },
        });
    }
    if p.cert.is_some() != p.key.is_some() {
        return Err(TlsConfigError::Pair(n.cert, n.key));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PG: Dialect = Dialect::Postgres;
    const MY: Dialect = Dialect::MySql;

    #[test]
    fn modes_are_checked_per_dialect() {
        assert_eq!(check("postgres://h/db?sslmode=verify-full", PG), Ok(()));
        assert_eq!(check("postgres://h/db?sslmode=DISABLE", PG), Ok(()));
        assert_eq!(check("mysql://h/db?ssl-mode=VERIFY_CA", MY), Ok(()));
        assert_eq!(check("mysql://h/db?ssl-mode=required", MY), Ok(()));
        let e = check("postgres://h/db?sslmode=verify_ca", PG).expect_err("mysql spelling");
        assert!(e.to_string().contains("sslmode=verify_ca"), "{e}");
        assert!(e.to_string().contains("verify-full"), "{e}");
        let e = check("mysql://h/db?sslmode=verify-full", MY).expect_err("pg spelling");
        assert!(e.to_string().contains("VERIFY_IDENTITY"), "{e}");
        assert_eq!(
            check("sqlite:///x.db?sslmode=nonsense", Dialect::Sqlite),
            Ok(())
        );
    }
}
