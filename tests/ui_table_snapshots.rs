//! The elections table: how many wait in each line (LINE), columns that stay put while the
//! clock runs, and a table that says when rows are left out. Drawn from hand-built states
//! with a fixed clock, as in `ui_snapshots.rs`.

use std::time::{Duration, Instant, SystemTime};

use electop::app::{self, Action, App, Msg};
use electop::model::{
    Candidate, Cause, ConnState, Deadline, Election, HistoryEntry, Scheme, SourceEvent, SourceInfo,
};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn info(id: usize, scheme: Scheme) -> SourceInfo {
    SourceInfo {
        store: scheme.store(),
        id,
        name: format!("source {id}"),
        label: "/e/".into(),
        short: format!("src{}", id + 1),
        endpoints: "127.0.0.1:2379".into(),
        scheme: Some(scheme),
        read_only: false,
        clustered: false,
        idle_is_normal: false,
        notice: None,
    }
}

fn wall() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000)
}

fn candidate(id: &str, remaining_ms: i64, now: Instant) -> Candidate {
    let mut c = Candidate::plain(id, &format!("/e/{id}"));
    c.lease = Some(0x10 + id.len() as i64);
    c.ttl = Some(Deadline {
        granted_ms: 30_000,
        remaining_ms,
        read_at: now,
    });
    c
}

/// An election led by the first of `ids`, the others waiting, its last change `ago` back.
fn election(
    name: &str,
    scheme: Scheme,
    ids: &[&str],
    ttl_ms: i64,
    ago: u64,
    now: Instant,
) -> Election {
    let mut e = Election::new(0, name.into(), scheme);
    e.candidates = ids.iter().map(|id| candidate(id, ttl_ms, now)).collect();
    e.leader = e.candidates.first().cloned();
    e.record(
        HistoryEntry {
            at: Some(wall() - Duration::from_secs(ago)),
            revision: None,
            from: None,
            to: ids.first().map(|s| s.to_string()),
            cause: Cause::Elected,
            by: None,
        },
        10,
    );
    e
}

fn app_with(scheme: Scheme, elections: Vec<Election>, now: Instant) -> App {
    let mut app = App::new(vec![info(0, scheme)], now, wall());
    app::update(
        &mut app,
        Msg::Source(SourceEvent::Elections {
            source: 0,
            elections,
        }),
    );
    let connected = SourceEvent::Conn {
        source: 0,
        state: ConnState::Connected,
    };
    app::update(&mut app, Msg::Source(connected));
    app::update(&mut app, Msg::Source(SourceEvent::Synced { source: 0 }));
    app
}

/// Four etcd elections with lines of 0 to 3 waiting (sorted by name).
fn four(now: Instant) -> App {
    let s = Scheme::EtcdElection;
    let elections = vec![
        election("alpha", s, &["a-1"], 20_000, 5, now),
        election("bravo", s, &["b-1", "b-2"], 20_000, 5, now),
        election("charlie", s, &["c-1", "c-2", "c-3"], 20_000, 5, now),
        election("delta", s, &["d-1", "d-2", "d-3", "d-4"], 20_000, 5, now),
    ];
    let mut app = app_with(s, elections, now);
    app::update(&mut app, Msg::Action(Action::SortBy(app::SortKey::Name)));
    app
}

fn render(app: &App, w: u16, h: u16) -> Terminal<TestBackend> {
    let mut t = Terminal::new(TestBackend::new(w, h)).expect("terminal");
    t.draw(|f| electop::ui::view(app, f)).expect("draw");
    t
}

/// Line `y` of the screen.
fn line(t: &Terminal<TestBackend>, y: u16) -> String {
    let buf = t.backend().buffer();
    (0..buf.area.width)
        .map(|x| buf[(x, y)].symbol().to_string())
        .collect()
}

/// Where each column header starts on the table's header line, in cells.
fn header_columns(t: &Terminal<TestBackend>) -> Vec<(String, usize)> {
    let header = line(t, 2);
    let cells: Vec<char> = header.chars().collect();
    let mut out = Vec::new();
    for (x, c) in cells.iter().enumerate() {
        let starts = c.is_ascii_uppercase() && (x == 0 || cells[x - 1] == ' ');
        if starts {
            let word: String = cells[x..]
                .iter()
                .take_while(|c| c.is_ascii_uppercase())
                .collect();
            out.push((word, x));
        }
    }
    out
}

