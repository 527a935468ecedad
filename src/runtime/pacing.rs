//! When the dashboard draws: frames for time alone only while something on screen moves
//! with it, and never closer together than the frame cap.

use std::time::Duration;

use crate::app::App;

/// How often the screen must be redrawn for time alone: fast while a countdown on screen
/// shows tenths, once a second while a longer one runs or ages show, twice a second while
/// staleness must be noticed, never when nothing moves.
/// `rows`: the table's lines on screen (the demo's table is shorter than the dashboard's).
pub(super) fn tick_interval(app: &App, rows: usize, fast: Duration) -> Option<Duration> {
    if app.needs_tick(rows) {
        Some(fast)
    } else if app.model.sources.iter().any(|s| s.last_contact.is_some()) || app.flash.is_some() {
        // Staleness must show within seconds even when nothing else moves; a flash must go.
        Some(Duration::from_millis(500))
    } else if app.countdown_on_screen(rows, i64::MAX)
        || app
            .model
            .elections
            .values()
            .any(|e| e.last_change().is_some_and(|h| h.at.is_some()))
    {
        Some(Duration::from_secs(1))
    } else {
        None
    }
}

/// Redraws are paced: changes arriving within a frame's time are drawn together, at most
/// one frame per `min_frame`.
pub(super) struct Pacer {
    min_frame: Duration,
    last: Option<tokio::time::Instant>,
}

impl Pacer {
    pub(super) fn new(min_frame: Duration) -> Pacer {
        Pacer {
            min_frame,
            last: None,
        }
    }

    /// Something changed: whether to draw now. If not, `wake` is brought forward to when
    /// the next frame may be drawn.
    pub(super) fn draw_now(
        &mut self,
        now: tokio::time::Instant,
        wake: &mut Option<tokio::time::Instant>,
    ) -> bool {
        match self.last.map(|t| t + self.min_frame) {
            Some(due) if now < due => {
                *wake = Some(wake.map_or(due, |w| w.min(due)));
                false
            }
            _ => {
                self.last = Some(now);
                true
            }
        }
    }
}

pub(super) async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Instant, SystemTime};

    use crate::app::{self, Msg};
    use crate::ui;

    /// A countdown drives fast frames only while it shows tenths (under a minute) and is
    /// on screen: a leader a page below the table's rows moves nothing.
    #[test]
    fn frames_follow_only_the_countdowns_on_screen_and_their_precision() {
        use crate::model::{Candidate, Deadline, Election, Scheme, SourceEvent};
        let now = Instant::now();
        let info = crate::model::SourceInfo::test_etcd();
        let mut app = App::new(vec![info], now, SystemTime::UNIX_EPOCH);
        app::update(
            &mut app,
            Msg::Resize {
                width: 100,
                height: 12,
            },
        );
        let rows = ui::table_rows(app.size.0, app.size.1);
        let lead = |name: String, left_ms: i64| {
            let mut e = Election::new(0, name, Scheme::EtcdLeaseKey);
            e.leader = Some(Candidate {
                ttl: Some(Deadline {
                    granted_ms: 600_000,
                    remaining_ms: left_ms,
                    read_at: now,
                }),
                ..Candidate::plain("a", "k")
            });
            e
        };
        // Sorted by name: the long countdowns fill the screen, the short one is below it.
        let mut elections: Vec<Election> = (0..rows + 5)
            .map(|i| lead(format!("a{i:03}"), 300_000))
            .collect();
        elections.push(lead("zzz".into(), 5_000));
        app.sort = crate::app::Sort {
            key: crate::app::SortKey::Name,
            reversed: false,
        };
        app::update(
            &mut app,
            Msg::Source(SourceEvent::Elections {
                source: 0,
                elections,
            }),
        );
        let fast = Duration::from_millis(100);
        assert!(!app.needs_tick(rows), "the short countdown is off screen");
        assert_eq!(
            tick_interval(&app, rows, fast),
            Some(Duration::from_secs(1))
        );
        app::update(&mut app, Msg::Action(app::Action::Bottom));
        assert!(app.needs_tick(rows), "now it is on screen, in tenths");
        assert_eq!(tick_interval(&app, rows, fast), Some(fast));
    }

    #[test]
    fn frames_are_paced_and_a_change_too_soon_waits_for_the_next() {
        let mut p = Pacer::new(Duration::from_millis(33));
        let t0 = tokio::time::Instant::now();
        let mut wake = None;
        assert!(
            p.draw_now(t0, &mut wake),
            "the first change is drawn at once"
        );
        let soon = t0 + Duration::from_millis(10);
        assert!(!p.draw_now(soon, &mut wake), "too soon");
        assert_eq!(
            wake,
            Some(t0 + Duration::from_millis(33)),
            "woken for the next frame"
        );
        let mut later_wake = Some(t0 + Duration::from_secs(1));
        assert!(!p.draw_now(soon, &mut later_wake));
        assert_eq!(
            later_wake,
            Some(t0 + Duration::from_millis(33)),
            "brought forward"
        );
        assert!(p.draw_now(t0 + Duration::from_millis(40), &mut wake));
    }
}
