//! The plans of the etcd schemes' admin actions: transactions compared on the revisions and
//! leases seen (`election-models.md` says what each action does per scheme).

mod election;
mod lease_key;
mod patroni;
mod step;

pub(super) use step::{EtcdStep, Op, Readback, hex_list, hold_secs};

use crate::admin::{AdminRequest, Plan};
use crate::model::Scheme;

/// The plan of `req` on an etcd source with `prefix`.
pub(super) fn plan(req: &AdminRequest, prefix: &str) -> Result<Plan, String> {
    let e = &req.seen;
    match e.scheme {
        Scheme::EtcdElection => election::plan(e, &req.kind),
        Scheme::EtcdLeaseKey => lease_key::plan(e, &req.kind, prefix),
        Scheme::Patroni => patroni::plan(e, &req.kind),
        scheme => Err(format!("{scheme} is not a scheme of this source")),
    }
}
