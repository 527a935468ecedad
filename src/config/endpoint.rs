//! etcd endpoints checked before anything is dialled.

/// What is wrong with an etcd endpoint, named before anything is dialled: left alone, a
/// missing port quietly becomes port 80 and a bad one waits out the whole timeout.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EndpointError {
    #[error("an etcd endpoint is empty (a stray comma?); write host:port, e.g. 127.0.0.1:2379")]
    Empty,
    #[error("etcd endpoint `{0}` has no port; write host:port, e.g. {1}:2379")]
    NoPort(String, String),
    #[error("etcd endpoint `{0}`: port `{1}` is not a number from 1 to 65535")]
    BadPort(String, String),
    #[error("etcd endpoint `{0}`: unknown scheme `{1}://`; use http://, https:// or none")]
    Scheme(String, String),
    #[error("etcd endpoint `{0}` has no host before the port; write host:port")]
    NoHost(String),
    #[error("etcd endpoint `{0}`: `{1}` is not a host name or IP address")]
    BadHost(String, String),
    #[error("etcd endpoint `{0}`: an IPv6 address needs brackets, e.g. [{1}]:2379")]
    Ipv6Brackets(String, String),
    #[error("etcd endpoint `{0}`: a user, path or query is not allowed; write host:port")]
    Extra(String),
}

/// Checks one etcd endpoint (`host:port`, `[v6]:port`, `http://host:port` or
/// `https://host:port`) and returns it as the backends get it: trimmed, the scheme in lower
/// case (the etcd client only knows it so), no trailing slash. Used for `--etcd` and the
/// config's `endpoints` alike.
pub fn check_endpoint(raw: &str) -> Result<String, EndpointError> {
    let s = raw.trim();
    // Shown escaped: the endpoint may hold anything, control characters included.
    let shown = esc(s);
    if s.is_empty() {
        return Err(EndpointError::Empty);
    }
    let (scheme, rest) = match s.split_once("://") {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("http") => (Some("http"), rest),
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("https") => (Some("https"), rest),
        Some((scheme, _)) => {
            return Err(EndpointError::Scheme(shown, esc(scheme)));
        }
        None => (None, s),
    };
    // `http://host:port/` is how URLs are often pasted; the slash alone means nothing.
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    if rest.contains(['/', '?', '#', '@']) {
        return Err(EndpointError::Extra(shown));
    }
    let (host, port) = split_host_port(rest, &shown)?;
    check_host(host, &shown)?;
    match port.parse::<u16>() {
        Ok(p) if p > 0 && port.bytes().all(|b| b.is_ascii_digit()) => Ok(match scheme {
            Some(scheme) => format!("{scheme}://{rest}"),
            None => rest.to_string(),
        }),
        _ => Err(EndpointError::BadPort(shown, esc(port))),
    }
}

/// Part of an endpoint as it may be shown: whatever was typed, control characters escaped.
fn esc(s: &str) -> String {
    crate::model::escape_bytes(s.as_bytes())
}

/// `host:port` or `[v6]:port` into host and port; the port may still be garbage.
fn split_host_port<'a>(rest: &'a str, shown: &str) -> Result<(&'a str, &'a str), EndpointError> {
    let no_port = |host: &str| EndpointError::NoPort(shown.to_string(), esc(host));
    if let Some(inner) = rest.strip_prefix('[') {
        let Some((v6, tail)) = inner.split_once(']') else {
            return Err(EndpointError::BadHost(shown.to_string(), esc(rest)));
        };
        if v6.parse::<std::net::Ipv6Addr>().is_err() {
            return Err(EndpointError::BadHost(
                shown.to_string(),
                esc(&format!("[{v6}]")),
            ));
        }
        return match tail.strip_prefix(':') {
            Some("") => Err(no_port(&format!("[{v6}]"))),
            Some(port) => Ok((&rest[..v6.len() + 2], port)),
            None if tail.is_empty() => Err(no_port(&format!("[{v6}]"))),
            None => Err(EndpointError::BadHost(shown.to_string(), esc(rest))),
        };
    }
    if rest.parse::<std::net::Ipv6Addr>().is_ok() {
        return Err(EndpointError::Ipv6Brackets(shown.to_string(), esc(rest)));
    }
    match rest.rsplit_once(':') {
        None => Err(no_port(rest)),
        Some((host, _)) if host.contains(':') => {
            Err(EndpointError::Ipv6Brackets(shown.to_string(), esc(host)))
        }
        Some((host, "")) => Err(no_port(host)),
        Some((host, port)) => Ok((host, port)),
    }
}

/// A bracketed IPv6 address, an IPv4 address, or a DNS name (letters, digits, `-`, `_`,
/// dot-separated labels).
fn check_host(host: &str, shown: &str) -> Result<(), EndpointError> {
    let bad = || EndpointError::BadHost(shown.to_string(), esc(host));
    if host.is_empty() {
        return Err(EndpointError::NoHost(shown.to_string()));
    }
    if host.starts_with('[') {
        return Ok(());
    }
    // A fully qualified name may end in a dot.
    let name = host.strip_suffix('.').unwrap_or(host);
    let labels_ok = name.split('.').all(|l| {
        !l.is_empty()
            && !l.starts_with('-')
            && l.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    });
    // All digits and dots must be a real IPv4 address: `999.1.1.1` is a typo, not a name.
    let numeric = host.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    if !labels_ok || (numeric && host.parse::<std::net::Ipv4Addr>().is_err()) {
        return Err(bad());
    }
    Ok(())
}
