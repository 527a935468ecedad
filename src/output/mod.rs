//! What `status` and `watch` print, built from the same state the TUI draws: JSON here, the
//! human tables and lines in their own modules.

pub(crate) mod history;
pub(crate) mod pipe;
pub(crate) mod table;
pub(crate) mod watch;

use std::time::Instant;

use serde::Serialize;

use crate::model::{Candidate, Cause, ConnState, Election, HistoryEntry, Scheme, time};
use crate::state::{Key, ReadModel, SourceView};

#[derive(Serialize)]
pub(crate) struct Status<'a> {
    pub sources: Vec<SourceJson<'a>>,
    pub elections: Elections<'a>,
}

/// Every election, each made as it is written: over many elections, building them all
/// first cost about as much as writing them (docs/PERFORMANCE.md).
pub(crate) struct Elections<'a> {
    model: &'a ReadModel,
    now: Instant,
    /// Per source: what every one of its elections repeats, worked out once.
    sources: Vec<PerSource<'a>>,
}

struct PerSource<'a> {
    name: &'a str,
    short: &'a str,
    /// A stale source's countdowns are frozen at its last contact.
    at: Instant,
    stale: bool,
    as_of: Option<String>,
    idle_is_normal: bool,
}

impl Serialize for Elections<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.model.elections.iter().map(|(key, e)| self.one(key, e)))
    }
}

/// Below this many elections one thread writes the JSON: a second costs more than it saves.
const SPLIT_FROM: usize = 20_000;

/// `status` as one line of JSON, as `serde_json::to_writer` writes [`Status`], with the
/// second half of the elections made on another thread meanwhile: over many elections,
/// writing the JSON was much of `status`'s time.
pub(crate) fn write_compact(
    model: &ReadModel,
    now: Instant,
    out: &mut impl std::io::Write,
) -> std::io::Result<()> {
    let doc = status(model, now);
    if model.elections.len() < SPLIT_FROM {
        return serde_json::to_writer(out, &doc).map_err(std::io::Error::from);
    }
    let all: Vec<_> = model.elections.iter().collect();
    let (first, second) = all.split_at(all.len() / 2);
    let elections = &doc.elections;
    let items = |part: &[(&Key, &Election)], w: &mut dyn std::io::Write| {
        for (i, (key, e)) in part.iter().enumerate() {
            if i > 0 {
                w.write_all(b",")?;
            }
            serde_json::to_writer(&mut *w, &elections.one(key, e))?;
        }
        Ok::<(), std::io::Error>(())
    };
    out.write_all(b"{\"sources\":")?;
    serde_json::to_writer(&mut *out, &doc.sources)?;
    out.write_all(b",\"elections\":[")?;
    std::thread::scope(|scope| {
        let later = scope.spawn(|| {
            let mut buf = Vec::with_capacity(1 << 20);
            items(second, &mut buf).map(|()| buf)
        });
        items(first, out)?;
        let buf = later
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))?;
        out.write_all(b",")?;
        out.write_all(&buf)
    })?;
    out.write_all(b"]}")
}

impl<'a> Elections<'a> {
    fn new(model: &'a ReadModel, now: Instant) -> Self {
        let sources = model
            .sources
            .iter()
            .map(|s| PerSource {
                name: &s.info.name,
                short: &s.info.short,
                at: s.as_of(now),
                stale: s.stale_for(now).is_some(),
                as_of: s.last_contact.map(|(_, w)| time::rfc3339(w)),
                idle_is_normal: model.idle_is_normal(s.info.id),
            })
            .collect();
        Elections {
            model,
            now,
            sources,
        }
    }

    fn one<'s>(&'s self, key: &Key, e: &'s Election) -> ElectionJson<'s> {
        let Some(src) = self.sources.get(e.source) else {
            return election(e, "", self.now);
        };
        let mut j = election(e, src.name, src.at);
        j.source_id = src.short;
        j.stale = src.stale;
        j.idle = e.leader.is_none() && src.idle_is_normal;
        j.as_of = src.as_of.as_deref();
        if let Some((alarms, rate)) = self.model.alarms(key) {
            j.alarms = alarms.iter().map(|a| a.code()).collect();
            j.changes_per_min = rate;
        }
        j
    }
}

