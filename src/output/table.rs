//! `electop status` as an aligned table for people. Piped, nothing is cut but a cell over
//! 256 characters (a megabyte leader value; the JSON has it whole); on a terminal, the name
//! columns give way so a line fits the width (`-o wide` cuts only the long cells).

use ratatui::text::Span;

use crate::model::format;
use crate::model::{Election, cut_display};
use crate::state::{Listed, ReadModel};

/// One row's cells, in the order of [`columns`].
type Cells = Vec<String>;

fn columns(wide: bool) -> Vec<&'static str> {
    let mut c = vec![
        "SOURCE",
        "ELECTION",
        "LEADER",
        "TTL",
        "CANDIDATES",
        "CHANGES",
        "RATE",
        "LAST CHANGE",
        "ALARMS",
    ];
    if wide {
        c.extend(["SCHEME", "LEADER KEY"]);
    }
    c
}

fn ttl(model: &ReadModel, e: &Election) -> String {
    let at = model.as_of(e.source);
    match (&e.leader, e.ttl_ms_at(at)) {
        (Some(l), _) if l.zombie() => "no lease".to_string(),
        // As the dashboard's column says: nothing counted down the store did not say.
        (Some(l), _) if let Some(text) = format::held_without_ttl(e.scheme, l) => text.to_string(),
        (_, Some(ms)) => format::duration_ms(ms),
        _ => "-".to_string(),
    }
}

fn cells(model: &ReadModel, row: &Listed<'_>, wide: bool) -> Cells {
    let e = row.election;
    let source = model
        .sources
        .get(e.source)
        .map(|s| s.info.short.clone())
        .unwrap_or_default();
    let mut leader = match (&e.leader, e.no_leader_since()) {
        (Some(l), _) => l.id.clone(),
        (None, Some(t)) => format!("none since {}", crate::model::time::clock(t)),
        (None, None) => "-".to_string(),
    };
    if let Some(h) = super::hold_text(e, model.as_of(e.source)) {
        leader = format!("none ({h})");
    }
    // ZooKeeper's deposed holder has no lease in the TTL column: its session is said here.
    if let (Some(d), Some(session)) = (&e.deposed, e.deposed_session_text(true)) {
        leader.push_str(&format!(" (⚠ deposed {}, {session})", d.id));
    }
    let last = e
        .last_change()
        .map(|h| format::age(h, model.wall))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "-".to_string());
    let rate = format::rate(row.rate);
    let mut c = vec![
        source,
        e.name.clone(),
        leader,
        ttl(model, e),
        e.candidates.len().to_string(),
        e.transitions.to_string(),
        if rate.is_empty() { "0/m".into() } else { rate },
        last,
        row.alarms.codes(),
    ];
    if wide {
        c.push(e.scheme.as_str().to_string());
        c.push(
            e.leader
                .as_ref()
                .map(|l| l.key.clone())
                .unwrap_or_else(|| "-".into()),
        );
    }
    c.into_iter().map(cut_long).collect()
}

/// A cell over [`crate::model::SHOWN_MAX`] characters, cut as all text output cuts it.
fn cut_long(cell: String) -> String {
    match crate::model::shown(&cell) {
        std::borrow::Cow::Borrowed(_) => cell,
        std::borrow::Cow::Owned(cut) => cut,
    }
}

fn width(s: &str) -> usize {
    // Nearly every cell is ASCII, one column a byte: the Unicode width tables were a
    // visible part of `status` over many elections.
    match s.is_ascii() {
        true => s.len(),
        false => Span::raw(s).width(),
    }
}

