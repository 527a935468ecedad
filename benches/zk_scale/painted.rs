//! When the dashboard's bytes reach its terminal. `tmux capture-pane` polled in a loop
//! tells whether the screen shows a change, but each capture is a process and a few ms,
//! which bounds what it can time. tmux's `pipe-pane` copies every byte the pane's program
//! writes, as tmux reads it from the pty, to a command of ours (`cat` into a FIFO); a thread
//! here reads the FIFO and stamps each read with its `Instant`. ratatui writes only the
//! cells that changed, so the bytes alone do not say which frame showed the change: the
//! captures still decide that, and the frames' arrival times say when (see [`Painted::frame`]).

use std::io::{Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::common::tmux::Tmux;

/// Reads closer together than this are one frame: ratatui writes a frame in a few `write`s
/// (stdout's 1 KiB line buffer) in a row, well under it; frames for time alone are 500 ms
/// apart or more here, and the frame cap keeps any two 33 ms apart.
const FRAME_GAP: Duration = Duration::from_millis(2);

/// One read of the pane's output: when it arrived, and its bytes.
struct Chunk {
    at: Instant,
    wall: SystemTime,
    bytes: Vec<u8>,
}

/// What a pane wrote, as it arrives.
pub struct Painted {
    chunks: Arc<Mutex<Vec<Chunk>>>,
}

/// The frame that showed a change, found between two captures.
pub struct Frame {
    /// When its last bytes arrived.
    pub at: Instant,
    /// How many frames arrived between the last capture that did not show the change and
    /// the one that did: 1 when the attribution is certain.
    pub candidates: usize,
    /// None did: the relay brought the frame only after the capture saw it.
    pub late: bool,
}

impl Painted {
    /// Starts copying `tmux`'s pane output (session `main`) through a FIFO in `dir`.
    pub fn start(tmux: &Tmux, dir: &Path) -> Painted {
        // A name of its own: a pipe that ended removes its FIFO only after this one is made.
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let fifo = dir.join(format!("pane-{}-{n}.fifo", std::process::id()));
        let _ = std::fs::remove_file(&fifo);
        let ok = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo");
        assert!(ok.success(), "mkfifo {}", fifo.display());
        let chunks: Arc<Mutex<Vec<Chunk>>> = Arc::default();
        let sink = chunks.clone();
        let path = fifo.clone();
        std::thread::spawn(move || {
            // Blocks until `cat` opens the other end; ends when tmux ends and `cat` with it.
            let mut f = std::fs::File::open(&path).expect("open the FIFO");
            let mut buf = vec![0u8; 1 << 16];
            while let Ok(n @ 1..) = f.read(&mut buf) {
                let (at, wall) = (Instant::now(), SystemTime::now());
                let bytes = buf[..n].to_vec();
                sink.lock().expect("chunks").push(Chunk { at, wall, bytes });
            }
            let _ = std::fs::remove_file(&path);
        });
        // `exec`: the pipe is cat's own, no shell between.
        let cmd = format!("exec cat > {}", fifo.display());
        tmux.run(&["pipe-pane", "-o", "-t", "main", &cmd]);
        Painted { chunks }
    }

    /// Waits until some bytes have come through (the pipe is in place).
    pub fn wait_flowing(&self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while self.chunks.lock().expect("chunks").is_empty() {
            assert!(Instant::now() < deadline, "nothing came through pipe-pane");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The frame that made a capture true: `before` is when the last capture that did not
    /// show the change began (or when the change was made), `after` when the one that did
    /// ended. tmux read the change's frame between the two samples and relays it after
    /// reading it, so the frame ended after `before`; it began by `after` unless the relay
    /// lagged behind the capture (a loaded machine). Of the frames in that window, the
    /// last is taken: should a frame for time alone (every 500 ms) have come beside the
    /// change's, that is an upper bound, counted in `candidates`. With none in it, the
    /// first frame after `after`, within 100 ms (the relay's lag included), `late`.
    pub fn frame(&self, before: Instant, after: Instant) -> Option<Frame> {
        let deadline = Instant::now() + Duration::from_millis(100);
        loop {
            // A frame begun by `after` is over only once its gap has passed.
            let settled = Instant::now() > after + FRAME_GAP;
            let frames: Vec<(Instant, Instant)> = self
                .frames()
                .into_iter()
                .filter(|(_, ended)| *ended > before)
                .collect();
            let mut window = frames.iter().filter(|(begun, _)| *begun <= after);
            let candidates = window.clone().count();
            if settled && let Some((_, at)) = window.next_back() {
                let (at, late) = (*at, false);
                return Some(Frame {
                    at,
                    candidates,
                    late,
                });
            }
            // Only once that frame is over too.
            if candidates == 0
                && let Some((_, at)) = frames.first()
                && Instant::now() > *at + FRAME_GAP
            {
                let (at, late) = (*at, true);
                return Some(Frame {
                    at,
                    candidates,
                    late,
                });
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Each frame's first and last read's arrival.
    fn frames(&self) -> Vec<(Instant, Instant)> {
        let chunks = self.chunks.lock().expect("chunks");
        let mut frames: Vec<(Instant, Instant)> = Vec::new();
        for c in chunks.iter() {
            match frames.last_mut() {
                Some((_, ended)) if c.at.duration_since(*ended) < FRAME_GAP => *ended = c.at,
                _ => frames.push((c.at, c.at)),
            }
        }
        frames
    }

    /// The relay's own delay, from markers [`marker_main`] wrote: for each, how long after
    /// its write (its wall-clock stamp) its bytes arrived here, in ms.
    fn marker_delays(&self) -> Vec<f64> {
        let chunks = self.chunks.lock().expect("chunks");
        let mut out = Vec::new();
        for c in chunks.iter() {
            let arrived = c.wall.duration_since(UNIX_EPOCH).expect("clock").as_nanos();
            let text = String::from_utf8_lossy(&c.bytes);
            for part in text.split("<M").skip(1) {
                let Some(ns) = part
                    .split_once('>')
                    .and_then(|(n, _)| n.parse::<u128>().ok())
                else {
                    continue; // split across reads: left out
                };
                out.push((arrived as f64 - ns as f64) / 1e6);
            }
        }
        out
    }
}

/// The env var that makes the bench binary, started in a pane, write markers instead.
const MARKER_ENV: &str = "ELECTOP_BENCH_MARKERS";
/// Markers written by the floor's pane, one every 20 ms.
const MARKERS: usize = 200;

/// In a pane the relay's floor runs this binary with [`MARKER_ENV`] set: it writes `<M`,
/// the wall clock in ns, `>`, right after reading the clock, one marker at a time. Returns
/// whether it did (the bench's `main` then returns).
pub fn marker_main() -> bool {
    if std::env::var_os(MARKER_ENV).is_none() {
        return false;
    }
    // The ones written before the bench's pipe is in place are lost, and not counted.
    let mut out = std::io::stdout().lock();
    for _ in 0..MARKERS {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).expect("clock");
        let _ = write!(out, "\r<M{}>", now.as_nanos());
        let _ = out.flush();
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// The relay's floor: how long tmux and `cat` take to bring a pane's write here, from a
/// pane writing time-stamped markers (this bench binary again), as p50, p99, max in ms.
pub fn relay_floor(dir: &Path) -> (f64, f64, f64, usize) {
    let exe = std::env::current_exe().expect("the bench binary");
    let cmd = format!("env {MARKER_ENV}=1 {}", exe.display());
    let tmux = Tmux::start(200, 50, &cmd);
    let painted = Painted::start(&tmux, dir);
    painted.wait_flowing(Duration::from_secs(10));
    // The markers from the first bytes on, for as long as the pane writes them.
    std::thread::sleep(Duration::from_millis(20 * MARKERS as u64));
    let delays = painted.marker_delays();
    let n = delays.len();
    let (p50, p99, max) = crate::procs::percentiles(delays);
    (p50, p99, max, n)
}

/// A change found on screen: the captures around it.
pub struct Shown {
    /// When the last capture that did not show it began (or when the change was made).
    before: Instant,
    /// When the capture that showed it ended.
    after: Instant,
}

/// How long after a change the first capture waits, in the runs that leave the window
/// quiet. A capture is a process (a tmux client, and the server's work to answer it): made
/// at the change, it takes the CPU ZooKeeper or Redis and electop need to answer and draw
/// on two cores. zk_scale measured it: the bench's own re-read of the election, 1.4 ms with
/// the first capture waiting, took 4 ms beside a capture made at once. The frame's time
/// comes from `pipe-pane`, not from the capture, which only tells which frame showed the
/// change; a window that holds two frames takes the later (an upper bound, counted).
pub const QUIET: Duration = Duration::from_millis(20);

/// The two ways the captures are made, in turns in one run: from the change on, and
/// [`QUIET`] after it.
pub const CAPTURES: [(Duration, &str); 2] = [
    (Duration::ZERO, "captured from the change on"),
    (QUIET, "first capture 20 ms after the change"),
];

/// Captures `tmux` until a line of the screen satisfies `shows`, the first capture `quiet`
/// after the change, the next ones as fast as they go; `sent`: when the change was made
/// (nothing can show it before).
pub fn poll(tmux: &Tmux, sent: Instant, quiet: Duration, shows: impl Fn(&str) -> bool) -> Shown {
    let mut before = sent;
    std::thread::sleep(quiet.saturating_sub(sent.elapsed()));
    loop {
        let begun = Instant::now();
        let screen = tmux.capture();
        let after = Instant::now();
        if screen.lines().any(&shows) {
            return Shown { before, after };
        }
        assert!(
            sent.elapsed() < Duration::from_secs(10),
            "the change never showed; last screen:\n{screen}"
        );
        before = begun;
    }
}

/// The delays of changes on screen, by capture and by frame, in ms after each change's
/// reference event (signed: electop may hear of a change before the bench's own watch).
#[derive(Default)]
pub struct Seen {
    captured: Vec<f64>,
    framed: Vec<f64>,
    /// Changes whose window held more than one frame (the later was taken).
    ambiguous: usize,
    /// Changes whose frame the relay brought only after the capture that saw it.
    late: usize,
    /// Changes with no frame found in their window.
    unframed: usize,
}

fn ms_since(t: Instant, from: Instant) -> f64 {
    match t.checked_duration_since(from) {
        Some(d) => d.as_secs_f64() * 1000.0,
        None => -(from.duration_since(t).as_secs_f64() * 1000.0),
    }
}

impl Seen {
    /// A change whose reference event arrived `at`, shown as `shown` says.
    pub fn add(&mut self, painted: &Painted, shown: Shown, at: Instant) {
        let captured = ms_since(shown.after, at);
        self.captured.push(captured);
        // Each change on stderr too, to tell a slow frame from a slow capture.
        match painted.frame(shown.before, shown.after) {
            Some(f) => {
                let framed = ms_since(f.at, at);
                eprintln!(
                    "on screen: capture {captured:.2} ms, frame {framed:.2} ms ({} in the window{})",
                    f.candidates,
                    if f.late { ", relayed late" } else { "" }
                );
                self.framed.push(framed);
                self.ambiguous += usize::from(f.candidates > 1);
                self.late += usize::from(f.late);
            }
            None => {
                eprintln!("on screen: capture {captured:.2} ms, no frame in the window");
                self.unframed += 1;
            }
        }
    }

    /// The table's rows: the capture's figure and the frame's; `how` says how the captures
    /// were made.
    pub fn rows(self, what: &str, how: &str) {
        row(
            &format!(
                "the screen ({how}): `tmux capture-pane`, until the capture that showed it returned"
            ),
            self.captured,
            0,
        );
        row(
            &format!(
                "the screen ({how}): the frame that showed it, its last byte out of tmux (`pipe-pane`); {} of the {what} with two frames between captures (the later taken), {} relayed after the capture",
                self.ambiguous, self.late
            ),
            self.framed,
            self.unframed,
        );
    }
}

fn row(label: &str, v: Vec<f64>, missed: usize) {
    let n = v.len();
    let (p50, p99, max) = crate::procs::percentiles(v);
    println!("| {label} | {n} | {missed} | {p50:.2} ms | {p99:.2} ms | {max:.2} ms |");
}

/// The relay's floor as a row (measured now, in a pane of its own, under the same load).
pub fn relay_row(dir: &Path) {
    let (p50, p99, max, n) = relay_floor(dir);
    println!(
        "| the relay alone: a pane's write to its bytes here through `pipe-pane` (markers; not from an event) | {n} | 0 | {p50:.2} ms | {p99:.2} ms | {max:.2} ms |"
    );
}
