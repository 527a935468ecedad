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

/// Redraws are paced: on average at most one frame per `min_frame`, however fast the
/// stores change, with changes arriving meanwhile drawn together. A change after a quiet
/// spell is drawn at once, though: up to [`BURST`] frames may come back to back (a
/// countdown's tick a moment before a failover must not hold the failover back by a whole
/// frame's time). This is the generic cell rate algorithm: `due` is when the next frame
/// would be due were frames drawn evenly.
pub(super) struct Pacer {
    min_frame: Duration,
    due: Option<tokio::time::Instant>,
}

/// Frames that may be drawn back to back after a quiet spell.
const BURST: u32 = 3;

impl Pacer {
    pub(super) fn new(min_frame: Duration) -> Pacer {
        Pacer {
            min_frame,
            due: None,
        }
    }

    /// Something changed: whether to draw now. If not, `wake` is brought forward to when
    /// the next frame may be drawn.
    pub(super) fn draw_now(
        &mut self,
        now: tokio::time::Instant,
        wake: &mut Option<tokio::time::Instant>,
    ) -> bool {
        let slack = self.min_frame * (BURST - 1);
        match self.due {
            Some(due) if now + slack < due => {
                let at = due - slack;
                *wake = Some(wake.map_or(at, |w| w.min(at)));
                false
            }
            _ => {
                self.due = Some(self.due.map_or(now, |d| d.max(now)) + self.min_frame);
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
        let ms = Duration::from_millis;
        let mut p = Pacer::new(ms(33));
        let t0 = tokio::time::Instant::now();
        let mut wake = None;
        // After a quiet spell, three changes in a row are each drawn at once.
        for at in [0, 5, 10] {
            assert!(
                p.draw_now(t0 + ms(at), &mut wake),
                "drawn at once at {at} ms"
            );
        }
        assert_eq!(wake, None);
        // The fourth waits: three frames in 10 ms used the spell up.
        let soon = t0 + ms(15);
        assert!(!p.draw_now(soon, &mut wake), "too soon");
        assert_eq!(wake, Some(t0 + ms(33)), "woken for the next frame");
        let mut later_wake = Some(t0 + Duration::from_secs(1));
        assert!(!p.draw_now(soon, &mut later_wake));
        assert_eq!(later_wake, Some(t0 + ms(33)), "brought forward");
        assert!(p.draw_now(t0 + ms(33), &mut wake));
        // Under constant change, frames come one per 33 ms at most.
        let mut drawn = 0;
        for at in (34..1034).step_by(1) {
            drawn += u32::from(p.draw_now(t0 + ms(at), &mut None));
        }
        assert!((29..=31).contains(&drawn), "{drawn} frames in a second");
        // A quiet spell (a tick's frame, then nothing for 100 ms) refills the burst.
        let quiet = t0 + ms(1200);
        assert!(p.draw_now(quiet, &mut None), "the tick's frame");
        assert!(
            p.draw_now(quiet + ms(2), &mut None),
            "the change right after it"
        );
    }
}