/// The table as text. `fit`: the terminal's width, which the ELECTION and LEADER columns
/// shrink to meet; `None` (piped, or `-o wide`) cuts only cells over 256 characters.
/// Elections in triage order, as the dashboard opens.
pub(crate) fn render(model: &ReadModel, wide: bool, fit: Option<usize>) -> String {
    let head: Cells = columns(wide).iter().map(|s| s.to_string()).collect();
    let mut rows: Vec<Cells> = vec![head];
    let listed = model.triage_order();
    rows.extend(listed.iter().map(|r| cells(model, r, wide)));
    // Each cell's width once, row by row: the lines are written from them.
    let cols = rows[0].len();
    let cell_widths: Vec<usize> = rows.iter().flatten().map(|c| width(c)).collect();
    let mut widths = vec![0; cols];
    for row in cell_widths.chunks(cols) {
        for (w, cw) in widths.iter_mut().zip(row) {
            *w = (*w).max(*cw);
        }
    }
    if let Some(max) = fit {
        shrink(&mut widths, max);
    }
    let line_len = widths.iter().sum::<usize>() + 2 * cols;
    let mut out = String::with_capacity(rows.len() * line_len);
    for (row, row_widths) in rows.iter().zip(cell_widths.chunks(cols)) {
        write_line(&mut out, row, row_widths, &widths);
    }
    if listed.is_empty() {
        out.push_str("no elections found\n");
    }
    // A source that could not be read is named, not left out as if it held nothing.
    for s in &model.sources {
        if let crate::model::ConnState::Down { error, .. } = &s.conn {
            out.push_str(&format!("{}: DOWN: {error}\n", s.info.short));
        }
    }
    out
}

/// One row: each cell cut to its column's width and padded to it, two spaces between, no
/// spaces at the end.
fn write_line(out: &mut String, row: &[String], cell_widths: &[usize], widths: &[usize]) {
    let pad = |out: &mut String, n: usize| out.extend(std::iter::repeat_n(' ', n));
    let start = out.len();
    for (i, ((cell, cw), w)) in row.iter().zip(cell_widths).zip(widths).enumerate() {
        if i > 0 {
            out.push_str("  ");
        }
        if cw > w {
            let cut = cut_display(cell, *w);
            out.push_str(&cut);
            pad(out, w.saturating_sub(width(&cut)));
        } else {
            out.push_str(cell);
            pad(out, w - cw);
        }
    }
    let kept = out[start..].trim_end().len();
    out.truncate(start + kept);
    out.push('\n');
}

/// What the table leaves out about its sources, for a person (on stderr: stdout stays the
/// table, for a script, however many runs' gaps a ZooKeeper record holds). The JSON has
/// the same as fields.
pub(crate) fn notes(model: &ReadModel) -> String {
    let mut out = String::new();
    for s in &model.sources {
        if s.info
            .scheme
            .is_some_and(crate::model::Scheme::is_zookeeper)
        {
            zk_lines(s, &mut out);
        }
    }
    out
}

/// ZooKeeper: each member as it answers, and since when history is known (it keeps none).
fn zk_lines(s: &crate::state::SourceView, out: &mut String) {
    let short = &s.info.short;
    if !s.members.is_empty() {
        let up = s.members.iter().filter(|m| m.up).count();
        out.push_str(&format!("{short}: {up}/{} members up\n", s.members.len()));
    }
    for m in &s.members {
        let state = match (&m.error, &m.mode) {
            (Some(e), _) => format!("DOWN: {e}"),
            (None, Some(mode)) => {
                let zxid = m.revision.map(|z| format!(" zxid 0x{:x}", z as u64));
                let latency = m.latency.as_ref().map(|l| format!(" latency {l}"));
                format!(
                    "{mode}{}{}",
                    zxid.unwrap_or_default(),
                    latency.unwrap_or_default()
                )
            }
            (None, None) => "up".to_string(),
        };
        out.push_str(&format!("{short}: member {} {state}\n", m.endpoint));
        if let Some(n) = &m.note {
            out.push_str(&format!("{short}: member {} {n}\n", m.endpoint));
        }
    }
    if let Some(t) = s.history_since
        && s.history_gaps.is_empty()
    {
        out.push_str(&format!(
            "{short}: history since {}, when electop connected (ZooKeeper keeps none)\n",
            crate::model::time::clock(t)
        ));
    } else if let Some(t) = s.history_since {
        out.push_str(&format!(
            "{short}: history since {}, from electop's own record (ZooKeeper keeps none)\n",
            crate::model::time::clock(t)
        ));
        for g in &s.history_gaps {
            out.push_str(&format!("{short}: history {}\n", g.describe()));
        }
    }
}

