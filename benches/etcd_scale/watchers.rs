//! Processes whose output lines are timestamped as they arrive: `electop watch --json` and
//! `etcdctl watch`, read side by side.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub struct Lines {
    pub child: Child,
    seen: Arc<Mutex<Vec<(Instant, String)>>>,
}

impl Lines {
    pub fn start(cmd: &mut Command) -> Lines {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn a watcher");
        let out = child.stdout.take().expect("piped stdout");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                let at = Instant::now();
                sink.lock().expect("lines").push((at, line));
            }
        });
        Lines { child, seen }
    }

    /// When the first line containing `needle` arrived.
    pub fn when(&self, needle: &str) -> Option<Instant> {
        let seen = self.seen.lock().expect("lines");
        seen.iter()
            .find(|(_, l)| l.contains(needle))
            .map(|(t, _)| *t)
    }

    /// Waits (up to `timeout`) for a line containing `needle`.
    pub fn wait(&self, needle: &str, timeout: Duration) -> Option<Instant> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(t) = self.when(needle) {
                return Some(t);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Arrival times of lines containing each needle, in one pass.
    pub fn times(&self, needles: &[String]) -> Vec<Option<Instant>> {
        let seen = self.seen.lock().expect("lines");
        let mut at = std::collections::HashMap::new();
        for (t, l) in seen.iter() {
            // Values are `chg-N`, ended by a quote in JSON or by the line in etcdctl's output;
            // the last one on a JSON line is `to` (the first may be `from`).
            if let Some(i) = l.rfind("chg-") {
                let tail = &l[i..];
                let end = tail.find('"').unwrap_or(tail.len());
                at.entry(tail[..end].to_string()).or_insert(*t);
            }
        }
        needles.iter().map(|n| at.get(n).copied()).collect()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Lines {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// 200 changes at 20/s onto the lease-key elections under `prefix` (each a new value from
/// `first` on), and how much later each reached `ours` than `theirs`: how many were missed,
/// and the extra delay's p50, p99 and max in ms.
pub fn extra_delay(
    rt: &tokio::runtime::Runtime,
    client: &etcd_client::Client,
    (prefix, leases): (&str, &[i64]),
    first: usize,
    (ours, theirs): (&Lines, &Lines),
) -> (usize, (f64, f64, f64)) {
    let seqs: Vec<usize> = (first..first + 200).collect();
    rt.block_on(async {
        for s in &seqs {
            let e = (s * 7919) % leases.len();
            let opts = etcd_client::PutOptions::new().with_lease(leases[e]);
            let mut c = client.clone();
            c.put(
                format!("{prefix}e{e:06}"),
                crate::drive::value(*s),
                Some(opts),
            )
            .await
            .expect("put");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    std::thread::sleep(Duration::from_secs(1));
    let needles: Vec<String> = seqs.iter().map(|s| crate::drive::value(*s)).collect();
    let (a, b) = (ours.times(&needles), theirs.times(&needles));
    let extra: Vec<f64> = a
        .iter()
        .zip(&b)
        .filter_map(|(x, y)| {
            Some(
                x.as_ref()?
                    .saturating_duration_since(*y.as_ref()?)
                    .as_secs_f64()
                    * 1000.0,
            )
        })
        .collect();
    let missed = a.iter().filter(|x| x.is_none()).count();
    (missed, crate::procs::percentiles(extra))
}
