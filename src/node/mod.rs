//! `electop node`: a real participant of each scheme, written from its article's algorithm.
//! It campaigns, keeps its lease or term alive, notices when it lost (or was given)
//! leadership, and prints its belief whenever it changes. SIGINT/SIGTERM make it resign and
//! exit at once; SIGKILL leaves it to the store's timeout.

pub(crate) mod term;

use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use anyhow::Result;
use serde::Serialize;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::model::{Renewal, Scheme, time};

/// Which election a participant joins, as whom, and how fast it renews.
#[derive(Clone, Debug)]
pub struct Options {
    /// The election (etcd: the election's key prefix; SQL: the row's key; ZooKeeper: the
    /// election's znode below the prefix; Redis: the lock key).
    pub election: String,
    /// This participant's id.
    pub id: String,
    /// One JSON object per belief change, instead of a line of text.
    pub json: bool,
    /// Lease TTL (etcd), term (sql-lease), timeout (sql-heartbeat) or session timeout
    /// (ZooKeeper); `None`: the scheme's.
    pub ttl: Option<Duration>,
    /// How often the leader renews, and a follower tries again; `None`: the scheme's.
    pub renew: Option<Duration>,
    pub retry: Option<Duration>,
    /// Create the SQL table when it is missing.
    pub create_table: bool,
}

/// What a participant believes right now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Belief {
    Leader,
    Follower {
        leader: Option<String>,
    },
    /// It led, and the store says it no longer does (why): said the moment it is seen,
    /// before the scheme campaigns again.
    Deposed {
        reason: String,
    },
    NoContact {
        error: String,
    },
    /// Asked to stop: it leads nothing any more, whether or not its resign reaches the store.
    Stopped,
}

#[derive(Serialize)]
struct BeliefLine<'a> {
    at: String,
    node: &'a str,
    election: &'a str,
    belief: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    leader: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
}

/// Prints a belief when it changes, as text or JSON lines, and holds a leader's belief to
/// its term: when the term runs out before a renewal says otherwise, the belief ends then,
/// whatever the scheme's code is waiting for (see [`Reporter::enforce_term`]).
pub struct Reporter {
    id: String,
    election: String,
    json: bool,
    held: Mutex<Held>,
    changed: Notify,
    /// Cancelled when the node is to stop: a signal, or the reader of its output gone
    /// (`node | head`), which ends it as SIGTERM does, resigning on the way out.
    stop: CancellationToken,
}

#[derive(Default)]
struct Held {
    last: Option<Belief>,
    /// While we lead: until when (see [`term::lead_until`]).
    until: Option<Instant>,
}

/// What a leader whose term ran out before a renewal came back believes.
pub(crate) const TERM_OVER: &str = "my term ran out before the store confirmed a renewal";

impl Reporter {
    pub fn new(id: &str, election: &str, json: bool) -> Self {
        Reporter {
            id: id.to_string(),
            election: election.to_string(),
            json,
            held: Mutex::new(Held::default()),
            changed: Notify::new(),
            stop: CancellationToken::new(),
        }
    }

