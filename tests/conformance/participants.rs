//! A participant of a cell's election: `electop node`, or a third-party client where one
//! is cheap to run (kazoo's `Election` on ZooKeeper). The scenarios drive both alike.

use std::process::ExitStatus;
use std::time::{Duration, Instant};

use crate::common::node::Node;
use crate::common::zk_campaigners::ZkParticipant;

pub enum Participant {
    Electop(Node),
    Kazoo(ZkParticipant),
}

impl Participant {
    pub fn id(&self) -> &str {
        match self {
            Participant::Electop(n) => &n.id,
            Participant::Kazoo(k) => &k.id,
        }
    }

    /// Waits until it says it leads; when that line was read.
    pub fn wait_leader(&mut self, timeout: Duration) -> Instant {
        match self {
            Participant::Electop(n) => {
                let id = n.id.clone();
                n.wait_belief_at("leader", Some(&id), timeout)
            }
            Participant::Kazoo(k) => {
                let led = k.wait_belief("leader", timeout);
                assert!(
                    led,
                    "{}: not leader within {timeout:?}: {}",
                    k.id,
                    k.stderr()
                );
                Instant::now()
            }
        }
    }

    pub fn wait_follower(&mut self, timeout: Duration) {
        match self {
            Participant::Electop(n) => {
                n.wait_belief("follower", None, timeout);
            }
            Participant::Kazoo(k) => {
                let follows = k.wait_belief("follower", timeout);
                assert!(follows, "{}: not follower within {timeout:?}", k.id);
            }
        }
    }

    /// Whether its latest belief is `belief` (leader, follower).
    pub fn believes(&mut self, belief: &str) -> bool {
        match self {
            Participant::Electop(n) => {
                n.pump();
                n.believes(belief, None).is_some()
            }
            Participant::Kazoo(k) => k.belief().as_deref() == Some(belief),
        }
    }

    /// SIGKILL: no resignation; what it holds ends with its lease, term or session.
    pub fn crash(&mut self) {
        match self {
            Participant::Electop(n) => n.sigkill(),
            Participant::Kazoo(k) => k.kill(),
        }
    }

    /// SIGTERM: it resigns and exits; its exit status.
    pub fn resign(&mut self, within: Duration) -> ExitStatus {
        match self {
            Participant::Electop(n) => n.sigterm(within).0,
            Participant::Kazoo(k) => k.terminate(within),
        }
    }

    /// Whether it said it resigned (kazoo's stop says nothing: its exit 0 says it).
    pub fn said_resigned(&self) -> bool {
        match self {
            Participant::Electop(n) => n.events().any(|e| e == "resigned"),
            Participant::Kazoo(_) => true,
        }
    }

    pub fn dump(&mut self) -> String {
        match self {
            Participant::Electop(n) => n.dump(),
            Participant::Kazoo(k) => {
                let beliefs = format!("{:?}", k.beliefs());
                format!("{}: {beliefs}\n{}", k.id, k.stderr())
            }
        }
    }

    /// The node, for what only `electop node` says (its connection).
    pub fn node(&mut self) -> Option<&mut Node> {
        match self {
            Participant::Electop(n) => Some(n),
            Participant::Kazoo(_) => None,
        }
    }
}
