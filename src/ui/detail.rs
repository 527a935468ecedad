//! The selected election: its leader, the line of candidates and the history timeline.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Table};

use super::theme;
use crate::app::{App, Focus};
use crate::model::format;
use crate::model::{Election, HistoryEntry, HistoryGap, cut_display, cut_middle, time};

pub(super) fn draw(app: &App, frame: &mut Frame, area: Rect) {
    let Some(e) = app.selected_election() else {
        let p = Paragraph::new("No election selected.")
            .block(Block::default().borders(Borders::ALL).title(" Detail "));
        frame.render_widget(p, area);
        return;
    };
    let [left, right] =
        Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(area);
    candidates(app, e, frame, left);
    history(app, e, frame, right);
}

fn border(app: &App, focus: Focus) -> ratatui::style::Style {
    if app.focus == focus {
        theme::focused_border()
    } else {
        theme::dim()
    }
}

fn candidates(app: &App, e: &Election, frame: &mut Frame, area: Rect) {
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(border(app, Focus::Candidates))
        .title(format!(" {} · {} ", cut_display(&e.name, 30), e.scheme));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let notes: Vec<&str> = e
        .notes
        .iter()
        .map(|n| n.text.as_str())
        .filter(|t| !t.is_empty())
        .collect();
    let [head, line] = Layout::vertical([
        Constraint::Length(2 + notes.len() as u16),
        Constraint::Min(0),
    ])
    .areas(inner);

    let room = (head.width as usize).saturating_sub(8);
    let second = match &e.deposed {
        Some(d) if e.deposed_session.is_some() => Line::from(Span::styled(
            cut_display(
                // What it is first: the end is what a narrow pane cuts.
                &format!(
                    "⚠ deposed {}, {}: may still believe it leads",
                    d.id,
                    e.deposed_session_text(false).unwrap_or_default()
                ),
                room,
            ),
            theme::warn(),
        )),
        Some(d) => deposed_line(d, app.model.as_of(e.source), room),
        None => key_line(e, room),
    };
    let mut head_lines = vec![leader_line(app, e, room), second];
    head_lines.extend(
        notes
            .iter()
            .map(|t| Line::from(Span::styled(cut_display(t, room), theme::warn()))),
    );
    frame.render_widget(Paragraph::new(head_lines), head);
    line_table(app, e, frame, line);
}

/// Who leads, or since when nobody does; a stale source's leader as last seen.
fn leader_line(app: &App, e: &Election, room: usize) -> Line<'static> {
    let stale = app.model.stale_for(e.source);
    match &e.leader {
        Some(l) if stale.is_some() => Line::from(vec![
            Span::styled(
                format!(
                    "STALE {}s · last seen leader ",
                    stale.map(|d| d.as_secs()).unwrap_or(0)
                ),
                theme::stale(),
            ),
            Span::styled(cut_display(&l.id, room), theme::dim()),
        ]),
        Some(l) => Line::from(vec![
            Span::raw("Leader "),
            Span::styled(cut_display(&l.id, room), theme::leader()),
        ]),
        None if app.model.idle_is_normal(e.source) => Line::from(Span::styled(
            "Idle: no holder between runs, which is normal here",
            theme::dim(),
        )),
        None => Line::from(Span::styled(
            match e.no_leader_since() {
                Some(t) => format!("No leader since {}", crate::model::time::clock(t)),
                None => "No leader".to_string(),
            },
            theme::no_leader(),
        )),
    }
}

/// The leader's lease (or term) and key.
fn key_line(e: &Election, room: usize) -> Line<'static> {
    let Some(l) = &e.leader else {
        return Line::from("");
    };
    if e.scheme == crate::model::Scheme::ZkRecipe {
        // ZooKeeper's own words: the session holding the node, the zxids of its creation
        // and last change.
        return Line::from(Span::styled(
            format!(
                "session {} czxid 0x{:x} mzxid 0x{:x} node {}",
                l.stamp.as_deref().unwrap_or("?"),
                l.create_revision as u64,
                l.mod_revision as u64,
                cut_display(&l.key, room)
            ),
            theme::dim(),
        ));
    }
    if e.scheme.is_session_lock() {
        // Held while its session lasts: the session, not a deadline.
        let key = cut_display(&l.key, room);
        let pid = String::from_utf8_lossy(&l.raw_id);
        return Line::from(Span::styled(
            format!("held by session {pid} while it lasts · lock {key}"),
            theme::dim(),
        ));
    }
    if e.scheme.facts().held == crate::model::Held::Expiry {
        // A token in a key (Redis): its time left, the key's own countdown, is the TTL
        // column; without one it never expires.
        let (hold, style) = match l.ttl {
            Some(_) => ("held until its PTTL ends", theme::dim()),
            None => ("NO EXPIRY: held until deleted", theme::warn()),
        };
        let key = cut_display(&l.key, room);
        return Line::from(Span::styled(format!("{hold} · key {key}"), style));
    }
    if l.lease.is_none() && l.stamp.is_none() {
        // A term counted from when its renewal was seen (a Lease): the TTL column is it.
        let key = cut_display(&l.key, room);
        return Line::from(Span::styled(format!("key {key}"), theme::dim()));
    }
    let hold = match l.lease {
        Some(0) => "NO LEASE: never expires ".to_string(),
        Some(lease) => format!("lease {lease:x} "),
        None => format!(
            "until {} ",
            l.stamp
                .as_deref()
                .map_or("?".into(), crate::model::format::stamp)
        ),
    };
    let at = match l.lease {
        Some(_) => format!(
            "rev {}/{} key {}",
            l.create_revision,
            l.mod_revision,
            cut_display(&l.key, room)
        ),
        None => format!("row {}", cut_display(&l.key, room)),
    };
    let hold_style = if l.zombie() {
        theme::warn()
    } else {
        theme::dim()
    };
    Line::from(vec![
        Span::styled(hold, hold_style),
        Span::styled(at, theme::dim()),
    ])
}

