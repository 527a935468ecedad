//! Which scheme a prefix holds, guessed from its keys, and what to tell the operator when
//! the guess is unsure or the prefix is empty. The decisions are plain functions of the keys;
//! the one extra read (where elections are, for an empty prefix) is [`nearby_keys`].

use etcd_client::GetOptions;

use super::election::looks_like_candidate;
use super::layout::Mirror;
use super::{EtcdBackend, follow::Link, timed};
use crate::model::{Scheme, SourceNotice, escape_bytes};

/// What the keys under a prefix look like.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Found {
    /// Keys named after their own lease: election API candidates.
    pub candidates: usize,
    /// Other keys on a lease: lease keys (or registry entries).
    pub lease_keys: usize,
    /// Keys on no lease: neither layout writes them (or a zombie).
    pub unleased: usize,
}

impl Found {
    pub(super) fn of(mirror: &Mirror) -> Found {
        let mut f = Found::default();
        for kv in mirror.values() {
            match kind(&kv.key, kv.lease) {
                Kind::Candidate => f.candidates += 1,
                Kind::LeaseKey => f.lease_keys += 1,
                Kind::Unleased => f.unleased += 1,
            }
        }
        f
    }
}

enum Kind {
    Candidate,
    LeaseKey,
    Unleased,
}

fn kind(key: &[u8], lease: i64) -> Kind {
    if lease == 0 {
        Kind::Unleased
    } else if looks_like_candidate(key, lease) {
        Kind::Candidate
    } else {
        Kind::LeaseKey
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    Empty,
    Sure(Scheme),
    /// Both layouts' keys: shown as the election API, with a notice.
    Mixed(Found),
    /// No key is on a lease, so none is a leader or candidate of either layout.
    NoneFits(Found),
}

pub(super) fn detect(mirror: &Mirror) -> Verdict {
    let f = Found::of(mirror);
    match f {
        _ if mirror.is_empty() => Verdict::Empty,
        _ if looks_like_patroni(mirror) => Verdict::Sure(Scheme::Patroni),
        Found {
            candidates: 0,
            lease_keys: 0,
            ..
        } => Verdict::NoneFits(f),
        Found { lease_keys: 0, .. } => Verdict::Sure(Scheme::EtcdElection),
        Found { candidates: 0, .. } => Verdict::Sure(Scheme::EtcdLeaseKey),
        _ => Verdict::Mixed(f),
    }
}

/// Patroni's signature: a `<scope>/leader` naming a member whose `<scope>/members/<name>`
/// is on the same lease (Patroni keeps both on one), or, with no leader at the moment, a
/// scope's `initialize` and `config` beside its `members/`.
fn looks_like_patroni(mirror: &Mirror) -> bool {
    mirror.values().any(|kv| {
        let Some(dir) = kv.key.strip_suffix(b"leader".as_slice()) else {
            return false;
        };
        let member = [dir, b"members/".as_slice(), &kv.value].concat();
        dir.ends_with(b"/")
            && mirror
                .get(&member)
                .is_some_and(|m| m.lease == kv.lease && kv.lease != 0)
    }) || mirror.keys().any(|k| {
        let Some(dir) = k.strip_suffix(b"initialize".as_slice()) else {
            return false;
        };
        let members = [dir, b"members/".as_slice()].concat();
        mirror.contains_key(&[dir, b"config".as_slice()].concat())
            && mirror
                .range(members.clone()..)
                .next()
                .is_some_and(|(m, _)| m.starts_with(&members))
    })
}

impl Verdict {
    /// The scheme every key is read by, where the keys show one: Patroni's, whose keys only
    /// make sense together. Otherwise each key is read for itself.
    pub(super) fn whole(self) -> Option<Scheme> {
        (self == Verdict::Sure(Scheme::Patroni)).then_some(Scheme::Patroni)
    }

    /// The scheme to name the prefix by: the one its keys show, none where they show both.
    pub(super) fn shown(self) -> Option<Scheme> {
        match self {
            // An empty prefix waits for election clients most often.
            Verdict::Empty => Some(Scheme::EtcdElection),
            Verdict::Sure(s) => Some(s),
            Verdict::Mixed(_) => None,
            Verdict::NoneFits(_) => Some(Scheme::EtcdLeaseKey),
        }
    }

    /// What to tell the operator about a guessed layout, and the flag that settles it.
    pub(super) fn unsure(self, prefix: &[u8]) -> Option<String> {
        let under = shown_prefix(prefix);
        let settle =
            "set --scheme etcd-election or --scheme etcd-lease-key (scheme = in the config)";
        match self {
            // Both layouts side by side are read key by key: nothing to settle.
            Verdict::Empty | Verdict::Sure(_) | Verdict::Mixed(_) => None,
            Verdict::NoneFits(f) => Some(format!(
                "layout unsure: none of the {} key(s) under {under} is on a lease, so none is a \
                 leader or candidate of etcd-election or etcd-lease-key; shown as {}; {settle} \
                 if that is right, or another --prefix",
                f.unleased,
                Scheme::EtcdLeaseKey
            )),
        }
    }
}

fn shown_prefix(prefix: &[u8]) -> String {
    if prefix.is_empty() {
        "the whole keyspace".to_string()
    } else {
        escape_bytes(prefix)
    }
}

/// A prefix that holds elections, near the one asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Nearby {
    pub prefix: Vec<u8>,
    pub elections: usize,
}

