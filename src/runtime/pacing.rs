//! When the dashboard draws: frames for time alone only while something on screen moves
//! with it, and never closer together than the frame cap.

use std::time::Duration;

use crate::app::App;

/// How often the screen must be redrawn for time alone: fast while a countdown on screen
/// shows tenths, once a second while a longer one runs, ages show or a source is stale
/// (its age moves), at the instant a source would turn stale while it is current, twice a
/// second while a flash is up, never when nothing moves. A current source alone draws no
/// frames: over many elections a frame every 500 ms to look for staleness was much of an
/// idle dashboard's CPU, and staleness is due at a known instant.
/// `rows`: the table's lines on screen (the demo's table is shorter than the dashboard's).
pub(super) fn tick_interval(app: &App, rows: usize, fast: Duration) -> Option<Duration> {
    if app.needs_tick(rows) {
        return Some(fast);
    }
    let flash = app.flash.is_some().then_some(Duration::from_millis(500));
    let stale = stale_due(app, std::time::Instant::now());
    let moving = (app.countdown_on_screen(rows, i64::MAX)
        || app
            .model
            .elections
            .values()
            .any(|e| e.last_change().is_some_and(|h| h.at.is_some())))
    .then_some(Duration::from_secs(1));
    [flash, stale, moving].into_iter().flatten().min()
}

/// When a source's staleness next shows differently: a second on while one is stale (its
/// age is on screen), else the first instant one of the current ones would be stale.
fn stale_due(app: &App, now: std::time::Instant) -> Option<Duration> {
    app.model
        .sources
        .iter()
        .filter_map(|s| {
            let (at, _) = s.last_contact?;
            if s.stale_for(now).is_some() {
                return Some(Duration::from_secs(1));
            }
            // Just past the margin, so the frame drawn then finds it stale.
            let stale_at = at + s.contact_every + crate::state::STALE_MARGIN;
            Some(stale_at.saturating_duration_since(now) + Duration::from_millis(1))
        })
        .min()
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

impl Pacer {
    /// [`Pacer::draw_now`], but the first frame that shows elections (`first`) is drawn at
    /// once, whatever frames came just before it: those were the empty table of a source
    /// connecting, three in its first milliseconds, which used the burst up and held the
    /// first elections back by most of a frame's time (docs/PERFORMANCE.md).
    pub(super) fn draw_now_or_first(
        &mut self,
        now: tokio::time::Instant,
        wake: &mut Option<tokio::time::Instant>,
        first: bool,
    ) -> bool {
        if !first {
            return self.draw_now(now, wake);
        }
        // Counted as any frame: the ones after it are paced as if it had waited its turn.
        self.due = Some(self.due.map_or(now, |d| d.max(now)) + self.min_frame);
        true
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

    /// A current source draws no frame until it would turn stale; a stale one, a frame a
    /// second (its age moves). Nothing else on screen moves here.
    #[test]
    fn a_current_source_is_looked_at_again_when_it_would_turn_stale() {
        use crate::model::SourceEvent;
        let t0 = Instant::now();
        let info = crate::model::SourceInfo::test_etcd();
        let mut app = App::new(vec![info], t0, SystemTime::now());
        let fast = Duration::from_millis(100);
        assert_eq!(tick_interval(&app, 10, fast), None, "never heard from");
        app::update(
            &mut app,
            Msg::Source(SourceEvent::Contact {
                source: 0,
                at: t0,
                wall: SystemTime::now(),
                next_within: Duration::from_millis(500),
            }),
        );
        // Stale 2 s after that contact: not a frame every 500 ms meanwhile.
        let due = stale_due(&app, t0).expect("a tick");
        assert_eq!(due, Duration::from_millis(2001));
        let later = stale_due(&app, t0 + Duration::from_millis(1500)).expect("a tick");
        assert_eq!(later, Duration::from_millis(501));
        assert_eq!(
            stale_due(&app, t0 + Duration::from_millis(2500)),
            Some(Duration::from_secs(1)),
            "stale: its age moves each second"
        );
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

    #[test]
    fn the_first_elections_are_drawn_at_once_after_the_connecting_frames() {
        let ms = Duration::from_millis;
        let mut p = Pacer::new(ms(33));
        let t0 = tokio::time::Instant::now();
        // The empty table, connecting, connected: the burst used up.
        for at in [0, 1, 2] {
            assert!(p.draw_now(t0 + ms(at), &mut None));
        }
        assert!(
            !p.draw_now_or_first(t0 + ms(9), &mut None, false),
            "a change waits"
        );
        let first = p.draw_now_or_first(t0 + ms(9), &mut None, true);
        assert!(first, "the first elections do not");
        // Counted: the next waits for the four frames' time, less the burst.
        let mut wake = None;
        assert!(!p.draw_now(t0 + ms(10), &mut wake));
        assert_eq!(wake, Some(t0 + ms(4 * 33 - 2 * 33)));
        assert!(p.draw_now(t0 + ms(66), &mut None));
    }
}
