//! Names for locks: a lock is known to the server by its key alone (`42`, `1:2`), so the
//! source's config may name them: a key given outright, or a name whose key the library
//! computed from it (`pg_advisory_lock(hashtext('jobs'))`, or a CRC-32 of the name as
//! Python's `zlib.crc32`, Go's `crc32.ChecksumIEEE` and Ruby's `Zlib.crc32` compute it).
//! The server's `hashtext` is asked by the backend (`backend::session_lock::resolve`).

use std::collections::BTreeMap;

use serde::Deserialize;

/// How configured names become keys.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LockHash {
    /// The server's `hashtext(name)` (int4), as `pg_advisory_lock(hashtext('name'))` takes it.
    #[default]
    Hashtext,
    /// The IEEE CRC-32 of the name's UTF-8 bytes, 0..2^32, as the one-key bigint form.
    Crc32,
}

/// `[source.locks]` of a `pg-advisory` or `mysql-lock` source.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockNaming {
    /// Lock key (`"42"`, `"1:2"`) -> the election's name.
    #[serde(default)]
    pub keys: BTreeMap<String, String>,
    /// Names whose keys electop computes with `hash`.
    #[serde(default)]
    pub names: Vec<String>,
    #[serde(default)]
    pub hash: LockHash,
}

impl LockNaming {
    /// The names with keys computed here (CRC-32, the keys given); `hashtext` names are
    /// left to the caller, which asks the server: `(name, None)`.
    pub fn local(&self) -> (BTreeMap<String, String>, Vec<String>) {
        let mut by_key = self.keys.clone();
        let mut ask = Vec::new();
        for n in &self.names {
            match self.hash {
                LockHash::Crc32 => {
                    by_key.insert(crc32(n.as_bytes()).to_string(), n.clone());
                }
                LockHash::Hashtext => ask.push(n.clone()),
            }
        }
        (by_key, ask)
    }
}

/// IEEE CRC-32 (the polynomial of zlib, Go's `crc32.IEEE`, Ruby's `Zlib.crc32`).
pub(crate) fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            let mask = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0xEDB8_8320 & mask);
        }
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_is_zlibs() {
        // zlib.crc32(b"123456789") == 0xCBF43926, the check value of CRC-32/IEEE.
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn keys_given_and_crc_names_resolve_here_hashtext_is_asked() {
        let n = LockNaming {
            keys: [("42".to_string(), "billing".to_string())].into(),
            names: vec!["jobs".into()],
            hash: LockHash::Crc32,
        };
        let (by_key, ask) = n.local();
        assert!(ask.is_empty());
        assert_eq!(by_key.get("42").map(String::as_str), Some("billing"));
        assert_eq!(
            by_key.get(&crc32(b"jobs").to_string()).map(String::as_str),
            Some("jobs")
        );
        let n = LockNaming {
            hash: LockHash::Hashtext,
            ..n
        };
        assert_eq!(n.local().1, ["jobs"]);
    }
}
