//! What a store gives `electop demo` (and `node --store`) from its own folder: its facts (its
//! `--store` name, the flags that point at it), a throwaway server of its kind, and the
//! dashboard's source with the nodes' source flags. The demo (`demo/`) and its
//! command read a store only through [`Demo`]; the stores that offer one are listed in
//! [`crate::backend::DEMOS`]. Redis's is its folder's; the demo still runs etcd, ZooKeeper
//! and SQL itself, and they can move here the same way.

use std::path::{Path, PathBuf};

use crate::config::SourceConfig;
use crate::model::{Scheme, StoreKind};

use super::BoxFuture;

/// What a message, the help and the checks say of a store the demo runs on.
#[derive(Debug)]
pub struct Facts {
    /// Its name for `demo --store` and `node --store`.
    pub name: &'static str,
    /// Its line among `--store`'s values.
    pub help: &'static str,
    /// The kind of store, whose own flags (`config::Flags::own`) point at it.
    pub kind: StoreKind,
    /// The source flag that points at it, as a message asks for it.
    pub source_flag: &'static str,
    /// The flag that starts a throwaway one (empty: none can be), and what it starts, as a
    /// message says it.
    pub spawn_flag: &'static str,
    pub spawns: &'static str,
    /// It reads `--password-env`/`--password-file`.
    pub takes_password: bool,
}

/// A store's demo. Its nodes take part one way of their own (`--scheme` does not apply).
pub trait Demo: Sync {
    fn facts(&self) -> &'static Facts;

    /// The election the nodes take part in, as the dashboard's source reads it.
    fn election(&self) -> &'static str;

    /// The address given with the store's source flag reads as one of its servers, as it
    /// would for any other command (a usage mistake otherwise).
    fn check_address(&self, address: &str) -> Result<(), String>;

    /// Starts a throwaway server with its files in `dir`, and waits until it answers.
    fn spawn<'a>(&'a self, dir: &'a Path) -> BoxFuture<'a, anyhow::Result<Spawned>>;

    /// The dashboard's source and the nodes' source flags: on the server the demo started
    /// (`spawned`, its address), else on the one the flags give.
    fn setup(&self, given: &Given, spawned: Option<&str>) -> anyhow::Result<Setup>;
}

/// A store's demo, as `--store` holds it: told apart by its name.
#[derive(Clone, Copy)]
pub struct Offer(pub &'static dyn Demo);

impl Offer {
    pub fn facts(self) -> &'static Facts {
        self.0.facts()
    }

    /// What `--store X` needs when neither its source flag nor its spawn flag is given.
    pub fn needs(self) -> String {
        let f = self.facts();
        match f.spawn_flag {
            "" => format!(
                "{}: electop cannot start {} itself",
                f.source_flag, f.spawns
            ),
            spawn => format!("{}, or {spawn} to start a local one", f.source_flag),
        }
    }
}

impl PartialEq for Offer {
    fn eq(&self, other: &Offer) -> bool {
        self.facts().name == other.facts().name
    }
}

impl Eq for Offer {}

impl std::fmt::Debug for Offer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Offer({})", self.facts().name)
    }
}

/// TLS files for a store the demo is given (not one it starts).
#[derive(Clone, Debug, Default)]
pub struct Tls {
    pub cacert: Option<PathBuf>,
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    pub insecure_skip_tls_verify: bool,
}

impl Tls {
    /// The TLS flags again (`--cacert`, or `--zk-cacert` with `prefix` `--zk-`...), for the
    /// participants the demo starts.
    pub fn args(&self, prefix: &str) -> Vec<String> {
        let mut a = Vec::new();
        for (flag, path) in [
            ("cacert", &self.cacert),
            ("cert", &self.cert),
            ("key", &self.key),
        ] {
            if let Some(p) = path {
                a.extend([format!("{prefix}{flag}"), p.display().to_string()]);
            }
        }
        if self.insecure_skip_tls_verify {
            a.push("--insecure-skip-tls-verify".to_string());
        }
        a
    }
}

/// What the flags give a store's demo.
#[derive(Clone, Debug, Default)]
pub struct Given {
    /// The first value of the store's own source flag, for a server the demo does not start.
    pub source: Option<String>,
    /// The store's own TLS files, for that server.
    pub tls: Tls,
    /// The file its sources are read from (`--kubeconfig`), when given.
    pub file: Option<PathBuf>,
    pub password_env: Option<String>,
    pub password_file: Option<PathBuf>,
    pub scheme: Option<Scheme>,
    pub read_only: bool,
}

/// A throwaway server the demo started, stopped with it.
pub struct Spawned {
    pub child: tokio::process::Child,
    /// What the store's source flag takes to reach it.
    pub address: String,
}

/// The store the demo runs on: the dashboard's source and the nodes' flags.
pub struct Setup {
    pub source: SourceConfig,
    pub node_source_args: Vec<String>,
    pub label: String,
}
