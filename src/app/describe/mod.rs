//! The detail view (`Enter`, like k9s' describe): everything the model has about one
//! election, as plain lines with a tone for each part, so the view only styles them and the
//! scroll can be bounded here without a terminal. Copying (`y`, `Y`) asks the runtime to
//! hand text to the terminal's clipboard.

mod history;

use super::rows::Key;
use super::{Action, App, Flash};
use crate::model::time::{clock, duration_ms};
use crate::model::{Candidate, Election};
use history::history;

/// The election on show and how far it is scrolled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Describe {
    /// Kept by key, not row: the rows re-sort under it.
    pub key: Key,
    /// First line shown.
    pub scroll: usize,
}

/// What a part of a line is, for the view to style.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tone {
    Label,
    Text,
    Leader,
    Dim,
    Warn,
    Bad,
    Heading,
}

pub(crate) type DLine = Vec<(Tone, String)>;

/// Width of the label column.
const LABEL: usize = 12;
/// Characters of a value shown at most: a 1 MiB value says its size and shows this much.
pub(crate) const VALUE_SHOWN: usize = 4096;

fn field(label: &str, tone: Tone, text: String) -> DLine {
    vec![(Tone::Label, format!("{label:<LABEL$}")), (tone, text)]
}

/// `text` whole, over as many lines as it takes at `width`, the first under `label`.
fn wrapped(label: &str, tone: Tone, text: &str, width: usize) -> Vec<DLine> {
    let room = width.saturating_sub(LABEL).max(8);
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return vec![field(label, Tone::Dim, "(empty)".into())];
    }
    chars
        .chunks(room)
        .enumerate()
        .map(|(i, chunk)| {
            let label = if i == 0 { label } else { "" };
            field(label, tone, chunk.iter().collect())
        })
        .collect()
}

fn heading(text: String) -> DLine {
    vec![(Tone::Heading, text)]
}

/// Every line of the detail of `e`, at `width` columns.
#[cfg(test)]
pub(crate) fn lines(app: &App, e: &Election, width: usize) -> Vec<DLine> {
    window(app, e, width, 0, usize::MAX)
}

/// How many lines the detail of `e` has at `width` columns, without making them all.
pub(crate) fn len(app: &App, e: &Election, width: usize) -> usize {
    head(app, e, width).len() + 2 + e.candidates.len() + 1 + history(app, e).len()
}

/// `count` lines of the detail from line `start`: only the candidates in view are made, so
/// a line of thousands costs a screenful per frame.
pub(crate) fn window(
    app: &App,
    e: &Election,
    width: usize,
    start: usize,
    count: usize,
) -> Vec<DLine> {
    let end = start.saturating_add(count);
    let mut out = Vec::new();
    let mut at = 0;
    let section = |lines: Vec<DLine>, at: &mut usize, out: &mut Vec<DLine>| {
        let n = lines.len();
        out.extend(
            lines
                .into_iter()
                .enumerate()
                .filter(|(i, _)| (start..end).contains(&(*at + i)))
                .map(|(_, l)| l),
        );
        *at += n;
    };
    section(head(app, e, width), &mut at, &mut out);
    let line = CandidateColumns::new(app, e);
    section(line.header(e), &mut at, &mut out);
    let n = e.candidates.len();
    let (from, to) = (start.max(at).min(at + n), end.min(at + n).max(at));
    out.extend((from..to).map(|i| line.row(e, i - at)));
    at += n;
    let mut tail = vec![Vec::new()];
    tail.extend(history(app, e));
    section(tail, &mut at, &mut out);
    out
}

