//! ZooKeeper sources: the ensemble's members, an optional chroot, and the prefix the
//! elections live under.

use serde::Deserialize;

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
    /// The znode the elections live under; `/` when not given.
    #[serde(default = "root")]
    pub prefix: String,
    /// Refuse admin actions on this source.
    #[serde(default)]
    pub read_only: bool,
}

fn root() -> String {
    "/".to_string()
}

impl ZkSource {
    /// A source from a `--zk HOST:PORT[,HOST:PORT...][/chroot]` connect string.
    pub fn from_connect(connect: &str, prefix: Option<String>) -> Result<ZkSource, String> {
        let (hosts, chroot) = match connect.find('/') {
            Some(i) => (&connect[..i], Some(connect[i..].to_string())),
            None => (connect, None),
        };
        let mut src = ZkSource {
            name: None,
            endpoints: hosts.split(',').map(str::to_string).collect(),
            chroot,
            prefix: prefix.unwrap_or_else(root),
            read_only: false,
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
        check_path("prefix", &self.prefix)?;
        if self.prefix.len() > 1 {
            self.prefix = self.prefix.trim_end_matches('/').to_string();
        }
        Ok(())
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
        let s = ZkSource::from_connect("zk1:2181,zk2:2182/kafka", Some("/e/".into())).unwrap();
        assert_eq!(s.endpoints, ["zk1:2181", "zk2:2182"]);
        assert_eq!(s.chroot.as_deref(), Some("/kafka"));
        assert_eq!(s.prefix, "/e");
        assert_eq!(s.connect_string(), "zk1:2181,zk2:2182/kafka");
        let plain = ZkSource::from_connect("127.0.0.1:2181", None).unwrap();
        assert_eq!((plain.chroot, plain.prefix.as_str()), (None, "/"));
    }

    #[test]
    fn bad_members_and_paths_are_named() {
        let err = |c: &str, p: &str| ZkSource::from_connect(c, Some(p.into())).unwrap_err();
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