#[test]
fn each_row_counts_who_waits_behind_its_leader_at_80x24() {
    let app = four(Instant::now());
    let t = render(&app, 80, 24);
    let text = format!("{}", t.backend());
    assert!(line(&t, 2).contains("LINE"), "{text}");
    let row = |name: &str| -> Vec<String> {
        let l = (3..8)
            .map(|y| line(&t, y))
            .find(|l| l.contains(name))
            .unwrap_or_default();
        l.split_whitespace().map(str::to_string).collect()
    };
    // `│ alpha a-1 ████░░ 20.0s 1 0 ...`: the count after the changes (LINE is the eighth word).
    assert_eq!(row("alpha").get(7).map(String::as_str), Some("0"), "{text}");
    assert_eq!(row("delta").get(7).map(String::as_str), Some("3"), "{text}");
    assert!(!text.contains("more below"), "every row fits: {text}");
    insta::assert_snapshot!(t.backend());
}

#[test]
fn a_sql_row_has_no_line_to_count() {
    let now = Instant::now();
    let s = Scheme::SqlLease;
    let mut e = election("orders", s, &["node-1"], 20_000, 5, now);
    e.candidates.truncate(1);
    let app = app_with(s, vec![e], now);
    let t = render(&app, 80, 24);
    let row: Vec<String> = line(&t, 3).split_whitespace().map(str::to_string).collect();
    assert_eq!(
        row.get(7).map(String::as_str),
        Some("-"),
        "no count where the scheme keeps no line: {row:?}"
    );
}

#[test]
fn rows_left_out_at_60x16_are_counted_in_the_title() {
    let mut app = four(Instant::now());
    let t = render(&app, 60, 16);
    let text = format!("{}", t.backend());
    assert!(
        line(&t, 1).contains("Elections 1/4 · 1 more below ↓"),
        "{text}"
    );
    insta::assert_snapshot!("sixty_by_sixteen_top", t.backend());
    for _ in 0..3 {
        app::update(&mut app, Msg::Action(Action::Down));
    }
    let t = render(&app, 60, 16);
    let text = format!("{}", t.backend());
    assert!(line(&t, 1).contains("Elections 4/4 · 1 above ↑"), "{text}");
    assert!(!text.contains("below"), "{text}");
    insta::assert_snapshot!("sixty_by_sixteen_bottom", t.backend());
}

/// A countdown going from 10.0s to 9.9s and a last change from 9s to 10s ago between two
/// frames: no column moves.
#[test]
fn columns_stay_put_as_the_clock_runs() {
    let now = Instant::now();
    let s = Scheme::EtcdElection;
    let elections = vec![
        election("jobs", s, &["node-a", "node-b"], 10_050, 9, now),
        election("mail", s, &["node-c"], 10_050, 9, now),
    ];
    let mut app = app_with(s, elections, now);
    let before = render(&app, 80, 24);
    // The countdown by 0.1 s, the wall clock by a second: each crosses its 10.
    app::update(
        &mut app,
        Msg::Tick {
            now: now + Duration::from_millis(100),
            wall: wall() + Duration::from_secs(1),
        },
    );
    let after = render(&app, 80, 24);
    let (b, a) = (
        format!("{}", before.backend()),
        format!("{}", after.backend()),
    );
    assert!(b.contains("10.0s") && b.contains("9s ago"), "{b}");
    assert!(a.contains(" 9.9s") && a.contains("10s ago"), "{a}");
    assert_eq!(header_columns(&before), header_columns(&after), "{b}\n{a}");
    let names: Vec<String> = header_columns(&after).into_iter().map(|c| c.0).collect();
    assert!(names.contains(&"LAST".to_string()), "{names:?}");
}

#[test]
fn sorting_by_line_puts_the_longest_first_and_no_line_last() {
    let now = Instant::now();
    let mut app = four(now);
    let names = |app: &App| -> Vec<String> { app.rows.iter().map(|r| r.key.1.clone()).collect() };
    app::update(&mut app, Msg::Action(Action::SortBy(app::SortKey::Line)));
    assert_eq!(names(&app), ["delta", "charlie", "bravo", "alpha"]);
    let t = render(&app, 80, 24);
    assert!(line(&t, 2).contains("LINE▼"), "{}", line(&t, 2));

    let s = Scheme::EtcdLeaseKey;
    let lease_key = vec![
        election("solo", s, &["s-1"], 20_000, 5, now),
        election("queued", s, &["q-1", "q-2"], 20_000, 5, now),
    ];
    let mut app = app_with(s, lease_key, now);
    app::update(&mut app, Msg::Action(Action::SortBy(app::SortKey::Line)));
    assert_eq!(
        names(&app),
        ["queued", "solo"],
        "a lease key alone may have no registry: no line, after a line of one"
    );
}