    /// One line of output; a closed pipe stops the node.
    fn print(&self, line: &str) {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        if let Err(e) = writeln!(out, "{line}").and_then(|()| out.flush())
            && e.kind() == std::io::ErrorKind::BrokenPipe
        {
            self.stop.cancel();
        }
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        // A panic while printing leaves nothing half-done that matters here.
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The store says we lead, until `until` on our clock ([`term::lead_until`] of the
    /// request that said so). A term already over is no leadership.
    pub fn lead(&self, until: Option<Instant>) {
        let mut held = self.held();
        match until.filter(|u| *u > Instant::now()) {
            Some(u) => {
                held.until = Some(u);
                self.show(&mut held, Belief::Leader);
            }
            None => {
                held.until = None;
                let error = TERM_OVER.to_string();
                self.show(&mut held, Belief::NoContact { error });
            }
        }
        drop(held);
        self.changed.notify_one();
    }

    /// Any belief but leadership (which goes through [`Reporter::lead`], with its term).
    pub fn believe(&self, b: Belief) {
        if b == Belief::Leader {
            return self.lead(None);
        }
        let mut held = self.held();
        held.until = None;
        self.show(&mut held, b);
        drop(held);
        self.changed.notify_one();
    }

    /// The store says we no longer lead, for `reason`. Only a leader is deposed: a node that
    /// did not believe it led keeps its belief until the scheme says what it is now.
    pub fn depose(&self, reason: &str) {
        let mut held = self.held();
        if held.last != Some(Belief::Leader) {
            return;
        }
        held.until = None;
        let reason = reason.to_string();
        self.show(&mut held, Belief::Deposed { reason });
        drop(held);
        self.changed.notify_one();
    }

    /// Ends a leader's belief when its term runs out; never returns. Runs beside the
    /// scheme's code, so a store call that hangs cannot keep a stale belief alive.
    pub async fn enforce_term(&self) -> std::convert::Infallible {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let until = {
                let held = self.held();
                held.until.filter(|_| held.last == Some(Belief::Leader))
            };
            let Some(until) = until else {
                changed.await;
                continue;
            };
            tokio::select! {
                _ = tokio::time::sleep_until(until.into()) => {
                    let mut held = self.held();
                    if held.until == Some(until) {
                        held.until = None;
                        let error = TERM_OVER.to_string();
                        self.show(&mut held, Belief::NoContact { error });
                    }
                }
                _ = changed => {}
            }
        }
    }

    fn show(&self, held: &mut Held, b: Belief) {
        if held.last.as_ref() == Some(&b) {
            return;
        }
        let (belief, leader, error, reason) = match &b {
            Belief::Leader => ("leader", Some(self.id.as_str()), None, None),
            Belief::Follower { leader } => ("follower", leader.as_deref(), None, None),
            Belief::Deposed { reason } => ("deposed", None, None, Some(reason.as_str())),
            Belief::NoContact { error } => ("no-contact", None, Some(error.as_str()), None),
            Belief::Stopped => ("stopped", None, None, None),
        };
        let at = time::rfc3339(SystemTime::now());
        let line = if self.json {
            serde_json::to_string(&BeliefLine {
                at,
                node: &self.id,
                election: &self.election,
                belief,
                leader,
                error,
                reason,
            })
            .unwrap_or_default()
        } else {
            let what = match &b {
                Belief::Leader => "leader".to_string(),
                Belief::Follower { leader: Some(l) } => format!("follower of {l}"),
                Belief::Follower { leader: None } => "follower (no leader yet)".to_string(),
                Belief::Deposed { reason } => format!("deposed: {reason}"),
                Belief::NoContact { error } => format!("lost contact with the store: {error}"),
                Belief::Stopped => "stopped".to_string(),
            };
            format!("{at} {} {}: {what}", self.id, self.election)
        };
        self.print(&line);
        tracing::info!(node = %self.id, %line, "belief");
        held.last = Some(b);
    }

    pub fn say(&self, text: &str) {
        if self.json {
            let v = serde_json::json!({"at": time::rfc3339(SystemTime::now()), "node": self.id, "election": self.election, "event": text});
            self.print(&v.to_string());
        } else {
            let at = time::rfc3339(SystemTime::now());
            self.print(&format!("{at} {} {}: {text}", self.id, self.election));
        }
    }
}

/// Timing of a participant; defaults are the articles' values.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    /// etcd lease TTL / sql-lease term / sql-heartbeat timeout.
    pub ttl: Duration,
    /// How often the leader renews (keep-alive, renew, heartbeat).
    pub renew: Duration,
    /// How often a follower tries again.
    pub retry: Duration,
}

/// How long a resign on the way out may take: a store that does not answer must not keep a
/// stopped node alive.
pub(crate) const RESIGN_LIMIT: Duration = Duration::from_secs(1);

/// A store call that must answer within `limit`. A leader's calls are bounded by what is left
/// of its lease or term, so one cut off from the store stops believing it leads by the time
/// its lease could have run out.
pub(crate) async fn within<T, E: Into<anyhow::Error>>(
    limit: Duration,
    what: &str,
    fut: impl std::future::Future<Output = std::result::Result<T, E>>,
) -> Result<T> {
    match tokio::time::timeout(limit, fut).await {
        Ok(r) => r.map_err(Into::into),
        Err(_) => Err(anyhow::anyhow!(
            "the store did not answer {what} within {limit:?}"
        )),
    }
}

impl Timing {
    /// The longest a store call may take: what is left of the lease after a renew interval.
    pub fn call_limit(&self) -> Duration {
        self.ttl
            .saturating_sub(self.renew)
            .max(Duration::from_millis(300))
    }

    /// etcd lease TTLs are whole seconds: round up, so a TTL never ends up shorter than asked.
    fn whole_seconds(mut self) -> Timing {
        let secs = self.ttl.as_secs_f64().ceil().max(1.0);
        self.ttl = Duration::from_secs(secs as u64);
        self
    }

    /// The scheme's defaults, from the one table of scheme facts (where each comes from is
    /// said there).
    pub fn defaults(scheme: Scheme) -> Timing {
        let (ttl, renew, retry) = scheme.timing();
        Timing { ttl, renew, retry }
    }
}

/// `token`, cancelled on SIGINT or SIGTERM too.
fn stop_on_signals(token: CancellationToken) -> Result<CancellationToken> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let t = token.clone();
    tokio::spawn(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        t.cancel();
    });
    Ok(token)
}

/// A participant about to run: its timing, what it says, and the stop signals.
pub struct Run {
    pub timing: Timing,
    pub report: Reporter,
    pub stop: CancellationToken,
}