/// How many prefixes an empty prefix's notice suggests.
const SUGGESTED: usize = 3;

/// The prefixes (each up to a `/` of a key) that hold election-like keys, nearest to `asked`
/// by edit distance first (a typo, a slash too many or too few), then by how many elections
/// they hold. `keys` are (key, lease) from anywhere in the keyspace.
pub(super) fn nearby(asked: &[u8], keys: &[(Vec<u8>, i64)]) -> Vec<Nearby> {
    use std::collections::{BTreeMap, BTreeSet};
    // prefix -> the elections under it: an election-API key counts for its directory, a
    // lease key for itself.
    let mut under: BTreeMap<&[u8], BTreeSet<&[u8]>> = BTreeMap::new();
    for (key, lease) in keys {
        let election: &[u8] = match kind(key, *lease) {
            Kind::Unleased => continue,
            Kind::Candidate => &key[..key.iter().rposition(|b| *b == b'/').unwrap_or(0) + 1],
            Kind::LeaseKey => key,
        };
        for (i, b) in key.iter().enumerate() {
            // A bare "/" says nothing about where the elections are.
            if *b == b'/' && key[..i].iter().any(|c| *c != b'/') {
                under.entry(&key[..=i]).or_default().insert(election);
            }
        }
    }
    let mut ranked: Vec<(usize, Nearby)> = under
        .into_iter()
        .map(|(p, e)| {
            let n = Nearby {
                prefix: p.to_vec(),
                elections: e.len(),
            };
            (distance(asked, p), n)
        })
        .collect();
    ranked.sort_by(|(da, a), (db, b)| da.cmp(db).then(b.elections.cmp(&a.elections)));
    let mut picked: Vec<Nearby> = Vec::new();
    for (_, n) in ranked {
        // A prefix inside one already suggested adds nothing.
        if !picked.iter().any(|p| n.prefix.starts_with(&p.prefix)) {
            picked.push(n);
        }
        if picked.len() == SUGGESTED {
            break;
        }
    }
    picked
}

/// Levenshtein distance over bytes.
fn distance(a: &[u8], b: &[u8]) -> usize {
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let up = row[j + 1];
            row[j + 1] = (diag + usize::from(ca != cb)).min(up + 1).min(row[j] + 1);
            diag = up;
        }
    }
    row[b.len()]
}

/// `no keys under /election/; 3 elections under election/`. `looked` is false when the
/// keyspace could not be read (a user allowed only this prefix).
pub(super) fn empty_notice(asked: &[u8], near: &[Nearby], looked: bool) -> String {
    if asked.is_empty() {
        return "etcd holds no keys at all".to_string();
    }
    let head = format!("no keys under {}", shown_prefix(asked));
    if !looked {
        return head;
    }
    if near.is_empty() {
        return format!("{head}, and no key on a lease elsewhere in etcd");
    }
    let list: Vec<String> = near
        .iter()
        .map(|n| {
            let noun = if n.elections == 1 {
                "election"
            } else {
                "elections"
            };
            format!("{} {noun} under {}", n.elections, escape_bytes(&n.prefix))
        })
        .collect();
    format!("{head}; {} (--prefix)", list.join(", "))
}

