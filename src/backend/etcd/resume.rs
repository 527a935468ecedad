//! Where a (re)opened watch resumes, per watched prefix. The connection's life cycle is
//! the engine's (`backend::engine::lifecycle`), as for every store.

/// Per watched prefix, the revision a (re)opened watch starts from. Built only together
/// with the tracker, after a snapshot was read, so a watch never opens without one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Resume(Vec<i64>);

impl Resume {
    pub(crate) fn new(prefixes: usize, from: i64) -> Resume {
        Resume(vec![from; prefixes])
    }

    pub(crate) fn get(&self, i: usize) -> i64 {
        self.0.get(i).copied().unwrap_or(1)
    }

    /// A change up to `revision` of prefix `i` is in the state: resume after it.
    pub(crate) fn applied(&mut self, i: usize, revision: i64) {
        if let Some(r) = self.0.get_mut(i) {
            *r = (*r).max(revision + 1);
        }
    }

    /// Everything up to `revision` is in the state, whichever prefix it came from.
    #[cfg(test)]
    pub(crate) fn all_applied(&mut self, revision: i64) {
        for r in self.0.iter_mut() {
            *r = (*r).max(revision + 1);
        }
    }

    /// Start over from `revision` (after a compaction).
    pub(crate) fn reset(&mut self, revision: i64) {
        for r in self.0.iter_mut() {
            *r = revision;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resume_never_goes_back_and_never_panics() {
        let mut r = Resume::new(2, 1);
        r.applied(0, 10);
        r.applied(0, 5);
        assert_eq!(r.get(0), 11);
        assert_eq!(r.get(1), 1);
        assert_eq!(r.get(7), 1, "an unknown prefix starts at the beginning");
        r.applied(9, 3);
        r.all_applied(20);
        assert_eq!((r.get(0), r.get(1)), (21, 21));
        r.reset(4);
        assert_eq!(r.get(1), 4);
    }
}