/// A Redis source: each lock key a row, its token the leader with the TTL from PTTL, no
/// line to count; a key without expiry has no TTL; the notice says how it is followed.
#[test]
fn a_redis_source_shows_tokens_their_ttl_and_how_it_is_followed() {
    let now = Instant::now();
    let s = Scheme::RedisLock;
    // As the Redis store reads them: a token in a key, no lease, no revisions.
    let redis = |name: &str, token: &str, ttl: Option<i64>, ago: u64| {
        let mut e = election(name, s, &[token], ttl.unwrap_or(0), ago, now);
        for c in e.candidates.iter_mut() {
            c.lease = None;
            c.key = name.to_string();
            if ttl.is_none() {
                c.ttl = None;
            }
        }
        e.leader = e.candidates.first().cloned();
        e
    };
    let held = redis(
        "leader:jobs",
        "b242b2bae87111f18ecc02fc00000001",
        Some(7_400),
        5,
    );
    let forever = redis("leader:cron", "3d65ee20b2bc6cc1", None, 60);
    let mut app = app_with(s, vec![held, forever], now);
    let mut i = info(0, s);
    i.notice = Some(electop::model::SourceNotice::Found(
        "polled every 1 s: notify-keyspace-events is off".into(),
    ));
    app::update(&mut app, Msg::Source(SourceEvent::Info(i)));
    app::update(&mut app, Msg::Action(Action::SortBy(app::SortKey::Name)));
    let t = render(&app, 100, 16);
    let all = format!("{}", t.backend());
    let row = |name: &str| -> Vec<String> {
        let l = (3..8)
            .map(|y| line(&t, y))
            .find(|l| l.contains(name))
            .unwrap_or_default();
        l.split_whitespace().map(str::to_string).collect()
    };
    assert!(
        row("leader:jobs").iter().any(|c| c == "7.4s"),
        "PTTL as the TTL: {all}"
    );
    assert!(all.contains("notify-keyspace-events is off"), "{all}");
    insta::assert_snapshot!(t.backend());
}

/// The LINE column and the detail pane's line count the same: those waiting behind the
/// leader (the pane lists the leader too, first).
#[test]
fn the_line_column_and_the_pane_count_the_same() {
    let mut app = four(Instant::now());
    app::update(&mut app, Msg::Action(Action::Down));
    let t = render(&app, 80, 24);
    let text = format!("{}", t.backend());
    let bravo: Vec<String> = (3..8)
        .map(|y| line(&t, y))
        .find(|l| l.contains("bravo"))
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect();
    assert_eq!(bravo.get(7).map(String::as_str), Some("1"), "{text}");
    assert!(text.contains("ID · 1 waiting"), "{text}");
    assert!(!text.contains("in line"), "{text}");
}

/// A source that goes down after a read keeps its rows, dimmed: the title says they are the
/// last read, not that they are not shown.
#[test]
fn a_source_down_after_a_read_says_its_rows_are_the_last_read() {
    let now = Instant::now();
    let mut app = four(now);
    app::update(
        &mut app,
        Msg::Source(SourceEvent::Contact {
            source: 0,
            at: now,
            wall: wall(),
            next_within: Duration::from_secs(1),
        }),
    );
    let down = ConnState::Down {
        error: "connection refused".into(),
        retry_at: now + Duration::from_secs(2),
        lasting: false,
    };
    app::update(
        &mut app,
        Msg::Source(SourceEvent::Conn {
            source: 0,
            state: down,
        }),
    );
    let t = render(&app, 80, 24);
    let text = format!("{}", t.backend());
    assert!(text.contains("alpha") && text.contains("delta"), "{text}");
    assert!(
        line(&t, 1).contains("src1 DOWN: rows as last read"),
        "{text}"
    );
    assert!(!text.contains("not shown"), "{text}");
}
