//! Which client sessions are alive, as the servers say: the `cons` four-letter word lists
//! every connection a member serves (`sid=0x…`, with its negotiated timeout `to=`). A client
//! has no call to ask whether another client's session lives (ZooKeeper's API answers
//! only for the caller's own session), so this is how electop tells how long a deposed
//! holder may go on believing it leads.
//!
//! Best is `dump` on the ensemble's leader (or a standalone server): its "SessionTracker
//! dump" lists every session the ensemble holds, connected or between connections, so a
//! session missing from it has ended. Where no member answers that, `cons` is asked of
//! every member: a session shows on the one member its client is connected to, and one
//! missing from all may only be moving to another member. Where a member refuses both (not
//! in `4lw.commands.whitelist`) or does not answer, a session missing from the others may be
//! on it: then electop cannot tell, and says so.

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
    /// The leader's `dump` answered: a session not listed has ended.
    pub authoritative: bool,
}

/// An answer is at most this long: a member with many connections prints a line each.
const MAX_ANSWER: u64 = 8 << 20;

/// Asks every member in `members` (`host:port`) for `dump`, and where no leader answers it,
/// for `cons`; each within `timeout`.
pub(crate) async fn list(members: &[String], timeout: Duration) -> Listing {
    let dumps = members.iter().map(|m| ask(m, "dump", timeout));
    let dumps = futures::future::join_all(dumps).await;
    let mut out = Listing {
        sessions: HashMap::new(),
        complete: !members.is_empty(),
        authoritative: false,
    };
    if let Some(all) = dumps.iter().find_map(|d| d.as_deref().and_then(parse_dump)) {
        out.sessions = all.into_iter().map(|s| (s, None)).collect();
        out.authoritative = true;
        // The timeouts, where `cons` gives them, are only for the screen's sake: skip.
        return out;
    }
    let asks = members.iter().map(|m| ask(m, "cons", timeout));
    let answers = futures::future::join_all(asks).await;
    for answer in answers {
        match answer.as_deref().and_then(parse) {
            Some(listed) => out.sessions.extend(listed),
            None => out.complete = false,
        }
    }
    out
}

/// A four-letter word sent to one member, its whole answer; `None` when it did not answer
/// in time.
async fn ask(member: &str, word: &str, timeout: Duration) -> Option<String> {
    let talk = async {
        let mut s = tokio::net::TcpStream::connect(member).await.ok()?;
        s.write_all(word.as_bytes()).await.ok()?;
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

/// Every session in a `dump` answer's "SessionTracker dump" (the leader's or a standalone
/// server's; a follower's has none): `None` when there is no such part.
pub(crate) fn parse_dump(text: &str) -> Option<Vec<i64>> {
    let (_, rest) = text.split_once("SessionTracker dump:")?;
    let tracker = rest.split("ephemeral nodes dump:").next().unwrap_or(rest);
    if !tracker.contains("Session Sets") {
        return None;
    }
    let sessions = tracker
        .lines()
        .filter_map(|l| l.trim().strip_prefix("0x"))
        .filter_map(|h| u64::from_str_radix(h, 16).ok())
        .map(|s| s as i64)
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
                (0x0100_004b_3e8a_0001, Some(3000)),
                (0x0100_004b_3e8a_0002, Some(10_000))
            ]
        );
    }

    /// As ZooKeeper 3.8 standalone answers: one session connected, one between connections.
    const DUMP: &str = "SessionTracker dump:\nSession Sets (3)/(2):\n\
        1 expire at Wed Nov 25 01:57:05 UTC 2026:\n\t0x100009423950000\n\
        0 expire at Wed Nov 25 01:57:06 UTC 2026:\n\
        1 expire at Wed Nov 25 01:57:06 UTC 2026:\n\t0x100009423950001\n\
        ephemeral nodes dump:\nSessions with Ephemerals (0):\nConnections dump:\n\
        Connections Sets (2)/(2):\n1 expire at Wed Nov 25 01:57:10 UTC 2026:\n\
        \tip: /127.0.0.1:38090 sessionId: 0x100009423950000\n";

    #[test]
    fn the_leaders_dump_lists_every_session() {
        assert_eq!(
            parse_dump(DUMP),
            Some(vec![0x0100_0094_2395_0000, 0x0100_0094_2395_0001])
        );
        let follower = "ephemeral nodes dump:\nSessions with Ephemerals (0):\n";
        assert_eq!(parse_dump(follower), None);
        assert_eq!(
            parse_dump("dump is not executed because it is not in the whitelist."),
            None
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
