//! Proves the test proxy in tests/common/proxy.rs does what the node tests rely on: it
//! forwards, delays each direction by what it is told, freezes without closing, and stops
//! by itself at the end of its lifetime.

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use common::proxy::{Dir, Proxy};

/// An echo server on a free loopback port, one thread per connection, for `lifetime`.
fn echo_server(lifetime: Duration) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind the echo server");
    let port = listener.local_addr().expect("echo address").port();
    let end = Instant::now() + lifetime;
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let _ = conn.set_read_timeout(Some(end.saturating_duration_since(Instant::now())));
            std::thread::spawn(move || {
                let mut buf = [0u8; 1024];
                while let Ok(n) = conn.read(&mut buf) {
                    if n == 0 || conn.write_all(&buf[..n]).is_err() {
                        return;
                    }
                }
            });
            if Instant::now() >= end {
                return;
            }
        }
    });
    port
}

/// Sends `msg` and reads it back, within `timeout`; how long it took, or `None` on a
/// timeout.
fn round_trip(conn: &mut TcpStream, msg: &[u8], timeout: Duration) -> Option<Duration> {
    let sent = Instant::now();
    conn.write_all(msg).expect("write through the proxy");
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    while got.len() < msg.len() {
        let left = timeout.checked_sub(sent.elapsed())?;
        conn.set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .expect("read timeout");
        match conn.read(&mut buf) {
            Ok(0) => panic!("the proxy closed the connection"),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return None;
            }
            Err(e) => panic!("read through the proxy: {e}"),
        }
    }
    assert_eq!(got, msg, "the bytes came back in order");
    Some(sent.elapsed())
}

#[test]
fn proxy_forwards_delays_freezes_and_stops_by_itself() {
    let echo = echo_server(Duration::from_secs(30));
    let proxy = Proxy::start(echo, Duration::from_secs(6));
    let mut conn = TcpStream::connect(("127.0.0.1", proxy.port())).expect("connect");

    let plain = round_trip(&mut conn, b"hello", Duration::from_secs(2)).expect("an echo");
    assert!(plain < Duration::from_millis(200), "undelayed: {plain:?}");

    proxy.set_delay(
        Dir::Up,
        Duration::from_millis(150),
        Duration::from_millis(150),
    );
    proxy.set_delay(
        Dir::Down,
        Duration::from_millis(250),
        Duration::from_millis(250),
    );
    let slow = round_trip(&mut conn, b"slow", Duration::from_secs(2)).expect("an echo");
    assert!(
        slow >= Duration::from_millis(400),
        "delayed both ways: {slow:?}"
    );

    // Random delays keep the byte order.
    proxy.delay_both(Duration::ZERO, Duration::from_millis(50));
    for i in 0..20u8 {
        let msg = [b'a' + i; 3];
        round_trip(&mut conn, &msg, Duration::from_secs(2)).expect("an echo");
    }

    proxy.delay_both(Duration::ZERO, Duration::ZERO);
    proxy.freeze();
    assert_eq!(
        round_trip(&mut conn, b"frozen", Duration::from_millis(500)),
        None,
        "nothing passes while frozen"
    );
    proxy.thaw();
    // What was held goes on after the thaw, in order.
    let mut held = [0u8; 6];
    conn.set_read_timeout(Some(Duration::from_secs(2)))
        .expect("timeout");
    conn.read_exact(&mut held)
        .expect("the held bytes after the thaw");
    assert_eq!(&held, b"frozen");

    // At the end of its lifetime the proxy closes what it forwarded.
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut buf = [0u8; 16];
    let closed = match conn.read(&mut buf) {
        Ok(0) => true,
        Err(e) => !matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
        Ok(_) => false,
    };
    assert!(
        closed,
        "the proxy stopped by itself at the end of its lifetime"
    );
    common::wait_until("the proxy stops listening", Duration::from_secs(2), || {
        TcpStream::connect(("127.0.0.1", proxy.port())).is_err()
    });
}
