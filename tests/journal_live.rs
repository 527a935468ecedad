//! The history's writes on the real binary: batched (a churn of leader changes is a few
//! transactions, not one a change), nothing told more than 100 ms before a SIGKILL lost, and
//! an earlier release's journal file imported, what in it is no record said on stderr,
//! never a failure, its records kept and the file left as it is.

mod common;

use std::path::Path;
use std::process::Stdio;

use common::T;
use common::electop::{JOURNAL_GRACE, Watch, command, election};
use common::etcd::EtcdServer;
use common::sqlstore::Store;
use serde_json::Value;

/// The records of the journals whose keys start with `prefix`: (journal, kind, line).
fn journals(home: &Path, prefix: &str) -> Vec<(String, String, String)> {
    common::electop::history_records(home, prefix)
}

fn sqlite_args(url: &str) -> Vec<String> {
    [
        "--sql",
        url,
        "--scheme",
        "sql-lease",
        "--table",
        "leaderlock",
        "--poll",
        "100ms",
    ]
    .map(str::to_string)
    .to_vec()
}

/// `electop history --json` over the last hour: its document, and what it said on stderr.
fn history(home: &Path, args: &[String]) -> (Value, String) {
    let out = command(home)
        .args(args)
        .args(["history", "--json"])
        .output()
        .expect("run electop history");
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "history: {}\n{stderr}", out.status);
    (serde_json::from_slice(&out.stdout).expect("JSON"), stderr)
}

/// Who led `name` before its oldest change known, then each tenure's holder and the cause
/// of the change that began it: what the journal told `history`.
fn tenures(doc: &Value, name: &str) -> (Value, Vec<(String, String)>) {
    let e = doc["elections"]
        .as_array()
        .expect("elections")
        .iter()
        .find(|e| e["name"] == name)
        .unwrap_or_else(|| panic!("no {name}: {doc:#}"));
    let t = e["segments"]
        .as_array()
        .expect("segments")
        .iter()
        .filter(|s| s["kind"] == "tenure")
        .map(|s| {
            let text = |v: &Value| v.as_str().unwrap_or("-").to_string();
            (text(&s["holder"]), text(&s["cause_in"]))
        })
        .collect();
    (e["led_before"].clone(), t)
}

/// A `watch` on a SQLite lease table that has told one change, node-a to node-b: the
/// store (kept alive), the home, the source flags and the watch.
fn watched_handover() -> (Store, common::scratch::Scratch, Vec<String>, Watch) {
    let store = Store::sqlite();
    store.create_lease_table("leaderlock");
    assert!(store.lease_attempt("leaderlock", "jobs", "node-a", 600));
    let home = common::scratch::tempdir();
    let args = sqlite_args(&store.url());
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut w = Watch::start(home.path(), &argv);
    w.wait_synced(1);
    store.exec("UPDATE leaderlock SET leader_id = 'node-b' WHERE key = 'jobs'");
    w.wait_for("node-b", T, |v| {
        v["kind"] == "leader_changed" && v["to"] == "node-b"
    });
    (store, home, args, w)
}

/// A SQLite election with a `watch` recording it: node-a leads, then node-b. Returns the
/// store (kept alive), the home and the source flags; the journal holds that one change.
fn sqlite_with_a_change() -> (Store, common::scratch::Scratch, Vec<String>) {
    let (store, home, args, w) = watched_handover();
    // Dropped: killed once the change had its time to reach the journal.
    drop(w);
    (store, home, args)
}

/// A change `watch` told, then SIGKILL once the journal's 100 ms (and room for a loaded
/// machine) are up: a fresh `history` reads it back.
#[test]
fn a_change_told_before_a_kill_is_read_back_by_the_next_electop() {
    let (_store, home, args, mut w) = watched_handover();
    // The wait is what is tested: at most the last 100 ms may be lost to a kill.
    std::thread::sleep(JOURNAL_GRACE);
    w.kill();
    let (doc, _) = history(home.path(), &args);
    let told = ("node-a".into(), vec![("node-b".into(), "unknown".into())]);
    assert_eq!(tenures(&doc, "jobs"), told, "{doc:#}");
}