#[derive(Serialize)]
pub(crate) struct SourceJson<'a> {
    /// The handle for `SOURCE/NAME` in admin commands.
    pub id: &'a str,
    pub name: &'a str,
    pub endpoints: &'a str,
    pub scheme: Option<Scheme>,
    /// `connected`, `connecting` or `down` (then `error` says why).
    pub state: &'static str,
    pub connected: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<&'a str>,
    pub revision: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notice: Option<&'a str>,
    /// What reading the source found unsure: the layout, or an empty prefix and where
    /// elections are instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layout_notice: Option<&'a str>,
    /// No leader is this source's resting state (a lock between runs), not an alarm.
    pub idle_is_normal: bool,
    /// No contact for a while: what is shown is as of `as_of`, not now.
    pub stale: bool,
    /// When the store last answered a read that proves the state current (RFC 3339).
    pub as_of: Option<String>,
    /// Each member of a clustered store, like `etcdctl endpoint status`.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub members: &'a [crate::model::MemberStatus],
    /// ZooKeeper: electop's own session and the timeout the server granted it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<OwnSessionJson<'a>>,
    /// A store that keeps no history (ZooKeeper): leader changes are known from here on,
    /// when electop connected (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history_since: Option<String>,
    /// ZooKeeper: the stretches between electop's runs that no electop watched, from its
    /// own record.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub history_gaps: Vec<HistoryGapJson>,
}

/// A stretch no electop watched: `stop_recorded` false when the electop before left no
/// stop line (killed), so it may have watched a while after `from`.
#[derive(Serialize)]
pub(crate) struct HistoryGapJson {
    pub from: String,
    pub to: String,
    pub stop_recorded: bool,
}

/// electop's own ZooKeeper session.
#[derive(Serialize)]
pub(crate) struct OwnSessionJson<'a> {
    pub id: &'a str,
    pub timeout_ms: u128,
}

#[derive(Serialize)]
pub(crate) struct ElectionJson<'a> {
    pub name: &'a str,
    /// A name with bytes that are not printable UTF-8 (`name` shows them as `\xNN`): its
    /// raw bytes in base64.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name_base64: Option<String>,
    pub scheme: Scheme,
    pub source: &'a str,
    /// The source's handle, as `sources[].id`, the table and `watch` name it (`etcd1`).
    pub source_id: &'a str,
    pub leader: Option<HolderJson<'a>>,
    pub candidates: Vec<HolderJson<'a>>,
    pub ttl_ms: Option<i64>,
    pub transitions: u64,
    /// Some key in this election has no lease and will never expire.
    pub zombie: bool,
    pub history: Vec<HistoryJson<'a>>,
    /// A leader deposed with its lease alive: it may still believe it leads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deposed: Option<HolderJson<'a>>,
    /// ZooKeeper: the deposed holder's session, and whether a member lists it alive.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deposed_session: Option<SessionJson<'a>>,
    /// A leader that removed its own key while its lease lives on: no alarm.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resigned: Option<HolderJson<'a>>,
    /// etcd-election: the key an admin action holds at the head of the line, on the hold's
    /// lease (its `ttl_ms` the hold's time left); nobody leads until it ends.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held: Option<HeldJson<'a>>,
    /// With no leader: since when (RFC 3339), when electop saw it happen.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_leader_since: Option<String>,
    /// No leader, and that is this source's resting state: no alarm.
    pub idle: bool,
    /// The source is stale: the leader is the last one seen, as of `as_of`.
    pub stale: bool,
    pub as_of: Option<&'a str>,
    /// What is wrong, worst first: `no-leader`, `flapping`... (as in the table's ALARMS).
    pub alarms: Vec<&'static str>,
    /// Leader changes per minute over the last minute.
    pub changes_per_min: f64,
    /// What the store says of each candidate (Patroni: role, state, timeline, lag).
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub members: &'a [crate::model::MemberInfo],
    /// Other keys worth showing (Patroni's failover and sync), with their text.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub notes: &'a [crate::model::Note],
}

#[derive(Serialize)]
pub(crate) struct HolderJson<'a> {
    pub id: &'a str,
    pub key: &'a str,
    /// `id` and `key` in base64, where they hold bytes that are not printable UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id_base64: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_base64: Option<String>,
    /// etcd: the lease id (0: none). Absent for SQL rows. Kept as a number for the
    /// scripts that read it, though most JSON readers (jq, JavaScript) round it above 2^53.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lease: Option<i64>,
    /// The same lease id in hex, as etcdctl prints and takes it (`etcdctl lease revoke`):
    /// a string no JSON reader rounds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lease_hex: Option<String>,
    pub ttl_ms: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub create_revision: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mod_revision: Option<i64>,
    /// pg-advisory: the holder session's start as the server's compare takes it
    /// (backend_start in microseconds since the Unix epoch). mysql-lock has none: no server
    /// records when a connection started.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_start: Option<&'a str>,
    /// SQL: the deadline column as the database holds it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadline: Option<&'a str>,
    pub zombie: bool,
}

