//! One hook's waiting line: bounded, dropping its oldest event when full.
//!
//! `send` must never wait on a hook (the observer would stop observing behind a slow
//! receiver), so pushing only takes a short lock and never awaits. A bounded channel would
//! refuse the *newest* event when full; for "what is the leader now" the newest is the one
//! that matters, so the oldest goes instead, and is counted.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

use super::payload::Payload;

pub(super) struct Queue {
    state: Mutex<State>,
    /// Wakes the hook's one task. `notify_one` keeps a permit when the task is busy, so a
    /// push between its check and its wait is never missed.
    ready: Notify,
    capacity: usize,
}

struct State {
    items: VecDeque<Arc<Payload>>,
    /// No more pushes: the task delivers what is left, then ends.
    closed: bool,
}

impl Queue {
    pub(super) fn new(capacity: usize) -> Queue {
        Queue {
            state: Mutex::new(State {
                items: VecDeque::new(),
                closed: false,
            }),
            ready: Notify::new(),
            capacity: capacity.max(1),
        }
    }

    /// A panic elsewhere while holding the lock leaves a queue that is still consistent
    /// (each operation is one push or pop), so a poisoned lock is used as it is.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `p`; returns how many older events were pushed out to make room (0 or 1).
    /// After `close`, the event is refused and counted the same way.
    pub(super) fn push(&self, p: Arc<Payload>) -> u64 {
        let mut s = self.lock();
        if s.closed {
            return 1;
        }
        let mut dropped = 0;
        while s.items.len() >= self.capacity {
            s.items.pop_front();
            dropped += 1;
        }
        s.items.push_back(p);
        drop(s);
        self.ready.notify_one();
        dropped
    }

    /// The next event, or `None` once closed and empty.
    pub(super) async fn pop(&self) -> Option<Arc<Payload>> {
        loop {
            {
                let mut s = self.lock();
                if let Some(p) = s.items.pop_front() {
                    return Some(p);
                }
                if s.closed {
                    return None;
                }
            }
            self.ready.notified().await;
        }
    }

    pub(super) fn close(&self) {
        self.lock().closed = true;
        self.ready.notify_one();
    }

    /// Empties the queue, returning how many were still waiting (for `drain` out of time).
    pub(super) fn take_all(&self) -> u64 {
        let mut s = self.lock();
        let n = s.items.len() as u64;
        s.items.clear();
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(n: i64) -> Arc<Payload> {
        Arc::new(Payload::from_value(serde_json::json!({ "revision": n })))
    }

    #[tokio::test]
    async fn a_full_queue_drops_its_oldest_and_says_so() {
        let q = Queue::new(2);
        assert_eq!(q.push(p(1)), 0);
        assert_eq!(q.push(p(2)), 0);
        assert_eq!(q.push(p(3)), 1);
        q.close();
        assert_eq!(q.push(p(4)), 1, "refused after close, and counted");
        let a = q.pop().await.expect("first");
        let b = q.pop().await.expect("second");
        assert!(
            a.json().contains('2') && b.json().contains('3'),
            "{a:?} {b:?}"
        );
        assert!(q.pop().await.is_none(), "closed and empty ends the task");
    }
}
