//! The etcd steps of a plan, the words the confirmation shows for each, and what is read
//! back after: what `admin::walk` executes, one to one.

use crate::admin::{Compare, Key, StoreStep, compares_in_lines};

/// One etcd operation of a plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum EtcdStep {
    /// Grant a lease to hold deposed keys: a third of the longest TTL of `leases` (re-read
    /// when executing) plus slack. `seen_ttls` are the granted TTLs as seen, for the text.
    GrantHold {
        leases: Vec<i64>,
        seen_ttls: Option<Vec<i64>>,
    },
    /// All compares hold, or nothing is written and the action reports a change.
    Txn {
        compares: Vec<Compare>,
        then: Vec<Op>,
    },
    /// End these sessions; `owners` for the text.
    Revoke {
        leases: Vec<i64>,
        owners: Vec<String>,
    },
}

/// An operation of a txn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    Delete(Key),
    /// Put `value` with `lease`.
    Put {
        key: Key,
        value: Vec<u8>,
        shown: String,
        lease: i64,
    },
    /// Re-put the key with its own value on the hold lease: same create_revision, so it keeps
    /// its place in line, but detached from the lease about to be revoked.
    Hold(Key),
}

/// What an etcd plan reads back after it wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Readback {
    /// Who leads the etcd-election that this key is in.
    Line(Key),
    /// What this key holds.
    Key(Key),
}

/// Added to a third of the longest deposed TTL: Go's keep-alive loop ticks every 500 ms, the
/// keep-alive takes a round trip, and the client must still act on the answer; measured, the
/// deposed were told too long after a third of their TTL for 1 s to be enough
/// (docs/PERFORMANCE.md).
pub(super) const HOLD_SLACK_SECS: i64 = 2;

/// How long the deposed keys are held: past the keep-alive interval of the longest lease.
pub(crate) fn hold_secs(granted_ttls: &[i64]) -> i64 {
    let longest = granted_ttls.iter().copied().max().unwrap_or(0);
    (longest + 2) / 3 + HOLD_SLACK_SECS
}

impl StoreStep for EtcdStep {
    fn line(&self) -> String {
        match self {
            EtcdStep::GrantHold { leases, seen_ttls } => grant_hold(leases, seen_ttls.as_deref()),
            EtcdStep::Txn { compares, then } => {
                let checks: Vec<String> = compares.iter().map(Compare::to_string).collect();
                let ops: Vec<String> = then.iter().map(op).collect();
                format!("txn: if {} then {}", checks.join(" and "), ops.join(", "))
            }
            EtcdStep::Revoke { leases, owners } => format!(
                "revoke lease {} (ends the session of {})",
                hex_list(leases),
                owners.join(", ")
            ),
        }
    }

    /// A txn's compares one to a line under `if`, its operations under `then`.
    fn lines(&self) -> Vec<String> {
        let EtcdStep::Txn { compares, then } = self else {
            return vec![self.line()];
        };
        let mut lines = vec!["txn: if".to_string()];
        lines.extend(compares_in_lines(compares.iter().map(Compare::to_string)));
        lines.push("then".to_string());
        lines.extend(then.iter().map(|o| format!("  {}", op(o))));
        lines
    }
}

pub(crate) fn hex_list(leases: &[i64]) -> String {
    let all: Vec<String> = leases.iter().map(|l| format!("{l:x}")).collect();
    all.join(", ")
}

fn grant_hold(leases: &[i64], seen_ttls: Option<&[i64]>) -> String {
    let how_long = match seen_ttls {
        Some(ttls) if !ttls.is_empty() => format!(
            "{} s: a third of the longest TTL, {} s, + 2 s",
            hold_secs(ttls),
            ttls.iter().max().copied().unwrap_or(0)
        ),
        _ => "a third of the longest TTL + 2 s".to_string(),
    };
    if leases.is_empty() {
        format!("grant a hold lease ({how_long})")
    } else {
        format!(
            "grant a hold lease ({how_long}; the TTLs of lease {} are read again first)",
            hex_list(leases)
        )
    }
}

fn op(o: &Op) -> String {
    match o {
        Op::Delete(k) => format!("delete {}", k.shown),
        Op::Put {
            key, shown, lease, ..
        } => format!("put {} = {shown} with lease {lease:x}", key.shown),
        Op::Hold(k) => format!(
            "put {} on the hold lease (same value, same place in line)",
            k.shown
        ),
    }
}
