//! A plain HTTP/1.0 client for the tests: one request per connection, the body read to the
//! end (HTTP/1.0 has no chunked bodies, so a stream is the body as it comes).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::mpsc;
use std::time::Duration;

/// Status code and body of `GET path` on `addr`, with extra header lines (`Name: value`).
pub fn get(addr: &str, path: &str, headers: &[&str]) -> (u16, String) {
    let mut s = send(addr, path, headers);
    let mut text = String::new();
    s.read_to_string(&mut text).expect("read response");
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (status_of(head), body.to_string())
}

fn send(addr: &str, path: &str, headers: &[&str]) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    s.set_read_timeout(Some(Duration::from_secs(15))).ok();
    let mut req = format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n");
    for h in headers {
        req.push_str(h);
        req.push_str("\r\n");
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).expect("send request");
    s
}

fn status_of(head: &str) -> u16 {
    head.split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

/// `GET path` whose body is a stream of lines: its lines as they come, on a thread.
pub fn lines(addr: &str, path: &str) -> mpsc::Receiver<String> {
    let s = send(addr, path, &[]);
    s.set_read_timeout(None).ok();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut r = BufReader::new(s);
        let mut in_body = false;
        let mut line = String::new();
        while r.read_line(&mut line).is_ok_and(|n| n > 0) {
            let l = line.trim_end().to_string();
            line.clear();
            if !in_body {
                in_body = l.is_empty();
                continue;
            }
            if tx.send(l).is_err() {
                return;
            }
        }
    });
    rx
}