/// A deposed leader whose lease still runs, in place of the key line: it matters more.
fn deposed_line(d: &crate::model::Candidate, at: std::time::Instant, room: usize) -> Line<'static> {
    Line::from(Span::styled(
        format!(
            "⚠ deposed {} may still believe it leads (lease alive, {} left)",
            cut_display(&d.id, room),
            d.ttl
                .map(|t| format::duration_ms(t.remaining_ms_at(at)))
                .unwrap_or_else(|| "?".into())
        ),
        theme::warn(),
    ))
}

/// The line of candidates, scrolled, with rank, id, lease and TTL.
fn line_table(app: &App, e: &Election, frame: &mut Frame, line: Rect) {
    let stale = app.model.stale_for(e.source).is_some();
    let at = app.model.as_of(e.source);
    let rows_fit = line.height.saturating_sub(1) as usize;
    let total = e.candidates.len();
    let start = app.line_scroll.min(total.saturating_sub(rows_fit.max(1)));
    let rows = e
        .candidates
        .iter()
        .enumerate()
        .skip(start)
        .take(rows_fit)
        .map(|(i, c)| candidate_row(e, i, c, stale, at));
    // Counted as the table's LINE column counts: those waiting behind the leader.
    let title = if total > rows_fit {
        format!(
            "ID · {}-{} of {total}",
            start + 1,
            (start + rows_fit).min(total)
        )
    } else {
        match format::in_line(e) {
            Some(n) => format!("ID · {n}"),
            None => "ID".to_string(),
        }
    };
    // ZooKeeper: no lease and no deadline per node; the holder's session stands in the
    // TTL column (what the store says), the lease column is not drawn.
    let zk = e.scheme == crate::model::Scheme::ZkRecipe;
    let (lease_head, ttl_head) = if zk {
        ("", "SESSION")
    } else {
        ("LEASE", "TTL")
    };
    let table = Table::new(
        rows,
        [
            // The star and every digit of the last rank (1000+ in line).
            Constraint::Length(1 + total.max(1).to_string().len().max(3) as u16),
            Constraint::Fill(1),
            // The lease column only where it leaves the id room to be read; Patroni's
            // members' own account says more than their lease ids, so it takes the room.
            Constraint::Length(if line.width >= 64 && e.members.is_empty() && !zk {
                16
            } else {
                0
            }),
            Constraint::Length(if zk { 18 } else { 12 }),
        ],
    )
    .header(Row::new(["#", title.as_str(), lease_head, ttl_head]).style(theme::header()))
    .column_spacing(1);
    frame.render_widget(table, line);
}

fn candidate_row(
    e: &Election,
    i: usize,
    c: &crate::model::Candidate,
    stale: bool,
    at: std::time::Instant,
) -> Row<'static> {
    let mark = if i == 0 && e.leader.is_some() {
        "★"
    } else {
        " "
    };
    let ttl_style = match (&c.ttl, c.zombie()) {
        _ if stale => theme::dim(),
        (_, true) => theme::warn(),
        (Some(d), _) => theme::ttl(d.ratio_at(at)),
        (None, _) => theme::dim(),
    };
    let rank_style = if c.zombie() {
        theme::warn()
    } else {
        theme::dim()
    };
    Row::new(vec![
        Cell::from(format!("{mark}{}", i + 1)).style(rank_style),
        Cell::from(match e.member(&c.id) {
            // Patroni: the member's own account beside its name.
            Some(m) => cut_display(&format!("{} · {}", c.id, m.summary()), 60),
            None => cut_display(&c.id, 40),
        }),
        Cell::from(match c.lease {
            Some(0) => "none".to_string(),
            Some(l) => format!("{l:x}"),
            None => String::new(),
        }),
        // ZooKeeper: the session that holds the node, under SESSION.
        Cell::from(Span::styled(
            match (e.scheme, &c.stamp) {
                (crate::model::Scheme::ZkRecipe, Some(session)) => session.clone(),
                _ => format::hold_cell(e.scheme, c, at, 5),
            },
            ttl_style,
        )),
    ])
}

