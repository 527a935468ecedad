//! The demo on ZooKeeper: the nodes join one ephemeral sequential line (the Curator
//! `LeaderLatch` layout, see `backend::zookeeper::participant`) on the ZooKeeper `--zk`
//! names, or on a throwaway standalone one `--spawn-zookeeper` starts with Debian's jars.

use std::io::{Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::{Options, Setup};
use crate::config::{SourceConfig, ZkSource};
use crate::model::Scheme;

const PREFIX: &str = "/electop-demo";
/// Debian's `zookeeper` package: the server, its dependencies named in its manifest.
const ZK_JAR: &str = "/usr/share/java/zookeeper.jar";
/// Makes the server log (to our log file) rather than say slf4j has nowhere to log.
const SLF4J_SIMPLE: &str = "/usr/share/java/slf4j-simple.jar";
/// How long a JVM may take to start on a busy machine.
const READY_WITHIN: Duration = Duration::from_secs(30);
/// ZooKeeper's tick: sessions may be as short as two ticks, so `--ttl 2s` is allowed.
const TICK_MS: u32 = 200;

/// A local ZooKeeper the demo started, stopped with it.
pub(super) struct SpawnedZk {
    pub child: tokio::process::Child,
    pub endpoint: String,
}

/// Starts a standalone ZooKeeper on a free loopback port with its data in `dir`, and waits
/// until it answers `srvr`.
pub(super) async fn spawn(dir: &Path) -> Result<SpawnedZk> {
    let java = which("java").context(
        "cannot start ZooKeeper: java is not installed (apt-get install openjdk-17-jdk-headless zookeeper)",
    )?;
    if !Path::new(ZK_JAR).exists() {
        bail!(
            "cannot start ZooKeeper: its jars are not installed ({ZK_JAR} is missing; apt-get install zookeeper)"
        );
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let data = dir.join("zookeeper");
    std::fs::create_dir_all(&data)?;
    let cfg = dir.join("zoo.cfg");
    std::fs::write(
        &cfg,
        format!(
            "tickTime={TICK_MS}\ndataDir={}\nclientPort={port}\nclientPortAddress=127.0.0.1\n\
             minSessionTimeout={}\nmaxSessionTimeout=60000\nadmin.enableServer=false\n\
             4lw.commands.whitelist=srvr,mntr,ruok\n",
            data.display(),
            2 * TICK_MS,
        ),
    )?;
    let mut classpath = ZK_JAR.to_string();
    if Path::new(SLF4J_SIMPLE).exists() {
        classpath = format!("{classpath}:{SLF4J_SIMPLE}");
    }
    let log = dir.join("zookeeper.log");
    let mut cmd = tokio::process::Command::new(java);
    cmd.args(["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx256m"])
        .args(["-cp", &classpath])
        .arg("org.apache.zookeeper.server.ZooKeeperServerMain")
        .arg(&cfg)
        .env_remove("CLASSPATH")
        .env_remove("JAVA_TOOL_OPTIONS")
        .stdin(std::process::Stdio::null())
        .stdout(std::fs::File::create(&log)?)
        .stderr(std::fs::File::create(dir.join("zookeeper.err"))?)
        .kill_on_drop(true);
    // SAFETY: prctl is async-signal-safe; it only asks the kernel to signal the server
    // when the demo dies, so a killed demo leaves no ZooKeeper behind.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let mut child = cmd.spawn().context("cannot start java for ZooKeeper")?;
    let deadline = Instant::now() + READY_WITHIN;
    while !serves(port).await {
        if let Some(status) = child.try_wait()? {
            bail!(
                "ZooKeeper exited at start ({status}); see {}",
                log.display()
            );
        }
        if Instant::now() > deadline {
            let _ = child.kill().await;
            bail!(
                "ZooKeeper did not answer within {READY_WITHIN:?}; see {}",
                log.display()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let endpoint = format!("127.0.0.1:{port}");
    Ok(SpawnedZk { child, endpoint })
}

/// Whether the server on `port` answers `srvr` (it accepts connections before it serves).
async fn serves(port: u16) -> bool {
    let ask = move || -> std::io::Result<String> {
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(300))?;
        s.set_read_timeout(Some(Duration::from_secs(1)))?;
        s.write_all(b"srvr")?;
        let mut answer = String::new();
        s.read_to_string(&mut answer)?;
        Ok(answer)
    };
    tokio::task::spawn_blocking(ask)
        .await
        .ok()
        .and_then(Result::ok)
        .is_some_and(|a| a.contains("Mode: "))
}

/// `name` on the PATH.
fn which(name: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
}

/// The demo on the ZooKeeper `--spawn-zookeeper` started (`spawned`), else the one `--zk`
/// names.
pub(super) fn setup(src: &Options, spawned: Option<&str>) -> Result<Setup> {
    if let Some(s) = src.scheme {
        bail!(
            "--scheme {s} does not run on ZooKeeper: the nodes join an ephemeral sequential line; leave --scheme out"
        );
    }
    let connect = spawned
        .map(str::to_string)
        .or_else(|| src.zk.clone())
        .context(
            "--store zookeeper needs --zk HOST:PORT, or --spawn-zookeeper to start a local one",
        )?;
    let mut cfg =
        ZkSource::from_connect(&connect, Some(PREFIX.into()), None).map_err(anyhow::Error::msg)?;
    cfg.read_only = src.read_only;
    let mut node_source_args = vec![
        "--zk".into(),
        connect.clone(),
        "--prefix".into(),
        PREFIX.into(),
    ];
    if spawned.is_none() {
        // A ZooKeeper the demo is given may want digest auth or TLS: the dashboard and
        // every node use what the flags say, as `electop --zk` and `electop node` would.
        if let Some(auth) = &src.zk_auth {
            cfg.set_auth(auth).map_err(anyhow::Error::msg)?;
            node_source_args.extend(["--zk-auth".into(), auth.clone()]);
        }
        (cfg.cacert, cfg.cert, cfg.key) = (
            src.zk_tls.cacert.clone(),
            src.zk_tls.cert.clone(),
            src.zk_tls.key.clone(),
        );
        cfg.check_tls("--zk-").map_err(anyhow::Error::msg)?;
        node_source_args.extend(src.zk_tls.args("--zk-"));
    }
    Ok(Setup {
        source: SourceConfig::Zookeeper(cfg),
        node_source_args,
        label: format!("{} on {connect}", Scheme::ZkRecipe),
    })
}
