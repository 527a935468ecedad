//! Split brain: two participants that believe they lead at the same time. Where electop knows
//! what participants believe (the demo's nodes, `electop node --json` lines), their belief
//! changes go in and the overlaps come out: each pair of nodes whose leading intervals
//! intersect, with start, end (none while both still believe it) and duration.
//!
//! Pairs rather than "two or more at once": an overlap of two nodes is settled as soon as one
//! of the two stops believing it leads, whatever a third node's late line says, so the
//! recorded overlaps never change after they are reported.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// A node started or stopped believing it leads, at the node's own clock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BeliefChange {
    pub node: String,
    pub at: SystemTime,
    pub leads: bool,
}

impl BeliefChange {
    /// A belief line that `electop node --json` prints; `None` for any other line (its
    /// events, text, a line cut short).
    pub fn from_node_line(line: &str) -> Option<BeliefChange> {
        let v: serde_json::Value = serde_json::from_str(line).ok()?;
        let belief = v["belief"].as_str()?;
        let at = OffsetDateTime::parse(v["at"].as_str()?, &Rfc3339).ok()?;
        Some(BeliefChange {
            node: v["node"].as_str()?.to_string(),
            at: at.into(),
            leads: belief == "leader",
        })
    }
}

/// Two nodes that both believed they led, from `start` to `end` (`None`: they still do).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Overlap {
    /// In the order they started leading.
    pub nodes: [String; 2],
    pub start: SystemTime,
    pub end: Option<SystemTime>,
}

impl Overlap {
    /// How long it lasted, or has lasted by `now` while it goes on.
    pub fn duration(&self, now: SystemTime) -> Duration {
        self.end
            .unwrap_or(now)
            .duration_since(self.start)
            .unwrap_or_default()
    }

    fn involves(&self, node: &str) -> bool {
        self.nodes.iter().any(|n| n == node)
    }
}

/// The overlaps seen so far, from belief changes fed in as they arrive.
#[derive(Clone, Debug, Default)]
pub struct SplitBrain {
    /// Nodes that believe they lead, and since when.
    leading: BTreeMap<String, SystemTime>,
    /// Each node's latest change: an older one arriving later is stale.
    latest: BTreeMap<String, SystemTime>,
    open: Vec<Overlap>,
    closed: Vec<Overlap>,
}

impl SplitBrain {
    /// Takes one change; returns the overlaps it ended (settled, with a positive duration).
    ///
    /// Lines from different nodes may arrive slightly out of their time order: an overlap
    /// whose end turns out to be before its start never happened and is dropped. A node's
    /// own changes older than its latest are dropped too: a line still in the pipe of a
    /// process that was killed (its end fed in at the kill) must not make it lead again.
    pub fn apply(&mut self, c: &BeliefChange) -> Vec<Overlap> {
        if self.latest.get(&c.node).is_some_and(|l| c.at < *l) {
            return Vec::new();
        }
        self.latest.insert(c.node.clone(), c.at);
        if c.leads {
            if !self.leading.contains_key(&c.node) {
                for (other, since) in &self.leading {
                    self.open.push(Overlap {
                        nodes: [other.clone(), c.node.clone()],
                        start: (*since).max(c.at),
                        end: None,
                    });
                }
                self.leading.insert(c.node.clone(), c.at);
            }
            return Vec::new();
        }
        if self.leading.remove(&c.node).is_none() {
            return Vec::new();
        }
        let (ended, open) = std::mem::take(&mut self.open)
            .into_iter()
            .partition::<Vec<_>, _>(|o| o.involves(&c.node));
        self.open = open;
        let ended: Vec<Overlap> = ended
            .into_iter()
            .filter(|o| c.at > o.start)
            .map(|o| Overlap {
                end: Some(c.at),
                ..o
            })
            .collect();
        self.closed.extend(ended.iter().cloned());
        ended
    }

    /// Overlaps going on now, oldest first.
    pub fn open(&self) -> &[Overlap] {
        &self.open
    }

    /// Overlaps that ended, in the order they ended.
    pub fn closed(&self) -> &[Overlap] {
        &self.closed
    }

    /// Every overlap, ended or going on.
    pub fn count(&self) -> usize {
        self.open.len() + self.closed.len()
    }

    /// The longest overlap by `now` (an open one counts its time so far).
    pub fn longest(&self, now: SystemTime) -> Option<&Overlap> {
        self.closed
            .iter()
            .chain(&self.open)
            .max_by_key(|o| o.duration(now))
    }
}

