//! Each source flag names the kind of store it is for; given where no source of that kind
//! is read, it would be silently ignored, so it is refused, naming the flag and the
//! sources given. Checked on the flags and the config alone, before anything is dialled
//! (a `--sql` catalog is read only after). Which flags give which store's sources, and a
//! store's own TLS flags, are `Flags`' to say (`flags.rs`, and the store's section).

use super::{Config, DbUrl, Flags, SourceConfig, SqlConfigError};
use crate::config::Dialect;
use crate::model::StoreKind::{self, Etcd, Sql, Zookeeper};

/// The ZooKeeper TLS flags are asked for when etcd's are given where only ZooKeeper is read
/// (README, ZooKeeper: TLS).
pub(super) const ZK_NOT_ETCD_TLS: &str = "--cacert/--cert/--key/--insecure-skip-tls-verify \
     are etcd's; for TLS to ZooKeeper's secureClientPort give --zk-cacert (and \
     --zk-cert/--zk-key for a client certificate)";

/// The kinds of store the command will read, and how to name them in a message.
struct Kinds {
    read: Vec<StoreKind>,
    /// The sources are made from the source flags (or are the default local etcd), not
    /// the config file's: the flags that only build sources (`--table`, `--user`...) apply.
    from_flags: bool,
    /// The sources as the user gave them: `--sql`, `--zk and --redis`, `the config file's
    /// sources`...
    given: String,
}

impl Kinds {
    fn has(&self, kind: StoreKind) -> bool {
        self.read.contains(&kind)
    }
}

impl Flags {
    /// The `--sql` URLs name a database electop reads, and every flag given applies to a
    /// source that is read: the mistakes found before anything is dialled.
    pub fn check(&self, config: &Config) -> Result<(), String> {
        for url in &self.sql {
            let url = DbUrl(url.clone());
            if Dialect::from_url(&url.0).is_none() {
                return Err(format!("--sql: {}", SqlConfigError::url(&url)));
            }
        }
        let chosen = config.select(self.context.as_deref())?;
        self.check_applies(&chosen.sources)?;
        // Before any catalog is read with it: a password that cannot be read is a mistake
        // in how it is given, not a database that is down.
        let given = (self.password_env.as_deref(), self.password_file.as_deref());
        super::read_password(given.0, given.1)
            .map(|_| ())
            .map_err(|e| format!("--password-env/--password-file: {e}"))
    }

    /// Every store-specific flag given has a source of its store among those read (the
    /// flags' own, else `configured`, the config's).
    pub(super) fn check_applies(&self, configured: &[SourceConfig]) -> Result<(), String> {
        self.check_prefix()?;
        let kinds = self.kinds(configured);
        self.check_scheme(&kinds)?;
        let not_for = |flag: &str, is_for: &str, fix: &str| {
            Err(format!(
                "{flag} is for {is_for}, and does not apply to {}: {fix}",
                kinds.given
            ))
        };
        let config_sets = "a config file's source sets its own; give the source flags instead";
        let (etcd, sql, zk) = (kinds.has(Etcd), kinds.has(Sql), kinds.has(Zookeeper));
        if self.registry.is_some() && !(etcd && kinds.from_flags) {
            let fix = if etcd {
                config_sets
            } else {
                "leave it out, or give --etcd"
            };
            return not_for("--registry", "etcd-lease-key on --etcd", fix);
        }
        if self.user.is_some() && !(etcd && kinds.from_flags) {
            let fix = if etcd {
                config_sets
            } else {
                "leave it out, or give --etcd"
            };
            return not_for("--user", "etcd (--etcd)", fix);
        }
        let sql_only = [
            ("--table", self.table.is_some()),
            ("--heartbeat-timeout", self.heartbeat_timeout.is_some()),
            ("--poll", self.poll.is_some()),
        ];
        if let Some((flag, _)) = sql_only.iter().find(|(_, given)| *given)
            && self.sql.is_empty()
        {
            let fix = if sql {
                config_sets
            } else {
                "leave it out, or give --sql URL"
            };
            return not_for(flag, "--sql sources", fix);
        }
        let password = (self.password_env.is_some() || self.password_file.is_some()).then(|| {
            match self.password_env.is_some() {
                true => "--password-env",
                false => "--password-file",
            }
        });
        let etcd_user = etcd && self.user.is_some();
        if let Some(flag) = password
            && !(kinds.from_flags && (etcd_user || self.password_sources()))
        {
            let fix = match (kinds.from_flags, zk, etcd) {
                (false, _, _) => config_sets,
                (true, true, _) => "ZooKeeper's credentials come from --zk-auth",
                (true, false, true) => "etcd takes a password for --user NAME only",
                (true, false, false) => "leave it out",
            };
            return not_for(flag, "--sql, --redis and etcd's --user", fix);
        }
        if self.zk_auth.is_some() && !zk {
            return not_for(
                "--zk-auth",
                "ZooKeeper",
                "leave it out, or give --zk HOST:PORT",
            );
        }
        self.check_tls_applies(&kinds)
    }

    /// `--scheme` names a scheme of a store that is read.
    fn check_scheme(&self, kinds: &Kinds) -> Result<(), String> {
        let Some(scheme) = self.scheme else {
            return Ok(());
        };
        let store = scheme.store();
        if kinds.has(store) {
            return Ok(());
        }
        let fix = match store {
            StoreKind::Sql => "give --sql URL".to_string(),
            _ if kinds.has(Sql) => "give a SQL scheme (sql-lease, sql-heartbeat, pg-advisory, \
                 mysql-lock), or leave --scheme out to find the tables; for etcd give --etcd \
                 HOST:PORT"
                .to_string(),
            _ => concat!(
                "leave --scheme out (ZooKeeper's and Redis's layouts are found by themselves), ",
                "or for etcd give --etcd HOST:PORT"
            )
            .to_string(),
        };
        Err(format!(
            "--scheme {scheme} is {} scheme, and does not apply to {}: {fix}",
            store.with_article(),
            kinds.given
        ))
    }