/// Checks the timing of `scheme` with the flags' overrides and listens for SIGINT/SIGTERM.
/// The store's participant then runs under [`drive`].
pub(crate) fn prepare(args: &Options, scheme: Scheme) -> Result<Run> {
    let d = Timing::defaults(scheme);
    // How the store's holders renew, and in what its terms are counted: the scheme facts.
    let renewal = scheme.facts().renewal;
    let ttl = args.ttl.unwrap_or(d.ttl);
    let mut timing = Timing {
        ttl,
        renew: args.renew.unwrap_or(match renewal {
            Renewal::Thirds => ttl / 3,
            // A term shorter than the scheme's renewal (`--ttl 2s` on client-go's 2 s of
            // 15 s): the scheme's renewal in proportion to it, rather than a refusal.
            Renewal::Seconds | Renewal::Millis if d.renew >= ttl => {
                d.renew.mul_f64(ttl.as_secs_f64() / d.ttl.as_secs_f64())
            }
            Renewal::Seconds | Renewal::Millis => d.renew,
        }),
        retry: args.retry.unwrap_or(d.retry),
    };
    if renewal == Renewal::Seconds {
        timing = timing.whole_seconds();
    }
    if timing.renew >= timing.ttl {
        anyhow::bail!(
            "--renew ({:?}) must be shorter than --ttl ({:?}), or the lease runs out between renewals",
            timing.renew,
            timing.ttl
        );
    }
    let report = Reporter::new(&args.id, &args.election, args.json);
    let stop = stop_on_signals(report.stop.clone())?;
    Ok(Run {
        timing,
        report,
        stop,
    })
}

/// Runs a store's participant (`work`) until it ends, with the term enforced beside it: a
/// leader whose term ran out unconfirmed stops believing it leads.
pub(crate) async fn drive(
    run: &Run,
    work: impl std::future::Future<Output = Result<()>>,
) -> Result<()> {
    let r = tokio::select! {
        r = work => r,
        never = run.report.enforce_term() => match never {},
    };
    // Each scheme says so before it resigns; this covers a stop before it had anything to
    // resign (not connected yet, waiting to retry).
    if r.is_ok() {
        run.report.believe(Belief::Stopped);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn current(r: &Reporter) -> Option<Belief> {
        r.held().last.clone()
    }

    fn term_over() -> Option<Belief> {
        Some(Belief::NoContact {
            error: TERM_OVER.to_string(),
        })
    }

    /// Lets `enforce_term` run for `d` (real time: the test is about time passing; the
    /// gaps between the checks and the term's end are wide).
    async fn run_for(r: &Reporter, d: Duration) {
        tokio::select! {
            never = r.enforce_term() => match never {},
            _ = tokio::time::sleep(d) => {}
        }
    }

    #[tokio::test]
    async fn a_leader_stops_believing_when_its_term_runs_out() {
        let r = Reporter::new("node-a", "jobs", true);
        r.lead(Some(Instant::now() + Duration::from_millis(400)));
        run_for(&r, Duration::from_millis(100)).await;
        assert_eq!(current(&r), Some(Belief::Leader), "still within its term");
        run_for(&r, Duration::from_millis(600)).await;
        assert_eq!(current(&r), term_over(), "the term ran out");
    }

    #[tokio::test]
    async fn a_renewal_moves_the_end_of_the_term() {
        let r = Reporter::new("node-a", "jobs", true);
        let start = Instant::now();
        r.lead(Some(start + Duration::from_millis(200)));
        r.lead(Some(start + Duration::from_millis(700)));
        run_for(&r, Duration::from_millis(400)).await;
        assert_eq!(current(&r), Some(Belief::Leader), "renewed until 700 ms");
        run_for(&r, Duration::from_millis(600)).await;
        assert_eq!(current(&r), term_over());
    }

    #[test]
    fn no_term_or_a_term_already_over_is_no_leadership() {
        let r = Reporter::new("node-a", "jobs", true);
        r.lead(None);
        assert_eq!(current(&r), term_over());
        r.believe(Belief::Follower { leader: None });
        r.lead(Instant::now().checked_sub(Duration::from_millis(1)));
        assert_eq!(current(&r), term_over());
        r.believe(Belief::Leader);
        assert_eq!(current(&r), term_over(), "leadership needs a term");
    }

    #[tokio::test]
    async fn a_follower_has_no_term_to_end() {
        let r = Reporter::new("node-a", "jobs", true);
        r.lead(Some(Instant::now() + Duration::from_millis(100)));
        let other = Belief::Follower {
            leader: Some("node-b".into()),
        };
        r.believe(other.clone());
        run_for(&r, Duration::from_millis(300)).await;
        assert_eq!(current(&r), Some(other));
    }

    #[test]
    fn only_a_leader_is_deposed() {
        let r = Reporter::new("node-a", "jobs", true);
        let follower = Belief::Follower {
            leader: Some("node-b".into()),
        };
        r.believe(follower.clone());
        r.depose("my key was deleted");
        assert_eq!(current(&r), Some(follower), "a follower keeps its belief");
        r.lead(Some(Instant::now() + Duration::from_secs(5)));
        r.depose("my key was deleted");
        let deposed = Belief::Deposed {
            reason: "my key was deleted".into(),
        };
        assert_eq!(current(&r), Some(deposed));
        assert_eq!(r.held().until, None, "no term left to enforce");
    }
}
