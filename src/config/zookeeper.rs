//! ZooKeeper sources: the ensemble's members, an optional chroot, the prefix the
//! elections live under, a preset's layout, and where digest credentials are read from.

use std::path::PathBuf;

use serde::Deserialize;

use crate::presets::Preset;

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ZkSource {
    /// What the source is called on screen and in `SOURCE/NAME`; `zk1`, `zk2`... when not
    /// named.
    #[serde(default)]
    pub name: Option<String>,
    /// `host:port` of each ensemble member.
    pub endpoints: Vec<String>,
    /// A chroot every path is below (`/kafka`), as in a connect string's `/chroot` tail.
    #[serde(default)]
    pub chroot: Option<String>,
    /// The znode the elections live under; the preset's parent, else `/`, when not given.
    #[serde(default)]
    pub prefix: String,
    /// A project whose single-holder layout this is (`kafka-zk`, `hadoop-ha`); recipes'
    /// lines (Curator, kazoo) without one.
    #[serde(default)]
    pub preset: Option<Preset>,
    /// Refuse admin actions on this source.
    #[serde(default)]
    pub read_only: bool,
    /// Digest authentication: `user:password` from this environment variable...
    #[serde(default)]
    pub auth_env: Option<String>,
    /// ...or from the first line of this file.
    #[serde(default)]
    pub auth_file: Option<PathBuf>,
    /// TLS to ZooKeeper's `secureClientPort`: the CA certificate(s), PEM, that sign the
    /// members' certificates. Given, every member is dialled in TLS (there is no URL scheme
    /// for it in a connect string).
    #[serde(default)]
    pub cacert: Option<PathBuf>,
    /// TLS: a client certificate, PEM, for `ssl.clientAuth=need`; needs `key`.
    #[serde(default)]
    pub cert: Option<PathBuf>,
    /// TLS: the client certificate's private key, PEM (read at connect, never shown).
    #[serde(default)]
    pub key: Option<PathBuf>,
}

/// Where `--zk-auth` says the digest credentials are: `env:VAR` or `file:PATH`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ZkAuth {
    Env(String),
    File(PathBuf),
}

impl ZkAuth {
    /// `env:VAR` or `file:PATH`. Anything else is refused without being repeated: it may be
    /// the credentials themselves, which must not be on a command line (`ps` shows it).
    pub fn parse(s: &str) -> Result<ZkAuth, String> {
        if let Some(var) = s.strip_prefix("env:").filter(|v| !v.is_empty()) {
            return Ok(ZkAuth::Env(var.to_string()));
        }
        if let Some(path) = s.strip_prefix("file:").filter(|v| !v.is_empty()) {
            return Ok(ZkAuth::File(PathBuf::from(path)));
        }
        Err(
            "--zk-auth takes env:VAR or file:PATH, naming where `user:password` is kept \
             (never the credentials themselves: every user of this machine could read them \
             in the process list)"
                .to_string(),
        )
    }
}

impl ZkSource {
    /// A source from a `--zk HOST:PORT[,HOST:PORT...][/chroot]` connect string.
    pub fn from_connect(
        connect: &str,
        prefix: Option<String>,
        preset: Option<Preset>,
    ) -> Result<ZkSource, String> {
        if let Some((scheme, rest)) = connect.split_once("://") {
            let rest = without_userinfo(rest);
            return Err(format!(
                "a ZooKeeper connect string has no {scheme}:// in front: write \
                 HOST:PORT[,HOST:PORT...][/chroot], e.g. {rest}"
            ));
        }
        let (hosts, chroot) = match connect.find('/') {
            Some(i) => (&connect[..i], Some(connect[i..].to_string())),
            None => (connect, None),
        };
        let mut src = ZkSource {
            name: None,
            endpoints: hosts.split(',').map(str::to_string).collect(),
            chroot,
            prefix: prefix.unwrap_or_default(),
            preset,
            read_only: false,
            auth_env: None,
            auth_file: None,
            cacert: None,
            cert: None,
            key: None,
        };
        src.check()?;
        Ok(src)
    }

    /// Checks the settings before anything is dialled, and normalizes the prefix (no
    /// trailing `/` but for the root) and an empty chroot away.
    pub fn check(&mut self) -> Result<(), String> {
        if self.endpoints.is_empty() {
            return Err("`endpoints` is empty; give at least one \"host:port\"".to_string());
        }
        for ep in &mut self.endpoints {
            *ep = check_member(ep)?;
        }
        if let Some(c) = &self.chroot {
            check_path("chroot", c)?;
            if c == "/" {
                self.chroot = None;
            }
        }
        if let Some(p) = self.preset {
            let parent = p
                .zk_parent()
                .ok_or_else(|| format!("preset {p} is not a ZooKeeper layout: {}", p.needs()))?;
            if self.prefix.is_empty() {
                self.prefix = parent.to_string();
            }
        }
        if self.prefix.is_empty() {
            self.prefix = "/".to_string();
        }
        if self.auth_env.is_some() && self.auth_file.is_some() {
            return Err("give auth_env or auth_file, not both".to_string());
        }
        check_path("prefix", &self.prefix)?;
        self.check_tls("")?;
        if self.prefix.len() > 1 {
            self.prefix = self.prefix.trim_end_matches('/').to_string();
        }
        Ok(())
    }

