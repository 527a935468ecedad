//! `patroni`: Patroni's keys in etcd (`etcd3:` DCS), read as Patroni writes them. One election
//! per cluster scope, `<namespace><scope>/`: `leader` holds the leader's member name on the
//! lease it shares with `members/<leader>`; each `members/<name>` is a JSON status on that
//! member's lease. `failover` and `sync` are shown as notes, `history` (past promotions) is
//! merged into the election's history. `config`, `initialize` and `status` are no elections:
//! `status` is rewritten every loop, so it only feeds the replicas' lag.

use std::time::SystemTime;

use serde_json::Value;

use super::layout::{Holders, Kv, Layout, Mirror, children, relative_name};
use crate::model::{Cause, HistoryEntry, MemberInfo, Note, Scheme, escape_bytes};

pub(crate) struct Patroni {
    /// The namespace (`/service/` by default), or one cluster's own directory.
    pub prefix: Vec<u8>,
}

/// Keys of a scope that make it an election, or change what it shows.
const OWN_KEYS: [&[u8]; 4] = [b"leader", b"failover", b"sync", b"history"];

impl Layout for Patroni {
    fn scheme(&self) -> Scheme {
        Scheme::Patroni
    }

    fn prefixes(&self) -> Vec<Vec<u8>> {
        vec![self.prefix.clone()]
    }

    /// The scope's directory, found from the key's end so that the prefix may be the
    /// namespace or the scope itself.
    fn election_of(&self, key: &[u8]) -> Option<Vec<u8>> {
        let rest = key.strip_prefix(self.prefix.as_slice())?;
        let mut parts = rest.rsplitn(3, |b| *b == b'/');
        let last = parts.next()?;
        let parent = parts.next();
        let dir_len = if parent == Some(b"members".as_slice()) && !last.is_empty() {
            rest.len() - last.len() - b"members/".len()
        } else if OWN_KEYS.contains(&last) {
            rest.len() - last.len()
        } else {
            return None;
        };
        Some(key[..self.prefix.len() + dir_len].to_vec())
    }

    fn display_name(&self, election: &[u8]) -> String {
        relative_name(&self.prefix, election)
    }

    fn derive(&self, election: &[u8], mirror: &Mirror) -> Holders {
        let key = |name: &str| [election, name.as_bytes()].concat();
        let leader = mirror.get(&key("leader")).map(Kv::candidate);
        let members_dir = key("members/");
        let optime = mirror
            .get(&key("status"))
            .and_then(|kv| status_optime(&kv.value));
        let leader_id = leader.as_ref().map(|l| l.raw_id.clone());
        let mut line = Vec::new();
        let mut members = Vec::new();
        for kv in children(mirror, &members_dir) {
            let name = &kv.key[members_dir.len()..];
            let is_leader = leader_id.as_deref() == Some(name);
            members.push(member_info(name, &kv.value, optime, is_leader));
            line.push(kv.candidate_named(name));
        }
        // Leader first, the rest by name, as `patronictl list` sorts them.
        if let Some(l) = &leader {
            match line.iter().position(|c| c.raw_id == l.raw_id) {
                Some(i) => {
                    let entry = line.remove(i);
                    line.insert(0, entry);
                }
                None => line.insert(0, l.clone()),
            }
        }
        Holders {
            leader,
            candidates: line,
            members,
            notes: notes(election, mirror),
            past: mirror
                .get(&key("history"))
                .map(|kv| past_promotions(&kv.value))
                .unwrap_or_default(),
            held: None,
        }
    }
}

/// The cluster's last known WAL position (`status` = `{"optime": N}`).
fn status_optime(value: &[u8]) -> Option<i64> {
    serde_json::from_slice::<Value>(value).ok()?["optime"].as_i64()
}

/// A member's JSON as Patroni writes it; lag as `patronictl list` counts it.
fn member_info(name: &[u8], value: &[u8], optime: Option<i64>, is_leader: bool) -> MemberInfo {
    let v: Value = serde_json::from_slice(value).unwrap_or(Value::Null);
    let text = |k: &str| v[k].as_str().map(str::to_string);
    let lag_bytes = match (is_leader, optime, v["xlog_location"].as_i64()) {
        (false, Some(cluster), Some(own)) => Some((cluster - own).max(0)),
        _ => None,
    };
    MemberInfo {
        id: escape_bytes(name),
        role: text("role"),
        state: text("state"),
        timeline: v["timeline"].as_i64(),
        lag_bytes,
        nofailover: v["tags"]["nofailover"].as_bool().unwrap_or(false),
    }
}

