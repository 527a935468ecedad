//! The dashboard in a detached tmux session, as a user would run it.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::tmux::Tmux;

/// Ends when dropped: the tmux server goes, and the dashboard with its terminal.
pub struct Tui {
    pub tmux: Tmux,
    pub pid: u32,
}

fn env(home: &Path) -> String {
    format!(
        "XDG_CONFIG_HOME={0}/config XDG_DATA_HOME={0}/data HOME={0}",
        home.display()
    )
}

/// Starts the dashboard with `args` in a 200x50 terminal.
pub fn start(home: &Path, args: &[String]) -> Tui {
    let pidfile = home.join("tui.pid");
    let _ = std::fs::remove_file(&pidfile);
    let cmd = format!(
        "sh -c 'echo $$ > {}; exec env {} {} {}'",
        pidfile.display(),
        env(home),
        crate::bin(),
        args.join(" ")
    );
    let tmux = Tmux::start(200, 50, &cmd);
    let deadline = Instant::now() + Duration::from_secs(10);
    let pid = loop {
        if let Some(pid) = std::fs::read_to_string(&pidfile)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            break pid;
        }
        assert!(Instant::now() < deadline, "the dashboard did not start");
        std::thread::sleep(Duration::from_millis(5));
    };
    Tui { tmux, pid }
}

/// Time from starting the dashboard to its first frame showing elections (the process
/// exits right after drawing it), timed inside the terminal.
pub fn first_frame(home: &Path, args: &[String]) -> Duration {
    first_frame_until(home, args, "exit")
}

/// [`first_frame`] until the frame `mode` names (`ELECTOP_BENCH_FIRST_FRAME`): `exit`, the
/// first that shows elections; `whole`, the first with every source read through.
pub fn first_frame_until(home: &Path, args: &[String], mode: &str) -> Duration {
    let out = home.join("first-frame.ns");
    let _ = std::fs::remove_file(&out);
    let cmd = format!(
        "sh -c 's=$(date +%s%N); env {} ELECTOP_BENCH_FIRST_FRAME={mode} {} {}; echo $(( $(date +%s%N) - s )) > {}'",
        env(home),
        crate::bin(),
        args.join(" "),
        out.display()
    );
    let _tmux = Tmux::start(200, 50, &cmd);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(ns) = std::fs::read_to_string(&out)
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
        {
            return Duration::from_nanos(ns);
        }
        assert!(Instant::now() < deadline, "no first frame within 60 s");
        std::thread::sleep(Duration::from_millis(5));
    }
}