/// Narrows ELECTION and LEADER (the long ones), never below 12, until the line fits.
fn shrink(widths: &mut [usize], max: usize) {
    const SHRINKABLE: [usize; 2] = [1, 2];
    let total = |w: &[usize]| w.iter().sum::<usize>() + 2 * w.len().saturating_sub(1);
    while total(widths) > max {
        let Some(&i) = SHRINKABLE
            .iter()
            .filter(|i| widths[**i] > 12)
            .max_by_key(|i| widths[**i])
        else {
            return;
        };
        widths[i] -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Candidate, Scheme, SourceEvent, SourceInfo};
    use std::time::{Duration, Instant, SystemTime};

    fn model() -> ReadModel {
        let info = SourceInfo::test_etcd();
        let now = Instant::now();
        let mut model = ReadModel::new(vec![info], now, SystemTime::UNIX_EPOCH);
        let mut e = Election::new(
            0,
            format!("a-very-long-election-name-{}", "x".repeat(40)),
            Scheme::EtcdElection,
        );
        let c = Candidate {
            id: "node-with-a-long-id-0123456789".into(),
            raw_id: Vec::new(),
            key: "/e/k/1".into(),
            raw_key: Vec::new(),
            lease: Some(1),
            create_revision: 1,
            mod_revision: 1,
            stamp: None,
            ttl: Some(crate::model::Deadline {
                granted_ms: 10_000,
                remaining_ms: 9_500,
                read_at: now,
            }),
        };
        e.leader = Some(c.clone());
        e.candidates = vec![c];
        let empty = Election::new(0, "b".into(), Scheme::EtcdElection);
        model.apply(SourceEvent::Elections {
            source: 0,
            elections: vec![e, empty],
        });
        model.settle();
        let _ = Duration::ZERO;
        model
    }

    /// Kafka's and Hadoop's ZooKeeper sources keep no history either: the note says so.
    #[test]
    fn every_zookeeper_source_notes_that_zookeeper_keeps_no_history() {
        for scheme in [Scheme::KafkaZk, Scheme::HadoopHa, Scheme::ZkRecipe] {
            let mut info = SourceInfo::test_etcd();
            info.store = crate::model::StoreKind::Zookeeper;
            info.scheme = Some(scheme);
            let mut model = ReadModel::new(vec![info], Instant::now(), SystemTime::UNIX_EPOCH);
            model.apply(SourceEvent::Session {
                source: 0,
                id: "0x1".into(),
                timeout: Duration::from_secs(10),
                history_since: SystemTime::UNIX_EPOCH,
                gaps: Vec::new(),
            });
            let text = notes(&model);
            assert!(text.contains("ZooKeeper keeps none"), "{scheme}: {text}");
        }
    }

    #[test]
    fn piped_nothing_is_cut_and_columns_align() {
        let text = render(&model(), false, None);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("SOURCE  ELECTION"), "{text}");
        assert!(text.contains(&"x".repeat(40)), "the whole name:\n{text}");
        assert!(text.contains("node-with-a-long-id-0123456789"), "{text}");
        let col = |l: &str| l.find("ALARMS").or_else(|| l.find("no-leader"));
        assert_eq!(col(lines[0]), col(lines[1]), "aligned:\n{text}");
        assert!(lines[1].contains("no-leader"), "worst first:\n{text}");
        assert!(
            lines[2].contains("9.5s") && lines[2].ends_with('-'),
            "{text}"
        );
    }

    #[test]
    fn wide_and_accented_names_are_aligned_by_their_columns_not_bytes() {
        let mut m = model();
        let mut e = Election::new(0, "選挙-ünï".into(), Scheme::EtcdElection);
        e.leader = Some(Candidate::plain("n", "/e/k/2"));
        m.apply(SourceEvent::Elections {
            source: 0,
            elections: vec![e],
        });
        m.settle();
        let text = render(&m, false, None);
        // The display column the LEADER cell starts at: the same on the header and the row.
        let lines: Vec<&str> = text.lines().collect();
        let row = lines.iter().find(|l| l.contains("選挙")).expect("the row");
        let header_at = width(&lines[0][..lines[0].find("LEADER").expect("header")]);
        let row_at = width(&row[..row.find("  n  ").expect("the leader") + 2]);
        assert_eq!(header_at, row_at, "aligned:\n{text}");
        assert!(
            row.contains(&format!("選挙-ünï{}", " ".repeat(60))),
            "{text}"
        );
    }

    #[test]
    fn on_a_terminal_names_give_way_to_fit() {
        let text = render(&model(), false, Some(100));
        assert!(text.lines().all(|l| width(l) <= 100), "{text}");
        assert!(text.contains('…') && !text.contains("chars)"), "{text}");
        let wide = render(&model(), true, None);
        assert!(
            wide.contains("LEADER KEY") && wide.contains("/e/k/1"),
            "{wide}"
        );
    }
}
