//! `electop watch --json`, its lines timestamped as they arrive.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub struct Lines {
    child: Child,
    seen: Arc<Mutex<Vec<(Instant, String)>>>,
}

impl Lines {
    pub fn start(cmd: &mut Command) -> Lines {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn electop watch");
        let out = child.stdout.take().expect("piped stdout");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                let at = Instant::now();
                sink.lock().expect("lines").push((at, line));
            }
        });
        Lines { child, seen }
    }

    /// Waits (up to `timeout`) for a line containing every one of `needles`; when it came.
    pub fn wait(&self, needles: &[&str], timeout: Duration) -> Option<Instant> {
        self.wait_from(0, needles, timeout)
    }

    /// How many lines came so far: [`Self::wait_from`] looks at the lines after.
    pub fn mark(&self) -> usize {
        self.seen.lock().expect("lines").len()
    }

    /// [`Self::wait`] among the lines after `mark`: the 10,000 lines of how each election
    /// stood are not searched again at each look, under the lock the reader needs.
    pub fn wait_from(&self, mark: usize, needles: &[&str], timeout: Duration) -> Option<Instant> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(t) = self.when(mark, needles) {
                return Some(t);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn when(&self, mark: usize, needles: &[&str]) -> Option<Instant> {
        let seen = self.seen.lock().expect("lines");
        seen.iter()
            .skip(mark)
            .find(|(_, l)| needles.iter().all(|n| l.contains(n)))
            .map(|(t, _)| *t)
    }

    /// Every line so far, for a reader puzzled by a missed change.
    pub fn all(&self) -> Vec<String> {
        let seen = self.seen.lock().expect("lines");
        seen.iter().map(|(_, l)| l.clone()).collect()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Lines {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
