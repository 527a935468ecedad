//! `electop status` beside the floor: ZooKeeper's own Java client making the same reads
//! (`Floor.java`), compiled here with `javac` against Debian's zookeeper.jar.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::common::zookeeper::CLI_CLASSPATH;

/// Compiles `Floor.java` once per run into the bench's temp dir; returns the class dir.
fn classes() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/zk_scale/Floor.java");
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("zk_scale/classes");
        let _ = std::fs::remove_dir_all(&dir);
        let out = Command::new("javac")
            .arg("-cp")
            .arg(CLI_CLASSPATH)
            .arg("-d")
            .arg(&dir)
            .arg(&src)
            .env_remove("CLASSPATH")
            .output()
            .expect("run javac (is openjdk-17-jdk-headless installed?)");
        assert!(
            out.status.success(),
            "javac {}: {}",
            src.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        dir
    })
}

/// One run of the floor: (cold, warm) ms as the program measured them inside the JVM
/// (connect + reads each), and the process's wall time with the JVM's start.
pub fn floor(endpoint: &str, prefix: &str) -> (f64, f64, Duration) {
    let t = Instant::now();
    // The JVM's full JIT (not the tests' quick-start flags): the floor is the Java client
    // at its best.
    let out = Command::new("java")
        .arg("-Xmx512m")
        .arg("-cp")
        .arg(format!("{}:{CLI_CLASSPATH}", classes().display()))
        .args(["Floor", endpoint, prefix])
        .env_remove("CLASSPATH")
        .stderr(Stdio::inherit())
        .output()
        .expect("run the Java floor");
    let wall = t.elapsed();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "the Java floor failed: {text}");
    let field = |k: &str| -> f64 {
        text.split_whitespace()
            .find_map(|w| w.strip_prefix(k))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {k} in the floor's output: {text}"))
    };
    (field("cold_ms="), field("warm_ms="), wall)
}

/// Wall time and CPU time (user + system) of a command run to its end, output thrown
/// away; panics if it fails.
// Reaped by `wait4`, which `Child` has no call for (it gives the child's rusage).
#[allow(clippy::zombie_processes)]
pub fn wall_and_cpu(cmd: &mut Command) -> (Duration, Duration) {
    let t = Instant::now();
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: rusage is plain data; wait4 fills it for our own child, reaped here (the
    // `Child` is dropped unwaited, which is allowed).
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let got = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    let wall = t.elapsed();
    assert_eq!(got, pid, "wait4");
    let ok = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
    if !ok {
        let mut err = String::new();
        if let Some(mut e) = child.stderr {
            use std::io::Read;
            let _ = e.read_to_string(&mut err);
        }
        panic!("{cmd:?} failed ({status}): {err}");
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    (wall, tv(ru.ru_utime) + tv(ru.ru_stime))
}

/// The middle of `v` (sorted in place).
pub fn median<T: Ord + Copy>(v: &mut [T]) -> T {
    v.sort();
    v[v.len() / 2]
}
