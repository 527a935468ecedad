//! Locks' names by key, as resolved once per connection from the source's
//! [`LockNaming`](crate::config::LockNaming) (the `hashtext` names asked of the server).

use std::collections::BTreeMap;

/// The names by key, the hashed ones computed (with the server's `hashtext` where asked).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Resolved {
    by_key: BTreeMap<String, String>,
}

impl Resolved {
    pub(crate) fn new(by_key: BTreeMap<String, String>) -> Resolved {
        Resolved { by_key }
    }

    /// The keys given a name (MySQL: the lock names `IS_USED_LOCK` is asked about).
    pub(crate) fn keys(&self) -> Vec<String> {
        self.by_key.keys().cloned().collect()
    }

    /// The election's name for `key`: its configured name, else the key itself.
    pub(crate) fn name(&self, key: &str) -> String {
        match self.by_key.get(key) {
            Some(n) => n.clone(),
            None => key.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_key_is_its_name_another_is_itself() {
        let r = Resolved::new([("42".to_string(), "billing".to_string())].into());
        assert_eq!(r.name("42"), "billing");
        assert_eq!(r.name("7"), "7");
    }
}