/// Every overlap in a recorded set of belief changes, in any order: sorted by time first,
/// so lines collected from several nodes' outputs need no merging. Ended ones first, then
/// those still going on at the last change.
pub fn overlaps(mut changes: Vec<BeliefChange>) -> Vec<Overlap> {
    changes.sort_by_key(|c| c.at);
    let mut s = SplitBrain::default();
    for c in &changes {
        s.apply(c);
    }
    s.closed.into_iter().chain(s.open).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_millis(ms)
    }

    fn change(node: &str, ms: u64, leads: bool) -> BeliefChange {
        BeliefChange {
            node: node.into(),
            at: at(ms),
            leads,
        }
    }

    fn overlap(a: &str, b: &str, start: u64, end: Option<u64>) -> Overlap {
        Overlap {
            nodes: [a.into(), b.into()],
            start: at(start),
            end: end.map(at),
        }
    }

    #[test]
    fn a_clean_handover_is_no_overlap() {
        let all = overlaps(vec![
            change("n1", 0, true),
            change("n1", 1_000, false),
            change("n2", 1_000, true),
            change("n2", 2_000, false),
            change("n1", 2_500, true),
        ]);
        assert_eq!(all, []);
    }

    #[test]
    fn two_leaders_at_once_overlap_from_the_second_until_the_first_stops() {
        let mut s = SplitBrain::default();
        assert_eq!(s.apply(&change("n1", 0, true)), []);
        assert_eq!(s.apply(&change("n2", 3_000, true)), []);
        assert_eq!(s.open(), [overlap("n1", "n2", 3_000, None)]);
        assert_eq!(s.open()[0].duration(at(3_500)), Duration::from_millis(500));
        let ended = s.apply(&change("n1", 4_400, false));
        assert_eq!(ended, [overlap("n1", "n2", 3_000, Some(4_400))]);
        assert_eq!(ended[0].duration(at(99_000)), Duration::from_millis(1_400));
        assert!(s.open().is_empty());
        assert_eq!(s.count(), 1);
    }

    #[test]
    fn a_repeated_leader_line_does_not_move_the_start() {
        let mut s = SplitBrain::default();
        s.apply(&change("n1", 0, true));
        s.apply(&change("n2", 1_000, true));
        s.apply(&change("n2", 2_000, true));
        s.apply(&change("n1", 1_000, true));
        assert_eq!(s.open(), [overlap("n1", "n2", 1_000, None)]);
    }

    #[test]
    fn a_late_line_that_ends_before_the_overlap_began_is_no_overlap() {
        // n2's takeover arrives before n1's earlier "follower" line.
        let mut s = SplitBrain::default();
        s.apply(&change("n1", 0, true));
        s.apply(&change("n2", 5_000, true));
        assert_eq!(s.apply(&change("n1", 4_900, false)), []);
        assert_eq!(s.count(), 0);
        assert_eq!(s.longest(at(6_000)), None);
    }

    #[test]
    fn a_line_older_than_the_nodes_end_is_stale() {
        // The demo killed n1 at 2 s; its last "leader" line, printed at 1 s, arrives after.
        let mut s = SplitBrain::default();
        s.apply(&change("n1", 2_000, false));
        s.apply(&change("n1", 1_000, true));
        s.apply(&change("n2", 3_000, true));
        assert_eq!(s.count(), 0, "{s:?}");
    }

    #[test]
    fn three_leaders_make_one_overlap_per_pair() {
        let all = overlaps(vec![
            change("n1", 0, true),
            change("n2", 1_000, true),
            change("n3", 2_000, true),
            change("n2", 3_000, false),
            change("n1", 5_000, false),
        ]);
        assert_eq!(
            all,
            [
                overlap("n1", "n2", 1_000, Some(3_000)),
                overlap("n2", "n3", 2_000, Some(3_000)),
                overlap("n1", "n3", 2_000, Some(5_000)),
            ]
        );
    }

    #[test]
    fn the_longest_counts_an_open_overlap_so_far() {
        let mut s = SplitBrain::default();
        for c in [
            change("n1", 0, true),
            change("n2", 1_000, true),
            change("n2", 2_000, false),
            change("n3", 10_000, true),
        ] {
            s.apply(&c);
        }
        let closed = overlap("n1", "n2", 1_000, Some(2_000));
        assert_eq!(s.longest(at(10_500)), Some(&closed));
        assert_eq!(
            s.longest(at(12_000)),
            Some(&overlap("n1", "n3", 10_000, None))
        );
        assert_eq!(s.count(), 2);
    }

    #[test]
    fn input_order_does_not_matter_for_recorded_changes() {
        let mut changes = vec![
            change("n2", 3_000, true),
            change("n1", 4_400, false),
            change("n1", 0, true),
        ];
        let want = [overlap("n1", "n2", 3_000, Some(4_400))];
        assert_eq!(overlaps(changes.clone()), want);
        changes.reverse();
        assert_eq!(overlaps(changes), want);
    }

    #[test]
    fn node_lines_are_parsed_and_other_lines_skipped() {
        let c = BeliefChange::from_node_line(
            r#"{"at":"2026-11-22T19:20:05.25Z","node":"node-2","election":"demo","belief":"leader","leader":"node-2"}"#,
        )
        .expect("a belief line");
        assert_eq!(c.node, "node-2");
        assert!(c.leads);
        let secs =
            c.at.duration_since(SystemTime::UNIX_EPOCH)
                .expect("after 1970")
                .as_millis();
        assert_eq!(secs % 86_400_000, ((19 * 60 + 20) * 60 + 5) * 1000 + 250);
        let f = BeliefChange::from_node_line(
            r#"{"at":"2026-11-22T19:20:06Z","node":"node-2","election":"demo","belief":"no-contact","error":"x"}"#,
        );
        assert_eq!(f.map(|c| c.leads), Some(false));
        for other in [
            r#"{"at":"2026-11-22T19:20:06Z","node":"node-2","election":"demo","event":"resigned"}"#,
            "2026-11-22T19:20:06Z node-2 demo: leader",
            r#"{"at":"yesterday","node":"node-2","belief":"leader"}"#,
        ] {
            assert_eq!(BeliefChange::from_node_line(other), None, "{other}");
        }
    }
}
