//! The demo's child `electop node` processes: spawn, kill, pause, resume, restart, and stop
//! them all on the way out, so nothing is left running. Each child is told to die with its
//! parent too, in case the demo itself is killed.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

/// A line a node printed.
#[derive(Debug)]
pub(super) struct NodeOutput {
    pub node: usize,
    pub text: String,
}

pub(super) struct Supervisor {
    /// `electop` itself, to run `electop node`.
    exe: std::path::PathBuf,
    /// Source flags and `--scheme`, shared by every node.
    source_args: Vec<String>,
    /// Node flags after `node` (election, timings, --create-table), without `--id`.
    node_args: Vec<String>,
    pub ids: Vec<String>,
    children: Vec<Option<Child>>,
    out: mpsc::Sender<NodeOutput>,
}

impl Supervisor {
    pub(super) fn new(
        source_args: Vec<String>,
        node_args: Vec<String>,
        n: usize,
        out: mpsc::Sender<NodeOutput>,
    ) -> std::io::Result<Self> {
        Ok(Supervisor {
            exe: std::env::current_exe()?,
            source_args,
            node_args,
            ids: (1..=n).map(|i| format!("node-{i}")).collect(),
            children: (0..n).map(|_| None).collect(),
            out,
        })
    }

    pub(super) fn pid(&self, node: usize) -> Option<u32> {
        self.children.get(node)?.as_ref()?.id()
    }

    pub(super) fn start(&mut self, node: usize) -> std::io::Result<()> {
        let mut cmd = Command::new(&self.exe);
        cmd.args(&self.source_args)
            .arg("node")
            .args(&self.node_args)
            .args(["--id", &self.ids[node], "--json"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        // SAFETY: prctl is async-signal-safe; it only asks the kernel to signal this child
        // when its parent dies, so a killed demo leaves no node behind.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                Ok(())
            });
        }
        let mut child = cmd.spawn()?;
        for stream in [
            child
                .stdout
                .take()
                .map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
            child.stderr.take().map(|s| Box::new(s) as _),
        ]
        .into_iter()
        .flatten()
        {
            let out = self.out.clone();
            tokio::spawn(async move {
                let mut lines = BufReader::new(stream).lines();
                while let Ok(Some(text)) = lines.next_line().await {
                    if out.send(NodeOutput { node, text }).await.is_err() {
                        break;
                    }
                }
            });
        }
        self.children[node] = Some(child);
        Ok(())
    }

    fn signal(&self, node: usize, sig: i32) -> bool {
        match self.pid(node) {
            // SAFETY: sending a signal to our own child's pid.
            Some(pid) => unsafe { libc::kill(pid as i32, sig) == 0 },
            None => false,
        }
    }

    pub(super) fn kill(&mut self, node: usize) -> bool {
        self.signal(node, libc::SIGKILL)
    }

    pub(super) fn pause(&mut self, node: usize) -> bool {
        self.signal(node, libc::SIGSTOP)
    }

    pub(super) fn resume(&mut self, node: usize) -> bool {
        self.signal(node, libc::SIGCONT)
    }

    /// Reaps children that exited: `(node, exit code)`. Never waits.
    pub(super) fn reap(&mut self) -> Vec<(usize, Option<i32>)> {
        let mut exited = Vec::new();
        for (node, slot) in self.children.iter_mut().enumerate() {
            if let Some(child) = slot
                && let Ok(Some(status)) = child.try_wait()
            {
                exited.push((node, status.code()));
                *slot = None;
            }
        }
        exited
    }

    /// SIGTERM (and SIGCONT, in case it is paused) so each node resigns; SIGKILL whatever is
    /// still there after `grace`; wait for all of them.
    pub(super) async fn stop_all(&mut self, grace: Duration) {
        for node in 0..self.children.len() {
            self.signal(node, libc::SIGTERM);
            self.signal(node, libc::SIGCONT);
        }
        for slot in self.children.iter_mut() {
            if let Some(child) = slot.as_mut() {
                if tokio::time::timeout(grace, child.wait()).await.is_err() {
                    let _ = child.kill().await;
                }
                let _ = child.wait().await;
            }
            *slot = None;
        }
    }
}
