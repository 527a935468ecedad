//! Every election's series on `/metrics`, written fast enough for 10,000 elections a scrape.
//!
//! Each family's HELP and TYPE lines and each election's label set (with the `context`) are
//! made once: the families when the first scrape comes, an election's labels when it first
//! appears. A scrape then writes, per sample, the family's
//! name, the election's kept labels and the number. The numbers are worked out at each
//! scrape (a lease's time left moves with the clock alone); the labels are what made a
//! sample costly (built, escaped and copied again for every family).
//! The holder's `_info` labels are kept with the holder they were made for and made again
//! when it changes, so a new holder replaces the old series; an election gone from the
//! model loses its labels at the next scrape.

use std::time::Instant;

use super::exposition::{Format, Head, Kind, Num, Writer, labels, with_label};
use super::observer::{Observed, Tally};
use crate::model::Election;
use crate::state::Key;
use crate::state::alarm::Alarm;

/// What an election's numbers are worked out from at a scrape.
pub(crate) struct Row<'a> {
    e: &'a Election,
    tally: Option<&'a Tally>,
    flapping: bool,
    /// The instant its source's countdowns stand at (frozen at the last contact when stale).
    as_of: Instant,
    now: Instant,
}

/// A per-election gauge: its name, help and value (none: no sample).
type PerElection = (&'static str, &'static str, fn(&Row<'_>) -> Option<f64>);

pub(crate) const ELECTION_GAUGES: &[PerElection] = &[
    (
        "electop_election_has_leader",
        "Whether the election has a leader (1) or not (0).",
        |r| Some(flag(r.e.leader.is_some())),
    ),
    (
        "electop_election_leader_ttl_seconds",
        "Time left on the leader's lease or term.",
        |r| {
            let d = r.e.leader.as_ref()?.ttl?;
            Some(d.remaining_ms_at(r.as_of) as f64 / 1000.0)
        },
    ),
    (
        "electop_election_leader_term_seconds",
        "The lease or term the leader was granted.",
        |r| Some(r.e.leader.as_ref()?.ttl?.granted_ms as f64 / 1000.0),
    ),
    (
        "electop_election_last_change_age_seconds",
        "Seconds since the last leader change seen live.",
        |r| {
            let at = r.tally?.last_change?;
            Some(r.now.saturating_duration_since(at).as_secs_f64())
        },
    ),
    (
        "electop_election_leaderless_current_seconds",
        "How long the election has been without a leader now (no sample while led).",
        |r| {
            r.e.leader.is_none().then(|| {
                r.tally
                    .map_or(0.0, |t| t.leaderless_at(r.now).as_secs_f64())
            })
        },
    ),
    (
        "electop_election_candidates_waiting",
        "Candidates in line behind the leader.",
        |r| r.e.waiting().map(|n| n as f64),
    ),
    // The alarms below have a sample (1) only while raised: over many elections the zeros
    // were much of a scrape. The shipped rules (`== 1`, `> 0`) and dashboard (`or
    // vector(0)`) read an absent series as not raised, and one that goes is marked stale by
    // Prometheus at the next scrape, so an alert on it resolves as it did on a 0.
    (
        "electop_election_deposed_holders",
        "Holders removed by someone else whose lease or session lives on: they may still believe they lead (1; no sample when none).",
        |r| r.e.deposed.is_some().then_some(1.0),
    ),
    (
        "electop_election_holder_expired",
        "The store still names a holder whose lease or term ran out unrenewed: nobody leads, nobody took over (1; no sample when not).",
        |r| r.e.expired.is_some().then_some(1.0),
    ),
    (
        "electop_election_zombie",
        "A key that never expires (no lease) blocks the election (1; no sample when none).",
        |r| r.e.has_zombie().then_some(1.0),
    ),
    (
        "electop_election_flapping",
        "The leader changes more often than the configured threshold (1; no sample when not).",
        |r| r.flapping.then_some(1.0),
    ),
];

/// The families after the gauges: the holder's `_info`, then the two counters.
const INFO: (&str, &str) = (
    "electop_election_leader_info",
    "The leader's id as the store holds it (1 while it leads; replaced when it changes).",
);
const CHANGES: (&str, &str) = (
    "electop_election_leader_changes",
    "Leader changes seen live since electop started, by cause.",
);
const LEADERLESS: (&str, &str) = (
    "electop_election_leaderless_seconds",
    "All the time seen without a leader since electop started.",
);

/// Where the families after the gauges are written, in the order of [`heads`].
const INFO_AT: usize = ELECTION_GAUGES.len();
const CHANGES_AT: usize = INFO_AT + 1;
const LEADERLESS_AT: usize = INFO_AT + 2;

pub(crate) fn flag(b: bool) -> f64 {
    f64::from(u8::from(b))
}

/// An election's label sets (`{context=...,source=...,election=...,scheme=...}`), the same
/// in both formats.
#[derive(Clone, Debug)]
struct Labels {
    base: Box<str>,
    /// The holder these `_info` labels were made for, and them.
    holder: Option<(Box<str>, Box<str>)>,
    /// With each cause a change was counted under.
    causes: Vec<(&'static str, Box<str>)>,
}

impl Labels {
    /// Has a label set per cause the election's changes are counted under, in the counts'
    /// order, so a scrape writes them side by side without looking any up.
    fn follow_causes(&mut self, t: &Tally) {
        // The causes are `&'static str`s from one table: the same cause is the same pointer,
        // and the text is compared only when it is not.
        let same = |a: &str, b: &str| std::ptr::eq(a, b) || a == b;
        let mut wanted = t.changes.keys();
        let in_order = self.causes.len() == t.changes.len()
            && self
                .causes
                .iter()
                .all(|(c, _)| wanted.next().is_some_and(|w| same(c, w)));
        if in_order {
            return;
        }
        let mut made = std::mem::take(&mut self.causes);
        for cause in t.changes.keys() {
            let label = match made.iter().position(|(c, _)| same(c, cause)) {
                Some(i) => made.swap_remove(i).1,
                None => with_label(&self.base, "cause", cause),
            };
            self.causes.push((cause, label));
        }
    }
}

/// An election's numbers at a scrape: each gauge's sample (none: no sample), then what the
/// `_info` and counter families need.
struct Numbers<'a> {
    gauges: [Option<f64>; ELECTION_GAUGES.len()],
    led: bool,
    tally: Option<&'a Tally>,
}

impl<'a> Numbers<'a> {
    fn of(row: &Row<'a>) -> Numbers<'a> {
        Numbers {
            gauges: std::array::from_fn(|g| (ELECTION_GAUGES[g].2)(row)),
            led: row.e.leader.is_some(),
            tally: row.tally,
        }
    }
}

/// What a scrape keeps for the next: the families' heads and each election's labels.
pub(crate) struct Series {
    /// Heads by format, in the order the families are written.
    heads: Option<[Vec<Head>; 2]>,
    /// Each election's labels, in the model's order (its elections are a sorted map).
    labels: Vec<(Key, Labels)>,
    /// On every series when a context was chosen.
    context: Option<String>,
    /// How large the last scrape was, and the last gzipped one: the next one's buffer is
    /// made that size at once.
    pub(crate) last_len: usize,
    pub(crate) last_gzip_len: usize,
    /// Label sets made so far, and `_info` ones (for tests: an unchanged election's are not
    /// made again).
    pub(crate) made: u64,
    pub(crate) holders_made: u64,
}

impl Series {
    pub(crate) fn new(context: Option<String>) -> Series {
        Series {
            heads: None,
            labels: Vec::new(),
            context,
            last_len: 0,
            last_gzip_len: 0,
            made: 0,
            holders_made: 0,
        }
    }

    /// Writes every election's series in `format` with `w`.
    pub(crate) fn write(&mut self, o: &Observed, format: Format, w: &mut Writer<'_>) {
        if self.heads.is_none() {
            self.heads = Some([heads(Format::Text), heads(Format::OpenMetrics)]);
        }
        let rows = self.rows(o);
        let heads = &self.heads.as_ref().expect("made above")[format as usize];
        for (family, head) in heads.iter().enumerate() {
            w.head(head);
            self.each(family, &rows, &mut |labels, v| {
                w.sample(&head.sample, labels, v)
            });
        }
    }

    /// Each election's numbers, worked out once rather than once a family: a family's pass
    /// then reads them in order instead of going back to every election's data.
    fn rows<'o>(&mut self, o: &'o Observed) -> Vec<Numbers<'o>> {
        let tallies = self.refresh(o);
        let flapping = o.model.alarm_counts()[Alarm::Flapping as usize] > 0;
        let as_of: Vec<Instant> = (0..o.model.sources.len())
            .map(|s| o.model.as_of(s))
            .collect();
        o.model
            .elections
            .iter()
            .zip(tallies)
            .map(|((key, e), tally)| {
                let row = Row {
                    e,
                    tally,
                    flapping: flapping
                        && o.model
                            .alarms(key)
                            .is_some_and(|(a, _)| a.has(Alarm::Flapping)),
                    as_of: as_of.get(key.0).copied().unwrap_or(o.model.now),
                    now: o.model.now,
                };
                Numbers::of(&row)
            })
            .collect()
    }

    /// Calls `f` with each sample of family `family`: the labels and the number.
    fn each(&self, family: usize, rows: &[Numbers<'_>], f: &mut dyn FnMut(&str, Num)) {
        let all = rows.iter().zip(&self.labels);
        match family {
            INFO_AT => {
                for (row, (_, l)) in all {
                    if let (true, Some((_, with_holder))) = (row.led, &l.holder) {
                        f(with_holder, Num::U(1));
                    }
                }
            }
            CHANGES_AT => {
                for (row, (_, l)) in all {
                    // The kept cause labels are in the tally's order (refresh saw to it).
                    let counts = row.tally.map(|t| &t.changes).into_iter().flatten();
                    for ((_, n), (_, labels)) in counts.zip(&l.causes) {
                        f(labels, Num::U(*n));
                    }
                }
            }
            LEADERLESS_AT => {
                for (row, (_, l)) in all {
                    let total = row.tally.map_or(0.0, |t| t.leaderless_s);
                    f(&l.base, Num::F(total));
                }
            }
            gauge => {
                for (row, (_, l)) in all {
                    if let Some(v) = row.gauges.get(gauge).copied().flatten() {
                        f(&l.base, Num::F(v));
                    }
                }
            }
        }
    }

    /// Brings the kept labels to the model's elections, in its order: a walk of both, which
    /// keeps what it finds, makes the labels of an election new here, drops those of one
    /// gone; the `_info` labels made again where the holder changed, the cause labels kept
    /// in the order of the election's counts. Returns each election's counts, found once.
    fn refresh<'o>(&mut self, o: &'o Observed) -> Vec<Option<&'o Tally>> {
        use std::cmp::Ordering::{Equal, Less};
        let mut old = std::mem::take(&mut self.labels).into_iter().peekable();
        let mut kept = Vec::with_capacity(o.model.elections.len());
        let mut tallies = Vec::with_capacity(o.model.elections.len());
        for (key, e) in &o.model.elections {
            let known = loop {
                match old.peek().map(|(k, _)| k.cmp(key)) {
                    Some(Less) => {
                        drop(old.next());
                    }
                    Some(Equal) => break old.next(),
                    _ => break None,
                }
            };
            let (key, mut l) = match known {
                Some(known) => known,
                None => {
                    let base = self.base_labels(o, key, e);
                    let l = Labels {
                        base,
                        holder: None,
                        causes: Vec::new(),
                    };
                    (key.clone(), l)
                }
            };
            match &e.leader {
                Some(leader) if l.holder.as_ref().is_none_or(|(id, _)| **id != *leader.id) => {
                    let with_holder = with_label(&l.base, "holder", &leader.id);
                    l.holder = Some((leader.id.as_str().into(), with_holder));
                    self.holders_made += 1;
                }
                Some(_) => {}
                None => l.holder = None,
            }
            let tally = o.tallies.get(&key);
            if let Some(t) = tally {
                l.follow_causes(t);
            }
            tallies.push(tally);
            kept.push((key, l));
        }
        self.labels = kept;
        tallies
    }

    /// The election's labels.
    fn base_labels(&mut self, o: &Observed, key: &Key, e: &Election) -> Box<str> {
        let source = o.model.sources.get(key.0).map(|s| s.info.short.as_str());
        self.made += 1;
        let mut pairs = vec![
            ("source", source.unwrap_or_default()),
            ("election", e.name.as_str()),
            ("scheme", e.scheme.as_str()),
        ];
        // A name within a group of the store's (a Lease's namespace) carries it as a label.
        let group = e.scheme.facts().group.zip(e.name.split_once('/'));
        if let Some((label, (group, _))) = group {
            pairs.push((label, group));
        }
        labels(self.context.as_deref(), &pairs).into()
    }
}

/// Every election family's head in `format`, in the order they are written.
fn heads(format: Format) -> Vec<Head> {
    let gauges = ELECTION_GAUGES
        .iter()
        .map(|(n, h, _)| (*n, *h, Kind::Gauge));
    let rest = [
        (INFO.0, INFO.1, Kind::Gauge),
        (CHANGES.0, CHANGES.1, Kind::Counter),
        (LEADERLESS.0, LEADERLESS.1, Kind::Counter),
    ];
    gauges
        .chain(rest)
        .map(|(name, help, kind)| Head::new(format, name, help, kind))
        .collect()
}

#[cfg(test)]
#[path = "series_tests.rs"]
mod tests;