    /// Whether the members are dialled in TLS (`cacert` given).
    pub fn tls(&self) -> bool {
        self.cacert.is_some()
    }

    /// Where `--zk-auth` (`env:VAR` or `file:PATH`) says the digest credentials are kept.
    pub fn set_auth(&mut self, flag: &str) -> Result<(), String> {
        (self.auth_env, self.auth_file) = match ZkAuth::parse(flag)? {
            ZkAuth::Env(v) => (Some(v), None),
            ZkAuth::File(f) => (None, Some(f)),
        };
        Ok(())
    }

    /// The TLS settings can work: files readable PEM, cert and key a matching pair, and a
    /// CA to check the members against. `dashes` is "--zk-" for flags, "" for config keys,
    /// so the message names what the user wrote.
    pub fn check_tls(&self, dashes: &str) -> Result<(), String> {
        crate::pem::check_pair(dashes, self.cert.as_deref(), self.key.as_deref())?;
        match &self.cacert {
            Some(ca) => crate::pem::certificates(&format!("{dashes}cacert"), ca).map(|_| ()),
            None if self.cert.is_some() => Err(format!(
                "{dashes}cert without {dashes}cacert: TLS to ZooKeeper needs the CA that signs \
                 the members' certificates (ZooKeeper's ssl.keyStore is usually signed by a \
                 private CA); give {dashes}cacert FILE"
            )),
            None => Ok(()),
        }
    }

    /// The digest credentials (`user:password`), read now from where they are kept; `None`
    /// without any. Errors name the variable or file, never what it holds.
    pub fn digest(&self) -> Result<Option<Vec<u8>>, String> {
        let (text, from) = match (&self.auth_env, &self.auth_file) {
            (Some(var), _) => (
                std::env::var(var).map_err(|_| {
                    format!("--zk-auth env:{var}: the environment variable is not set; export it")
                })?,
                format!("environment variable {var}"),
            ),
            (None, Some(path)) => (
                std::fs::read_to_string(path).map_err(|e| {
                    format!("--zk-auth file:{}: cannot read it: {e}", path.display())
                })?,
                format!("file {}", path.display()),
            ),
            (None, None) => return Ok(None),
        };
        let text = text.lines().next().unwrap_or("");
        match text.split_once(':') {
            Some((user, _)) if !user.is_empty() => Ok(Some(text.as_bytes().to_vec())),
            _ => Err(format!(
                "ZooKeeper digest credentials in {from} must read user:password (as in \
                 zkCli's `addauth digest user:password`)"
            )),
        }
    }

    /// The scheme its elections read as: the preset's, else a recipe's line.
    pub fn scheme(&self) -> crate::model::Scheme {
        self.preset
            .map_or(crate::model::Scheme::ZkRecipe, |p| p.spec().scheme)
    }

    /// The connect string the client is given: members, then the chroot.
    pub fn connect_string(&self) -> String {
        format!(
            "{}{}",
            self.endpoints.join(","),
            self.chroot.as_deref().unwrap_or("")
        )
    }
}

/// A connect string as it may be shown: what stands before an `@` (a password, were one
/// typed there) is left out.
pub(super) fn without_userinfo(connect: &str) -> String {
    match connect.rsplit_once('@') {
        Some((before, after)) => match before.split_once("://") {
            Some((scheme, _)) => format!("{scheme}://…@{after}"),
            None => format!("…@{after}"),
        },
        None => connect.to_string(),
    }
}

