//! `electop watch` for people: one line per change, at local time to the millisecond.
//!
//! `23:01:02.345 etcd1 jobs leader node-a → node-b (lease_expired) ttl 9.5s`

use std::time::SystemTime;

use time::UtcOffset;

use crate::model::{Event, EventKind, time as clock};
use crate::state::log::source_text;

/// The machine's offset from UTC at `t` (daylight saving included), from the C library, as
/// `date` has it; UTC if it cannot tell.
pub(crate) fn local_offset(t: SystemTime) -> UtcOffset {
    let secs = match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => d.as_secs() as libc::time_t,
        Err(_) => return UtcOffset::UTC,
    };
    // SAFETY: an all-zero `tm` is a valid value (integers and a null zone pointer), and
    // localtime_r writes only into the `tm` we own for the length of the call.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let ok = unsafe { !libc::localtime_r(&secs, &mut tm).is_null() };
    if !ok {
        return UtcOffset::UTC;
    }
    UtcOffset::from_whole_seconds(tm.tm_gmtoff as i32).unwrap_or(UtcOffset::UTC)
}

/// An event as `watch --json` prints it: with the source's handle beside its name, as
/// `status` and the table name it.
#[derive(serde::Serialize)]
struct EventJson<'a> {
    #[serde(flatten)]
    event: &'a Event,
    source_id: &'a str,
    /// The election and the holders in base64, where their text escapes bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    election_base64: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    from_base64: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    to_base64: Option<String>,
}

/// `e` as one line of `watch --json` (and `serve`'s `/api/v1/events`).
pub(crate) fn json(e: &Event, source_id: &str) -> serde_json::Result<String> {
    let raw = |s: &Option<String>| s.as_deref().and_then(super::base64_of);
    serde_json::to_string(&EventJson {
        event: e,
        source_id,
        election_base64: raw(&e.election),
        from_base64: raw(&e.from),
        to_base64: raw(&e.to),
    })
}

/// Each election of `source` as it stands: one `current` line each, in name order.
pub(crate) fn current(
    model: &crate::state::ReadModel,
    source: crate::model::SourceId,
) -> Vec<Event> {
    let Some(s) = model.sources.get(source) else {
        return Vec::new();
    };
    let now = Some(SystemTime::now());
    model
        .elections
        .range((source, String::new())..)
        .take_while(|((id, _), _)| *id == source)
        .map(|((_, name), e)| Event {
            at: now,
            source: s.info.name.clone(),
            election: Some(name.clone()),
            kind: EventKind::Current,
            from: None,
            to: e.leader.as_ref().map(|l| l.id.clone()),
            cause: None,
            was: None,
            revision: s.revision,
            replayed: false,
            // etcd-election: an admin action's hold, before anyone leads again.
            detail: super::hold_text(e, model.as_of(source)).or_else(|| {
                // ZooKeeper: a deposed holder still acting, with its session.
                let d = e.deposed.as_ref()?;
                let session = e.deposed_session_text(false)?;
                Some(format!(
                    "⚠ deposed {} may still believe it leads, {session}",
                    d.id
                ))
            }),
        })
        .collect()
}

/// The line for `e`. `source`: the source's short handle; `ttl_ms`: the new leader's time
/// left, where known.
pub(crate) fn line(e: &Event, source: &str, ttl_ms: Option<i64>, offset: UtcOffset) -> String {
    let when = match e.at {
        Some(at) => clock::clock_ms(at, offset),
        None => "replayed    ".to_string(),
    };
    let who = |x: &Option<String>| {
        x.as_deref()
            .map_or_else(|| "none".into(), |id| crate::model::shown(id).into_owned())
    };
    let what = match e.kind {
        EventKind::LeaderElected | EventKind::LeaderChanged | EventKind::LeaderLost => {
            format!("leader {} → {}", who(&e.from), who(&e.to))
        }
        EventKind::Attributed => format!("leader {} → {} was forced", who(&e.from), who(&e.to)),
        EventKind::Current => format!("leader {} now", who(&e.to)),
        EventKind::CandidateJoined => {
            format!("candidate {} joined", who(&e.to.clone().or(e.from.clone())))
        }
        EventKind::CandidateLeft => {
            format!("candidate {} left", who(&e.from.clone().or(e.to.clone())))
        }
        kind => source_text(kind).to_string(),
    };
    let mut out = format!("{when} {source}");
    if let Some(el) = &e.election {
        out.push(' ');
        out.push_str(el);
    }
    out.push(' ');
    out.push_str(&what);
    if let Some(c) = e.cause {
        out.push_str(&format!(" ({})", c.as_str()));
    }
    if let Some(ms) = ttl_ms.filter(|_| e.to.is_some()) {
        out.push_str(&format!(" ttl {}", clock::duration_ms(ms)));
    }
    if let Some(d) = &e.detail {
        out.push_str(&format!(": {d}"));
    }
    if e.at.is_none()
        && let Some(r) = e.revision
    {
        out.push_str(&format!(" [rev {r}]"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Cause;
    use std::time::Duration;

    fn event(kind: EventKind) -> Event {
        Event {
            at: Some(SystemTime::UNIX_EPOCH + Duration::from_millis(1_795_000_062_345)),
            source: "etcd 127.0.0.1:2379 /e/".into(),
            election: Some("jobs".into()),
            kind,
            from: Some("node-a".into()),
            to: Some("node-b".into()),
            cause: Some(Cause::LeaseExpired),
            was: None,
            revision: Some(12),
            replayed: false,
            detail: None,
        }
    }

    #[test]
    fn a_change_reads_as_a_sentence_with_milliseconds_and_the_ttl() {
        let two_hours = UtcOffset::from_hms(2, 0, 0).expect("offset");
        let l = line(
            &event(EventKind::LeaderChanged),
            "etcd1",
            Some(9_500),
            two_hours,
        );
        assert_eq!(
            l,
            "13:07:42.345 etcd1 jobs leader node-a → node-b (lease_expired) ttl 9.5s"
        );
        let mut lost = event(EventKind::LeaderLost);
        lost.to = None;
        let l = line(&lost, "etcd1", Some(9_500), UtcOffset::UTC);
        assert_eq!(
            l,
            "11:07:42.345 etcd1 jobs leader node-a → none (lease_expired)"
        );
    }

    #[test]
    fn source_events_and_replayed_changes_say_what_they_are() {
        let mut c = event(EventKind::Connected);
        c.election = None;
        c.cause = None;
        assert_eq!(
            line(&c, "sql1", None, UtcOffset::UTC),
            "11:07:42.345 sql1 connected"
        );
        let mut r = event(EventKind::LeaderChanged);
        r.at = None;
        let l = line(&r, "etcd1", None, UtcOffset::UTC);
        assert!(l.starts_with("replayed") && l.ends_with("[rev 12]"), "{l}");
    }
}