/// Keys read for an empty prefix's suggestions: enough for any real election layout, small
/// enough to read at once.
const HINT_KEYS: i64 = 10_000;

/// The keys (and leases) at the start of the whole keyspace, without values; `None` when the
/// read is refused (etcd users may be allowed one prefix only) or fails.
pub(super) async fn nearby_keys(
    backend: &EtcdBackend,
    link: &mut Link,
) -> Option<Vec<(Vec<u8>, i64)>> {
    let mut kv = link
        .client
        .kv_client()
        .max_decoding_message_size(super::DECODE_LIMIT);
    let opts = GetOptions::new()
        .with_from_key()
        .with_keys_only()
        .with_limit(HINT_KEYS);
    let resp = timed(backend, &link.endpoint, kv.get(vec![0], Some(opts)))
        .await
        .inspect_err(|e| tracing::info!(%e, "cannot look for elections outside the prefix"))
        .ok()?;
    Some(
        resp.kvs()
            .iter()
            .map(|kv| (kv.key().to_vec(), kv.lease()))
            .collect(),
    )
}

/// The notice for what the first read of the prefix found, if any: where elections are when
/// it is empty, what was found when the layout had to be guessed and the guess is unsure.
pub(super) async fn notice(
    backend: &EtcdBackend,
    link: &mut Link,
    verdict: Verdict,
    guessed: bool,
) -> Option<SourceNotice> {
    let prefix = backend.cfg.prefix.as_bytes();
    match verdict {
        Verdict::Empty => {
            let keys = nearby_keys(backend, link).await;
            let near = keys
                .as_deref()
                .map(|k| nearby(prefix, k))
                .unwrap_or_default();
            Some(SourceNotice::Empty(empty_notice(
                prefix,
                &near,
                keys.is_some(),
            )))
        }
        v if guessed => v.unsure(prefix).map(SourceNotice::Unsure),
        _ => None,
    }
}

/// A prefix that stops inside a path segment (`/sv` where keys are `/svc/...`) names the
/// elections from the middle of a segment (`c/cron`): said, with the prefix likely meant.
pub(super) fn boundary(prefix: &[u8], keys: &Mirror) -> Option<String> {
    if prefix.is_empty() || prefix.ends_with(b"/") {
        return None;
    }
    // A key that is the prefix itself (a lease key named in full) is no path cut short.
    if keys.contains_key(prefix) {
        return None;
    }
    let mut rests = keys.keys().filter_map(|k| k.strip_prefix(prefix));
    let first = rests.next()?;
    let segment = |rest: &[u8]| -> Vec<u8> {
        let end = rest.iter().position(|b| *b == b'/').unwrap_or(rest.len());
        rest[..end].to_vec()
    };
    let common = segment(first);
    let same = rests.all(|r| segment(r) == common);
    let meant: Vec<u8> = if same {
        [prefix, &common, b"/"].concat()
    } else {
        let cut = prefix.iter().rposition(|b| *b == b'/').map_or(0, |i| i + 1);
        prefix[..cut].to_vec()
    };
    let shown = |b: &[u8]| crate::model::escape_bytes(b);
    Some(format!(
        "--prefix {} is not a path boundary: keys go on past it ({}), so elections are named \
         from the middle of a segment; did you mean --prefix {}?",
        shown(prefix),
        shown(first.get(..first.len().min(24)).unwrap_or(first)),
        if meant.is_empty() {
            "/".to_string()
        } else {
            shown(&meant)
        }
    ))
}

