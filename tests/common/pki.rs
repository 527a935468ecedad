//! Throwaway certificates for TLS tests, made with the `openssl` command (Debian's `openssl`,
//! installed by scripts/install-deps.sh): a CA, and server certificates it signs for the
//! names given. EC P-256 keys, valid for two days from now, in PEM files in a temp dir that
//! goes with the `Ca`.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::scratch::Scratch;

/// A certificate authority: its certificate (what a client trusts) and its key.
pub struct Ca {
    dir: Scratch,
    /// The CA certificate, PEM.
    pub cert: PathBuf,
    key: PathBuf,
}

/// A certificate and its private key, PEM.
pub struct Issued {
    pub cert: PathBuf,
    pub key: PathBuf,
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run openssl (is it installed? run scripts/install-deps.sh)");
    assert!(
        out.status.success(),
        "openssl {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

const EC_KEY: [&str; 4] = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"];

impl Ca {
    /// A new CA named `name` (its subject's CN).
    pub fn new(name: &str) -> Ca {
        let dir = super::scratch::with_prefix("electop-pki-");
        let subject = format!("/CN={name}");
        let mut args = vec!["req", "-x509"];
        args.extend(EC_KEY);
        args.extend([
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            &subject,
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ]);
        openssl(dir.path(), &args);
        Ca {
            cert: dir.path().join("ca.pem"),
            key: dir.path().join("ca.key"),
            dir,
        }
    }

    /// A server certificate for `sans` (subjectAltName entries such as "DNS:localhost" or
    /// "IP:127.0.0.1"), signed by this CA; `file` names its files in the CA's dir.
    pub fn issue_server(&self, file: &str, sans: &[&str]) -> Issued {
        let dir = self.dir.path();
        let (key, csr, cert, ext) = (
            format!("{file}.key"),
            format!("{file}.csr"),
            format!("{file}.pem"),
            format!("{file}.ext"),
        );
        let mut args = vec!["req"];
        args.extend(EC_KEY);
        args.extend([
            "-nodes",
            "-keyout",
            &key,
            "-out",
            &csr,
            "-subj",
            "/CN=electop test server",
        ]);
        openssl(dir, &args);
        let extensions = format!(
            "subjectAltName={}\nbasicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n",
            sans.join(",")
        );
        std::fs::write(dir.join(&ext), extensions).expect("write the extensions file");
        let ca_cert = self.cert.display().to_string();
        let ca_key = self.key.display().to_string();
        openssl(
            dir,
            &[
                "x509",
                "-req",
                "-in",
                &csr,
                "-CA",
                &ca_cert,
                "-CAkey",
                &ca_key,
                "-CAcreateserial",
                "-out",
                &cert,
                "-days",
                "2",
                "-extfile",
                &ext,
            ],
        );
        Issued {
            cert: dir.join(cert),
            key: dir.join(key),
        }
    }
}
