//! The demo on Redis (`electop demo --store redis`, a [`crate::backend::demo::Demo`]): the
//! nodes take one lock key (`SET NX PX`, see `participant`) on the server `--redis` names, or
//! on a throwaway one `--spawn-redis` starts with keyspace events on, so the dashboard
//! follows it live.

use std::io::{Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::backend::BoxFuture;
use crate::backend::demo::{Demo, Facts, Given, Setup, Spawned};
use crate::config::{RedisSource, SourceConfig};
use crate::model::{Scheme, StoreKind};

/// Redis's demo, registered in `backend`'s `DEMOS`.
pub struct RedisDemo;

const FACTS: Facts = Facts {
    name: "redis",
    help: "Redis at --redis URL, or one started with --spawn-redis",
    kind: StoreKind::Redis,
    source_flag: "--redis redis://HOST:PORT",
    spawn_flag: "--spawn-redis",
    spawns: "a redis-server",
    takes_password: true,
};

impl Demo for RedisDemo {
    fn facts(&self) -> &'static Facts {
        &FACTS
    }

    /// The lock key, which the dashboard's pattern matches.
    fn election(&self) -> &'static str {
        KEY
    }

    fn check_address(&self, address: &str) -> Result<(), String> {
        RedisSource::from_url(address, None).map(|_| ())
    }

    fn spawn<'a>(&'a self, dir: &'a Path) -> BoxFuture<'a, Result<Spawned>> {
        Box::pin(spawn(dir))
    }

    fn setup(&self, given: &Given, spawned: Option<&str>) -> Result<Setup> {
        setup(given, spawned)
    }
}

/// The key pattern the dashboard follows, and the lock key the nodes take.
const PATTERN: &str = "electop-demo:*";
const KEY: &str = "electop-demo:leader";
const READY_WITHIN: Duration = Duration::from_secs(10);

/// Starts redis-server on a free loopback port with its files in `dir` (nothing saved to
/// disk) and keyspace events on, and waits until it answers `PING`; its URL is the address.
async fn spawn(dir: &Path) -> Result<Spawned> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let data = dir.join("redis");
    std::fs::create_dir_all(&data)?;
    let conf = dir.join("redis.conf");
    let log = dir.join("redis.log");
    std::fs::write(
        &conf,
        format!(
            "bind 127.0.0.1\nport {port}\ndir {}\nlogfile {}\nsave \"\"\nappendonly no\n\
             daemonize no\nnotify-keyspace-events \"Kg$xe\"\n",
            data.display(),
            log.display()
        ),
    )?;
    let mut cmd = tokio::process::Command::new("redis-server");
    cmd.arg(&conf)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(dir.join("redis.err"))?)
        .kill_on_drop(true);
    // SAFETY: prctl is async-signal-safe; it only asks the kernel to signal the server
    // when the demo dies, so a killed demo leaves no redis-server behind.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let mut child = cmd
        .spawn()
        .context("cannot start redis-server (is it installed? apt-get install redis-server)")?;
    let deadline = Instant::now() + READY_WITHIN;
    while !answers(port).await {
        if let Some(status) = child.try_wait()? {
            bail!(
                "redis-server exited at start ({status}); see {}",
                log.display()
            );
        }
        if Instant::now() > deadline {
            let _ = child.kill().await;
            bail!(
                "redis-server did not answer within {READY_WITHIN:?}; see {}",
                log.display()
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let address = format!("redis://127.0.0.1:{port}/0");
    Ok(Spawned { child, address })
}

/// Whether the server on `port` answers `PING`.
async fn answers(port: u16) -> bool {
    let ask = move || -> std::io::Result<String> {
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(300))?;
        s.set_read_timeout(Some(Duration::from_secs(1)))?;
        s.write_all(b"PING\r\n")?;
        let mut answer = [0u8; 7];
        s.read_exact(&mut answer)?;
        Ok(String::from_utf8_lossy(&answer).into_owned())
    };
    tokio::task::spawn_blocking(ask)
        .await
        .ok()
        .and_then(Result::ok)
        .is_some_and(|a| a == "+PONG\r\n")
}

/// The demo on the redis-server `--spawn-redis` started (`spawned`), else the one `--redis`
/// names (with its password and TLS flags).
fn setup(src: &Given, spawned: Option<&str>) -> Result<Setup> {
    if let Some(s) = src.scheme {
        bail!(
            "--scheme {s} does not run on Redis: the nodes take a lock key with SET NX PX; leave --scheme out"
        );
    }
    let url = spawned
        .map(str::to_string)
        .or_else(|| src.source.clone())
        .context(
            "--store redis needs --redis redis://HOST:PORT, or --spawn-redis to start a local one",
        )?;
    let mut cfg = RedisSource::from_url(&url, Some(PATTERN.into())).map_err(anyhow::Error::msg)?;
    cfg.read_only = src.read_only;
    let mut node_source_args = vec![
        "--redis".into(),
        url.clone(),
        "--prefix".into(),
        PATTERN.into(),
    ];
    if spawned.is_none() {
        cfg.password_env = src.password_env.clone();
        cfg.password_file = src.password_file.clone();
        (cfg.cacert, cfg.cert, cfg.key) = (
            src.tls.cacert.clone(),
            src.tls.cert.clone(),
            src.tls.key.clone(),
        );
        cfg.check().map_err(anyhow::Error::msg)?;
        cfg.check_tls("--redis-").map_err(anyhow::Error::msg)?;
        node_source_args.extend(src.tls.args("--redis-"));
        if let Some(v) = &src.password_env {
            node_source_args.extend(["--password-env".into(), v.clone()]);
        }
        if let Some(f) = &src.password_file {
            node_source_args.extend(["--password-file".into(), f.display().to_string()]);
        }
    }
    let address = super::address(&cfg);
    let label = format!("{} on redis {address}", Scheme::RedisLock);
    Ok(Setup {
        source: SourceConfig::Redis(cfg),
        node_source_args,
        label,
    })
}