/// Everything above the line of candidates.
fn head(app: &App, e: &Election, width: usize) -> Vec<DLine> {
    let mut out = vec![field("Election", Tone::Text, e.name.clone())];
    out.push(field("Scheme", Tone::Text, e.scheme.to_string()));
    if let Some(s) = app.model.sources.get(e.source) {
        let ro = if s.info.read_only {
            " · read-only"
        } else {
            ""
        };
        out.push(field(
            "Source",
            Tone::Text,
            format!("{} · {}{ro}", s.info.short, s.info.name),
        ));
        if let Some(age) = s.stale_for(app.model.now) {
            out.push(field(
                "",
                Tone::Warn,
                format!("STALE: no contact for {}s", age.as_secs()),
            ));
        }
    }
    out.push(alarms(app, e));
    out.extend(leader(app, e, width));
    let lease_left = |d: &crate::model::Candidate| {
        let lease = d.lease.map_or_else(|| "?".into(), |l| format!("{l:x}"));
        let left = d.ttl.map_or_else(
            || "?".into(),
            |t| duration_ms(t.remaining_ms_at(app.model.as_of(e.source))),
        );
        format!("lease {lease}, {left} left")
    };
    if let Some(d) = &e.deposed
        && let Some(session) = e.deposed_session_text(false)
    {
        // ZooKeeper: no lease to count down, its session (which may be long to say) instead.
        let text = format!(
            "{} may still believe it leads (removed by an admin action)",
            d.id
        );
        out.push(field("Deposed", Tone::Warn, text));
        out.extend(wrapped("", Tone::Warn, &session, width));
        out.extend(wrapped("", Tone::Dim, &d.key, width));
    } else if let Some(d) = &e.deposed {
        let text = format!(
            "{} may still believe it leads (removed by an admin action; {})",
            d.id,
            lease_left(d)
        );
        out.push(field("Deposed", Tone::Warn, text));
        out.extend(wrapped("", Tone::Dim, &d.key, width));
    }
    if let Some(h) = e.hold_at(app.model.as_of(e.source)) {
        let left = h.left_ms.map_or_else(|| "?".into(), duration_ms);
        let next = h
            .next
            .map_or_else(String::new, |n| format!("; {n} leads then"));
        let text = format!(
            "{}: nobody leads until the hold ends, in {left}{next}",
            h.action
        );
        out.push(field("Held", Tone::Warn, text));
    }
    if let Some(r) = &e.resigned {
        let text = format!(
            "{} removed its own key; its lease lives on ({})",
            r.id,
            lease_left(r)
        );
        out.push(field("Resigned", Tone::Dim, text));
    }
    for n in e.notes.iter().filter(|n| !n.text.is_empty()) {
        out.push(field("Note", Tone::Warn, format!("{}: {}", n.name, n.text)));
    }
    out.push(Vec::new());
    out
}

fn alarms(app: &App, e: &Election) -> DLine {
    let row = app
        .rows
        .iter()
        .find(|r| r.key.0 == e.source && r.key.1 == e.name);
    match row.map(|r| r.alarms) {
        Some(a) if a.is_empty() => field("Alarms", Tone::Dim, "none".into()),
        Some(a) => {
            let names: Vec<String> = a
                .iter()
                .map(|x| format!("{} {}", x.glyph(), x.code()))
                .collect();
            field("Alarms", Tone::Bad, names.join("  "))
        }
        None => field("Alarms", Tone::Dim, "(hidden by the filter)".into()),
    }
}

/// The leader's id, key, value, lease, TTL and revisions (etcd) or row (SQL).
fn leader(app: &App, e: &Election, width: usize) -> Vec<DLine> {
    let Some(l) = &e.leader else {
        let text = if app.model.idle_is_normal(e.source) {
            "idle: no holder between runs, which is normal here".to_string()
        } else {
            match e.no_leader_since() {
                Some(t) => format!("none since {}", clock(t)),
                None => "none".into(),
            }
        };
        return vec![field("Leader", Tone::Bad, text)];
    };
    let mut out = vec![field(
        "Leader",
        Tone::Leader,
        crate::model::cut_display(&l.id, width.saturating_sub(LABEL).max(8)),
    )];
    out.extend(wrapped("Key", Tone::Text, &l.key, width));
    // A session lock's holder is a session, not a value written anywhere.
    if !e.scheme.is_session_lock() {
        out.extend(value(l, width));
    }
    out.extend(lease_and_ttl(app, e, l));
    out
}