    /// The TLS flags of each store have a source of that store to go to: etcd's plain ones,
    /// then each store's own (`Flags::own`), then ZooKeeper's.
    fn check_tls_applies(&self, kinds: &Kinds) -> Result<(), String> {
        let etcd_tls =
            self.cacert.is_some() || self.cert.is_some() || self.insecure_skip_tls_verify;
        let own = self.own();
        if etcd_tls && !kinds.has(Etcd) {
            let read = own.iter().find(|o| kinds.has(o.store));
            return Err(match (kinds.has(Zookeeper), read) {
                (true, _) => ZK_NOT_ETCD_TLS.to_string(),
                (false, Some(o)) => o.not_etcd_tls.to_string(),
                _ => format!(
                    "--cacert/--cert/--key/--insecure-skip-tls-verify are etcd's, and do not \
                     apply to {}: TLS to a database is set in its URL (sslmode=, ssl-mode=)",
                    kinds.given
                ),
            });
        }
        if let Some(o) = own.iter().find(|o| o.tls_given() && !kinds.has(o.store)) {
            return Err((o.tls_not_for)(&kinds.given));
        }
        if let Some((o, other)) = (own.iter())
            .filter(|o| !kinds.has(o.store))
            .find_map(|o| Some(o).zip(o.other))
        {
            return Err(format!(
                "{other} is for {} sources, and does not apply to {}: give {} too, or leave \
                 it out",
                o.flag, kinds.given, o.flag
            ));
        }
        if (self.zk_cacert.is_some() || self.zk_cert.is_some()) && !kinds.has(Zookeeper) {
            return Err(format!(
                "--zk-cacert/--zk-cert/--zk-key are for ZooKeeper sources, and do not apply \
                 to {}: give --zk HOST:PORT, or use --cacert/--cert/--key for etcd",
                kinds.given
            ));
        }
        Ok(())
    }

    /// `--prefix` with `--sql` alone would read a local etcd beside the database.
    fn check_prefix(&self) -> Result<(), String> {
        if self.prefix.is_empty() || self.sql.is_empty() {
            return Ok(());
        }
        let etcd_preset = self.preset.is_some_and(|p| p.etcd_namespace().is_some());
        if self.prefix_sources() || etcd_preset {
            return Ok(());
        }
        Err(concat!(
            "--prefix is for --etcd, --zk and --redis, and does not apply to --sql: ",
            "a database's elections are its table's rows (--table) or its session locks; to read \
             etcd too, give --etcd HOST:PORT"
        )
        .to_string())
    }

    /// The kinds of store read: the flags' own sources (as `resolve_sources` makes them),
    /// else the config's, else the local etcd.
    fn kinds(&self, configured: &[SourceConfig]) -> Kinds {
        let named = self.flag_sources();
        if !named.is_empty() {
            let given: Vec<&str> = named.iter().map(|(_, n)| *n).collect();
            return Kinds {
                read: named.iter().map(|(kind, _)| *kind).collect(),
                from_flags: true,
                given: given.join(" and "),
            };
        }
        if configured.is_empty() {
            return Kinds {
                read: vec![Etcd],
                from_flags: true,
                given: "the default source (etcd at 127.0.0.1:2379, no source flag given)"
                    .to_string(),
            };
        }
        Kinds {
            read: configured.iter().map(SourceConfig::store).collect(),
            from_flags: false,
            given: match &self.context {
                Some(name) => format!("the sources of context {name}"),
                None => "the config file's sources".to_string(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> Config {
        Config::parse(text, std::path::Path::new("x.toml")).expect("valid")
    }

    const SQL: &str =
        "[[source]]\nkind = \"sql\"\nurl = \"sqlite:///x.db\"\nscheme = \"sql-lease\"\n";
    const ZK: &str = "[[source]]\nkind = \"zookeeper\"\nendpoints = [\"h:2181\"]\n";

    #[test]
    fn the_config_file_s_sources_take_the_flags_of_their_store() {
        let zk_auth = Flags {
            zk_auth: Some("env:ZK".into()),
            ..Flags::default()
        };
        assert_eq!(zk_auth.check(&config(ZK)), Ok(()));
        let e = zk_auth
            .check(&config(SQL))
            .expect_err("no ZooKeeper source");
        assert!(e.contains("--zk-auth is for ZooKeeper"), "{e}");
        assert!(e.contains("the config file's sources"), "{e}");
        // A node on the config's SQL source takes --scheme.
        let scheme = Flags {
            scheme: Some(crate::model::Scheme::SqlHeartbeat),
            ..Flags::default()
        };
        assert_eq!(scheme.check(&config(SQL)), Ok(()));
        assert!(scheme.check(&config(ZK)).is_err());
    }

    #[test]
    fn flags_that_only_make_sources_do_not_reach_the_config_s() {
        let table = Flags {
            table: Some("locks".into()),
            ..Flags::default()
        };
        let e = table
            .check(&config(SQL))
            .expect_err("the config's source has its table");
        assert!(e.contains("a config file's source sets its own"), "{e}");
        let with_sql = Flags {
            sql: vec!["sqlite:///x.db".into()],
            ..table
        };
        assert_eq!(with_sql.check(&Config::default()), Ok(()));
    }
}