fn history(app: &App, e: &Election, frame: &mut Frame, area: Rect) {
    // A store that keeps no history (ZooKeeper): what is here was seen since electop connected.
    let since = app
        .model
        .sources
        .get(e.source)
        .and_then(|s| s.history_since)
        .map(time::clock);
    // The stretches no electop watched, from its own record of earlier runs: in the list.
    let gaps = app
        .model
        .sources
        .get(e.source)
        .map_or(&[][..], |s| &s.history_gaps[..]);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(border(app, Focus::History))
        .title(format!(
            " History · {}{} ",
            format::count(e.transitions as usize, "change", "changes"),
            since
                .as_ref()
                .map(|t| format!(" since {t}"))
                .unwrap_or_default()
        ));
    let rows_fit = area.height.saturating_sub(2) as usize;
    let width = area.width.saturating_sub(2) as usize;
    let lines: Vec<Line> = with_gaps(e, gaps)
        .skip(app.history_scroll)
        .take(rows_fit)
        .flat_map(|item| match item {
            Ok(h) => history_lines(h, width),
            Err(g) => vec![Line::from(Span::styled(
                cut_display(&format!("  ┄ {}", g.describe()), width),
                theme::dim(),
            ))],
        })
        .collect();
    let body = if lines.is_empty() {
        let text = match &since {
            Some(t) => format!(
                "no leader changes since {t}, when electop connected (ZooKeeper keeps no history)"
            ),
            None => "no leader changes seen".to_string(),
        };
        vec![Line::from(Span::styled(text, theme::dim()))]
    } else {
        lines
    };
    // Wrapping is the last resort for a pane too narrow for even cut names and the cause.
    frame.render_widget(
        Paragraph::new(body)
            .block(block)
            .wrap(ratatui::widgets::Wrap { trim: false }),
        area,
    );
}

/// The history newest first, each gap (`Err`) where it falls among the changes: a change
/// after it was seen by a later run, one before it by an earlier.
fn with_gaps<'a>(
    e: &'a Election,
    gaps: &'a [HistoryGap],
) -> impl Iterator<Item = Result<&'a HistoryEntry, &'a HistoryGap>> {
    let mut gaps = gaps.iter().rev().peekable();
    let mut out = Vec::new();
    for h in e.history.iter().rev() {
        while let Some(g) = gaps.next_if(|g| h.at.is_some_and(|at| at < g.to)) {
            out.push(Err(g));
        }
        out.push(Ok(h));
    }
    out.extend(gaps.map(Err));
    out.into_iter()
}

/// Names are cut no shorter than this; below it the cause goes to a line of its own.
const NAME_MIN: usize = 8;

/// `11:05:25 node-z → node-a lease_revoked`: the names give way so the cause is never cut,
/// and where they would become unreadable the cause takes the next line.
pub(super) fn history_lines(h: &crate::model::HistoryEntry, width: usize) -> Vec<Line<'static>> {
    // A change replayed from the store's past has no time: its revision, as elsewhere.
    let when = match h.at {
        Some(at) => time::clock(at),
        None => format!("rev {}", h.revision.unwrap_or(0)),
    };
    let cause = h.cause.as_str();
    let name = |x: &Option<String>| x.clone().unwrap_or_else(|| "∅".into());
    let (from, to) = (name(&h.from), name(&h.to));
    let (fl, tl) = (from.chars().count(), to.chars().count());
    // The time (8 at least) and a space, 3 for the arrow, 1 before the cause.
    let w = when.chars().count().max(8) + 1;
    let room = width.saturating_sub(w + 3 + 1 + cause.chars().count());
    let (fw, tw) = share(fl, tl, room);
    let own_line = fw < fl.min(NAME_MIN) || tw < tl.min(NAME_MIN);
    let (fw, tw) = if own_line {
        share(fl, tl, width.saturating_sub(w + 3))
    } else {
        (fw, tw)
    };
    let to_style = if h.to.is_some() {
        theme::leader()
    } else {
        theme::no_leader()
    };
    let mut first = vec![
        Span::styled(format!("{when:>8} "), theme::dim()),
        // Cut in the middle: two workers' ids often differ only at their end (the pid).
        Span::raw(format!("{} → ", cut_middle(&from, fw))),
        Span::styled(cut_middle(&to, tw), to_style),
    ];
    let cause = Span::styled(format!(" {cause}"), theme::dim());
    if own_line {
        let indent = Span::raw(" ".repeat(8));
        vec![Line::from(first), Line::from(vec![indent, cause])]
    } else {
        first.push(cause);
        vec![Line::from(first)]
    }
}

/// Splits `room` between two names: the shorter whole if it fits in half, the longer the
/// rest; never below 4 each (the line wraps then).
fn share(a: usize, b: usize, room: usize) -> (usize, usize) {
    if a + b <= room {
        return (a, b);
    }
    let half = room / 2;
    let (a, b) = if a <= half {
        (a, room - a)
    } else if b <= half {
        (room - b, b)
    } else {
        (half, room - half)
    };
    (a.max(4), b.max(4))
}