/// A clean stop (SIGTERM) right after a change was told writes it, without the 100 ms.
#[test]
fn a_clean_stop_writes_what_was_queued() {
    let (_store, home, _, mut w) = watched_handover();
    assert!(w.terminate().success());
    let records = journals(home.path(), "sqlite");
    let b = records
        .iter()
        .any(|(_, _, l)| l.contains(r#""to":"node-b""#));
    assert!(b, "{records:?}");
}

/// `/proc/<pid>/io`'s count of write system calls.
fn syscw(pid: u32) -> u64 {
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).expect("/proc/<pid>/io");
    io.lines()
        .find_map(|l| l.strip_prefix("syscw: "))
        .and_then(|n| n.trim().parse().ok())
        .expect("syscw")
}

/// `seen` records (etcd's revision times) in the one times journal under `home`.
fn seen_lines(home: &Path) -> usize {
    let records = journals(home, "etcd-");
    let mut keys: Vec<&str> = records.iter().map(|(j, _, _)| j.as_str()).collect();
    keys.dedup();
    assert!(
        keys.len() <= 1,
        "one journal per cluster and prefix: {keys:?}"
    );
    records.iter().filter(|(_, kind, _)| kind == "seen").count()
}

/// 500 leader changes as fast as etcd takes them (hundreds a second), `serve` watching
/// (it prints nothing a change): its times journal gets them all, in fewer write system
/// calls than changes (unbatched, each change's transaction is several writes); then a
/// SIGKILL loses none of them.
#[test]
fn a_churn_is_written_in_few_writes_and_survives_a_kill() {
    const N: usize = 500;
    let etcd = EtcdServer::start();
    etcd.etcdctl(&["put", "/churn/jobs", "node-start"]);
    let home = common::scratch::tempdir();
    let ep = etcd.endpoint();
    let args = [
        "--etcd",
        &ep,
        "--prefix",
        "/churn/",
        "--scheme",
        "etcd-lease-key",
    ];
    let addr = format!("127.0.0.1:{}", common::free_port());
    let mut serve = command(home.path())
        .args(args)
        .args(["serve", "--listen", &addr])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn electop serve");
    common::wait_until("serve sees the election", T, || {
        std::net::TcpStream::connect(&addr).is_ok()
            && common::http::request(&addr, "/api/v1/elections", &[])
                .1
                .contains("node-start")
    });
    let pid = serve.id();
    let before = syscw(pid);
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let started = std::time::Instant::now();
    rt.block_on(async {
        let mut c = etcd_client::Client::connect([ep.as_str()], None)
            .await
            .expect("connect");
        for i in 0..N {
            let put = c.put("/churn/jobs", format!("node-{i}"), None);
            put.await.expect("put");
        }
    });
    let took = started.elapsed();
    common::wait_until("every change's time in the journal", T, || {
        seen_lines(home.path()) >= N
    });
    let writes = syscw(pid) - before;
    eprintln!("{N} changes in {took:?}: {writes} write system calls by serve");
    assert!(writes < N as u64, "{writes} writes for {N} changes");
    let _ = serve.kill();
    let _ = serve.wait();
    assert_eq!(seen_lines(home.path()), N, "each change once");
    // A `status` without history has no use for the journal: it leaves it as it is.
    let sizes = || {
        let records = journals(home.path(), "etcd-");
        assert!(!records.is_empty(), "the times journal");
        records.len()
    };
    let before = sizes();
    let s = common::electop::status_json(home.path(), &args);
    let leader = &election(&s, "jobs")["leader"]["id"];
    assert_eq!(*leader, format!("node-{}", N - 1), "{s:#}");
    assert_eq!(sizes(), before, "no run lines written by a plain status");
    let s = common::electop::status_history_json(home.path(), &args);
    let h = election(&s, "jobs")["history"]
        .as_array()
        .expect("history")
        .clone();
    let newest = h.last().expect("a change");
    assert_eq!(newest["to"], format!("node-{}", N - 1), "{newest:#}");
    assert!(
        newest["at"].is_string(),
        "its time, from the journal: {newest:#}"
    );
}

/// The one SQL journal's key under `home`, its records as an earlier release's file
/// would hold them, and an earlier change's line (node-a elected a minute before, v1).
fn sql_journal(home: &Path) -> (String, String, String) {
    let records = journals(home, "sqlite");
    // The watch's start, that it is alive (its first contact), then its change (it was
    // killed: no stop).
    let kinds: Vec<&str> = records.iter().map(|(_, k, _)| k.as_str()).collect();
    assert_eq!(kinds, ["watching", "alive", "change"], "{records:?}");
    let text: String = records.iter().map(|(_, _, l)| format!("{l}\n")).collect();
    let at = time::OffsetDateTime::now_utc() - time::Duration::minutes(1);
    let at = at
        .replace_nanosecond(0)
        .expect("whole seconds")
        .format(&time::format_description::well_known::Rfc3339)
        .expect("format");
    let earlier = format!(
        r#"{{"v":1,"kind":"change","at":"{at}","election":"jobs","to":"node-a","cause":"elected"}}"#
    );
    (records[0].0.clone(), text, earlier)
}

/// An earlier release's journal of `key` under a fresh home, as its file held `text`.
fn earlier_release(key: &str, text: &[u8]) -> (common::scratch::Scratch, std::path::PathBuf) {
    let home = common::scratch::tempdir();
    let dir = home.path().join("data/electop/history");
    std::fs::create_dir_all(&dir).expect("history dir");
    let path = dir.join(format!("{key}.jsonl"));
    std::fs::write(&path, text).expect("the earlier journal");
    (home, path)
}

/// Junk between records (binary bytes, another program's JSON) in an earlier release's
/// journal: the electop after the upgrade imports the records around it, says what it
/// skipped on stderr (once), and leaves the file as it is.
#[test]
fn junk_in_an_earlier_journal_is_said_and_the_records_around_it_kept() {
    let (_store, home, args) = sqlite_with_a_change();
    let (key, text, earlier) = sql_journal(home.path());
    let mut damaged = format!("{earlier}\n").into_bytes();
    damaged.extend_from_slice(b"\x00\xff\xfe\x7fELF garbage\x01\n");
    damaged.extend_from_slice(br#"{"name":"another program","values":[1,2,3]}"#);
    damaged.push(b'\n');
    damaged.extend_from_slice(text.as_bytes());
    let (home, path) = earlier_release(&key, &damaged);

    let (doc, stderr) = history(home.path(), &args);
    // The earlier change was put in by hand, a minute before the watch: no electop watched
    // between the two, so node-a's tenure is cut there (known again at the watch's start).
    let both = (
        Value::Null,
        vec![
            ("node-a".into(), "elected".into()),
            ("node-a".into(), "unknown".into()),
            ("node-b".into(), "unknown".into()),
        ],
    );
    assert_eq!(tenures(&doc, "jobs"), both, "{doc:#}");
    assert!(
        stderr.contains("2 line(s) that are not electop history records"),
        "said on stderr: {stderr}"
    );
    assert_eq!(
        std::fs::read(&path).expect("left"),
        damaged,
        "left as it was"
    );

    // The first history watched for its moment: node-b's tenure is known again there.
    let (doc, stderr) = history(home.path(), &args);
    let mut again = both.clone();
    again.1.push(("node-b".into(), "unknown".into()));
    assert_eq!(tenures(&doc, "jobs"), again, "{doc:#}");
    assert!(
        !stderr.contains("not electop history"),
        "imported once: {stderr}"
    );
}

/// Lines of a later format (a newer electop's) in an earlier journal are not read, said on
/// stderr, and the file is left as it is.
#[test]
fn a_later_formats_lines_are_skipped_and_the_file_left_alone() {
    let (_store, home, args) = sqlite_with_a_change();
    let (key, text, _) = sql_journal(home.path());
    let later = r#"{"v":3,"kind":"change","at":"2026-11-28T00:00:00Z","election":"jobs","to":"node-z","cause":"elected","term":7}"#;
    let file = format!("{later}\n{text}");
    let (home, path) = earlier_release(&key, file.as_bytes());

    let (doc, stderr) = history(home.path(), &args);
    let told = ("node-a".into(), vec![("node-b".into(), "unknown".into())]);
    assert_eq!(tenures(&doc, "jobs"), told, "{doc:#}");
    assert!(
        stderr.contains("a later format") && stderr.contains("1 line(s)"),
        "said on stderr: {stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(&path).expect("journal"),
        file,
        "untouched"
    );
}
