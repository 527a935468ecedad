//! Leader changes made by admin actions, so history says `forced_*` and who did it rather
//! than what the store alone suggests. This electop's own actions mark the election before
//! they touch the store; another electop's are learnt from the shared audit log, usually
//! after the change was seen, so a recent entry is relabelled instead.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant, SystemTime};

use crate::model::{Cause, HistoryEntry};

/// Who forced a change this electop made itself.
pub const BY_US: &str = "this electop";

/// How long a mark waits for its change: an etcd-election action holds the deposed keys
/// for a third of their TTL (up to ~22 s) before the leader changes.
const WINDOW: Duration = Duration::from_secs(90);
/// How old a change may be to be relabelled by an action learnt from the audit log.
const RELABEL_WINDOW: Duration = Duration::from_secs(15);

/// The finished admin actions on the source named `source`, oldest first, from the end of
/// the shared audit log: read when a source is first read, so the holders an admin removed
/// before this electop started, and the changes that made, are shown as the electop that
/// acted shows them. Every store reads them here.
pub(crate) fn audited_actions(source: &str) -> Vec<crate::admin::audit_tail::Done> {
    match crate::admin::audit::default_path() {
        Some(path) => crate::admin::audit_tail::recent(&path, source),
        None => Vec::new(),
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForcedMark {
    pub cause: Cause,
    pub by: String,
    /// Another electop's action: the leader it saw before, to recognise a change already
    /// recorded. `None` for ours, which are marked before the change.
    pub before: Option<String>,
}

#[derive(Debug, Default)]
pub(crate) struct ForcedMarks {
    marks: HashMap<String, (Instant, Cause, String)>,
}

impl ForcedMarks {
    pub(crate) fn set(&mut self, election: String, mark: Option<ForcedMark>, now: Instant) {
        match mark {
            Some(m) => {
                self.marks.insert(election, (now, m.cause, m.by));
            }
            None => {
                self.marks.remove(&election);
            }
        }
    }

    /// The cause and author of this change of `election` if an admin action made it (using
    /// the mark up).
    pub(crate) fn take(&mut self, election: &str, now: Instant) -> Option<(Cause, String)> {
        let (at, cause, by) = self.marks.remove(election)?;
        (now.saturating_duration_since(at) <= WINDOW).then_some((cause, by))
    }
}

impl ForcedMarks {
    /// An admin action changes `name` (or one of ours did not after all). Another electop's,
    /// learnt after its change was recorded in `history`, relabels that entry (returns which,
    /// counted from the newest, and the cause it had); otherwise the mark waits for the change.
    pub(crate) fn note(
        &mut self,
        name: &str,
        history: Option<&mut VecDeque<HistoryEntry>>,
        mark: Option<ForcedMark>,
        now: Instant,
        wall: SystemTime,
    ) -> Option<(usize, Cause)> {
        if let (Some(m), Some(h)) = (&mark, history)
            && let Some(done) = relabel(h, m, wall)
        {
            return Some(done);
        }
        self.set(name.to_string(), mark, now);
        None
    }
}

/// Relabels the change an action made, learnt after it was recorded: the newest recent
/// entry of `history` away from the leader the action saw and not attributed yet. Not only
/// the newest entry: where followers take over fast (a Redis `SET NX` retry, a ZooKeeper
/// line) the loss is followed by the successor's election before the audit log is read.
/// Returns which it did, counted from the newest, and the cause the store had given it.
pub(crate) fn relabel(
    history: &mut VecDeque<HistoryEntry>,
    mark: &ForcedMark,
    wall: SystemTime,
) -> Option<(usize, Cause)> {
    mark.before.as_ref()?;
    let recent = |h: &HistoryEntry| {
        h.at.is_some_and(|at| wall.duration_since(at).unwrap_or_default() <= RELABEL_WINDOW)
    };
    let made = history
        .iter_mut()
        .rev()
        .enumerate()
        .take_while(|(_, h)| recent(h))
        .find(|(_, h)| h.from == mark.before);
    match made {
        Some((i, h)) if h.by.is_none() => {
            let was = std::mem::replace(&mut h.cause, mark.cause);
            h.by = Some(mark.by.clone());
            Some((i, was))
        }
        _ => None,
    }
}

/// Labels the replayed change an admin action made (`done`, from the audit log): the newest
/// change away from the leader it saw, not attributed yet, at the action's time or up to
/// [`WINDOW`] after it (an etcd-election hold), or with no time known. Returns whether it did.
pub(crate) fn attribute_past(
    history: &mut VecDeque<HistoryEntry>,
    done: &crate::admin::audit_tail::Done,
) -> bool {
    let Some(at) = done.at else {
        return false;
    };
    let near = |t: SystemTime| {
        t.duration_since(at).is_ok_and(|d| d <= WINDOW)
            || at
                .duration_since(t)
                .is_ok_and(|d| d <= Duration::from_secs(2))
    };
    let entry = history.iter_mut().rev().find(|h| {
        h.by.is_none() && done.before.is_some() && h.from == done.before && h.at.is_none_or(near)
    });
    let Some(h) = entry else {
        return false;
    };
    h.cause = done.cause;
    h.by = Some(done.by.clone());
    true
}

/// A tracker that takes admin actions' marks (every store's but etcd's, which also reads
/// what is on screen eagerly).
pub(crate) trait Marks {
    /// Its book, which keeps the marks and the actions read at start.
    fn book(&mut self) -> &mut super::book::Book;

    /// The admin actions of the audit log read at start, for the history read back.
    fn audited_at_start(&mut self, actions: Vec<crate::admin::audit_tail::Done>) {
        self.book().set_actions(actions);
    }

    /// An admin action changes `name` (`None`: ours did not after all). One learnt after its
    /// change was recorded (another electop's, from the audit log) relabels that change, and
    /// where the store keeps sessions, deposes the leader it removed: the election to send,
    /// when it did.
    fn forced(
        &mut self,
        name: &str,
        mark: Option<super::ForcedMark>,
        now: Instant,
        wall: SystemTime,
    ) -> Option<crate::model::Election>;
}

/// Serves one of the runtime's requests for a store that reads every election each time,
/// so what is on screen changes nothing: an admin action's mark goes to the tracker, and
/// its verdict is shown at once. `None`: the runtime has gone.
pub(crate) async fn serve<E>(
    io: &super::BackendIo,
    info: &crate::model::SourceInfo,
    request: Option<super::Request>,
    tracker: &mut impl Marks,
) -> Result<(), super::Stop<E>> {
    match request {
        None => Err(super::Stop::Closed),
        Some(super::Request::Forced { election, mark }) => {
            let e = tracker.forced(&election, mark, Instant::now(), SystemTime::now());
            show(io, info, e).await
        }
        Some(super::Request::Visible { .. }) => Ok(()),
    }
}

/// Shows at once an election an admin action just changed (`None`: nothing changed), with
/// the event that tells a change it relabelled: every store's follow task answers a
/// [`Request::Forced`](super::Request::Forced) with its tracker's verdict and this.
pub(crate) async fn show<E>(
    io: &super::BackendIo,
    info: &crate::model::SourceInfo,
    e: Option<crate::model::Election>,
) -> Result<(), super::Stop<E>> {
    let Some(e) = e else { return Ok(()) };
    let told = attributed(&info.name, &e);
    let send = |ev| async { io.events.send(ev).await.map_err(|_| super::Stop::Closed) };
    let source = info.id;
    send(crate::model::SourceEvent::Elections {
        source,
        elections: vec![e],
    })
    .await?;
    match told {
        Some(ev) => send(crate::model::SourceEvent::Happened(ev)).await,
        None => Ok(()),
    }
}

/// The event that tells a relabelled change (for `watch` and the events view).
pub(crate) fn attributed(source: &str, e: &crate::model::Election) -> Option<crate::model::Event> {
    let (_, was) = e.relabelled?;
    let h = e.relabelled_entry()?;
    let mut ev = crate::model::Event::about_source(
        source.to_string(),
        crate::model::EventKind::Attributed,
        h.revision,
        h.by.as_deref().map(super::change::forced_by),
    );
    ev.election = Some(e.name.clone());
    ev.from = h.from.clone();
    ev.to = h.to.clone();
    ev.cause = Some(h.cause);
    ev.was = Some(was);
    Some(ev)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mark(cause: Cause, before: Option<&str>) -> ForcedMark {
        ForcedMark {
            cause,
            by: "ops@host".into(),
            before: before.map(str::to_string),
        }
    }

    #[test]
    fn marks_are_used_once_and_expire() {
        let t0 = Instant::now();
        let mut m = ForcedMarks::default();
        m.set("jobs".into(), Some(mark(Cause::ForcedReelection, None)), t0);
        assert_eq!(m.take("other", t0), None);
        assert_eq!(
            m.take("jobs", t0 + Duration::from_secs(1)),
            Some((Cause::ForcedReelection, "ops@host".into()))
        );
        assert_eq!(m.take("jobs", t0), None, "used up");
        m.set("jobs".into(), Some(mark(Cause::ForcedLeader, None)), t0);
        assert_eq!(
            m.take("jobs", t0 + Duration::from_secs(120)),
            None,
            "too old"
        );
        m.set("jobs".into(), Some(mark(Cause::ForcedResign, None)), t0);
        m.set("jobs".into(), None, t0);
        assert_eq!(
            m.take("jobs", t0),
            None,
            "the action did not happen after all"
        );
    }

    /// A mark lasts the whole of the longest hold (90 s) and not a moment more: on the paused
    /// clock, right at the edge.
    #[tokio::test(start_paused = true)]
    async fn a_mark_outlives_the_longest_hold_and_then_expires() {
        let now = || tokio::time::Instant::now().into_std();
        let mut m = ForcedMarks::default();
        for (after, kept) in [(WINDOW, true), (WINDOW + Duration::from_millis(1), false)] {
            let t0 = now();
            m.set("jobs".into(), Some(mark(Cause::ForcedReelection, None)), t0);
            tokio::time::advance(after).await;
            assert_eq!(m.take("jobs", now()).is_some(), kept, "after {after:?}");
        }
    }

    #[test]
    fn only_the_recent_unattributed_change_away_from_the_seen_leader_is_relabelled() {
        let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let entry = |from: &str, secs_ago| HistoryEntry {
            at: Some(wall - Duration::from_secs(secs_ago)),
            revision: None,
            from: Some(from.into()),
            to: Some("node-b".into()),
            cause: Cause::Resigned,
            by: None,
        };
        let mut h = VecDeque::from([entry("node-a", 2)]);
        assert!(relabel(&mut h, &mark(Cause::ForcedResign, Some("node-x")), wall).is_none());
        assert_eq!(
            relabel(&mut h, &mark(Cause::ForcedResign, Some("node-a")), wall),
            Some((0, Cause::Resigned))
        );
        assert_eq!(h[0].cause, Cause::ForcedResign);
        assert_eq!(h[0].by.as_deref(), Some("ops@host"));
        assert!(
            relabel(&mut h, &mark(Cause::ForcedLeader, Some("node-a")), wall).is_none(),
            "already attributed"
        );
        let mut old = VecDeque::from([entry("node-a", 60)]);
        assert!(relabel(&mut old, &mark(Cause::ForcedResign, Some("node-a")), wall).is_none());
    }

    /// A fast follower's election comes after the loss the action made, before the audit
    /// log is read: the loss is still the one relabelled, not the election after it.
    #[test]
    fn the_loss_is_relabelled_when_the_successors_election_came_first() {
        let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let entry = |from: Option<&str>, to: Option<&str>, cause, ms_ago| HistoryEntry {
            at: Some(wall - Duration::from_millis(ms_ago)),
            revision: None,
            from: from.map(str::to_string),
            to: to.map(str::to_string),
            cause,
            by: None,
        };
        let mut h = VecDeque::from([
            entry(None, Some("node-a"), Cause::Elected, 30_000),
            entry(Some("node-a"), None, Cause::Resigned, 400),
            entry(None, Some("node-b"), Cause::Elected, 200),
        ]);
        assert_eq!(
            relabel(&mut h, &mark(Cause::ForcedReelection, Some("node-a")), wall),
            Some((1, Cause::Resigned)),
            "the loss, one before the newest"
        );
        assert_eq!(h[1].cause, Cause::ForcedReelection);
        assert_eq!(h[1].by.as_deref(), Some("ops@host"));
        assert_eq!((h[2].cause, h[2].by.as_deref()), (Cause::Elected, None));
        assert_eq!(
            h[0].cause,
            Cause::Elected,
            "the first election is not the action's"
        );
    }
}
