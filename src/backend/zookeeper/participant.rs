//! `electop node` on ZooKeeper: a candidate in an ephemeral sequential line, the lowest
//! sequence leads (ZooKeeper's own election recipe, as Curator and kazoo implement it).
//!
//! Its node is `<prefix>/<election>/_c_<uuid>-latch-<seq>` with its id as data: the layout of
//! Curator's `LeaderLatch`. Curator's latches sort their line by what follows `latch-` (the
//! sequence), so electop nodes and `LeaderLatch` campaigners under one znode form one line
//! and agree on who leads, and electop's own detection (`layout`) reads it as that recipe.
//! The `_c_<uuid>` is Curator's "protected" prefix, used for what Curator uses it for: a
//! create whose answer was lost with the connection is found again by its uuid instead of
//! leaving an orphan of our own session ahead of us in the line.
//!
//! Unlike those recipes, it watches its *own* node as well as the leader's: ZooKeeper has no
//! call that ends another client's session, so an operator's resign or forced re-election
//! deletes the leader's node and nothing else. Curator and kazoo do not notice (measured,
//! `../shared/design/election-models.md`); this participant is told by the delete event
//! itself, says `deposed: …` and joins the line again at its end. It watches the leader,
//! not only the node ahead as the textbook recipe does: when the one ahead is the leader
//! that is the same watch, and when it is not, only the leader's watch tells a follower
//! further back that "follower of X" has changed.
//!
//! Leadership lasts while the session does, and ZooKeeper ends a session a timeout after it
//! last heard from the client: a leader counts its term from each request that found its
//! node in place (`node::term`), confirmed every `--renew` (a third of the session by
//! default, as the client's own pings). A disconnection is "lost contact" at once; the
//! client reconnects by itself, and a session that expired meanwhile (its node is gone) is
//! a deposition, after which the node starts over with a new session.

use std::io::Read;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use zookeeper_client::{Acls, Client, CreateMode, Error as E, SessionState, WatchedEvent};

use super::layout::{self, Znode};
use crate::config::ZkSource;
use crate::node::{Belief, Options, RESIGN_LIMIT, Reporter, Timing, term};

/// What follows the uuid in Curator `LeaderLatch`'s node names.
const LATCH: &str = "-latch-";
/// What a leader whose session ended believes. The client also calls a session expired
/// when no member answered within it, when the server may not have ended it yet: its node
/// is then deleted by the next session (see [`Line::clear_leftovers`]).
const SESSION_EXPIRED: &str = "my session expired: my node is gone or about to be deleted";
/// What a leader whose node was deleted under its living session believes.
const NODE_DELETED: &str =
    "my node was deleted while my session lives (an operator's resign or forced re-election)";

/// Takes part in the election `args.election` under `cfg.prefix` until stopped.
pub(super) async fn run(
    cfg: &ZkSource,
    args: &Options,
    t: Timing,
    report: &Reporter,
    stop: CancellationToken,
) -> Result<()> {
    let dir = election_path(&cfg.prefix, &args.election)?;
    // Names of our nodes from sessions that ended, which may still be in the line.
    let mut leftovers = Vec::new();
    loop {
        let ended = match connect(cfg, t).await {
            Ok(client) => {
                let mut line = Line::new(client, &dir, args, t, report);
                line.leftovers = std::mem::take(&mut leftovers);
                line.say_timeout();
                let ended = line.run(&stop).await;
                leftovers = line.left_behind();
                ended
            }
            Err(e) => Ended::Failed(format!("{e:#}")),
        };
        match ended {
            Ended::Stopped => return Ok(()),
            Ended::Expired { led } => {
                if led {
                    let reason = SESSION_EXPIRED.to_string();
                    report.believe(Belief::Deposed { reason });
                }
                report.say("my session expired: starting over with a new session");
                continue;
            }
            Ended::Failed(error) => report.believe(Belief::NoContact { error }),
        }
        tokio::select! {
            _ = tokio::time::sleep(t.retry) => {}
            _ = stop.cancelled() => return Ok(()),
        }
    }
}