#[derive(Serialize)]
pub(crate) struct HeldJson<'a> {
    #[serde(flatten)]
    pub key: HolderJson<'a>,
    /// Who leads when the hold ends.
    pub next: Option<&'a str>,
    /// `re-election`, `forced leader`, or `admin hold` when the history does not say.
    pub action: &'static str,
}

/// A deposed holder's ZooKeeper session, as electop last checked it.
#[derive(Serialize)]
pub(crate) struct SessionJson<'a> {
    /// As ZooKeeper prints it: `0x…`.
    pub id: &'a str,
    /// `alive`, `cannot-tell` (a member does not list its sessions) or `checking`.
    pub state: crate::model::SessionCheck,
    /// The same in words, as the screen says it.
    pub text: String,
}

#[derive(Serialize)]
pub(crate) struct HistoryJson<'a> {
    /// RFC 3339; null for changes replayed from etcd's past revisions, which have no time.
    pub at: Option<String>,
    pub revision: Option<i64>,
    pub from: Option<&'a str>,
    pub to: Option<&'a str>,
    pub cause: Cause,
    /// Who forced it, for a forced change.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by: Option<&'a str>,
}

/// The raw bytes behind text that escapes some (`\xNN`, `\u{…}`), in base64, for a script
/// that needs them exactly; `None` for plain text, which is its own bytes.
pub(crate) fn base64_of(shown: &str) -> Option<String> {
    use base64::Engine as _;
    if !shown.contains('\\') {
        return None;
    }
    let raw = crate::model::unescape(shown)?;
    Some(base64::engine::general_purpose::STANDARD.encode(raw))
}

fn holder(c: &Candidate, now: Instant, scheme: crate::model::Scheme) -> HolderJson<'_> {
    // A session lock's stamp is its session's start, not a deadline.
    let session = scheme.is_session_lock();
    HolderJson {
        id: &c.id,
        key: &c.key,
        id_base64: base64_of(&c.id),
        key_base64: base64_of(&c.key),
        lease: c.lease,
        lease_hex: c.lease.map(|l| format!("{l:x}")),
        ttl_ms: if c.zombie() {
            None
        } else {
            c.ttl.map(|d| d.remaining_ms_at(now))
        },
        create_revision: c.lease.map(|_| c.create_revision),
        mod_revision: c.lease.map(|_| c.mod_revision),
        // A session lock's stamp is its session's start where the server keeps one
        // (PostgreSQL); on MySQL it is the lock's name (what its KILL compares).
        session_start: c
            .stamp
            .as_deref()
            .filter(|_| scheme.facts().server == Some(crate::model::Server::Postgres)),
        deadline: c.stamp.as_deref().filter(|_| !session),
        zombie: c.zombie(),
    }
}

fn history(h: &HistoryEntry) -> HistoryJson<'_> {
    HistoryJson {
        at: h.at.map(time::rfc3339),
        revision: h.revision,
        from: h.from.as_deref(),
        to: h.to.as_deref(),
        cause: h.cause,
        by: h.by.as_deref(),
    }
}

pub(crate) fn election<'a>(e: &'a Election, source: &'a str, now: Instant) -> ElectionJson<'a> {
    ElectionJson {
        stale: false,
        idle: false,
        as_of: None,
        alarms: Vec::new(),
        changes_per_min: 0.0,
        name: &e.name,
        name_base64: base64_of(&e.name),
        scheme: e.scheme,
        source,
        source_id: "",
        leader: e.leader.as_ref().map(|l| holder(l, now, e.scheme)),
        candidates: e
            .candidates
            .iter()
            .map(|c| holder(c, now, e.scheme))
            .collect(),
        ttl_ms: e.ttl_ms_at(now),
        transitions: e.transitions,
        zombie: e.has_zombie(),
        history: e.history.iter().map(history).collect(),
        deposed: e.deposed.as_ref().map(|d| holder(d, now, e.scheme)),
        deposed_session: e.deposed_session.and_then(|state| {
            Some(SessionJson {
                id: e.deposed.as_ref()?.stamp.as_deref()?,
                state,
                text: e.deposed_session_text(false)?,
            })
        }),
        resigned: e.resigned.as_ref().map(|d| holder(d, now, e.scheme)),
        held: e.held.as_ref().zip(e.hold_at(now)).map(|(k, h)| HeldJson {
            key: holder(k, now, e.scheme),
            next: h.next,
            action: h.action,
        }),
        no_leader_since: e.no_leader_since().map(time::rfc3339),
        members: &e.members,
        notes: &e.notes,
    }
}

