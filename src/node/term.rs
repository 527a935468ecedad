//! How long a participant may believe it leads, whatever the scheme: the store starts
//! counting a term (lease TTL, `valid_until`, heartbeat timeout) when it *executes* the
//! request, which is after we sent it, so a term counted from the moment we sent the request
//! ends no later than the store's. Counted from when the answer came back, a slow answer
//! would stretch our belief past the store's term by the answer's delay.

use std::time::{Duration, Instant};

/// How far our clock may run slow against the store's, as a fraction of the term: a term of
/// T on the store's clock may be as short as T * (1 - RATE) on ours.
const CLOCK_RATE: f64 = 0.02;
/// Timer and scheduling latency: we notice the end of our term a little after it.
const LATENCY: Duration = Duration::from_millis(10);

/// What we take off a granted term before believing in it.
pub(crate) fn safety_margin(granted: Duration) -> Duration {
    granted.mul_f64(CLOCK_RATE) + LATENCY
}

/// The instant (on our clock) until which we may believe we hold a term of `granted` that
/// the store gave in answer to a request we sent at `sent`. `None` when the margin eats the
/// whole term: nothing can be believed.
pub(crate) fn lead_until(sent: Instant, granted: Duration) -> Option<Instant> {
    let safe = granted.checked_sub(safety_margin(granted))?;
    (!safe.is_zero()).then(|| sent + safe)
}

/// The store's answer in milliseconds (a remaining TTL or term), as a granted term: none
/// when the store says it is already over.
pub(crate) fn granted_ms(ms: i64) -> Option<Duration> {
    u64::try_from(ms)
        .ok()
        .filter(|ms| *ms > 0)
        .map(Duration::from_millis)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_from_the_send_and_takes_a_margin() {
        let sent = Instant::now();
        let until = lead_until(sent, Duration::from_secs(10)).expect("a term");
        // 10 s - 2 % - 10 ms.
        assert_eq!(until - sent, Duration::from_millis(9_790));
    }

    #[test]
    fn an_answer_slower_than_the_term_is_already_over() {
        // A 2 s term whose answer took 3 s: by the time it is read, it has ended.
        let sent = Instant::now();
        let until = lead_until(sent, Duration::from_secs(2)).expect("a term");
        assert!(until < sent + Duration::from_secs(3));
        assert!(
            until < sent + Duration::from_secs(2),
            "the margin is taken off"
        );
    }

    #[test]
    fn the_margin_grows_with_the_term() {
        assert_eq!(
            safety_margin(Duration::from_secs(20)),
            Duration::from_millis(410)
        );
        assert_eq!(safety_margin(Duration::ZERO), Duration::from_millis(10));
    }

    #[test]
    fn a_term_shorter_than_the_margin_is_no_term() {
        let sent = Instant::now();
        assert_eq!(lead_until(sent, Duration::from_millis(5)), None);
        assert_eq!(lead_until(sent, Duration::from_millis(10)), None);
        assert!(lead_until(sent, Duration::from_millis(20)).is_some());
    }

    #[test]
    fn store_answers_in_ms_become_terms() {
        assert_eq!(granted_ms(1_500), Some(Duration::from_millis(1_500)));
        assert_eq!(granted_ms(0), None);
        assert_eq!(granted_ms(-3), None);
    }
}
