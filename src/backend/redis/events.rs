//! The keyspace-event subscription of one Redis source, and the fence that orders it
//! against reads: the events arrive on their own connection, and a read on another, so
//! what a read shows may already include steps whose events are still on the way. A
//! `PING` on the subscription, sent once a read was answered, comes back after every
//! event Redis sent before running it, that is every event of a step the read could show.
//!
//! An event says what happened, not the value it left: a removal (`del`, `expired`, ...)
//! is a loss on its own; a write (`set`, `expire`, ...) leaves a value only a read shows,
//! and that read is the write's own only when no later event of the key came before the
//! fence.

use std::collections::VecDeque;

use futures::{FutureExt, StreamExt};
use redis::aio::{PubSubSink, PubSubStream};

use super::error::RedisError;
use super::read::Server;
use super::tracker::Gone;

/// A key (its raw bytes) and the event's name (`set`, `del`, `expired`...).
pub(crate) type KeyEvent = (Vec<u8>, String);

/// The subscription; the sink is kept, or the subscription would end.
pub(crate) struct Events {
    sink: PubSubSink,
    stream: PubSubStream,
    /// `__keyspace@<db>__:`, before each key in a channel name.
    channel_prefix: Vec<u8>,
    /// Events received at a fence and not yet applied, in Redis's order.
    pending: VecDeque<KeyEvent>,
}

impl Events {
    /// Subscribes to the keyspace events of the keys matching `prefix` (a glob).
    pub(crate) async fn subscribe(server: &Server, prefix: &str) -> Result<Events, RedisError> {
        let mut pubsub = server.pubsub().await?;
        let channel_prefix = format!("__keyspace@{}__:", server.db).into_bytes();
        let mut pattern = channel_prefix.clone();
        pattern.extend_from_slice(prefix.as_bytes());
        server.within(pubsub.psubscribe(pattern)).await?;
        let (sink, stream) = pubsub.split();
        Ok(Events {
            sink,
            stream,
            channel_prefix,
            pending: VecDeque::new(),
        })
    }

    /// Waits until the subscription answers a `PING` sent now: every event Redis sent
    /// before running it is then pending (the client queues each event before it
    /// completes the answer; a few sent after may be taken too).
    pub(crate) async fn fence(&mut self, server: &Server) -> Result<(), RedisError> {
        server.within(self.sink.ping::<redis::Value>()).await?;
        while let Some(next) = self.recv().now_or_never() {
            let next = next.ok_or_else(|| RedisError::Lost(server.addr.clone()))?;
            self.pending.push_back(next);
        }
        Ok(())
    }

    /// Before a write of `key` is read: the events already received are taken as pending,
    /// and the key's writes among them before any removal of it are dropped, since the read
    /// about to be made shows what each left. An event carries no value, so of a key written
    /// twice before its read only the last value was ever shown; `SET ... PX` alone tells
    /// two (`set`, `expire`), and is now read once, not twice.
    pub(crate) fn absorb_writes_of(
        &mut self,
        key: &[u8],
        server: &Server,
    ) -> Result<(), RedisError> {
        while let Some(next) = self.recv().now_or_never() {
            let next = next.ok_or_else(|| RedisError::Lost(server.addr.clone()))?;
            self.pending.push_back(next);
        }
        drop_covered_writes(&mut self.pending, key);
        Ok(())
    }

    /// Every pending event, taken.
    pub(crate) fn take_pending(&mut self) -> VecDeque<KeyEvent> {
        std::mem::take(&mut self.pending)
    }

    /// Whether an event of `key` is pending: a later step of it than the one applied.
    pub(crate) fn pending_for(&self, key: &[u8]) -> bool {
        self.pending.iter().any(|(k, _)| k == key)
    }

    /// The next event, pending ones first; `None` when the subscription's connection ended.
    pub(crate) async fn next(&mut self) -> Option<KeyEvent> {
        if let Some(e) = self.pending.pop_front() {
            return Some(e);
        }
        self.recv().await
    }

    /// The next event off the connection (cancel-safe: a message is taken whole or not).
    async fn recv(&mut self) -> Option<KeyEvent> {
        loop {
            let msg = self.stream.next().await?;
            let channel: Vec<u8> = msg.get_channel().unwrap_or_default();
            let Some(key) = channel.strip_prefix(self.channel_prefix.as_slice()) else {
                continue;
            };
            let event = String::from_utf8_lossy(msg.get_payload_bytes()).into_owned();
            return Some((key.to_vec(), event));
        }
    }
}

/// The keyspace events that remove a key, and why it went; `None`: a write.
pub(crate) fn removal(event: &str) -> Option<Gone> {
    match event {
        "expired" => Some(Gone::Expired),
        // `UNLINK` and `GETDEL` notify `del`; a key renamed or moved away is gone from here.
        "del" | "unlink" | "rename_from" | "move_from" => Some(Gone::Deleted),
        "evicted" => Some(Gone::Evicted),
        _ => None,
    }
}

/// Drops `key`'s writes from `pending` up to its first removal, which is kept, and all
/// after it: a read made now shows those writes, not what follows the removal.
fn drop_covered_writes(pending: &mut VecDeque<KeyEvent>, key: &[u8]) {
    let mut removed = false;
    pending.retain(|(k, event)| {
        if removed || k != key {
            return true;
        }
        removed = removal(event).is_some();
        removed
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(list: &[(&str, &str)]) -> VecDeque<KeyEvent> {
        list.iter()
            .map(|(k, e)| (k.as_bytes().to_vec(), e.to_string()))
            .collect()
    }

    #[test]
    fn a_read_covers_the_keys_writes_before_its_removal_and_no_other_key() {
        let mut pending = events(&[
            ("a", "expire"),
            ("b", "set"),
            ("a", "set"),
            ("a", "expired"),
            ("a", "set"),
            ("b", "del"),
        ]);
        drop_covered_writes(&mut pending, b"a");
        let left = events(&[("b", "set"), ("a", "expired"), ("a", "set"), ("b", "del")]);
        assert_eq!(pending, left);
        // With nothing of the key left to cover, nothing moves.
        drop_covered_writes(&mut pending, b"c");
        assert_eq!(pending, left);
    }

    #[test]
    fn removals_say_why_and_writes_are_read() {
        assert_eq!(removal("expired"), Some(Gone::Expired));
        assert_eq!(removal("del"), Some(Gone::Deleted));
        assert_eq!(removal("rename_from"), Some(Gone::Deleted));
        assert_eq!(removal("evicted"), Some(Gone::Evicted));
        for write in ["set", "expire", "rename_to", "restore", "persist"] {
            assert_eq!(removal(write), None, "{write}");
        }
    }
}
