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
