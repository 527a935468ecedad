//! The token `electop node` writes into its lock key, and the holder's name electop shows for
//! a token. A Redis lock token is opaque and must be unique per holder (the compare in the
//! holder's renew and release is on it), so it cannot be the bare `--id`: the node writes
//! `electop-node:<id>:<16 hex digits, random per run>`, and the read side shows such a token
//! as `<id>`, so the dashboard, `status` and the nodes' "follower of X" name the same
//! participant. Any other token (redis-py's uuid, redlock's random string) is shown whole.

use std::io::Read;

use crate::model::escape_bytes;

const MARK: &str = "electop-node:";
/// Hex digits of the random part.
const RANDOM_HEX: usize = 16;

/// A fresh token for participant `id`: its id and 64 random bits.
pub(crate) fn for_node(id: &str) -> std::io::Result<String> {
    let mut b = [0u8; RANDOM_HEX / 2];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut b)?;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    Ok(format!("{MARK}{id}:{hex}"))
}

/// The `--id` inside an `electop node` token; `None` for any other token.
fn node_id(token: &[u8]) -> Option<&[u8]> {
    let rest = token.strip_prefix(MARK.as_bytes())?;
    let colon = rest.iter().rposition(|b| *b == b':')?;
    let (id, random) = (&rest[..colon], &rest[colon + 1..]);
    let hex = random.len() == RANDOM_HEX
        && random
            .iter()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b));
    (hex && !id.is_empty()).then_some(id)
}

/// The holder a token names: an `electop node`'s id, else the token itself, escaped (whole,
/// as the JSON gives it; text output cuts a long one).
pub(crate) fn holder(token: &[u8]) -> String {
    escape_bytes(node_id(token).unwrap_or(token))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_token_shows_as_its_id_and_differs_per_run() {
        let a = for_node("node-1").expect("urandom");
        let b = for_node("node-1").expect("urandom");
        assert_ne!(a, b, "unique per run");
        assert_eq!(holder(a.as_bytes()), "node-1");
        let odd = for_node("db:primary").expect("urandom");
        assert_eq!(holder(odd.as_bytes()), "db:primary", "an id with a colon");
    }

    #[test]
    fn other_tokens_show_whole() {
        for t in [
            "4f0b6c2e9d8a11eeb0c2f3a4b5c6d7e8",
            "electop-node:x:short",
            "electop-node::0123456789abcdef",
            "electop-node:x:0123456789ABCDEF",
        ] {
            assert_eq!(holder(t.as_bytes()), t);
        }
        assert_eq!(holder(b"\xff"), "\\xff");
    }
}
