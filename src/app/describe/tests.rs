use super::*;
use crate::app::{Msg, update};
use crate::model::{Scheme, SourceEvent, SourceInfo};
use std::time::{Instant, SystemTime};

fn app_with(e: Election) -> App {
    let mut app = App::new(
        vec![SourceInfo::test_etcd()],
        Instant::now(),
        SystemTime::now(),
    );
    update(
        &mut app,
        Msg::Source(SourceEvent::Elections {
            source: 0,
            elections: vec![e],
        }),
    );
    app
}

fn holder(id: &str, key: &str) -> Candidate {
    Candidate {
        id: id.into(),
        raw_id: id.as_bytes().to_vec(),
        key: key.into(),
        raw_key: key.as_bytes().to_vec(),
        lease: Some(0x2a),
        create_revision: 3,
        mod_revision: 4,
        stamp: None,
        ttl: None,
    }
}

fn text(lines: &[DLine]) -> String {
    lines
        .iter()
        .map(|l| l.iter().map(|(_, s)| s.as_str()).collect::<String>())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_long_key_is_shown_whole_over_several_lines() {
    let key = format!("/e/{}", "k".repeat(150));
    let mut e = Election::new(0, "jobs".into(), Scheme::EtcdLeaseKey);
    e.leader = Some(holder("node-a", &key));
    let app = app_with(e.clone());
    let all = text(&lines(&app, &e, 60));
    let joined = all.replace(&format!("\n{}", " ".repeat(LABEL)), "");
    assert!(joined.contains(&key), "every char of the key:\n{all}");
    assert!(all.lines().all(|l| l.chars().count() <= 60), "{all}");
    assert!(all.contains("2a (hex) · 42 (decimal)"), "{all}");
    assert!(all.contains("create 3 · mod 4"), "{all}");
}

#[test]
fn a_huge_value_says_its_size_and_shows_a_bounded_part() {
    let mut e = Election::new(0, "jobs".into(), Scheme::EtcdLeaseKey);
    let mut l = holder("x", "/e/jobs");
    l.id = "v".repeat(1_000_000);
    l.raw_id = l.id.clone().into_bytes();
    e.leader = Some(l);
    let app = app_with(e.clone());
    let all = lines(&app, &e, 80);
    let t = text(&all);
    assert!(t.contains("1000000 bytes, first 4096"), "{}", &t[..300]);
    assert!(t.matches('v').count() < 5000, "bounded");
    assert!(all.len() < 100, "{} lines", all.len());
}

#[test]
fn enter_opens_scrolls_within_bounds_and_esc_closes() {
    let mut e = Election::new(0, "jobs".into(), Scheme::EtcdElection);
    e.candidates = (0..50)
        .map(|i| holder(&format!("n{i}"), &format!("/e/jobs/{i}")))
        .collect();
    e.leader = e.candidates.first().cloned();
    let mut app = app_with(e);
    update(&mut app, Msg::Action(Action::Describe));
    assert!(app.describe.is_some());
    update(&mut app, Msg::Action(Action::Bottom));
    let end = app.describe.as_ref().map(|d| d.scroll).unwrap_or(0);
    assert!(end > 0 && end < 80, "scrolled to the last page: {end}");
    assert!(
        !update(&mut app, Msg::Action(Action::Down)).redraw,
        "nothing past the end"
    );
    update(&mut app, Msg::Action(Action::Up));
    assert_eq!(app.describe.as_ref().map(|d| d.scroll), Some(end - 1));
    let copied = update(&mut app, Msg::Action(Action::CopyLeader));
    assert_eq!(clipboard(&copied).as_deref(), Some("n0"));
    assert!(app.describe.is_some(), "copying keeps the view open");
    let back = update(&mut app, Msg::Action(Action::Back));
    assert!(app.describe.is_none() && !back.quits());
}

#[test]
fn the_dashboards_bars_and_views_close_the_detail_and_open() {
    let e = Election::new(0, "jobs".into(), Scheme::EtcdElection);
    let mut app = app_with(e);
    for action in [
        Action::StartCommand,
        Action::StartFilter,
        Action::ToggleEvents,
    ] {
        update(&mut app, Msg::Action(Action::Back));
        app.prompt = None;
        app.screen = crate::app::Screen::Main;
        update(&mut app, Msg::Action(Action::Describe));
        assert!(app.describe.is_some());
        assert!(
            update(&mut app, Msg::Action(action)).redraw,
            "{action:?} redraws"
        );
        assert!(app.describe.is_none(), "{action:?} closes the detail");
        let opened = app.prompt.is_some() || app.screen == crate::app::Screen::Events;
        assert!(opened, "{action:?} did what it does on the table");
    }
    app.screen = crate::app::Screen::Main;
    update(&mut app, Msg::Action(Action::Describe));
    update(&mut app, Msg::Action(Action::ToggleMembers));
    assert!(app.show_members && app.describe.is_some(), "an overlay");
}

/// The text an update asked to put on the clipboard.
fn clipboard(done: &crate::app::Updated) -> Option<String> {
    done.effects.iter().find_map(|e| match e {
        crate::app::Effect::Copy(text) => Some(text.clone()),
        _ => None,
    })
}

#[test]
fn a_window_is_the_same_lines_as_the_whole() {
    let mut e = Election::new(0, "jobs".into(), Scheme::EtcdElection);
    e.candidates = (0..40)
        .map(|i| holder(&format!("n{i}"), &format!("/e/jobs/{i}")))
        .collect();
    e.leader = e.candidates.first().cloned();
    let app = app_with(e.clone());
    let all = lines(&app, &e, 80);
    assert_eq!(all.len(), len(&app, &e, 80));
    for (start, count) in [(0, 5), (3, 20), (14, 30), (50, 100), (all.len(), 4)] {
        let end = (start + count).min(all.len());
        assert_eq!(
            window(&app, &e, 80, start, count),
            all[start.min(end)..end].to_vec(),
            "{start}+{count}"
        );
    }
}

#[test]
fn copying_without_a_leader_says_why() {
    let e = Election::new(0, "jobs".into(), Scheme::EtcdElection);
    let mut app = app_with(e);
    let copied = update(&mut app, Msg::Action(Action::CopyKey));
    assert!(clipboard(&copied).is_none());
    assert!(
        app.flash
            .as_ref()
            .is_some_and(|f| f.error && f.text.contains("has no leader"))
    );
}

#[test]
fn each_cause_in_the_history_is_explained_once() {
    let mut e = Election::new(0, "jobs".into(), Scheme::ZkRecipe);
    e.leader = Some(holder("node-c", "/election/jobs/n_0000000002"));
    let change = |from: &str, to: &str, cause| crate::model::HistoryEntry {
        at: Some(SystemTime::now()),
        revision: None,
        from: Some(from.into()),
        to: Some(to.into()),
        cause,
        by: None,
    };
    for (from, to, cause) in [
        ("node-a", "node-b", crate::model::Cause::NodeGone),
        ("node-b", "node-a", crate::model::Cause::TakenOver),
        ("node-a", "node-c", crate::model::Cause::NodeGone),
    ] {
        e.record(change(from, to, cause), 10);
    }
    let app = app_with(e.clone());
    let all = text(&lines(&app, &e, 100));
    assert!(all.contains("Causes"), "{all}");
    for (name, meaning) in [
        ("node_gone", "session ended or node deleted"),
        ("taken_over", "wrote over the leader's key or row"),
    ] {
        let explained = all
            .lines()
            .filter(|l| l.contains(name) && l.contains(meaning))
            .count();
        assert_eq!(explained, 1, "{name}:\n{all}");
    }
    assert_eq!(len(&app, &e, 100), lines(&app, &e, 100).len());
}

/// Kafka's and Hadoop's elections live in ZooKeeper too: their changes carry a zxid, which
/// the history says as ZooKeeper does, not as an etcd revision.
#[test]
fn a_kafka_or_hadoop_change_is_stamped_with_its_zxid() {
    for scheme in [Scheme::KafkaZk, Scheme::HadoopHa, Scheme::ZkRecipe] {
        let mut e = Election::new(0, "controller".into(), scheme);
        e.leader = Some(holder("broker-1", "/controller"));
        e.record(
            crate::model::HistoryEntry {
                at: Some(SystemTime::now()),
                revision: Some(0x1_0000_002a),
                from: None,
                to: Some("broker-1".into()),
                cause: crate::model::Cause::Elected,
                by: None,
            },
            10,
        );
        let app = app_with(e.clone());
        let all = text(&lines(&app, &e, 100));
        assert!(all.contains("zxid 0x10000002a"), "{scheme}:\n{all}");
        assert!(!all.contains("rev 4294967338"), "{scheme}:\n{all}");
    }
}