/// The election's znode: `election` below `prefix`.
fn election_path(prefix: &str, election: &str) -> Result<String> {
    let rel = election.trim_matches('/');
    let bad = rel.is_empty()
        || rel
            .split('/')
            .any(|s| s.is_empty() || s == "." || s == "..")
        || rel.chars().any(char::is_control);
    if bad {
        // A mistake in the flags: exit 2, as the others.
        return Err(crate::config::Usage(format!(
            "--election {}: on ZooKeeper the election is a znode path below --prefix, like `jobs` or `app/jobs` (no empty, `.` or `..` segment)",
            crate::model::escape_bytes(election.as_bytes())
        ))
        .into());
    }
    Ok(format!("{}/{rel}", prefix.trim_end_matches('/')))
}

/// A session that asks for `t.ttl` (ZooKeeper may grant another, within its bounds), with
/// the source's credentials and TLS.
async fn connect(cfg: &ZkSource, t: Timing) -> Result<Client> {
    let limit = t.call_limit();
    let at = cfg.connect_string();
    let dialer = super::dial::dialer(cfg)?.timeouts(t.ttl, limit);
    dialer
        .connect(cfg, limit)
        .await
        .with_context(|| format!("connecting to ZooKeeper at {at}"))
}

/// How one session ended.
enum Ended {
    /// Asked to stop; it resigned.
    Stopped,
    /// ZooKeeper ended the session (its node went with it); `led`: it led when last seen.
    Expired { led: bool },
    /// No session, or it ended otherwise (closed, refused): try again after a pause.
    Failed(String),
}

/// What a look at the line found.
enum Seen {
    /// Our node is not there (deleted by someone else).
    Gone,
    /// Ours is first, until when (counted from the request that found our node).
    Leader { until: Option<Instant> },
    /// Behind the leader named.
    Behind(String),
}

/// One session's place in the line.
struct Line<'a> {
    client: Client,
    dir: &'a str,
    args: &'a Options,
    t: Timing,
    report: &'a Reporter,
    limit: Duration,
    /// Our node's name while it is in the line.
    own: Option<String>,
    /// The uuid of a create whose answer was lost: the node may be there.
    pending: Option<String>,
    /// The last look found us leading.
    led: bool,
    /// Our node went while the session lived: the next join says so.
    removed: bool,
    /// What our nodes of ended sessions are named up to their sequence (`_c_<uuid>-latch-`).
    leftovers: Vec<String>,
}

impl<'a> Line<'a> {
    fn new(
        client: Client,
        dir: &'a str,
        args: &'a Options,
        t: Timing,
        report: &'a Reporter,
    ) -> Self {
        Line {
            client,
            dir,
            args,
            t,
            report,
            limit: t.call_limit(),
            own: None,
            pending: None,
            led: false,
            removed: false,
            leftovers: Vec::new(),
        }
    }

    /// The nodes this session may leave in the line once it has ended: its own, one whose
    /// create was not answered, and leftovers it did not get to delete.
    fn left_behind(&mut self) -> Vec<String> {
        let mut left = std::mem::take(&mut self.leftovers);
        if let Some(own) = self.own.take() {
            left.push(own[..own.len().saturating_sub(10)].to_string());
        }
        if let Some(uuid) = self.pending.take() {
            left.push(format!("_c_{uuid}{LATCH}"));
        }
        left
    }

    /// Deletes our nodes of sessions that ended. ZooKeeper would delete them when it ends
    /// those sessions, but the client gives a session up as expired when no member answered
    /// within it, which may be before the server does: such a node, ahead of ours, would
    /// make us follow ourselves until then (Curator's `LeaderLatch` deletes its old node on
    /// a lost session too).
    async fn clear_leftovers(&mut self) -> Result<()> {
        if self.leftovers.is_empty() {
            return Ok(());
        }
        let names = match self.bounded(self.client.list_children(self.dir)).await {
            Err(Some(E::NoNode)) => Vec::new(),
            r => r.map_err(|e| self.fail(e, &format!("listing {}", self.dir)))?,
        };
        for name in names {
            if !self.leftovers.iter().any(|l| name.starts_with(l.as_str())) {
                continue;
            }
            let path = self.path(&name);
            match self.bounded(self.client.delete(&path, None)).await {
                Ok(()) => self.report.say(&format!(
                    "deleted {path}, my node from a session that ended"
                )),
                Err(Some(E::NoNode)) => {}
                Err(e) => return Err(self.fail(e, &format!("deleting my old node {path}"))),
            }
        }
        self.leftovers.clear();
        Ok(())
    }

