//! The one reader of a child's output: its lines, each with when it was read here, on a
//! thread of its own, so a test waits on a channel with a deadline instead of blocking on
//! a pipe.

use std::io::{BufRead, BufReader, Read};
use std::sync::mpsc::{self, Receiver};
use std::time::{Instant, SystemTime};

/// One line a child printed, and when it was read.
pub struct Line {
    pub at: Instant,
    pub wall: SystemTime,
    pub text: String,
}

/// Reads `out` line by line, each made into what the test keeps by `each`; the channel
/// closes when the output ends or nobody listens any more.
pub fn read_lines<T: Send + 'static>(
    out: impl Read + Send + 'static,
    each: impl Fn(Line) -> T + Send + 'static,
) -> Receiver<T> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for text in BufReader::new(out).lines().map_while(Result::ok) {
            let line = Line {
                at: Instant::now(),
                wall: SystemTime::now(),
                text,
            };
            if tx.send(each(line)).is_err() {
                break;
            }
        }
    });
    rx
}

/// The lines' text alone.
pub fn text_lines(out: impl Read + Send + 'static) -> Receiver<String> {
    read_lines(out, |l| l.text)
}

/// A pipe's text (a child's stderr), collected as it comes on a thread, so what a process
/// said can be shown while it still runs.
pub fn drain(mut pipe: impl Read + Send + 'static) -> std::sync::Arc<std::sync::Mutex<String>> {
    let text = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let sink = std::sync::Arc::clone(&text);
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = pipe.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap_or_else(|p| p.into_inner())
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    text
}