/// The value (the leader's id as stored), whole when it is small, else its size and a
/// bounded part: the view scrolls through it.
fn value(l: &Candidate, width: usize) -> Vec<DLine> {
    let size = l.raw_id.len();
    let shown: String = l.id.chars().take(VALUE_SHOWN).collect();
    let mut out = vec![field(
        "Value",
        Tone::Dim,
        format!(
            "{size} bytes{}",
            if shown.len() < l.id.len() {
                format!(", first {VALUE_SHOWN} characters (escaped) shown")
            } else {
                String::new()
            }
        ),
    )];
    out.extend(wrapped("", Tone::Text, &shown, width));
    out
}

fn lease_and_ttl(app: &App, e: &Election, l: &Candidate) -> Vec<DLine> {
    let at = app.model.as_of(e.source);
    let mut out = Vec::new();
    match l.lease {
        Some(0) => out.push(field(
            "Lease",
            Tone::Warn,
            "none: the key never expires (zombie)".into(),
        )),
        Some(lease) => out.push(field(
            "Lease",
            Tone::Text,
            format!("{lease:x} (hex) · {lease} (decimal)"),
        )),
        None => {}
    }
    if e.scheme == crate::model::Scheme::ZkRecipe {
        out.extend(zk_holder(l));
        return out;
    }
    if e.scheme.is_session_lock() {
        // No term to count down: the lock is held while its session lasts.
        let told = e.member(&l.id).and_then(|m| m.state.clone());
        out.push(field(
            "Session",
            Tone::Text,
            told.unwrap_or_else(|| "held while its session lasts".into()),
        ));
        return out;
    }
    out.push(match &l.ttl {
        Some(d) => field(
            "TTL",
            Tone::Text,
            format!(
                "{} left of {} granted",
                duration_ms(d.remaining_ms_at(at)),
                duration_ms(d.granted_ms)
            ),
        ),
        None if l.zombie() => field("TTL", Tone::Warn, "∞".into()),
        None => field("TTL", Tone::Dim, "not read yet".into()),
    });
    if e.scheme.is_sql() {
        out.push(field(
            "Row",
            Tone::Text,
            format!(
                "key {} · holder {} · until {}",
                l.key,
                l.id,
                l.stamp
                    .as_deref()
                    .map_or("?".into(), crate::model::format::stamp)
            ),
        ));
    } else {
        out.push(field(
            "Revisions",
            Tone::Text,
            format!("create {} · mod {}", l.create_revision, l.mod_revision),
        ));
    }
    out
}

/// ZooKeeper's own account of the leader's node: the session holding it (no deadline per
/// node: it lives as long as that session) and the zxids of its creation and last change.
fn zk_holder(l: &Candidate) -> Vec<DLine> {
    vec![
        field(
            "Session",
            Tone::Text,
            format!(
                "{} (ephemeralOwner) · no deadline per node: it lives as long as this session",
                l.stamp.as_deref().unwrap_or("?")
            ),
        ),
        field(
            "Zxids",
            Tone::Text,
            format!(
                "czxid 0x{:x} · mzxid 0x{:x}",
                l.create_revision as u64, l.mod_revision as u64
            ),
        ),
    ]
}

/// The widths of the line of candidates, shared by its header and each row.
struct CandidateColumns {
    rank_w: usize,
    id_w: usize,
    revs_w: usize,
    /// The lease (etcd) or session (ZooKeeper, `0x` and 16 digits) column.
    lease_w: usize,
    at: std::time::Instant,
}

impl CandidateColumns {
    fn new(app: &App, e: &Election) -> CandidateColumns {
        // The widest id sets the column (bounded): counting chars is cheap even for
        // thousands, unlike making their lines.
        let id_w = e
            .candidates
            .iter()
            .map(|c| c.id.chars().count())
            .max()
            .unwrap_or(2)
            .clamp(2, 32);
        CandidateColumns {
            rank_w: e.candidates.len().max(1).to_string().len() + 1,
            id_w,
            // SQL rows have a deadline column where etcd keys have revisions.
            revs_w: match () {
                _ if e.scheme.is_sql() => 23,
                _ if e.scheme.is_session_lock() => 0,
                _ if e.scheme == crate::model::Scheme::ZkRecipe => 27,
                _ => 13,
            },
            lease_w: if e.scheme == crate::model::Scheme::ZkRecipe {
                18
            } else {
                16
            },
            at: app.model.as_of(e.source),
        }
    }