    /// The session ZooKeeper granted, when it is not the one asked for: the server bounds
    /// it to 2 to 20 of its ticks.
    fn say_timeout(&self) {
        let granted = self.client.session_timeout();
        if granted != self.t.ttl {
            self.report.say(&format!(
                "ZooKeeper granted a session of {granted:?} (asked for {:?}): my term follows it",
                self.t.ttl
            ));
        }
    }

    fn path(&self, name: &str) -> String {
        format!("{}/{name}", self.dir)
    }

    async fn run(&mut self, stop: &CancellationToken) -> Ended {
        let mut states = self.client.state_watcher();
        let mut tick = tokio::time::interval(self.t.renew);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            // The watches of one look; dropping them (a new look) removes them.
            let mut watches: JoinSet<WatchedEvent> = JoinSet::new();
            let failed = match self.step(&mut watches).await {
                Ok(()) => false,
                Err(e) => {
                    if let Some(ended) = self.terminal() {
                        return ended;
                    }
                    let error = format!("{e:#}");
                    self.report.believe(Belief::NoContact { error });
                    true
                }
            };
            // Wait for what makes us look again. While disconnected, nothing is asked: the
            // client reconnects by itself and says so (or that the session ended).
            let mut connected = true;
            loop {
                tokio::select! {
                    _ = stop.cancelled() => return self.resign().await,
                    state = states.changed() => match state {
                        SessionState::Disconnected => {
                            connected = false;
                            self.report.believe(Belief::NoContact {
                                error: format!(
                                    "disconnected from ZooKeeper, reconnecting (my session and my node live on for up to {:?} after the last answer)",
                                    self.client.session_timeout()
                                ),
                            });
                        }
                        SessionState::SyncConnected | SessionState::ConnectedReadOnly => break,
                        _ => return self.terminal().unwrap_or(Ended::Failed("the ZooKeeper session ended".into())),
                    },
                    // A watched node changed, or the session ended (a watcher's last event,
                    // or its task failing: the crate panics on a watch after the session).
                    _ = watches.join_next(), if !watches.is_empty() => break,
                    _ = tick.tick(), if connected => {
                        if failed || (self.led && !self.confirm().await) {
                            break;
                        }
                    }
                    _ = tokio::time::sleep(self.t.retry), if failed && connected => break,
                }
            }
        }
    }

    /// How the session ended, if it has.
    fn terminal(&self) -> Option<Ended> {
        match self.client.state() {
            SessionState::Expired => Some(Ended::Expired { led: self.led }),
            SessionState::AuthFailed => Some(Ended::Failed(
                "ZooKeeper refused the session's credentials (auth failed)".into(),
            )),
            SessionState::Closed => Some(Ended::Failed("the ZooKeeper session was closed".into())),
            _ => None,
        }
    }

    /// Joins the line if we are not in it, looks at it, says what we now believe, and sets
    /// the watches that tell us when that changes. A node deleted under us is made again
    /// at the end of the line, as often as it is deleted.
    async fn step(&mut self, watches: &mut JoinSet<WatchedEvent>) -> Result<()> {
        loop {
            let own = match self.own.clone() {
                Some(own) => own,
                None => self.join().await?,
            };
            match self.look(&own, watches).await? {
                Seen::Gone => {
                    if self.led {
                        let reason = NODE_DELETED.to_string();
                        self.report.believe(Belief::Deposed { reason });
                    }
                    self.own = None;
                    self.led = false;
                    self.removed = true;
                    watches.abort_all();
                }
                seen => {
                    self.believe(seen);
                    return Ok(());
                }
            }
        }
    }

    fn believe(&mut self, seen: Seen) {
        match seen {
            Seen::Leader { until } => {
                self.led = true;
                self.report.lead(until);
            }
            Seen::Behind(leader) => {
                self.led = false;
                let leader = Some(leader);
                self.report.believe(Belief::Follower { leader });
            }
            Seen::Gone => {}
        }
    }

    /// Creates our node at the end of the line (the election's znode too, when missing),
    /// or finds the one a create whose answer was lost made.
    async fn join(&mut self) -> Result<String> {
        self.clear_leftovers().await?;
        if let Some(uuid) = self.pending.take()
            && let Some(own) = self.find(&uuid).await?
        {
            return Ok(self.joined(own));
        }
        let uuid = uuid4()?;
        let prefix = self.path(&format!("_c_{uuid}{LATCH}"));
        let options = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
        let id = self.args.id.as_bytes();
        let created = match self
            .bounded(self.client.create(&prefix, id, &options))
            .await
        {
            Err(Some(E::NoNode)) => {
                let dir = CreateMode::Persistent.with_acls(Acls::anyone_all());
                self.bounded(self.client.mkdir(self.dir, &dir))
                    .await
                    .map_err(|e| {
                        self.fail(e, &format!("creating the election's znode {}", self.dir))
                    })?;
                self.bounded(self.client.create(&prefix, id, &options))
                    .await
            }
            other => other,
        };
        match created {
            Ok((_, seq)) => {
                let own = format!("_c_{uuid}{LATCH}{:010}", seq.into_i64());
                Ok(self.joined(own))
            }
            Err(e) => {
                if matches!(e, Some(E::ConnectionLoss) | None) {
                    self.pending = Some(uuid);
                }
                Err(self.fail(e, &format!("creating my node under {}", self.dir)))
            }
        }
    }

    fn joined(&mut self, own: String) -> String {
        if self.removed {
            self.report.say(&format!(
                "my node was deleted from the line: joined it again as {}",
                self.path(&own)
            ));
            self.removed = false;
        }
        self.own = Some(own.clone());
        own
    }

    /// Our node from a create whose answer was lost, by its uuid.
    async fn find(&self, uuid: &str) -> Result<Option<String>> {
        let names = self
            .bounded(self.client.list_children(self.dir))
            .await
            .map_err(|e| self.fail(e, &format!("listing {}", self.dir)))?;
        let mine = format!("_c_{uuid}{LATCH}");
        Ok(names.into_iter().find(|n| n.starts_with(&mine)))
    }

    /// Where our node `own` stands; watches it and the leader's node.
    async fn look(&self, own: &str, watches: &mut JoinSet<WatchedEvent>) -> Result<Seen> {
        let sent = Instant::now();
        let own_path = self.path(own);
        let (stat, watch) = self
            .bounded(self.client.check_and_watch_stat(&own_path))
            .await
            .map_err(|e| self.fail(e, &format!("reading my node {own_path}")))?;
        watches.spawn(watch.changed());
        if stat.is_none() {
            return Ok(Seen::Gone);
        }
        let mine = layout::sequence(own).context("my node's name has no sequence number")?;
        let names = self
            .bounded(self.client.list_children(self.dir))
            .await
            .map_err(|e| self.fail(e, &format!("listing {}", self.dir)))?;
        let mut ahead: Vec<(u64, String)> = names
            .into_iter()
            .filter_map(|n| Some((layout::sequence(&n)?, n)))
            .filter(|(seq, _)| *seq < mine)
            .collect();
        ahead.sort();
        // The first of those still there that is a candidate (ephemeral, as `layout` counts
        // them) leads; one that went between the listing and its read never comes back.
        for (_, name) in ahead {
            let path = self.path(&name);
            match self.bounded(self.client.get_and_watch_data(&path)).await {
                Ok((data, stat, watch)) if stat.ephemeral_owner != 0 => {
                    watches.spawn(watch.changed());
                    let n = Znode {
                        path,
                        data,
                        czxid: stat.czxid,
                        mzxid: stat.mzxid,
                        ephemeral_owner: stat.ephemeral_owner,
                    };
                    return Ok(Seen::Behind(layout::candidate(&n).id));
                }
                Ok(_) | Err(Some(E::NoNode)) => {}
                Err(e) => return Err(self.fail(e, &format!("reading {path}"))),
            }
        }
        let granted = self.client.session_timeout();
        Ok(Seen::Leader {
            until: term::lead_until(sent, granted),
        })
    }

    /// A leader's renewal: its node is still there, so its session lives; false when it is
    /// not (look again) or ZooKeeper did not say.
    async fn confirm(&mut self) -> bool {
        let Some(own) = self.own.clone() else {
            return false;
        };
        let sent = Instant::now();
        match self.bounded(self.client.check_stat(&self.path(&own))).await {
            Ok(Some(stat)) if stat.ephemeral_owner == self.client.session_id().0 => {
                let granted = self.client.session_timeout();
                self.report.lead(term::lead_until(sent, granted));
                true
            }
            _ => false,
        }
    }

    /// Asked to stop: no longer a leader from now on; our node is deleted so the next in
    /// line leads at once, within a bound. The session closes as the client is dropped.
    async fn resign(&mut self) -> Ended {
        self.report.believe(Belief::Stopped);
        if let Some(own) = self.own.take() {
            let path = self.path(&own);
            let done = tokio::time::timeout(RESIGN_LIMIT, self.client.delete(&path, None)).await;
            self.report.say(match done {
                Ok(Ok(())) | Ok(Err(E::NoNode)) => "resigned",
                _ => "could not resign in time: my node goes when my session times out",
            });
        }
        Ended::Stopped
    }

    /// A call bounded by the time a leader's term could still run: `Err(None)` when
    /// ZooKeeper did not answer in time.
    async fn bounded<T>(
        &self,
        fut: impl std::future::Future<Output = std::result::Result<T, E>>,
    ) -> std::result::Result<T, Option<E>> {
        match tokio::time::timeout(self.limit, fut).await {
            Err(_) => Err(None),
            Ok(r) => r.map_err(Some),
        }
    }

    fn fail(&self, e: Option<E>, doing: &str) -> anyhow::Error {
        match e {
            None => anyhow::anyhow!("{doing}: ZooKeeper did not answer within {:?}", self.limit),
            Some(E::NoAuth) => anyhow::anyhow!(
                "{doing}: ZooKeeper says this session may not (NoAuth): the znode's ACL does not allow it"
            ),
            Some(e) => anyhow::anyhow!("{doing}: {e}"),
        }
    }
}

