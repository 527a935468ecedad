//! Lease reads: which leases to keep fresh (what is on screen, or all for `status`/`watch`),
//! when each is due, and whether a deleted key's lease still exists. Reads run on their own
//! task, several at a time, so a slow or failing read never holds up the watch.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use etcd_client::Client;
use futures::StreamExt;
use tokio::sync::mpsc;

use super::EtcdBackend;
use super::tracker::{LeaseFate, Tracker};
use crate::backend::Request;
use crate::model::Election;

/// Candidates of the selected election whose leases are kept fresh.
const SELECTED_LINE: usize = 64;
/// How often due lease reads are looked for.
pub(super) const LEASE_TICK: Duration = Duration::from_millis(250);
/// Lease reads in flight at once: one round trip each, pipelined on one connection, so
/// `status` over thousands of leases is bound by this (docs/PERFORMANCE.md).
const CONCURRENT: usize = 64;
/// A lease read slower than this is given up (and retried at the next tick).
const READ_LIMIT: Duration = Duration::from_secs(2);

/// A lease's TTL as read: `None` when the lease no longer exists.
pub(super) type Reading = (i64, Option<(i64, i64)>, Instant);

pub(super) fn wanted_leases(
    backend: &EtcdBackend,
    tracker: &Tracker,
    visible: &Request,
) -> Vec<i64> {
    if backend.opts.all_leases {
        return tracker.all_leases();
    }
    match visible {
        Request::Visible { names, selected } => {
            tracker.visible_leases(names, selected.as_deref(), SELECTED_LINE)
        }
        Request::Forced { .. } => Vec::new(),
    }
}

/// Under this much time left a lease is read again (then at most every `MIN_AGE_MS`).
const CLOSING_MS: i64 = 2000;
const MIN_AGE_MS: i64 = 250;

/// Leases due for a read. What is on screen (`eager`) is read over a third of its term (or a
/// second) ago, so countdowns follow keep-alives closely; the rest only when never read or
/// close to running out: a lease cannot end before its countdown does, so until then the
/// local countdown is enough, and reads per second stay at leases / TTL, not leases.
pub(super) fn due(tracker: &Tracker, leases: Vec<i64>, now: Instant, eager: bool) -> Vec<i64> {
    leases
        .into_iter()
        .filter(|l| match tracker.ttl(*l) {
            None => true,
            Some(d) => {
                let age = now.saturating_duration_since(d.read_at).as_millis() as i64;
                let every = (d.granted_ms / 3).clamp(250, 1000);
                let closing = d.remaining_ms_at(now) < CLOSING_MS && age >= MIN_AGE_MS;
                closing || ((eager || tracker.is_deposed_lease(*l)) && age >= every)
            }
        })
        .collect()
}

/// When every lease is read (`status`, `watch`, `serve`), the scan of all of them for due
/// ones is skipped while none can be: no lease unread or deposed, nothing changed them
/// since the last scan, and none near its end yet. Over many long leases the scan, four
/// times a second, was most of what an idle `serve` did (docs/PERFORMANCE.md).
#[derive(Debug, Default)]
pub(super) struct Quiet {
    /// The tracker's lease epoch and the first instant a lease can be due, as of the last
    /// scan that found none due.
    until: Option<(u64, Instant)>,
}

impl Quiet {
    /// No lease can be due now: the scan may be skipped.
    pub(super) fn holds(&self, tracker: &Tracker, now: Instant) -> bool {
        !tracker.any_deposed()
            && self
                .until
                .is_some_and(|(epoch, at)| epoch == tracker.lease_epoch() && now < at)
    }

    /// After a scan: quiet until the first lease nears its end, if it found none due.
    pub(super) fn scanned(&mut self, tracker: &Tracker, found: bool) {
        self.until = match found {
            true => None,
            false => tracker
                .next_closing(CLOSING_MS, MIN_AGE_MS)
                .map(|at| (tracker.lease_epoch(), at)),
        };
    }
}

async fn read_one(mut client: Client, lease: i64) -> Option<Reading> {
    let r = tokio::time::timeout(READ_LIMIT, client.lease_time_to_live(lease, None)).await;
    match r {
        Ok(Ok(resp)) => {
            let reading = (resp.ttl() >= 0).then(|| (resp.ttl(), resp.granted_ttl()));
            Some((lease, reading, Instant::now()))
        }
        Ok(Err(e)) => {
            tracing::debug!(lease, %e, "lease read failed");
            None
        }
        Err(_) => None,
    }
}

