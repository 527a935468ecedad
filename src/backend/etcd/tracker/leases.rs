//! Lease TTLs: which to read (what is visible), the readings kept and counted down, and
//! their deadlines attached to the candidates.

use std::collections::BTreeSet;
use std::time::Instant;

use super::*;

impl Tracker {
    /// Leases of the given elections' leaders, plus the first `line` candidates of
    /// `selected`: what the screen shows, so lease reads do not grow with the election count.
    pub fn visible_leases(
        &self,
        names: &[String],
        selected: Option<&str>,
        line: usize,
    ) -> Vec<i64> {
        let mut set = BTreeSet::new();
        // Looked up by name: every tick asks, and walking every election each time was most
        // of an idle dashboard's CPU over many elections (docs/PERFORMANCE.md).
        for e in names.iter().flat_map(|n| self.named(n)) {
            set.extend(
                e.leader
                    .iter()
                    .chain(e.deposed.as_deref())
                    .chain(e.resigned.as_deref())
                    .chain(e.held.as_deref())
                    .filter_map(|l| l.lease),
            );
        }
        for e in selected.into_iter().flat_map(|n| self.named(n)) {
            set.extend(e.candidates.iter().take(line).filter_map(|c| c.lease));
        }
        set.remove(&0);
        set.into_iter().collect()
    }

    /// The elections shown as `name`.
    pub(super) fn named<'a>(&'a self, name: &str) -> impl Iterator<Item = &'a Election> + 'a {
        self.by_name
            .get(name)
            .into_iter()
            .flatten()
            .filter_map(|id| self.elections.get(id))
    }

    /// Every lease in every election.
    pub fn all_leases(&self) -> Vec<i64> {
        self.by_lease.keys().copied().filter(|l| *l != 0).collect()
    }

    /// Whether `lease` is a deposed leader's (read eagerly until it ends).
    pub fn is_deposed_lease(&self, lease: i64) -> bool {
        self.deposed.contains(&lease)
    }

    /// See `lease_epoch`: the same number, nothing but the clock can have made a lease due.
    pub fn lease_epoch(&self) -> u64 {
        self.lease_epoch
    }

    /// Some deposed leader's lease is read eagerly (every few hundred ms).
    pub fn any_deposed(&self) -> bool {
        !self.deposed.is_empty()
    }

    /// The first instant a lease read so far counts down to within `closing_ms` of its end
    /// (and is at least `min_age_ms` old): none when none was read.
    pub fn next_closing(&self, closing_ms: i64, min_age_ms: i64) -> Option<Instant> {
        self.ttls
            .values()
            .map(|d| {
                let wait = (d.remaining_ms - closing_ms).max(min_age_ms).max(0);
                d.read_at + std::time::Duration::from_millis(wait as u64)
            })
            .min()
    }

    /// When `lease` was last read, if ever.
    pub fn ttl(&self, lease: i64) -> Option<Deadline> {
        self.ttls.get(&lease).copied()
    }

    /// Records a TTL reading (`None`: the lease no longer exists). Returns the elections
    /// whose countdowns changed.
    pub fn set_ttl(
        &mut self,
        lease: i64,
        reading: Option<(i64, i64)>,
        now: Instant,
    ) -> Vec<Election> {
        self.set_ttls([(lease, reading, now)])
    }

    /// Records a batch of TTL readings. Returns each election whose countdowns changed once,
    /// however many of its leases were read: a batch of every lease (`status`) clones each
    /// election once rather than once per lease it holds.
    pub fn set_ttls(
        &mut self,
        readings: impl IntoIterator<Item = (i64, Option<(i64, i64)>, Instant)>,
    ) -> Vec<Election> {
        let mut touched: std::collections::HashSet<Vec<u8>> = std::collections::HashSet::new();
        for (lease, reading, now) in readings {
            if self.record_ttl(lease, reading, now) {
                touched.extend(self.by_lease.get(&lease).into_iter().flatten().cloned());
            }
        }
        touched
            .iter()
            .filter_map(|id| {
                let e = self.elections.get_mut(id)?;
                attach_ttls(e, &self.ttls);
                Some(e.clone())
            })
            .collect()
    }

    /// Records a batch of TTL readings without returning the elections (their countdowns
    /// are attached; the caller sends the whole state afterwards).
    pub fn set_ttls_quietly(
        &mut self,
        readings: impl IntoIterator<Item = (i64, Option<(i64, i64)>, Instant)>,
    ) {
        for (lease, reading, now) in readings {
            self.record_ttl(lease, reading, now);
        }
        self.attach_ttls_all();
    }

    /// Records one reading; true when the elections on the lease need their countdowns
    /// attached again (and sent).
    pub(super) fn record_ttl(
        &mut self,
        lease: i64,
        reading: Option<(i64, i64)>,
        now: Instant,
    ) -> bool {
        self.lease_epoch += 1;
        match reading {
            Some((ttl, granted)) if ttl >= 0 => {
                let prev = self.ttls.get(&lease).copied();
                let d = Deadline::from_seconds(ttl, granted, now, prev);
                self.ttls.insert(lease, d);
                // The running countdown agreed with the reading: every copy of it counts down
                // the same, so there is nothing to send. A lease shared by 10,000 elections and
                // read every second on screen would otherwise resend all of them each time.
                let same = prev.is_some_and(|p| {
                    p.granted_ms == d.granted_ms && p.remaining_ms_at(now) == d.remaining_ms
                });
                if same {
                    return false;
                }
            }
            _ => {
                // Gone: its keys disappear with the next watch event; show 0 until then.
                if let Some(d) = self.ttls.get_mut(&lease) {
                    d.remaining_ms = 0;
                    d.read_at = now;
                }
                // A deposed leader whose lease ended can no longer believe it leads.
                let ids: Vec<Vec<u8>> = self
                    .by_lease
                    .get(&lease)
                    .into_iter()
                    .flatten()
                    .cloned()
                    .collect();
                for id in ids {
                    let Some(e) = self.elections.get_mut(&id) else {
                        continue;
                    };
                    if e.deposed.as_ref().is_some_and(|d| d.lease == Some(lease)) {
                        e.deposed = None;
                    }
                    if e.resigned.as_ref().is_some_and(|d| d.lease == Some(lease)) {
                        e.resigned = None;
                    }
                }
                self.deposed.remove(&lease);
            }
        }
        true
    }

    pub(super) fn attach_ttls_all(&mut self) {
        for e in self.elections.values_mut() {
            attach_ttls(e, &self.ttls);
        }
    }
}
