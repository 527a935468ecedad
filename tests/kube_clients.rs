//! What client-go's own leader-election candidates do on a real kube-apiserver when a Lease
//! is written over them, the facts electop's Kubernetes admin verbs and deposed rule rest on
//! (docs/stores/kubernetes.md): the writes force-leader and re-election would make, the
//! compare-and-swap they rely on, and what each candidate believes after.

mod common;

use std::time::{Duration, Instant};

use common::kube::{ClientGoCandidate, KubeServer, micro_time_now};
use serde_json::Value;

/// The example candidate's timing (client-go's examples/leader-election/main.go).
const RETRY: Duration = Duration::from_secs(5);
const RENEW_DEADLINE: Duration = Duration::from_secs(15);
/// Room for a loaded machine's scheduling, on top of the client's own jitter (1.2 x retry).
const SLACK: Duration = Duration::from_secs(4);

fn spec(lease: &Value) -> &Value {
    &lease["spec"]
}

/// Two candidates: the first leads, the second waits, as client-go tells it.
fn two(server: &KubeServer, dir: &std::path::Path, name: &str) -> [ClientGoCandidate; 2] {
    let cfg = server.kubeconfig(dir);
    let a = ClientGoCandidate::start(&cfg, "default", name, "cand-a");
    a.wait_leading(common::T);
    let b = ClientGoCandidate::start(&cfg, "default", name, "cand-b");
    b.wait_log("new leader elected: cand-a", common::T);
    [a, b]
}

/// Force-leader as electop would write it (the chosen holder, renew and acquire times now,
/// leaseTransitions + 1, the resourceVersion read as the compare): the server refuses the
/// same write on a stale resourceVersion (409); the chosen candidate leads at its next
/// retry, and the deposed leader goes on believing it leads until its renew deadline runs
/// out, well after: two believed leaders meanwhile, so electop must show it deposed.
#[test]
fn a_forced_holder_leads_at_its_next_retry_and_the_deposed_until_its_renew_deadline() {
    let server = KubeServer::start();
    let dir = common::scratch::tempdir();
    let [mut a, b] = two(&server, dir.path(), "forced");
    let mut lease = server.lease("default", "forced").expect("the Lease");
    assert_eq!(
        (
            &spec(&lease)["holderIdentity"],
            &spec(&lease)["leaseTransitions"]
        ),
        (&"cand-a".into(), &0.into()),
        "{lease:#}"
    );
    let stale = lease.clone();
    let now = micro_time_now();
    let s = &mut lease["spec"];
    s["holderIdentity"] = "cand-b".into();
    s["acquireTime"] = now.clone().into();
    s["renewTime"] = now.into();
    s["leaseTransitions"] = 1.into();
    let (code, body) = server.put_lease(&lease);
    let written = Instant::now();
    assert_eq!(code, 200, "{body}");
    let (code, body) = server.put_lease(&stale);
    assert_eq!(code, 409, "a stale resourceVersion is refused: {body}");
    let led = b.wait_leading(RETRY * 2 + SLACK);
    let lost = a.wait_log("leader lost: cand-a", RENEW_DEADLINE + RETRY + SLACK);
    let (led, lost) = (led - written, lost - written);
    println!("after the write: cand-b leads in {led:?}, cand-a stops leading in {lost:?}");
    assert!(
        led <= RETRY * 2 + SLACK,
        "cand-b leads at its next retry: {led:?}"
    );
    assert!(
        lost > led && lost >= RENEW_DEADLINE - RETRY * 2,
        "cand-a believed it led past cand-b's start, until its renew deadline: {lost:?}"
    );
    let deadline = Instant::now() + common::T;
    while a.is_running() {
        assert!(
            Instant::now() < deadline,
            "the example exits when it loses the lead"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let after = server.lease("default", "forced").expect("the Lease");
    assert_eq!(spec(&after)["holderIdentity"], "cand-b", "{after:#}");
    assert_eq!(
        spec(&after)["leaseTransitions"],
        1,
        "its renewals keep the count: {after:#}"
    );
}

/// A release as client-go writes one on SIGTERM (no holder, a 1 s duration): the lead goes
/// to whichever candidate retries first, the old leader included, which then takes it
/// back without ever stopping; each take counts a transition. So a release deposes nobody
/// for sure: electop's re-election must end the holder's process, not only its Lease.
#[test]
fn a_release_written_over_the_leader_goes_to_whoever_retries_first() {
    let server = KubeServer::start();
    let dir = common::scratch::tempdir();
    let [a, b] = two(&server, dir.path(), "released");
    let mut lease = server.lease("default", "released").expect("the Lease");
    let now = micro_time_now();
    lease["spec"] = serde_json::json!({
        "leaseDurationSeconds": 1,
        "acquireTime": now,
        "renewTime": now,
        "leaseTransitions": 0,
    });
    let (code, body) = server.put_lease(&lease);
    assert_eq!(code, 200, "{body}");
    let deadline = Instant::now() + RETRY * 2 + SLACK;
    let taken = loop {
        let l = server.lease("default", "released").expect("the Lease");
        if spec(&l)["holderIdentity"]
            .as_str()
            .is_some_and(|h| !h.is_empty())
        {
            break l;
        }
        assert!(
            Instant::now() < deadline,
            "nobody took the released Lease: {l:#}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let holder = spec(&taken)["holderIdentity"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    println!("after the release: {holder} holds it");
    assert_eq!(spec(&taken)["leaseTransitions"], 1, "one take: {taken:#}");
    assert_eq!(
        spec(&taken)["leaseDurationSeconds"],
        60,
        "the taker's duration: {taken:#}"
    );
    match holder.as_str() {
        "cand-a" => assert!(
            !a.log().contains("leader lost"),
            "it never stopped:\n{}",
            a.log()
        ),
        "cand-b" => {
            b.wait_leading(common::T);
            a.wait_log("leader lost: cand-a", RENEW_DEADLINE + RETRY + SLACK);
        }
        other => panic!("an unknown holder {other:?}"),
    }
}
