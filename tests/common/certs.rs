//! Certificates for TLS tests, made fresh in a temp dir with rcgen: a CA, the server and
//! client certificates it signs, a CA that signs nothing, a client certificate from that
//! other CA, a server certificate for the wrong name and an expired one.

use std::path::PathBuf;

use super::scratch::Scratch;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DistinguishedName, DnType,
    ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose,
};
use time::{Duration, OffsetDateTime};

/// The files, by name: `ca.pem`, `other-ca.pem`, and `NAME.pem` + `NAME-key.pem` for
/// `server` (127.0.0.1 and localhost), `client`, `other-client` (signed by the other CA),
/// `wrong-name` (etcd.example only) and `expired` (127.0.0.1, expired 2020-01-02).
pub struct Certs {
    dir: Scratch,
}

fn ca(name: &str) -> CertifiedIssuer<'static, KeyPair> {
    let mut p = CertificateParams::new(Vec::<String>::new()).expect("ca params");
    p.distinguished_name = named(name);
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let key = KeyPair::generate().expect("ca key");
    CertifiedIssuer::self_signed(p, key).expect("self-signed ca")
}

fn named(cn: &str) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, cn);
    dn
}

impl Certs {
    pub fn generate() -> Certs {
        let dir = super::scratch::with_prefix("electop-certs-");
        let certs = Certs { dir };
        let main = ca("electop test CA");
        let other = ca("electop other CA");
        certs.write("ca.pem", &main.pem());
        certs.write("other-ca.pem", &other.pem());
        let now = OffsetDateTime::now_utc();
        let valid = (now - Duration::days(1), now + Duration::days(1));
        let server = ExtendedKeyUsagePurpose::ServerAuth;
        let client = ExtendedKeyUsagePurpose::ClientAuth;
        let past = (
            rcgen::date_time_ymd(2020, 1, 1),
            rcgen::date_time_ymd(2020, 1, 2),
        );
        certs.leaf(
            "server",
            &["127.0.0.1", "localhost"],
            server.clone(),
            valid,
            &main,
        );
        certs.leaf("client", &["client"], client.clone(), valid, &main);
        certs.leaf("other-client", &["client"], client, valid, &other);
        certs.leaf(
            "wrong-name",
            &["etcd.example"],
            server.clone(),
            valid,
            &main,
        );
        certs.leaf("expired", &["127.0.0.1"], server, past, &main);
        certs
    }

    fn leaf(
        &self,
        name: &str,
        sans: &[&str],
        usage: ExtendedKeyUsagePurpose,
        (not_before, not_after): (OffsetDateTime, OffsetDateTime),
        issuer: &CertifiedIssuer<'static, KeyPair>,
    ) {
        let sans: Vec<String> = sans.iter().map(|s| s.to_string()).collect();
        let mut p = CertificateParams::new(sans).expect("leaf params");
        p.distinguished_name = named(name);
        p.extended_key_usages = vec![usage];
        p.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        p.not_before = not_before;
        p.not_after = not_after;
        let key = KeyPair::generate().expect("leaf key");
        let cert = p.signed_by(&key, issuer).expect("sign leaf");
        self.write(&format!("{name}.pem"), &cert.pem());
        self.write(&format!("{name}-key.pem"), &key.serialize_pem());
    }

    fn write(&self, name: &str, text: &str) {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The path as a string, for command lines.
    pub fn arg(&self, name: &str) -> String {
        self.path(name).display().to_string()
    }
}