/// A random (version 4) uuid, as Curator's protected names carry.
fn uuid4() -> Result<String> {
    let mut b = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .context("reading /dev/urandom for my node's uuid")?;
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    Ok(format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elections_are_znodes_below_the_prefix() {
        assert_eq!(election_path("/", "jobs").unwrap(), "/jobs");
        assert_eq!(
            election_path("/election", "app/jobs").unwrap(),
            "/election/app/jobs"
        );
        assert_eq!(
            election_path("/election", "/jobs/").unwrap(),
            "/election/jobs"
        );
        for bad in ["", "/", "a//b", "a/../b", ".", "a\nb"] {
            let err = election_path("/e", bad).expect_err(bad).to_string();
            assert!(err.contains("below --prefix"), "{err}");
        }
    }

    #[test]
    fn node_names_are_curator_latches_that_electop_reads_as_such() {
        let uuid = uuid4().unwrap();
        assert_eq!(uuid.len(), 36);
        assert_eq!(&uuid[14..15], "4", "a version 4 uuid: {uuid}");
        let name = format!("_c_{uuid}{LATCH}{:010}", 42);
        let n = Znode {
            path: format!("/e/jobs/{name}"),
            data: b"node-a".to_vec(),
            czxid: 1,
            mzxid: 1,
            ephemeral_owner: 7,
        };
        assert_eq!(layout::recipe(&n), Some(layout::Recipe::CuratorLatch));
        assert_eq!(layout::sequence(&name), Some(42));
        assert_eq!(layout::candidate(&n).id, "node-a");
    }
}
