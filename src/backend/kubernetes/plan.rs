//! The plans of admin actions on a Lease: one read and one compare-and-swap write on the
//! resourceVersion read, as client-go's own writes are. What client-go candidates do after
//! each was measured (docs/stores/kubernetes.md): a forced holder leads at its next retry,
//! and the holder written over goes on believing it leads until its renew deadline passes;
//! after a release whoever retries first takes the Lease, the old holder too.

use crate::admin::{ActionKind, AdminRequest, Gist, Key, Plan, StoreStep, step};
use crate::model::Scheme;

/// What a plan writes over the Lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Write {
    /// `holderIdentity` the chosen one, acquired and renewed now, one more transition.
    Holder(String),
    /// No holder and a 1 s duration, as client-go's `ReleaseOnCancel` writes.
    Release,
}

/// Read the Lease, and if its holder is still the one seen, write it on the
/// resourceVersion read (the server refuses it with 409 if anything wrote in between).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct ReplaceLease {
    pub key: Key,
    /// The holder seen (`None`: none, or its countdown ran out).
    pub seen: Option<String>,
    pub write: Write,
}

impl StoreStep for ReplaceLease {
    fn line(&self) -> String {
        let holder = match &self.seen {
            Some(h) => format!("holderIdentity is still {h}"),
            None => "it still has no live holder".to_string(),
        };
        let write = match &self.write {
            Write::Holder(h) => format!(
                "holderIdentity={h}, acquireTime=renewTime=now, leaseTransitions+1"
            ),
            Write::Release => {
                "holderIdentity=\"\", leaseDurationSeconds=1, acquireTime=renewTime=now (client-go's release)"
                    .to_string()
            }
        };
        format!(
            "GET lease {k}; if {holder}: PUT {write}, on the resourceVersion read (409 if \
             written meanwhile)",
            k = self.key.shown
        )
    }
}

/// What a plan reads back after it wrote: the Lease's holder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct LeaseKey(pub Key);

pub(super) fn plan(req: &AdminRequest) -> Result<Plan, String> {
    let e = &req.seen;
    if e.scheme != Scheme::KubeLease {
        return Err(format!("{} is not a scheme of this source", e.scheme));
    }
    let key = Key {
        raw: e.name.as_bytes().to_vec(),
        shown: e.name.clone(),
    };
    // The holder as the Lease names it: the leader, or one whose lease ran out unrenewed.
    let holder = e.leader.as_ref().or(e.expired.as_deref());
    let seen = holder.map(|l| String::from_utf8_lossy(&l.raw_id).into_owned());
    let old = holder.map_or("nobody", |l| l.id.as_str());
    let (write, gist, notes) = match &req.kind {
        ActionKind::Resign => {
            return Err(format!(
                "there is no resign on a Lease: client-go reads no request to step down, and \
                 only {old}'s own process releases it; reelect writes the release client-go \
                 writes (or stop {old}'s process)"
            ));
        }
        ActionKind::ForceLeader { target } => (
            Write::Holder(target.clone()),
            Gist {
                next: format!(
                    "{target} holds the Lease at once; a client-go candidate of that identity \
                     leads at its next retry (and must run, to renew it)."
                ),
                gap: "No gap in the Lease.".into(),
                deposed: seen.as_ref().map(|h| {
                    format!(
                        "{h} may act as leader until its renew deadline passes (at most the \
                         Lease's duration)."
                    )
                }),
            },
            vec![format!(
                "client-go candidates learn of it only at their next retry; {old} is not told."
            )],
        ),
        ActionKind::Reelect if seen.is_none() => {
            return Err(format!("{} has no holder to release", e.name));
        }
        ActionKind::Reelect => (
            Write::Release,
            Gist {
                next: "Whoever retries first takes the Lease (client-go keeps no line), the \
                       old holder too."
                    .into(),
                gap: "No leader until a candidate's next retry (2 s by client-go's default)."
                    .into(),
                deposed: seen.as_ref().map(|h| {
                    format!("{h} may take it back at its next renewal without ever stopping.")
                }),
            },
            vec![format!(
                "To be sure the lead moves, stop {old}'s process instead (client-go releases \
                 on SIGTERM when it was built with ReleaseOnCancel)."
            )],
        ),
    };
    Ok(Plan {
        summary: String::new(),
        gist,
        steps: vec![step(ReplaceLease {
            key: key.clone(),
            seen,
            write,
        })],
        then: None,
        notes,
        reelect_instead: false,
        readback: std::sync::Arc::new(LeaseKey(key)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Candidate, Election};

    fn req(kind: ActionKind, holder: Option<&str>) -> AdminRequest {
        let mut e = Election::new(0, "kube-system/sched".into(), Scheme::KubeLease);
        e.leader = holder.map(|h| Candidate::plain(h, "kube-system/sched"));
        AdminRequest {
            source: 0,
            source_name: "kube1".into(),
            kind,
            seen: e,
            target: super::super::LeaseSource.into(),
        }
    }

    #[test]
    fn force_writes_the_holder_and_reelect_the_release_each_on_the_version_read() {
        let force = ActionKind::ForceLeader { target: "b".into() };
        let p = plan(&req(force, Some("a"))).expect("a plan");
        let w = p.writes();
        assert!(
            w[0].contains("if holderIdentity is still a: PUT holderIdentity=b"),
            "{w:?}"
        );
        assert!(
            p.gist
                .deposed
                .as_deref()
                .is_some_and(|d| d.contains("renew deadline"))
        );
        let r = plan(&req(ActionKind::Reelect, Some("a"))).expect("a plan");
        assert!(
            r.writes()[0].contains("leaseDurationSeconds=1"),
            "{:?}",
            r.writes()
        );
        let e = plan(&req(ActionKind::Resign, Some("a"))).expect_err("no resign");
        assert!(e.contains("no resign on a Lease"), "{e}");
        // A holder whose lease ran out is still the one the Lease names: compared as it.
        let mut expired = req(ActionKind::Reelect, None);
        expired.seen.expired = Some(Box::new(Candidate::plain("a", "kube-system/sched")));
        let p = plan(&expired).expect("a plan");
        assert!(
            p.writes()[0].contains("if holderIdentity is still a"),
            "{:?}",
            p.writes()
        );
    }
}
