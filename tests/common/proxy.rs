//! A TCP proxy on 127.0.0.1 in front of a store, for tests of slow and partitioned
//! networks: each direction can be delayed (a random delay per chunk, within bounds, with
//! the byte order kept) and the whole proxy frozen (nothing read, nothing written, every
//! connection kept open: like a partition that drops packets, with no reset and no FIN).
//!
//! Bounded: every connection's queue holds at most `QUEUE` chunks, and the proxy stops by
//! itself after its lifetime (or when dropped), closing every connection it forwarded.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::POLL_INTERVAL;

/// Chunks queued per direction of a connection before the reader waits.
const QUEUE: usize = 256;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// Client to store.
    Up,
    /// Store to client.
    Down,
}

struct Control {
    deadline: Instant,
    done: AtomicBool,
    frozen: AtomicBool,
    /// Delay bounds (min, max) for `Up` and `Down`.
    delays: Mutex<[(Duration, Duration); 2]>,
    /// xorshift64 state: reproducible from the seed printed at start.
    rng: Mutex<u64>,
}

impl Control {
    fn over(&self) -> bool {
        self.done.load(Ordering::SeqCst) || Instant::now() >= self.deadline
    }

    fn frozen(&self) -> bool {
        self.frozen.load(Ordering::SeqCst)
    }

    fn delay(&self, dir: Dir) -> Duration {
        let (min, max) = self
            .delays
            .lock()
            .map(|d| d[dir as usize])
            .unwrap_or_default();
        let span = max.saturating_sub(min).as_micros() as u64;
        if span == 0 {
            return min;
        }
        let mut rng = self.rng.lock().unwrap_or_else(|e| e.into_inner());
        *rng ^= *rng << 13;
        *rng ^= *rng >> 7;
        *rng ^= *rng << 17;
        min + Duration::from_micros(*rng % (span + 1))
    }
}

pub struct Proxy {
    port: u16,
    ctl: Arc<Control>,
}

impl Proxy {
    /// Forwards a fresh loopback port to `upstream` for at most `lifetime`.
    pub fn start(upstream: u16, lifetime: Duration) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        let port = listener.local_addr().expect("proxy address").port();
        listener
            .set_nonblocking(true)
            .expect("non-blocking listener");
        let seed = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
            | 1;
        println!("proxy :{port} -> :{upstream}, random seed {seed}");
        let ctl = Arc::new(Control {
            deadline: Instant::now() + lifetime,
            done: AtomicBool::new(false),
            frozen: AtomicBool::new(false),
            delays: Mutex::new([(Duration::ZERO, Duration::ZERO); 2]),
            rng: Mutex::new(seed),
        });
        let c = Arc::clone(&ctl);
        std::thread::spawn(move || accept_loop(listener, upstream, c));
        Proxy { port, ctl }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// From now on each chunk going `dir` waits a random delay in `min..=max`.
    pub fn set_delay(&self, dir: Dir, min: Duration, max: Duration) {
        assert!(min <= max, "delay bounds {min:?} > {max:?}");
        if let Ok(mut d) = self.ctl.delays.lock() {
            d[dir as usize] = (min, max);
        }
    }

    /// `set_delay` for both directions.
    pub fn delay_both(&self, min: Duration, max: Duration) {
        self.set_delay(Dir::Up, min, max);
        self.set_delay(Dir::Down, min, max);
    }

    /// Forwards nothing more (what is queued stays queued) until `thaw`.
    pub fn freeze(&self) {
        self.ctl.frozen.store(true, Ordering::SeqCst);
    }

    pub fn thaw(&self) {
        self.ctl.frozen.store(false, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.ctl.done.store(true, Ordering::SeqCst);
    }
}

fn accept_loop(listener: TcpListener, upstream: u16, ctl: Arc<Control>) {
    while !ctl.over() {
        match listener.accept() {
            Ok((client, _)) => {
                let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
                    continue;
                };
                let _ = client.set_nonblocking(false);
                for (from, to, dir) in [
                    (client.try_clone(), server.try_clone(), Dir::Up),
                    (server.try_clone(), client.try_clone(), Dir::Down),
                ] {
                    let (Ok(from), Ok(to)) = (from, to) else {
                        continue;
                    };
                    let (tx, rx) = sync_channel(QUEUE);
                    let (c1, c2) = (Arc::clone(&ctl), Arc::clone(&ctl));
                    std::thread::spawn(move || read_side(from, tx, dir, &c1));
                    std::thread::spawn(move || write_side(to, rx, &c2));
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => std::thread::sleep(POLL_INTERVAL),
            Err(_) => return,
        }
    }
}

/// Reads chunks and stamps each with when it may go on: its random delay, but never before
/// the chunk ahead of it, so the byte order is kept.
fn read_side(mut from: TcpStream, tx: SyncSender<(Instant, Vec<u8>)>, dir: Dir, ctl: &Control) {
    let _ = from.set_read_timeout(Some(POLL_INTERVAL));
    let mut buf = [0u8; 16 * 1024];
    let mut last = Instant::now();
    while !ctl.over() {
        if ctl.frozen() {
            std::thread::sleep(POLL_INTERVAL);
            continue;
        }
        let n = match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => continue,
            Err(_) => break,
        };
        last = last.max(Instant::now() + ctl.delay(dir));
        let mut item = (last, buf[..n].to_vec());
        loop {
            match tx.try_send(item) {
                Ok(()) => break,
                Err(TrySendError::Full(back)) if !ctl.over() => {
                    item = back;
                    std::thread::sleep(POLL_INTERVAL);
                }
                Err(_) => return,
            }
        }
    }
    // Dropping `tx` tells the writer that nothing more comes.
}

fn write_side(mut to: TcpStream, rx: Receiver<(Instant, Vec<u8>)>, ctl: &Control) {
    'chunks: while !ctl.over() {
        let (at, bytes) = match rx.recv_timeout(POLL_INTERVAL) {
            Ok(item) => item,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => break,
        };
        loop {
            if ctl.over() {
                break 'chunks;
            }
            let now = Instant::now();
            if !ctl.frozen() && now >= at {
                break;
            }
            let wait = at
                .saturating_duration_since(now)
                .max(Duration::from_millis(1));
            std::thread::sleep(wait.min(POLL_INTERVAL));
        }
        if to.write_all(&bytes).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Both);
}
