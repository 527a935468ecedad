//! The `e` overlay: every member of every clustered source, like `etcdctl endpoint status`,
//! so a dead member is visible without the source being shown as down.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use super::theme;
use crate::app::App;
use crate::model::format;
use crate::model::{MemberStatus, cut_display, escape_bytes, wrap_display};

fn size(bytes: i64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{:.1} GB", b as f64 / f64::from(1u32 << 30)),
        b if b >= 1 << 20 => format!("{:.1} MB", b as f64 / f64::from(1u32 << 20)),
        b => format!("{} kB", b / 1024),
    }
}

/// The columns after the endpoint: header, width, and the member's value.
const COLUMNS: [(&str, usize); 6] = [
    ("STATUS", 6),
    ("ROLE", 10),
    ("TERM", 5),
    ("REV/ZXID", 11),
    ("SIZE/LAT", 12),
    ("ID/VER", 16),
];

/// How many of [`COLUMNS`] fit beside endpoints `ep` wide in `width`: the endpoint first,
/// whole; the least telling columns (ids, sizes, the term) go first.
fn shown_columns(ep: usize, width: usize) -> usize {
    let mut used = ep;
    let mut n = 0;
    for (_, w) in COLUMNS {
        if used + 1 + w > width {
            break;
        }
        used += 1 + w;
        n += 1;
    }
    n.max(2)
}

/// `s` in `w` columns: padded, or cut from the left, where an endpoint's host and port
/// stay readable (`…0.0.1:2379`).
fn fit(s: &str, w: usize) -> String {
    let n = s.chars().count();
    if n <= w {
        return format!("{s:<w$}");
    }
    let tail: String = s.chars().skip(n + 1 - w.max(1)).collect();
    format!("…{tail}")
}

fn cells(m: &MemberStatus) -> [String; 6] {
    // ZooKeeper says its mode (`standalone` too); etcd, whether it leads raft.
    let role = match (&m.mode, m.is_leader) {
        (Some(mode), _) => mode.clone(),
        (None, Some(true)) => "leader".into(),
        (None, Some(false)) => "follower".into(),
        (None, None) => String::new(),
    };
    // ZooKeeper's zxid as its own tools print it, in hex.
    let revision = match (&m.mode, m.revision) {
        (Some(_), Some(z)) => Some(format!("0x{:x}", z as u64)),
        (_, r) => r.map(|r| r.to_string()),
    };
    let opt = |v: Option<String>| v.unwrap_or_default();
    [
        if m.up { "up" } else { "DOWN" }.to_string(),
        role,
        opt(m.raft_term.map(|t| t.to_string())),
        opt(revision),
        opt(m.db_size.map(size).or(m.latency.clone())),
        opt(m.id.clone().or(m.version.clone())),
    ]
}

/// A member's row, then its reason (why it is down) and its note, whole, wrapped under it.
fn member_lines(m: &MemberStatus, (ep, n, width): (usize, usize, usize)) -> Vec<Line<'static>> {
    let endpoint = format!(
        "{}{}",
        if m.serving { "▶" } else { " " },
        escape_bytes(m.endpoint.as_bytes())
    );
    let mut spans = vec![Span::raw(fit(&endpoint, ep))];
    for (i, (c, (_, w))) in cells(m).into_iter().zip(COLUMNS).take(n).enumerate() {
        let style = match (i, m.up) {
            (0, true) => theme::leader(),
            (0, false) => theme::error(),
            _ => Style::new(),
        };
        spans.push(Span::styled(format!(" {}", fit(&c, w)), style));
    }
    let mut lines = vec![Line::from(spans)];
    let under = [(&m.error, theme::error()), (&m.note, theme::warn())];
    for (text, style) in under
        .into_iter()
        .filter_map(|(t, s)| Some((t.as_ref()?, s)))
    {
        let text = format!("  ↳ {}", cut_display(text, 1000));
        for l in wrap_display(&text, width, "    ") {
            lines.push(Line::from(Span::styled(l, style)));
        }
    }
    lines
}

/// A source's heading: its name and label, and electop's session where it has one.
fn heading(s: &crate::state::SourceView) -> Line<'static> {
    let session = s
        .session
        .as_ref()
        .map(|(id, t)| {
            format!(
                " · electop's session {id}, timeout {}",
                format::duration_ms(t.as_millis() as i64)
            )
        })
        .unwrap_or_default();
    Line::from(Span::styled(
        format!("{} {}{session}", s.info.short, s.info.label),
        theme::title(),
    ))
}

pub(super) fn draw(app: &App, frame: &mut Frame, area: Rect) {
    let popup = area.inner(ratatui::layout::Margin::new(2, 1));
    frame.render_widget(Clear, popup);
    let block = Block::default()
        .borders(Borders::ALL)
        .title(" Members · ▶ = read through · e/Esc close ");
    let inner = block.inner(popup);
    frame.render_widget(block, popup);
    let width = inner.width as usize;
    let sources: Vec<_> = app
        .model
        .sources
        .iter()
        .filter(|s| s.info.clustered)
        .collect();
    let longest = sources
        .iter()
        .flat_map(|s| &s.members)
        .map(|m| escape_bytes(m.endpoint.as_bytes()).chars().count() + 1)
        .max()
        .unwrap_or(0);
    // The endpoint whole where it fits beside the status and role, else cut from the left.
    let ep = longest.clamp(9, width.saturating_sub(18).max(9));
    let n = shown_columns(ep, width);
    let mut head = vec![Span::raw(fit("ENDPOINT", ep))];
    head.extend(
        COLUMNS
            .iter()
            .take(n)
            .map(|(h, w)| Span::raw(format!(" {h:<w$}"))),
    );
    let mut lines = vec![Line::from(head).style(theme::header())];
    for s in &sources {
        lines.push(heading(s));
        if s.members.is_empty() {
            lines.push(Line::from(Span::styled(" not probed yet", theme::dim())));
        }
        for m in &s.members {
            lines.extend(member_lines(m, (ep, n, width)));
        }
    }
    if sources.is_empty() {
        lines.push(Line::from(Span::styled(
            "no clustered source (SQL sources have no members)",
            theme::dim(),
        )));
    }
    frame.render_widget(Paragraph::new(lines), inner);
}