/// One member, `host:port` (a port is required: ZooKeeper's 2181 is a convention, and a
/// missing one is more often a typo than a wish for the default).
fn check_member(raw: &str) -> Result<String, String> {
    let s = raw.trim();
    let shown = crate::model::escape_bytes(s.as_bytes());
    if s.is_empty() {
        return Err(
            "a ZooKeeper member is empty (a stray comma?); write host:port, e.g. 127.0.0.1:2181"
                .to_string(),
        );
    }
    if let Some((scheme, rest)) = s.split_once("://") {
        return Err(format!(
            "ZooKeeper member `{shown}`: no {}:// in front; write host:port, e.g. {}",
            crate::model::escape_bytes(scheme.as_bytes()),
            crate::model::escape_bytes(rest.as_bytes())
        ));
    }
    let Some((host, port)) = s.rsplit_once(':') else {
        return Err(format!(
            "ZooKeeper member `{shown}` has no port; write host:port, e.g. {shown}:2181"
        ));
    };
    if host.is_empty() || host.contains(['/', '@', '?', '#', ' ']) {
        return Err(format!(
            "ZooKeeper member `{shown}`: `{}` is not a host name or IP address",
            crate::model::escape_bytes(host.as_bytes())
        ));
    }
    match port.parse::<u16>() {
        Ok(p) if p > 0 && port.bytes().all(|b| b.is_ascii_digit()) => Ok(s.to_string()),
        _ => Err(format!(
            "ZooKeeper member `{shown}`: port `{}` is not a number from 1 to 65535",
            crate::model::escape_bytes(port.as_bytes())
        )),
    }
}

