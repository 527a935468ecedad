//! Which client sessions are alive, as the servers say: the `cons` four-letter word lists
//! every connection a member serves (`sid=0x…`, with its negotiated timeout `to=`). A client
//! has no call to ask whether another client's session lives (ZooKeeper's API answers
//! only for the caller's own session), so this is how electop tells how long a deposed
//! holder may go on believing it leads.
//!
//! A session shows on the one member its client is connected to, so every member is asked.
//! Where a member refuses `cons` (not in `4lw.commands.whitelist`) or does not answer, a
//! session missing from the others may be on it: then electop cannot tell, and says so.

use std::collections::HashMap;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// What the members said at one check.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Listing {
    /// Each session listed by some member, with its negotiated timeout where given (ms).
    pub sessions: HashMap<i64, Option<u64>>,
    /// Every member answered `cons`: a session not listed is connected to none of them.
    pub complete: bool,
}

/// An answer is at most this long: a member with many connections prints a line each.
const MAX_ANSWER: u64 = 8 << 20;

/// Asks every member in `members` (`host:port`) for `cons`, each within `timeout`.
pub(crate) async fn list(members: &[String], timeout: Duration) -> Listing {
    let asks = members.iter().map(|m| ask(m, timeout));
    let answers = futures::future::join_all(asks).await;
    let mut out = Listing {
        sessions: HashMap::new(),
        complete: !members.is_empty(),
    };
    for answer in answers {
        match answer.as_deref().and_then(parse) {
            Some(listed) => out.sessions.extend(listed),
            None => out.complete = false,
        }
    }
    out
}

/// `cons` sent to one member, its whole answer; `None` when it did not answer in time.
async fn ask(member: &str, timeout: Duration) -> Option<String> {
    let talk = async {
        let mut s = tokio::net::TcpStream::connect(member).await.ok()?;
        s.write_all(b"cons").await.ok()?;
        let mut buf = Vec::new();
        s.take(MAX_ANSWER).read_to_end(&mut buf).await.ok()?;
        Some(String::from_utf8_lossy(&buf).into_owned())
    };
    tokio::time::timeout(timeout, talk).await.ok().flatten()
}

/// The sessions in a `cons` answer; `None` when it is no such answer (the word refused:
/// "cons is not executed because it is not in the whitelist.", or anything else).
pub(crate) fn parse(text: &str) -> Option<Vec<(i64, Option<u64>)>> {
    // Every connection line reads ` /ip:port[n](queued=…,…)`, also electop's own probe
    // (`[0](queued=0,recved=1,sent=0)`, no session yet): an answer has at least that one.
    if !text.contains("(queued=") {
        return None;
    }
    let field = |line: &str, name: &str| -> Option<String> {
        let start = line.find(&format!("{name}="))? + name.len() + 1;
        let rest = &line[start..];
        let end = rest.find([',', ')']).unwrap_or(rest.len());
        Some(rest[..end].to_string())
    };
    let sessions = text
        .lines()
        .filter_map(|l| {
            let sid = field(l, "sid")?;
            let sid = u64::from_str_radix(sid.strip_prefix("0x")?, 16).ok()? as i64;
            let to = field(l, "to").and_then(|t| t.parse().ok());
            Some((sid, to))
        })
        .collect();
    Some(sessions)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As ZooKeeper 3.8 answers, with electop's own probe connection first.
    const CONS: &str = " /127.0.0.1:40012[0](queued=0,recved=1,sent=0)\n \
        /127.0.0.1:39874[1](queued=0,recved=31,sent=31,sid=0x100004b3e8a0001,lop=PING,\
        est=1700000000000,to=3000,lcxid=0x4,lzxid=0x1f,lresp=1700000001000,llat=0,minlat=0,\
        avglat=0,maxlat=2)\n \
        /127.0.0.1:39880[1](queued=0,recved=9,sent=9,sid=0x100004b3e8a0002,lop=GETC,\
        est=1700000000000,to=10000,lcxid=0x2,lzxid=0x1f,lresp=1700000001000,llat=0,minlat=0,\
        avglat=0,maxlat=1)\n\n";

    #[test]
    fn sessions_and_their_timeouts_are_read_from_cons() {
        let got = parse(CONS).expect("a cons answer");
        assert_eq!(
            got,
            [
                (0x1000_04b3_e8a0_001, Some(3000)),
                (0x1000_04b3_e8a0_002, Some(10_000))
            ]
        );
    }

    #[test]
    fn a_refused_word_is_no_listing() {
        assert_eq!(
            parse("cons is not executed because it is not in the whitelist.\n"),
            None
        );
        assert_eq!(parse(""), None);
    }
}