fn source(s: &SourceView, now: Instant) -> SourceJson<'_> {
    SourceJson {
        stale: s.stale_for(now).is_some(),
        as_of: s.last_contact.map(|(_, wall)| time::rfc3339(wall)),
        members: &s.members,
        session: s.session.as_ref().map(|(id, t)| OwnSessionJson {
            id,
            timeout_ms: t.as_millis(),
        }),
        history_since: s.history_since.map(time::rfc3339),
        history_gaps: s
            .history_gaps
            .iter()
            .map(|g| HistoryGapJson {
                from: time::rfc3339(g.from),
                to: time::rfc3339(g.to),
                stop_recorded: g.stop_recorded,
            })
            .collect(),
        id: &s.info.short,
        name: &s.info.name,
        endpoints: &s.info.endpoints,
        scheme: s.info.scheme,
        state: match s.conn {
            ConnState::Connected => "connected",
            ConnState::Connecting => "connecting",
            ConnState::Down { .. } => "down",
        },
        connected: s.conn == ConnState::Connected,
        error: match &s.conn {
            ConnState::Down { error, .. } => Some(error),
            _ => None,
        },
        revision: s.revision,
        notice: s.notice.as_deref(),
        layout_notice: s.info.notice.as_ref().map(|n| n.text()),
        idle_is_normal: s.info.idle_is_normal,
    }
}

pub(crate) fn status(model: &ReadModel, now: Instant) -> Status<'_> {
    Status {
        sources: model.sources.iter().map(|s| source(s, now)).collect(),
        elections: Elections::new(model, now),
    }
}

/// `re-election: held 21 s, node-b next`, while an admin action holds the line.
pub(crate) fn hold_text(e: &crate::model::Election, now: std::time::Instant) -> Option<String> {
    let h = e.hold_at(now)?;
    let left = h
        .left_ms
        .map_or("?".into(), |ms| format!("{} s", ms.max(0) / 1000));
    let next = h.next.map(|n| format!(", {n} next")).unwrap_or_default();
    Some(format!("{}: held {left}{next}", h.action))
}

#[cfg(test)]
mod tests {
    use std::time::SystemTime;

    use super::*;
    use crate::model::{SourceEvent, SourceInfo};

    /// Made on two threads, the JSON is the one `serde_json` writes of [`Status`].
    #[test]
    fn compact_json_in_two_halves_is_the_whole_document() {
        for n in [3, SPLIT_FROM + 1] {
            let now = Instant::now();
            let mut model = ReadModel::new(vec![SourceInfo::test_etcd()], now, SystemTime::now());
            let elections = (0..n)
                .map(|i| {
                    let mut e = Election::new(0, format!("e{i:06}"), Scheme::EtcdLeaseKey);
                    e.leader = Some(Candidate::plain(&format!("node-{i}"), "/k"));
                    e
                })
                .collect();
            let source = 0;
            model.apply(SourceEvent::Elections { source, elections });
            model.settle();
            let mut split = Vec::new();
            write_compact(&model, now, &mut split).expect("write");
            let whole = serde_json::to_vec(&status(&model, now)).expect("serialize");
            assert_eq!(
                String::from_utf8(split),
                String::from_utf8(whole),
                "{n} elections"
            );
        }
    }

    /// A lease id above 2^53 reaches a script as etcdctl writes it: the number is kept, and
    /// the hex beside it is a string no JSON reader rounds.
    #[test]
    fn a_lease_id_is_also_written_in_hex() {
        let mut c = Candidate::plain("node-a", "/leader/billing");
        c.lease = Some(2_324_035_750_564_177_925);
        let json = serde_json::to_value(holder(&c, Instant::now(), Scheme::EtcdLeaseKey))
            .expect("serialize");
        assert_eq!(json["lease_hex"], "2040a233adafa805", "{json}");
        assert_eq!(json["lease"].as_i64(), Some(2_324_035_750_564_177_925));
        let plain = serde_json::to_value(holder(
            &Candidate::plain("node-a", "k"),
            Instant::now(),
            Scheme::SqlLease,
        ))
        .expect("serialize");
        assert!(plain.get("lease_hex").is_none(), "{plain}");
    }
}