/// Reads these leases, several at a time. Failed reads are left out: the countdown keeps
/// running from the last reading and the lease is asked again later.
pub(super) async fn read_many(client: &Client, leases: Vec<i64>) -> Vec<Reading> {
    futures::stream::iter(leases)
        .map(|l| read_one(client.clone(), l))
        .buffer_unordered(CONCURRENT)
        .filter_map(|r| async move { r })
        .collect()
        .await
}

/// Leases waiting for their first reading, taken one at a time as a read slot frees, so the
/// order of those still waiting can change while the first are read: when the elections
/// are known, the leaders' leases go first, since a budget may run out before the rest.
#[derive(Clone, Debug)]
pub(super) struct Queue(Arc<Mutex<VecDeque<i64>>>);

impl Queue {
    pub(super) fn new(leases: Vec<i64>) -> Queue {
        Queue(Arc::new(Mutex::new(leases.into())))
    }

    pub(super) fn len(&self) -> usize {
        self.lock().len()
    }

    fn pop(&self) -> Option<i64> {
        self.lock().pop_front()
    }

    /// Moves those of `first` still waiting ahead of the others, each part in its order.
    pub(super) fn put_first(&self, first: &HashSet<i64>) {
        let mut q = self.lock();
        let (mut ahead, behind): (VecDeque<i64>, VecDeque<i64>) =
            q.drain(..).partition(|l| first.contains(l));
        ahead.extend(behind);
        *q = ahead;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<i64>> {
        // A panic elsewhere cannot leave a half-written queue: each change is one statement.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The leaders' leases: the TTL a table shows, so those read first.
pub(super) fn leaders<'a>(elections: impl Iterator<Item = &'a Election>) -> HashSet<i64> {
    elections
        .filter_map(|e| e.leader.as_ref()?.lease)
        .filter(|l| *l != 0)
        .collect()
}

/// Reads the queue's leases until it is empty or `deadline`: what was read by then. For the
/// first reading of every lease (`status`, `watch`): one round trip per lease cannot keep
/// up with 100,000 of them, and the current state must not wait for all; the rest are read
/// at later ticks. One connection with `CONCURRENT` in flight: more connections, or more
/// in flight, read no faster (etcd shares the machine's cores; docs/PERFORMANCE.md).
pub(super) async fn read_queue_until(
    client: &Client,
    queue: Queue,
    deadline: tokio::time::Instant,
) -> Vec<Reading> {
    // Taken lazily: `buffer_unordered` asks for the next lease only when a slot is free.
    let mut reads = futures::stream::iter(std::iter::from_fn(move || queue.pop()))
        .map(|l| read_one(client.clone(), l))
        .buffer_unordered(CONCURRENT);
    let mut out = Vec::new();
    loop {
        tokio::select! {
            r = reads.next() => match r {
                Some(r) => out.extend(r),
                None => return out,
            },
            _ = tokio::time::sleep_until(deadline) => return out,
        }
    }
}

/// Whether the leases of deleted keys still exist, to tell a resignation (key deleted,
/// lease alive) from a lease that ended. A lease that cannot be read is left out: the
/// change is applied anyway, with the cause the countdown suggests.
pub(super) async fn fates(client: &Client, leases: Vec<i64>) -> HashMap<i64, LeaseFate> {
    // Most watch messages remove no key: no stream of reads to set up for nothing.
    if leases.is_empty() {
        return HashMap::new();
    }
    read_many(client, leases)
        .await
        .into_iter()
        .map(|(l, r, _)| {
            (
                l,
                if r.is_some() {
                    LeaseFate::Alive
                } else {
                    LeaseFate::Gone
                },
            )
        })
        .collect()
}

/// The connection's lease reader: takes batches of lease ids, answers with readings. One
/// batch at a time; a batch offered while one is running is dropped, and its leases are
/// offered again at the next tick (they are still due).
pub(super) struct Reader {
    pub ask: mpsc::Sender<Vec<i64>>,
    pub answers: mpsc::Receiver<Vec<Reading>>,
    in_flight: HashSet<i64>,
    task: tokio::task::JoinHandle<()>,
}

impl Reader {
    pub(super) fn spawn(client: Client) -> Reader {
        let (ask, mut asks) = mpsc::channel::<Vec<i64>>(1);
        let (tell, answers) = mpsc::channel(4);
        let task = tokio::spawn(async move {
            while let Some(batch) = asks.recv().await {
                let got = read_many(&client, batch).await;
                if tell.send(got).await.is_err() {
                    return;
                }
            }
        });
        Reader {
            ask,
            answers,
            in_flight: HashSet::new(),
            task,
        }
    }

    /// Offers leases to read; leases already being read are not asked twice.
    pub(super) fn offer(&mut self, leases: Vec<i64>) {
        let fresh: Vec<i64> = leases
            .into_iter()
            .filter(|l| !self.in_flight.contains(l))
            .collect();
        if fresh.is_empty() {
            return;
        }
        if self.ask.try_send(fresh.clone()).is_ok() {
            self.in_flight.extend(fresh);
        }
    }

    /// A batch came back: its leases may be asked again.
    pub(super) fn answered(&mut self) {
        self.in_flight.clear();
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::etcd::election::EtcdElection;

    #[test]
    fn leases_put_first_go_ahead_of_those_still_waiting_in_their_order() {
        let q = Queue::new(vec![1, 2, 3, 4, 5, 6]);
        assert_eq!(q.pop(), Some(1), "taken before the elections were known");
        q.put_first(&HashSet::from([1, 5, 3]));
        let rest: Vec<i64> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(rest, vec![3, 5, 2, 4, 6]);
        assert_eq!(q.len(), 0);
    }

    #[test]
    fn background_leases_are_read_again_only_near_their_end() {
        let t0 = Instant::now();
        let mut t = Tracker::new(
            0,
            "s".into(),
            Box::new(EtcdElection {
                prefix: b"/e/".to_vec(),
            }),
            10,
        );
        t.set_ttl(1, Some((30, 60)), t0);
        assert_eq!(due(&t, vec![1, 2], t0, false), [2], "never read: due");
        let later = t0 + Duration::from_secs(5);
        assert!(due(&t, vec![1], later, false).is_empty(), "25 s left: wait");
        assert_eq!(due(&t, vec![1], later, true), [1], "on screen: kept fresh");
        let near = t0 + Duration::from_millis(29_500);
        assert_eq!(due(&t, vec![1], near, false), [1], "about to end: read");
    }

    #[test]
    fn the_scan_of_every_lease_waits_while_none_can_be_due() {
        let t0 = Instant::now();
        let mut t = Tracker::new(
            0,
            "s".into(),
            Box::new(EtcdElection {
                prefix: b"/e/".to_vec(),
            }),
            10,
        );
        let mut m = crate::backend::etcd::layout::Mirror::new();
        let kv = |k: &str, lease| crate::backend::etcd::layout::Kv {
            key: k.as_bytes().to_vec(),
            value: b"node".to_vec(),
            create_revision: 1,
            mod_revision: 1,
            lease,
        };
        m.insert(b"/e/a/1".to_vec(), kv("/e/a/1", 1));
        t.load(m, 1);
        let mut quiet = Quiet::default();
        let scan = |t: &Tracker, q: &mut Quiet, now| {
            let due = due(t, t.all_leases(), now, false);
            q.scanned(t, !due.is_empty());
            due
        };
        assert!(!quiet.holds(&t, t0), "never scanned");
        assert_eq!(scan(&t, &mut quiet, t0), [1], "never read");
        assert!(!quiet.holds(&t, t0), "a lease was due: scan again");
        t.set_ttl(1, Some((30, 60)), t0);
        assert!(!quiet.holds(&t, t0), "a reading came: scan again");
        assert!(scan(&t, &mut quiet, t0).is_empty());
        assert!(
            quiet.holds(&t, t0 + Duration::from_secs(20)),
            "30 s left: quiet"
        );
        let near = t0 + Duration::from_millis(28_600); // 30.5 s were left at the reading
        assert!(!quiet.holds(&t, near), "under 2 s left: scan");
        assert_eq!(due(&t, t.all_leases(), near, false), [1]);
        let mut m = t.mirror().clone();
        m.insert(b"/e/b/2".to_vec(), kv("/e/b/2", 2));
        t.load(m, 2);
        assert!(
            !quiet.holds(&t, t0 + Duration::from_secs(1)),
            "a new lease: scan"
        );
    }
}