    fn header(&self, e: &Election) -> Vec<DLine> {
        let zk = e.scheme == crate::model::Scheme::ZkRecipe;
        let order = match () {
            _ if e.scheme.is_sql() => "",
            _ if e.scheme.is_session_lock() => ", in the order the server grants",
            _ if zk => ", lowest sequence number first",
            _ => ", lowest create revision first",
        };
        let revs = match () {
            _ if e.scheme.is_sql() => "UNTIL",
            _ if e.scheme.is_session_lock() => "",
            _ if zk => "CZXID/MZXID",
            _ => "CREATE/MOD",
        };
        // ZooKeeper: the holder's session where a lease would be.
        let lease_head = if zk { "SESSION" } else { "LEASE" };
        let CandidateColumns {
            rank_w,
            id_w,
            revs_w,
            lease_w,
            ..
        } = *self;
        vec![
            heading(match (crate::model::format::in_line(e), &e.leader) {
                (Some(line), Some(_)) => format!("Candidates · {line} behind the leader{order}"),
                (Some(line), None) => format!("Candidates · {line}, no leader{order}"),
                (None, _) => format!("Candidates{order}"),
            }),
            vec![(
                Tone::Dim,
                format!(
                    "{:>rank_w$}  {:<id_w$}  {:<lease_w$}  {:<8}  {revs:<revs_w$}  KEY",
                    "#", "ID", lease_head, "TTL"
                ),
            )],
        ]
    }

    /// Candidate `i`: rank, id, lease, TTL, revisions (or deadline), key, and what the
    /// store says of it (Patroni's member state).
    fn row(&self, e: &Election, i: usize) -> DLine {
        let Some(c) = e.candidates.get(i) else {
            return Vec::new();
        };
        let leads = i == 0 && e.leader.is_some();
        let zk = e.scheme == crate::model::Scheme::ZkRecipe;
        let lease = match c.lease {
            Some(0) => "none".to_string(),
            Some(l) => format!("{l:x}"),
            None if zk => c.stamp.clone().unwrap_or_default(),
            None => String::new(),
        };
        let ttl = match (&c.ttl, c.zombie()) {
            (_, true) => "∞".to_string(),
            (Some(d), _) => duration_ms(d.remaining_ms_at(self.at)),
            // No deadline per node (or session lock): nothing to count down.
            (None, _) if zk || e.scheme.is_session_lock() => {
                crate::model::format::NO_TTL.to_string()
            }
            (None, _) => "…".to_string(),
        };
        let revs = match () {
            _ if e.scheme.is_sql() => c.stamp.clone().unwrap_or_default(),
            _ if e.scheme.is_session_lock() => String::new(),
            _ if zk => format!(
                "0x{:x}/0x{:x}",
                c.create_revision as u64, c.mod_revision as u64
            ),
            _ => format!("{}/{}", c.create_revision, c.mod_revision),
        };
        let (rank_w, id_w, revs_w, lease_w) = (self.rank_w, self.id_w, self.revs_w, self.lease_w);
        let id = crate::model::cut_display(&c.id, id_w);
        let member = e
            .member(&c.id)
            .map(|m| format!("  {}", m.summary()))
            .unwrap_or_default();
        vec![
            (
                if c.zombie() { Tone::Warn } else { Tone::Dim },
                format!(
                    "{}{:>w$}",
                    if leads { "★" } else { " " },
                    i + 1,
                    w = rank_w - 1
                ),
            ),
            (
                if leads { Tone::Leader } else { Tone::Text },
                format!("  {id:<id_w$}"),
            ),
            (
                Tone::Dim,
                format!(
                    "  {lease:<lease_w$}  {ttl:<8}  {revs:<revs_w$}  {}{member}",
                    c.key
                ),
            ),
        ]
    }
}

