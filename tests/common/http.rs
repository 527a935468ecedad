//! A plain HTTP/1.0 GET over `std::net::TcpStream`, for the test harnesses that talk to
//! local HTTP servers (Prometheus, Alertmanager). HTTP/1.0 keeps it tiny: the server closes
//! the connection after one response and never chunks it, so the body is the rest of the
//! stream.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::mpsc;
use std::time::Duration;

/// How long one request may take to connect, send and read back.
const IO_TIMEOUT: Duration = Duration::from_secs(5);

/// A response: its status code and body (lossily decoded; these are JSON or text APIs).
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub body: String,
}

/// `GET path_and_query` from `addr` ("127.0.0.1:PORT"). Err names what failed (connect,
/// write, read, a malformed status line), so a poller can show the last reason it waited.
pub fn get(addr: &str, path_and_query: &str) -> Result<Response, String> {
    let sock: SocketAddr = addr
        .parse()
        .map_err(|e| format!("bad address {addr:?}: {e}"))?;
    let mut stream = TcpStream::connect_timeout(&sock, IO_TIMEOUT)
        .map_err(|e| format!("connect {addr}: {e}"))?;
    stream
        .set_read_timeout(Some(IO_TIMEOUT))
        .and_then(|()| stream.set_write_timeout(Some(IO_TIMEOUT)))
        .map_err(|e| format!("set timeouts on {addr}: {e}"))?;
    let request = format!(
        "GET {path_and_query} HTTP/1.0\r\nHost: {addr}\r\nAccept: application/json\r\n\r\n"
    );
    stream
        .write_all(request.as_bytes())
        .map_err(|e| format!("send GET {path_and_query} to {addr}: {e}"))?;
    let mut raw = Vec::new();
    stream
        .read_to_end(&mut raw)
        .map_err(|e| format!("read GET {path_and_query} from {addr}: {e}"))?;
    parse(&raw).map_err(|e| format!("GET {path_and_query} from {addr}: {e}"))
}

/// Splits "HTTP/1.x CODE REASON\r\nheaders\r\n\r\nbody".
fn parse(raw: &[u8]) -> Result<Response, String> {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("no end of headers in {} bytes", raw.len()))?;
    let status_line = head.lines().next().unwrap_or_default();
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| format!("malformed status line {status_line:?}"))?;
    Ok(Response {
        status,
        body: body.to_string(),
    })
}

/// `s` escaped for a URL query value (PromQL has spaces, braces, quotes...).
pub fn query_escape(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// Serves `body` as `text/plain` (the Prometheus exposition format, for one) to every request
/// on a free loopback port, from a detached thread that lives as long as the test process.
/// Returns "127.0.0.1:PORT". A stand-in exporter for tests of what scrapes it.
pub fn serve_static(body: String) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("local_addr").to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let _ = answer(&mut stream, &body);
        }
    });
    addr
}

/// Reads one request's head and writes `body` back, closing the connection.
fn answer(stream: &mut TcpStream, body: &str) -> std::io::Result<()> {
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        head.extend_from_slice(&buf[..n]);
    }
    let response = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(response.as_bytes())
}

/// Status code and body of `GET path` on `addr`, with extra header lines (`Name: value`);
/// panics when the server cannot be reached.
pub fn request(addr: &str, path: &str, headers: &[&str]) -> (u16, String) {
    let mut s = send(addr, path, headers);
    let mut text = String::new();
    s.read_to_string(&mut text).expect("read response");
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (status_of(head), body.to_string())
}

/// Status code, header lines and body bytes of `GET path` on `addr`, with extra header lines:
/// for a body that need not be text (gzip).
pub fn request_raw(addr: &str, path: &str, headers: &[&str]) -> (u16, String, Vec<u8>) {
    let mut s = send(addr, path, headers);
    let mut all = Vec::new();
    s.read_to_end(&mut all).expect("read response");
    let end = all
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or(all.len());
    let head = String::from_utf8_lossy(&all[..end]).into_owned();
    let body = all.get(end + 4..).unwrap_or_default().to_vec();
    (status_of(&head), head, body)
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