/// `failover` and `sync`, when present. A `failover` of `{}` (reset after a switchover) is
/// kept, with no text, for its revision: a switchover compares against it.
fn notes(election: &[u8], mirror: &Mirror) -> Vec<Note> {
    ["failover", "sync"]
        .into_iter()
        .filter_map(|name| {
            let kv = mirror.get(&[election, name.as_bytes()].concat())?;
            let v: Value = serde_json::from_slice(&kv.value).unwrap_or(Value::Null);
            let text = match name {
                "failover" => failover_text(&v),
                _ => sync_text(&v),
            };
            Some(Note {
                name: name.to_string(),
                text,
                raw_key: kv.key.clone(),
                mod_revision: kv.mod_revision,
            })
        })
        .collect()
}

fn failover_text(v: &Value) -> String {
    let (leader, member) = (v["leader"].as_str(), v["member"].as_str());
    let when = v["scheduled_at"]
        .as_str()
        .map(|t| format!(" at {t}"))
        .unwrap_or_default();
    match (leader, member) {
        (Some(l), Some(m)) => format!("switchover {l} → {m} requested{when}"),
        (None, Some(m)) => format!("failover to {m} requested{when}"),
        (Some(l), None) => format!("switchover away from {l} requested{when}"),
        (None, None) => String::new(),
    }
}

fn sync_text(v: &Value) -> String {
    match v["sync_standby"].as_str() {
        Some(s) if !s.is_empty() => format!("synchronous standby {s}"),
        _ => String::new(),
    }
}

/// `history` = `[[timeline, lsn, reason, time, new leader], ...]`: each promotion, with
/// the time Patroni wrote. Records without a time or a new leader (older Patroni versions)
/// cannot be placed among the other changes and are left out.
fn past_promotions(value: &[u8]) -> Vec<HistoryEntry> {
    let Ok(Value::Array(records)) = serde_json::from_slice::<Value>(value) else {
        return Vec::new();
    };
    let mut previous: Option<String> = None;
    let mut out = Vec::new();
    for r in &records {
        let (Some(at), Some(to)) = (
            r.get(3).and_then(parse_time),
            r.get(4).and_then(Value::as_str),
        ) else {
            continue;
        };
        out.push(HistoryEntry {
            at: Some(at),
            revision: None,
            from: previous.replace(to.to_string()),
            to: Some(to.to_string()),
            cause: Cause::Promoted,
            by: None,
        });
    }
    out
}