/// A znode path: absolute, no empty segment, no `.`/`..` segment (ZooKeeper refuses them).
fn check_path(what: &str, p: &str) -> Result<(), String> {
    let shown = crate::model::escape_bytes(p.as_bytes());
    let body = p.strip_suffix('/').filter(|b| !b.is_empty()).unwrap_or(p);
    let bad = !p.starts_with('/')
        || (body != "/"
            && body[1..]
                .split('/')
                .any(|s| s.is_empty() || s == "." || s == ".."));
    if bad || p.chars().any(char::is_control) {
        return Err(format!(
            "ZooKeeper {what} `{shown}` is not a znode path; write it absolute, e.g. /election"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, Flags, SourceConfig};

    #[test]
    fn a_config_source_is_checked_and_named_zk1() {
        let text = "[[source]]\nkind = \"zookeeper\"\nendpoints = [\"zk1:2181\"]\n\
                    chroot = \"/kafka\"\nprefix = \"/election/\"\n";
        let c = Config::parse(text, std::path::Path::new("c.toml")).expect("parses");
        let SourceConfig::Zookeeper(z) = &c.sources[0] else {
            panic!("a zookeeper source: {:?}", c.sources)
        };
        assert_eq!(z.connect_string(), "zk1:2181/kafka");
        assert_eq!(
            (z.prefix.as_str(), z.name.as_deref()),
            ("/election", Some("zk1"))
        );
        let bad = "[[source]]\nkind = \"zookeeper\"\nendpoints = [\"zk1\"]\n";
        let err = Config::parse(bad, std::path::Path::new("c.toml")).expect_err("no port");
        assert!(
            err.to_string()
                .contains("[[source]] #1: ZooKeeper member `zk1`"),
            "{err}"
        );
    }

    #[test]
    fn zk_with_a_prefix_is_one_zookeeper_source_and_no_etcd() {
        let flags = Flags {
            zk: vec!["127.0.0.1:2181".into()],
            prefix: vec!["/election".into()],
            ..Flags::default()
        };
        let got = flags.resolve(&Config::default()).expect("resolves");
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(matches!(&got[0], SourceConfig::Zookeeper(z) if z.prefix == "/election"));
        let both = Flags {
            etcd: vec!["127.0.0.1:2379".into()],
            ..flags
        };
        let got = both.resolve(&Config::default()).expect("resolves");
        assert_eq!(got.len(), 2, "--prefix goes to both: {got:?}");
    }

    #[test]
    fn a_connect_string_gives_members_and_chroot() {
        let s =
            ZkSource::from_connect("zk1:2181,zk2:2182/kafka", Some("/e/".into()), None).unwrap();
        assert_eq!(s.endpoints, ["zk1:2181", "zk2:2182"]);
        assert_eq!(s.chroot.as_deref(), Some("/kafka"));
        assert_eq!(s.prefix, "/e");
        assert_eq!(s.connect_string(), "zk1:2181,zk2:2182/kafka");
        let plain = ZkSource::from_connect("127.0.0.1:2181", None, None).unwrap();
        assert_eq!((plain.chroot, plain.prefix.as_str()), (None, "/"));
    }

    #[test]
    fn a_preset_sets_the_prefix_unless_given_and_must_be_a_zookeeper_one() {
        let with = |preset: &str, prefix: &str| {
            let text = format!(
                "[[source]]\nkind = \"zookeeper\"\nendpoints = [\"zk1:2181\"]\n\
                 preset = \"{preset}\"\n{prefix}"
            );
            Config::parse(&text, std::path::Path::new("c.toml")).map(|c| c.sources)
        };
        let got = with("hadoop-ha", "").expect("valid");
        assert!(
            matches!(&got[0], SourceConfig::Zookeeper(z) if z.prefix == "/hadoop-ha"),
            "{got:?}"
        );
        let got = with("hadoop-ha", "prefix = \"/yarn-leader-election\"\n").expect("valid");
        assert!(
            matches!(&got[0], SourceConfig::Zookeeper(z) if z.prefix == "/yarn-leader-election"),
            "{got:?}"
        );
        let got = with("kafka-zk", "").expect("valid");
        assert!(
            matches!(&got[0], SourceConfig::Zookeeper(z) if z.prefix == "/"),
            "{got:?}"
        );
        let err = with("shedlock", "").expect_err("a SQL preset").to_string();
        assert!(
            err.contains("preset shedlock is not a ZooKeeper layout") && err.contains("--sql"),
            "{err}"
        );
    }

    #[test]
    fn tls_flags_with_only_zookeeper_sources_are_refused_not_ignored() {
        let flags = Flags {
            zk: vec!["127.0.0.1:2181".into()],
            insecure_skip_tls_verify: true,
            ..Flags::default()
        };
        let err = flags.resolve(&Config::default()).unwrap_err();
        assert!(
            err.contains("are etcd's") && err.contains("--zk-cacert"),
            "{err}"
        );
        let etcd_only = Flags {
            etcd: vec!["127.0.0.1:2379".into()],
            zk_cacert: Some("/nonexistent/ca.pem".into()),
            ..Flags::default()
        };
        let err = etcd_only.resolve(&Config::default()).unwrap_err();
        assert!(err.contains("are for ZooKeeper sources"), "{err}");
    }

    #[test]
    fn zk_tls_flags_reach_every_zookeeper_source_and_are_checked() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ca = dir.path().join("ca.pem");
        std::fs::write(&ca, "not a certificate\n").expect("write");
        let flags = Flags {
            zk: vec!["127.0.0.1:2281".into()],
            zk_cacert: Some(ca.clone()),
            ..Flags::default()
        };
        let err = flags.resolve(&Config::default()).unwrap_err();
        assert!(err.starts_with("--zk-cacert "), "{err}");
        let key_only = Flags {
            zk: vec!["127.0.0.1:2281".into()],
            zk_key: Some(dir.path().join("k.pem")),
            ..Flags::default()
        };
        let err = key_only.resolve(&Config::default()).unwrap_err();
        assert!(
            err.contains("--zk-key") && err.contains("needs --zk-cert"),
            "{err}"
        );
        let text = format!(
            "[[source]]\nkind = \"zookeeper\"\nendpoints = [\"zk1:2281\"]\ncacert = \"{}\"\n",
            ca.display()
        );
        let err = Config::parse(&text, std::path::Path::new("c.toml")).expect_err("bad PEM");
        assert!(err.to_string().contains("cacert "), "{err}");
    }

    #[test]
    fn zk_auth_names_where_the_credentials_are_and_never_repeats_them() {
        assert_eq!(
            ZkAuth::parse("env:ZK_AUTH"),
            Ok(ZkAuth::Env("ZK_AUTH".into()))
        );
        assert_eq!(
            ZkAuth::parse("file:/etc/zk.auth"),
            Ok(ZkAuth::File("/etc/zk.auth".into()))
        );
        let err = ZkAuth::parse("electop:s3cret-pw").unwrap_err();
        assert!(!err.contains("s3cret"), "{err}");
        assert!(err.contains("env:VAR or file:PATH"), "{err}");

        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("auth");
        let mut s = ZkSource::from_connect("zk1:2181", None, None).unwrap();
        s.auth_file = Some(file.clone());
        std::fs::write(&file, "electop:s3cret-pw\n").unwrap();
        assert_eq!(
            s.digest().unwrap().as_deref(),
            Some(&b"electop:s3cret-pw"[..])
        );
        std::fs::write(&file, "s3cret-pw\n").unwrap();
        let err = s.digest().unwrap_err();
        assert!(
            err.contains("must read user:password") && !err.contains("s3cret"),
            "{err}"
        );
        s.auth_file = None;
        s.auth_env = Some("ELECTOP_TEST_SURELY_UNSET".into());
        let err = s.digest().unwrap_err();
        assert!(
            err.contains("--zk-auth env:ELECTOP_TEST_SURELY_UNSET"),
            "{err}"
        );
    }

    #[test]
    fn bad_members_and_paths_are_named() {
        let err = |c: &str, p: &str| ZkSource::from_connect(c, Some(p.into()), None).unwrap_err();
        assert!(
            err("zk1", "/").contains("`zk1` has no port"),
            "{}",
            err("zk1", "/")
        );
        assert!(err("zk1:99999", "/").contains("port `99999`"));
        assert!(err("zk1:2181,", "/").contains("stray comma"));
        assert!(err("zk1:2181", "election").contains("prefix `election`"));
        assert!(err("zk1:2181", "/a//b").contains("not a znode path"));
        assert!(err("zk1:2181/a//b", "/").contains("chroot `/a//b`"));
    }
}
