//! Driving the real binary in a detached tmux session on a private socket.

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

static N: AtomicUsize = AtomicUsize::new(0);

pub struct Tmux {
    socket: String,
}

impl Tmux {
    /// Starts `shell_command` in a `width`x`height` session.
    pub fn start(width: u16, height: u16, shell_command: &str) -> Tmux {
        let socket = format!(
            "electop-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        );
        let t = Tmux { socket };
        let ok = t
            .cmd()
            .args([
                "new-session",
                "-d",
                "-s",
                "main",
                "-x",
                &width.to_string(),
                "-y",
                &height.to_string(),
            ])
            .arg(shell_command)
            .status()
            .expect("run tmux");
        assert!(ok.success(), "tmux new-session failed");
        t
    }

    fn cmd(&self) -> Command {
        let mut c = Command::new("tmux");
        c.args(["-L", &self.socket, "-f", "/dev/null"]);
        c
    }

    pub fn capture(&self) -> String {
        let out = self
            .cmd()
            .args(["capture-pane", "-p", "-t", "main"])
            .output()
            .expect("capture-pane");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn send(&self, keys: &[&str]) {
        let ok = self
            .cmd()
            .args(["send-keys", "-t", "main"])
            .args(keys)
            .status()
            .expect("send-keys");
        assert!(ok.success());
    }

    /// Runs a tmux command on this session's server (`set -s set-clipboard on`,
    /// `show-buffer`); its stdout, empty when it fails (no buffer yet).
    pub fn run(&self, args: &[&str]) -> String {
        let out = self.cmd().args(args).output().expect("run tmux");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Waits until the screen satisfies `pred`; panics with the last screen on timeout.
    pub fn wait_screen(
        &self,
        what: &str,
        timeout: Duration,
        pred: impl Fn(&str) -> bool,
    ) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let screen = self.capture();
            if pred(&screen) {
                return screen;
            }
            if Instant::now() > deadline {
                panic!("screen never showed {what} within {timeout:?}; last screen:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd().arg("kill-server").status();
    }
}

/// `electop demo FLAGS --ttl 2s` at 80x24 with `home`'s config and data: three node panes
/// come up with one leader the other two follow, so the dashboard and every node reached
/// the store with the flags given; then `q`, `y` quits with 0. The leader's pane name.
#[allow(dead_code)] // Not every test binary runs a demo on a store it was given.
pub fn demo_elects_and_quits(home: &std::path::Path, flags: &[String]) -> String {
    let h = home.display();
    let shell = format!(
        "env RUST_BACKTRACE=0 XDG_CONFIG_HOME={h}/config XDG_DATA_HOME={h}/data {bin} demo {flags} \
         --ttl 2s; echo ELECTOP-EXITED $?; sleep 60",
        bin = super::electop::bin(),
        flags = flags.join(" "),
    );
    let tmux = Tmux::start(80, 24, &shell);
    let (_, leader) = demo_elected(&tmux);
    tmux.send(&["q"]);
    tmux.wait_screen("the question", super::T, |s| s.contains("Quit?"));
    tmux.send(&["y"]);
    tmux.wait_screen("exit 0", super::T, |s| s.contains("ELECTOP-EXITED 0"));
    leader
}

/// Waits (a JVM or a server starting on a busy machine, then the election) for the demo's
/// three node panes to show one leader the other two follow: the screen, and the leader's
/// pane name.
#[allow(dead_code)] // Not every test binary runs a demo.
pub fn demo_elected(tmux: &Tmux) -> (String, String) {
    let screen = tmux.wait_screen("a leader and two followers", 2 * super::T, |s| {
        s.contains(" LEADER\n") && s.matches("follower of node-").count() == 2
    });
    let leader = screen
        .lines()
        .find(|l| l.contains("node-") && l.trim_end().ends_with(" LEADER"))
        .and_then(|l| l.split_whitespace().find(|w| w.starts_with("node-")))
        .expect("the leader's pane")
        .to_string();
    assert!(
        screen.matches(&format!("follower of {leader}")).count() == 2,
        "both others follow {leader}:\n{screen}"
    );
    (screen, leader)
}