/// The election on show, if it is still known.
pub(crate) fn election(app: &App) -> Option<&Election> {
    app.describe
        .as_ref()
        .and_then(|d| app.model.elections.get(&d.key))
}

/// Lines the detail view has room for: the terminal less the header, status and borders.
fn page(app: &App) -> usize {
    (app.size.1 as usize).saturating_sub(4 + STRIP_LINES).max(1)
}

/// Lines above the scrolled detail: the election's strip over the timeline's window.
pub(crate) const STRIP_LINES: usize = 1;

/// A key while the detail view is open: `Some(redraw)` when it was the view's, `None` for
/// the dashboard's own handling (copy, help, quit, admin actions).
pub(crate) fn on_action(app: &mut App, action: Action) -> Option<bool> {
    let d = app.describe.as_ref()?;
    let len = election(app)
        .map(|e| len(app, e, (app.size.0 as usize).saturating_sub(2)))
        .unwrap_or(0);
    let max = len.saturating_sub(page(app));
    let page = page(app) as isize;
    let delta = match action {
        Action::Up => -1,
        Action::Down => 1,
        Action::PageUp => -page,
        Action::PageDown => page,
        Action::Top => -(isize::MAX / 2),
        Action::Bottom => isize::MAX / 2,
        Action::Back | Action::Describe => {
            app.describe = None;
            return Some(true);
        }
        // The detail's strip: the same window as the timeline view's.
        a if crate::app::timeline::is_strip_key(a) => {
            return Some(app.timeline.on_action(a, app.model.wall));
        }
        Action::CopyLeader
        | Action::CopyKey
        | Action::ToggleHelp
        | Action::ToggleMembers
        | Action::Quit
        | Action::ForceLeader
        | Action::Reelect
        | Action::Resign => return None,
        // The dashboard's bars, views and table keys: the detail gives way to them, as k9s
        // leaves a describe for `:`, rather than swallowing the key.
        Action::StartFilter
        | Action::StartCommand
        | Action::ToggleEvents
        | Action::ToggleTimeline
        | Action::CycleSort
        | Action::SortBy(_)
        | Action::FocusNext
        | Action::FocusPrev => {
            app.describe = None;
            return None;
        }
        _ => return Some(false),
    };
    let before = d.scroll;
    let scroll = d.scroll.saturating_add_signed(delta).min(max);
    if let Some(d) = app.describe.as_mut() {
        d.scroll = scroll;
    }
    Some(scroll != before)
}

/// Opens the detail of the selected election.
pub(crate) fn open(app: &mut App) {
    if app.screen == super::Screen::Events {
        return;
    }
    match app.rows.get(app.selected) {
        Some(r) => {
            app.describe = Some(Describe {
                key: r.key.clone(),
                scroll: 0,
            })
        }
        None => app.say(Flash::error("no election selected")),
    }
}

/// `y`: the leader's id; `Y`: its key. Of the election on show, else the selected one. The
/// text is what the screen shows (escaped), never a raw byte that could drive the terminal
/// it is pasted into.
pub(crate) fn copy(app: &mut App, key: bool) {
    let e = election(app).or_else(|| app.selected_election());
    let Some(e) = e else {
        app.say(Flash::error("nothing to copy: no election selected"));
        return;
    };
    let Some(l) = &e.leader else {
        let name = e.name.clone();
        app.say(Flash::error(&format!(
            "nothing to copy: {name} has no leader"
        )));
        return;
    };
    let (what, text) = if key {
        ("key", l.key.clone())
    } else {
        ("leader id", l.id.clone())
    };
    let shown = crate::model::cut_display(&text, 40);
    app.effects.push(super::Effect::Copy(text));
    app.say(Flash::info(&format!(
        "copied {what} {shown} to the clipboard (OSC 52: the terminal must allow it)"
    )));
}

#[cfg(test)]
mod tests;