fn parse_time(v: &Value) -> Option<SystemTime> {
    let s = v.as_str()?;
    let t = time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).ok()?;
    Some(t.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(key: &str, value: &str, rev: i64, lease: i64) -> Kv {
        Kv {
            key: key.as_bytes().to_vec(),
            value: value.as_bytes().to_vec(),
            create_revision: rev,
            mod_revision: rev,
            lease,
        }
    }

    /// Keys as Patroni 3.0.2 left them after a switchover from n1 to n2 (seen here).
    fn after_switchover() -> Mirror {
        [
            kv("/service/demo/config", r#"{"ttl":10,"loop_wait":1}"#, 8, 0),
            kv("/service/demo/failover", "{}", 287, 0),
            kv(
                "/service/demo/history",
                r#"[[1,50639896,"no recovery target specified","2026-11-22T23:04:36.586535+00:00","n2"]]"#,
                292,
                0,
            ),
            kv("/service/demo/initialize", "7711134538056867912", 7, 0),
            kv("/service/demo/leader", "n2", 286, 0x29),
            kv(
                "/service/demo/members/n1",
                r#"{"conn_url":"postgres://127.0.0.1:5441/postgres","state":"running","role":"replica","version":"3.0.2","xlog_location":50640000,"timeline":2,"tags":{"nofailover":true}}"#,
                298,
                0x08,
            ),
            kv(
                "/service/demo/members/n2",
                r#"{"conn_url":"postgres://127.0.0.1:5442/postgres","state":"running","role":"master","version":"3.0.2","xlog_location":50640352,"timeline":2}"#,
                295,
                0x29,
            ),
            kv("/service/demo/status", r#"{"optime":50640352}"#, 301, 0),
        ]
        .into_iter()
        .map(|kv| (kv.key.clone(), kv))
        .collect()
    }

    fn layout() -> Patroni {
        Patroni {
            prefix: b"/service/".to_vec(),
        }
    }

    #[test]
    fn one_election_per_scope_and_config_keys_are_no_election() {
        let p = layout();
        let scope = Some(b"/service/demo/".to_vec());
        for key in ["leader", "members/n1", "failover", "sync", "history"] {
            let full = format!("/service/demo/{key}");
            assert_eq!(p.election_of(full.as_bytes()), scope, "{key}");
        }
        for key in ["config", "initialize", "status", "members/"] {
            let full = format!("/service/demo/{key}");
            assert_eq!(p.election_of(full.as_bytes()), None, "{key}");
        }
        assert_eq!(p.display_name(b"/service/demo/"), "demo");
        // The prefix may be the scope's own directory.
        let one = Patroni {
            prefix: b"/service/demo/".to_vec(),
        };
        let e = one
            .election_of(b"/service/demo/members/n1")
            .expect("election");
        assert_eq!(
            (e.as_slice(), one.display_name(&e)),
            (b"/service/demo/".as_slice(), "/service/demo".into())
        );
    }

    #[test]
    fn leader_first_then_members_with_role_state_timeline_lag_and_tags() {
        let h = layout().derive(b"/service/demo/", &after_switchover());
        let l = h.leader.expect("leader");
        assert_eq!((l.id.as_str(), l.lease), ("n2", Some(0x29)));
        let ids: Vec<_> = h.candidates.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["n2", "n1"]);
        assert_eq!(h.candidates[1].key, "/service/demo/members/n1");
        let n1 = h.members.iter().find(|m| m.id == "n1").expect("n1");
        assert_eq!(
            (
                n1.role.as_deref(),
                n1.state.as_deref(),
                n1.timeline,
                n1.lag_bytes,
                n1.nofailover
            ),
            (Some("replica"), Some("running"), Some(2), Some(352), true)
        );
        let n2 = h.members.iter().find(|m| m.id == "n2").expect("n2");
        assert_eq!((n2.role.as_deref(), n2.lag_bytes), (Some("master"), None));
        assert_eq!(n1.summary(), "replica running TL 2 lag 352 B nofailover");
    }

    #[test]
    fn failover_and_sync_are_notes_and_history_gives_promotions_with_times() {
        let mut m = after_switchover();
        let h = layout().derive(b"/service/demo/", &m);
        let failover = h.notes.iter().find(|n| n.name == "failover").expect("kept");
        assert_eq!((failover.text.as_str(), failover.mod_revision), ("", 287));
        let past = &h.past;
        assert_eq!(past.len(), 1);
        assert_eq!(
            (past[0].to.as_deref(), past[0].cause),
            (Some("n2"), Cause::Promoted)
        );
        assert_eq!(
            past[0].at.map(crate::model::time::rfc3339).as_deref(),
            Some("2026-11-22T23:04:36.586535Z")
        );
        for kv in [
            kv(
                "/service/demo/failover",
                r#"{"leader":"n2","member":"n1"}"#,
                310,
                0,
            ),
            kv(
                "/service/demo/sync",
                r#"{"leader":"n2","sync_standby":"n1"}"#,
                311,
                0,
            ),
            kv(
                "/service/demo/history",
                r#"[[1,5,"r","2026-11-22T23:04:36+00:00","n2"],[2,9,"r","2026-11-22T23:09:00+00:00","n1"],[3,12,"r"]]"#,
                312,
                0,
            ),
        ] {
            m.insert(kv.key.clone(), kv);
        }
        let h = layout().derive(b"/service/demo/", &m);
        let texts: Vec<_> = h.notes.iter().map(|n| n.text.as_str()).collect();
        assert_eq!(
            texts,
            ["switchover n2 → n1 requested", "synchronous standby n1"]
        );
        let moves: Vec<_> = h
            .past
            .iter()
            .map(|p| (p.from.as_deref(), p.to.as_deref()))
            .collect();
        assert_eq!(moves, [(None, Some("n2")), (Some("n2"), Some("n1"))]);
    }
}
