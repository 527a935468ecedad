//! The plan in words: what the confirmation (dashboard and CLI) lists under "will write".

use super::{Check, Compare, DEADLINE, Key, Op, Plan, Statement, Step};

impl Plan {
    /// One line per store operation, as it will be sent, then what the store does after.
    pub fn writes(&self) -> Vec<String> {
        let mut lines: Vec<String> = self.steps.iter().map(step).collect();
        lines.extend(self.then.as_ref().map(|t| format!("then {t}")));
        lines
    }

    /// The same operations for the details view, each as lines: a transaction's compares one
    /// to a line under `if`, its operations under `then`, so what every write is compared
    /// on reads down the page.
    pub fn writes_in_lines(&self) -> Vec<Vec<String>> {
        let mut out: Vec<Vec<String>> = self
            .steps
            .iter()
            .map(|s| match s {
                Step::Txn { compares, then } => {
                    let mut lines = vec!["txn: if".to_string()];
                    lines.extend(compares.iter().enumerate().map(|(i, c)| {
                        format!("{}{}", if i == 0 { "  " } else { "  and " }, compare(c))
                    }));
                    lines.push("then".to_string());
                    lines.extend(then.iter().map(|o| format!("  {}", op(o))));
                    lines
                }
                Step::ZkMulti {
                    compares,
                    delete,
                    keep,
                } => {
                    let mut lines = vec!["read, then one multi: if".to_string()];
                    lines.extend(compares.iter().enumerate().map(|(i, c)| {
                        format!("{}{}", if i == 0 { "  " } else { "  and " }, zk_compare(c))
                    }));
                    lines.push("then, at the data versions read".to_string());
                    lines.extend(zk_ops(delete, keep).into_iter().map(|o| format!("  {o}")));
                    lines
                }
                other => vec![step(other)],
            })
            .collect();
        out.extend(self.then.as_ref().map(|t| vec![format!("then {t}")]));
        out
    }
}

fn hex_list(leases: &[i64]) -> String {
    let all: Vec<String> = leases.iter().map(|l| format!("{l:x}")).collect();
    all.join(", ")
}

fn step(s: &Step) -> String {
    match s {
        Step::GrantHold { leases, seen_ttls } => {
            let how_long = match seen_ttls {
                Some(ttls) if !ttls.is_empty() => format!(
                    "{} s: a third of the longest TTL, {} s, + 2 s",
                    super::hold_secs(ttls),
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
        Step::Txn { compares, then } => {
            let checks: Vec<String> = compares.iter().map(compare).collect();
            let ops: Vec<String> = then.iter().map(op).collect();
            format!("txn: if {} then {}", checks.join(" and "), ops.join(", "))
        }
        Step::Revoke { leases, owners } => format!(
            "revoke lease {} (ends the session of {})",
            hex_list(leases),
            owners.join(", ")
        ),
        Step::Statement(st) => statement(st),
        Step::RedisDelIfValue { key, shown, .. } => format!(
            "one Lua script (atomic): if GET {k} == {shown} then DEL {k}, else nothing",
            k = key.shown
        ),
        Step::EndSession(s) => end_session(s),
        Step::ZkMulti {
            compares,
            delete,
            keep,
        } => {
            let checks: Vec<String> = compares.iter().map(zk_compare).collect();
            format!(
                "read, then one multi: if {} then, at the data versions read, {}",
                checks.join(" and "),
                zk_ops(delete, keep).join(", ")
            )
        }
    }
}

/// A compare of a ZooKeeper node, in ZooKeeper's words (zxids in hex, as its tools print
/// them).
fn zk_compare(c: &Compare) -> String {
    let k = &c.key.shown;
    match &c.check {
        Check::CreateRevision(z) => format!("czxid({k}) == 0x{z:x}"),
        Check::ModRevision(z) => format!("mzxid({k}) == 0x{z:x}"),
        other => compare(&Compare {
            key: c.key.clone(),
            check: other.clone(),
        }),
    }
}

/// A multi's operations: each delete (and check) at the data version the read found.
fn zk_ops(delete: &[Key], keep: &[Key]) -> Vec<String> {
    let deletes = delete.iter().map(|k| format!("delete {}", k.shown));
    let checks = keep
        .iter()
        .map(|k| format!("check {} is still there", k.shown));
    deletes.chain(checks).collect()
}

fn compare(c: &Compare) -> String {
    let k = &c.key.shown;
    match &c.check {
        Check::CreateRevision(r) => format!("create_revision({k}) == {r}"),
        Check::ModRevision(r) => format!("mod_revision({k}) == {r}"),
        Check::Value(_, shown) => format!("value({k}) == {shown}"),
        Check::Lease(l) => format!("lease({k}) == {l:x}"),
        Check::Absent => format!("{k} is absent"),
    }
}

/// Ending a session, compared on its id and its start in the same statement.
fn end_session(s: &super::EndSession) -> String {
    let how = match s.dialect {
        super::Dialect::Postgres => format!(
            "pg_terminate_backend({id}) in one statement only if pid {id} is still the \
             session whose backend_start is {started}",
            id = s.id,
            started = s.started
        ),
        // MySQL keeps no connection start: `started` is the lock it holds or waits for.
        _ => format!(
            "KILL CONNECTION {id} in one statement only if connection {id} still holds or \
             waits for {started}",
            id = s.id,
            started = s.started
        ),
    };
    format!("end the session of {} ({}): {how}", s.who, s.role)
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

/// The statement with its deadline in words (its SQL depends on the column's declared type,
/// read when executing) and its binds in place.
fn statement(st: &Statement) -> String {
    let sql = st.sql_with(|ms, _| match ms {
        0 => "⟨the database's now⟩".to_string(),
        ms if ms < 0 => format!("⟨the database's now - {} ms⟩", -ms),
        ms => format!("⟨the database's now + {ms} ms⟩"),
    });
    debug_assert!(!sql.contains(DEADLINE));
    let binds: Vec<String> = st
        .binds
        .iter()
        .enumerate()
        .map(|(i, b)| format!("#{} = '{b}'", i + 1))
        .collect();
    format!(
        "{sql}  [{}]; {} row means done, none that the row changed",
        binds.join(", "),
        st.expect_rows
    )
}
