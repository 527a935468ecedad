//! The selection and the rows around it. A `BTreeMap` has no lookup by rank, so the selection
//! is kept as a key and a rank side by side: finding the rows on screen, moving by a page and
//! taking in new elections then cost O(rows on screen + changes), never O(elections).

use std::ops::Bound::{Excluded, Unbounded};

use super::App;
use crate::model::{Election, SourceId};

pub type Key = (SourceId, String);

impl App {
    pub fn selected_election(&self) -> Option<&Election> {
        self.selected_key
            .as_ref()
            .and_then(|k| self.elections.get(k))
    }

    /// The rows of a table `rows` high, scrolled so the selection is on screen (on the last
    /// row when it is that far down): the rank of the first row, and the rows.
    pub fn window(&self, rows: usize) -> (usize, Vec<(&Key, &Election)>) {
        let rows = rows.max(1);
        let Some(key) = &self.selected_key else {
            return (0, Vec::new());
        };
        let above = self.selected.min(rows - 1);
        let mut out: Vec<_> = self
            .elections
            .range((Unbounded, Excluded(key)))
            .rev()
            .take(above)
            .collect();
        out.reverse();
        let first = self.selected - out.len();
        let more = rows - out.len();
        out.extend(self.elections.range(key..).take(more));
        (first, out)
    }

    /// The elections that can be on screen: a window as high as the terminal, which holds
    /// the table's whatever the layout.
    pub fn on_screen(&self) -> impl Iterator<Item = &Election> {
        self.window(self.size.1 as usize)
            .1
            .into_iter()
            .map(|(_, e)| e)
    }

    /// Moves the selection `delta` rows, clamped to the ends, walking from the selection or
    /// jumping to an end, so a page costs a page.
    pub(super) fn move_selection(&mut self, delta: isize) {
        let n = self.elections.len();
        let Some(key) = self.selected_key.as_ref() else {
            return;
        };
        if n == 0 {
            return;
        }
        let target = (self.selected as isize)
            .saturating_add(delta)
            .clamp(0, n as isize - 1) as usize;
        let found = if target == self.selected {
            return;
        } else if target == 0 {
            self.elections.keys().next()
        } else if target == n - 1 {
            self.elections.keys().next_back()
        } else if target > self.selected {
            self.elections
                .range((Excluded(key), Unbounded))
                .nth(target - self.selected - 1)
                .map(|(k, _)| k)
        } else {
            self.elections
                .range((Unbounded, Excluded(key)))
                .rev()
                .nth(self.selected - target - 1)
                .map(|(k, _)| k)
        };
        if let Some(k) = found.cloned() {
            self.selected_key = Some(k);
            self.selected = target;
        }
    }

    /// Takes in elections (new or changed) and keeps the selection on its election. Returns
    /// whether anything on screen changed: the header's counts, or a row in view.
    pub(super) fn merge(&mut self, source: SourceId, elections: Vec<Election>) -> bool {
        let rows = self.size.1 as usize;
        let (lo, hi) = {
            let (_, view) = self.window(rows);
            (
                view.first().map(|(k, _)| (*k).clone()),
                view.last().map(|(k, _)| (*k).clone()),
            )
        };
        let in_view = |k: &Key| {
            lo.as_ref().is_some_and(|lo| k >= lo) && hi.as_ref().is_some_and(|hi| k <= hi)
        };
        // Before the window fills the screen, any election may land in it.
        let mut visible = self.elections.len() < rows;
        for e in elections {
            let key = (source, e.name.clone());
            let leaderless = e.leader.is_none();
            visible |= in_view(&key);
            match self.elections.insert(key.clone(), e) {
                Some(old) => {
                    if old.leader.is_none() != leaderless {
                        self.leaderless = if leaderless {
                            self.leaderless + 1
                        } else {
                            self.leaderless.saturating_sub(1)
                        };
                        visible = true;
                    }
                }
                None => {
                    self.leaderless += usize::from(leaderless);
                    visible = true;
                    if self.selected_key.as_ref().is_some_and(|s| key < *s) {
                        self.selected += 1;
                    }
                }
            }
        }
        if self.selected_key.is_none() {
            self.selected_key = self.elections.keys().next().cloned();
            self.selected = 0;
        }
        visible
    }

    /// Elections without a leader, counted as they change rather than per frame.
    pub fn leaderless(&self) -> usize {
        self.leaderless
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Instant, SystemTime};

    use super::*;
    use crate::app::{Action, Msg, update};
    use crate::model::{Candidate, Scheme, SourceEvent, SourceInfo};

    fn led(name: String, leader: bool) -> Election {
        let mut e = Election::new(0, name, Scheme::EtcdElection);
        e.leader = leader.then(|| Candidate {
            id: "n".into(),
            raw_id: b"n".to_vec(),
            key: "k".into(),
            raw_key: b"k".to_vec(),
            lease: Some(1),
            create_revision: 1,
            mod_revision: 1,
            stamp: None,
            ttl: None,
        });
        e
    }