/// The notice of a first read with the prefix's boundary warning, when there is one.
pub(super) fn with_boundary(
    notice: Option<SourceNotice>,
    prefix: &[u8],
    keys: &Mirror,
) -> Option<SourceNotice> {
    let Some(warning) = boundary(prefix, keys) else {
        return notice;
    };
    Some(SourceNotice::Unsure(match notice {
        Some(n) => format!("{warning}; {}", n.text()),
        None => warning,
    }))
}

/// How often a standing warning is checked against the keys, each check reading every key,
/// once there are more than `RECHECK_FREELY` of them (below, at every change).
const RECHECK: std::time::Duration = std::time::Duration::from_secs(1);
const RECHECK_FREELY: usize = 10_000;

/// The source with the warning its keys call for now, where the one shown is a warning about
/// the layout or the prefix, last checked long enough ago, and no longer what the keys say;
/// `None` when nothing changes. An empty prefix's notice is not checked here: it leaves with
/// the first election.
pub(super) fn recheck(
    shown: &mut (crate::model::SourceInfo, std::time::Instant),
    prefix: &[u8],
    guessed: bool,
    keys: &Mirror,
) -> Option<crate::model::SourceInfo> {
    let (info, checked) = shown;
    let dear = keys.len() > RECHECK_FREELY;
    if !matches!(info.notice, Some(SourceNotice::Unsure(_))) || dear && checked.elapsed() < RECHECK
    {
        return None;
    }
    *checked = std::time::Instant::now();
    let verdict = detect(keys);
    let unsure = guessed
        .then(|| verdict.unsure(prefix).map(SourceNotice::Unsure))
        .flatten();
    let now = with_boundary(unsure, prefix, keys);
    if now == info.notice {
        return None;
    }
    info.notice = now;
    Some(info.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::etcd::layout::Kv;

    #[test]
    fn a_prefix_inside_a_segment_is_said_with_the_one_meant() {
        let keys = mirror(&[("/svc/cron/1", 1), ("/svc/jobs/2", 2)]);
        let w = boundary(b"/sv", &keys).expect("a warning");
        assert!(w.contains("--prefix /sv is not a path boundary"), "{w}");
        assert!(w.ends_with("did you mean --prefix /svc/?"), "{w}");
        assert_eq!(boundary(b"/svc/", &keys), None, "a boundary");
        assert_eq!(boundary(b"", &keys), None);
        let mixed = mirror(&[("/svc/a", 1), ("/svx/b", 2)]);
        let w = boundary(b"/sv", &mixed).expect("a warning");
        assert!(w.ends_with("did you mean --prefix /?"), "{w}");
        assert_eq!(
            boundary(b"/nothing", &keys),
            None,
            "nothing under it: the empty notice"
        );
    }

    fn mirror(keys: &[(&str, i64)]) -> Mirror {
        keys.iter()
            .map(|(k, lease)| {
                let kv = Kv {
                    key: k.as_bytes().to_vec(),
                    value: b"v".to_vec(),
                    create_revision: 1,
                    mod_revision: 1,
                    lease: *lease,
                };
                (kv.key.clone(), kv)
            })
            .collect()
    }

    #[test]
    fn election_keys_in_hex_or_decimal_are_the_election_api() {
        // etcdctl / Go: hex; the Node etcd3 package: decimal.
        let hex = mirror(&[
            ("/e/jobs/694d7a3f", 0x694d7a3f),
            ("/e/jobs/694d7a40", 0x694d7a40),
        ]);
        assert_eq!(detect(&hex), Verdict::Sure(Scheme::EtcdElection));
        let dec = mirror(&[("election/jobs/7587862319712430127", 7587862319712430127)]);
        assert_eq!(detect(&dec), Verdict::Sure(Scheme::EtcdElection));
        let lease_keys = mirror(&[("/leader/billing", 7), ("/leader/reports", 8)]);
        assert_eq!(detect(&lease_keys), Verdict::Sure(Scheme::EtcdLeaseKey));
        assert_eq!(detect(&Mirror::new()), Verdict::Empty);
    }

    #[test]
    fn both_layouts_are_read_key_by_key_and_no_lease_at_all_is_reported() {
        let both = mirror(&[("/x/jobs/1f", 0x1f), ("/x/jobs/20", 0x20), ("/x/leader", 9)]);
        let v = detect(&both);
        assert_eq!(
            v,
            Verdict::Mixed(Found {
                candidates: 2,
                lease_keys: 1,
                unleased: 0
            })
        );
        assert_eq!((v.whole(), v.shown()), (None, None), "read key by key");
        assert_eq!(v.unsure(b"/x/"), None, "nothing to settle");
        assert_eq!(
            Verdict::Sure(Scheme::Patroni).whole(),
            Some(Scheme::Patroni)
        );
        let none = detect(&mirror(&[("/cfg/a", 0), ("/cfg/b", 0)]));
        assert_eq!(none.shown(), Some(Scheme::EtcdLeaseKey));
        let msg = none.unsure(b"/cfg/").expect("unsure");
        assert!(
            msg.contains("none of the 2 key(s) under /cfg/ is on a lease"),
            "{msg}"
        );
        assert_eq!(Verdict::Sure(Scheme::EtcdLeaseKey).unsure(b"/x/"), None);
    }

    #[test]
    fn an_empty_prefix_names_the_nearest_prefixes_with_elections() {
        let keys: Vec<(Vec<u8>, i64)> = [
            ("election/jobs/101", 101),
            ("election/jobs/102", 102),
            ("election/web/103", 103),
            ("election/db/104", 104),
            ("/leader/billing", 5),
            ("/config/x", 0),
        ]
        .iter()
        .map(|(k, l)| (k.as_bytes().to_vec(), *l))
        .collect();
        let near = nearby(b"/election/", &keys);
        assert_eq!(
            near[0],
            Nearby {
                prefix: b"election/".to_vec(),
                elections: 3
            }
        );
        assert!(
            near.iter().all(|n| !n.prefix.starts_with(b"election/jobs")),
            "nothing inside a suggested prefix: {near:?}"
        );
        assert!(near.iter().all(|n| n.prefix != b"/config/"), "{near:?}");
        let msg = empty_notice(b"/election/", &near[..1], true);
        assert_eq!(
            msg,
            "no keys under /election/; 3 elections under election/ (--prefix)"
        );
        assert_eq!(
            empty_notice(b"/x/", &[], true),
            "no keys under /x/, and no key on a lease elsewhere in etcd"
        );
        assert_eq!(empty_notice(b"/x/", &[], false), "no keys under /x/");
        assert_eq!(empty_notice(b"", &[], true), "etcd holds no keys at all");
    }

    #[test]
    fn patronis_keys_are_patroni() {
        let put = |m: &mut Mirror, key: &str, value: &str, lease: i64| {
            let kv = crate::backend::etcd::layout::Kv {
                key: key.as_bytes().to_vec(),
                value: value.as_bytes().to_vec(),
                create_revision: 1,
                mod_revision: 1,
                lease,
            };
            m.insert(kv.key.clone(), kv);
        };
        let mut m = Mirror::new();
        put(&mut m, "/service/pg/leader", "n1", 7);
        put(&mut m, "/service/pg/members/n1", "{}", 7);
        put(&mut m, "/service/pg/members/n2", "{}", 8);
        assert_eq!(detect(&m), Verdict::Sure(Scheme::Patroni));
        // No leader just now: the scope's own keys still say so.
        m.remove(b"/service/pg/leader".as_slice());
        assert_ne!(detect(&m), Verdict::Sure(Scheme::Patroni));
        put(&mut m, "/service/pg/config", "{}", 0);
        put(&mut m, "/service/pg/initialize", "6", 0);
        assert_eq!(detect(&m), Verdict::Sure(Scheme::Patroni));
        // A lease key named `leader` is not Patroni.
        let mut m = Mirror::new();
        put(&mut m, "/app/leader", "n1", 7);
        assert_eq!(detect(&m), Verdict::Sure(Scheme::EtcdLeaseKey));
    }

    #[test]
    fn edit_distance() {
        assert_eq!(distance(b"/election/", b"election/"), 1);
        assert_eq!(distance(b"elcetion/", b"election/"), 2);
        assert_eq!(distance(b"", b"abc"), 3);
    }
}