    fn app(height: u16) -> App {
        let info = SourceInfo {
            id: 0,
            name: "etcd x /e/".into(),
            label: "/e/".into(),
            short: "etcd1".into(),
            endpoints: "x".into(),
            scheme: Some(Scheme::EtcdElection),
            read_only: false,
            clustered: false,
        };
        let mut app = App::new(vec![info], Instant::now(), SystemTime::now());
        update(&mut app, Msg::Resize { width: 120, height });
        app
    }

    fn add(app: &mut App, names: impl IntoIterator<Item = usize>, leader: bool) -> bool {
        let elections = names
            .into_iter()
            .map(|i| led(format!("e{i:04}"), leader))
            .collect();
        update(
            app,
            Msg::Source(SourceEvent::Elections {
                source: 0,
                elections,
            }),
        )
    }

    /// What the window must be: the old O(n) rank arithmetic.
    fn naive(app: &App, rows: usize) -> (usize, Vec<String>) {
        let rows = rows.max(1);
        let first = app.selected.saturating_sub(rows - 1);
        let names = app.elections.keys().skip(first).take(rows);
        (first, names.map(|(_, n)| n.clone()).collect())
    }

    fn window_names(app: &App, rows: usize) -> (usize, Vec<String>) {
        let (first, rows) = app.window(rows);
        (
            first,
            rows.into_iter().map(|((_, n), _)| n.clone()).collect(),
        )
    }

    #[test]
    fn window_and_moves_agree_with_ranks() {
        let mut app = app(40);
        add(&mut app, (0..200).map(|i| i * 2), true);
        let moves = [
            Action::Down,
            Action::PageDown,
            Action::PageDown,
            Action::Up,
            Action::Bottom,
            Action::PageUp,
            Action::Top,
            Action::Down,
        ];
        for a in moves {
            update(&mut app, Msg::Action(a));
            let key = app.elections.keys().nth(app.selected).cloned();
            assert_eq!(app.selected_key, key, "rank and key agree after {a:?}");
            for rows in [1, 5, 17, 300] {
                assert_eq!(window_names(&app, rows), naive(&app, rows), "{a:?} {rows}");
            }
        }
    }

    #[test]
    fn new_elections_keep_the_selection_and_count_the_leaderless() {
        let mut app = app(40);
        add(&mut app, [10, 20, 30], true);
        update(&mut app, Msg::Action(Action::Bottom));
        assert_eq!(
            app.selected_election().map(|e| e.name.as_str()),
            Some("e0030")
        );
        add(&mut app, [1, 2, 25, 40], false);
        assert_eq!(app.selected, 5, "three new before it");
        assert_eq!(
            app.selected_election().map(|e| e.name.as_str()),
            Some("e0030")
        );
        assert_eq!(app.leaderless(), 4);
        add(&mut app, [1], true);
        add(&mut app, [10], false);
        assert_eq!(app.leaderless(), 4, "one gained a leader, one lost it");
        let counted = app
            .elections
            .values()
            .filter(|e| e.leader.is_none())
            .count();
        assert_eq!(app.leaderless(), counted);
    }

    #[test]
    fn ticks_follow_what_the_countdowns_on_screen_show() {
        use std::time::Duration;
        let fast = Duration::from_millis(100);
        let mut app = app(40);
        let step = |app: &mut App, remaining_ms: i64| {
            let mut e = led("e0000".into(), true);
            if let Some(l) = e.leader.as_mut() {
                l.ttl = Some(crate::model::Deadline {
                    granted_ms: remaining_ms.max(1),
                    remaining_ms,
                    read_at: app.now,
                });
            }
            update(
                app,
                Msg::Source(SourceEvent::Elections {
                    source: 0,
                    elections: vec![e],
                }),
            );
            app.tick_step(fast)
        };
        assert_eq!(step(&mut app, 30_000), Some(fast), "tenths of a second");
        assert_eq!(step(&mut app, 30 * 60_000), Some(Duration::from_secs(1)));
        assert_eq!(step(&mut app, 2 * 3_600_000), Some(Duration::from_secs(60)));
        assert_eq!(step(&mut app, 0), None, "run out: nothing moves");
    }

    #[test]
    fn a_change_off_screen_needs_no_frame() {
        let mut app = app(10);
        add(&mut app, 0..1000, true);
        assert!(add(&mut app, [3], true), "in view");
        assert!(!add(&mut app, [500], true), "off screen, counts unchanged");
        assert!(
            add(&mut app, [500], false),
            "the leaderless count shows in the header"
        );
        assert!(
            add(&mut app, [5000], true),
            "the election count shows in the header"
        );
    }
}
