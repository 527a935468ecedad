//! Whether a frame is needed after the rows settle: a store changing a thousand times a
//! second changes mostly elections that are not on screen, and drawing the whole screen for
//! those is most of what the dashboard would spend.

use super::App;
use super::rows::Key;

/// What the last frame showed of the elections: the rows in view, the selection and the
/// counts in the header and the table's title.
#[derive(Clone, Debug, Default)]
pub struct Drawn {
    window: Vec<Key>,
    selected: usize,
    rows: usize,
    elections: usize,
    alarms: [usize; crate::app::alarm::Alarm::ALL.len()],
}

fn now_showing(app: &App, rows: usize) -> Drawn {
    Drawn {
        window: app.rows_in_view(rows).map(|r| r.key.clone()).collect(),
        selected: app.selected,
        rows: app.rows.len(),
        elections: app.model.elections.len(),
        alarms: app.model.alarm_counts(),
    }
}

/// Whether the rows in view, the selection or the counts differ from the last frame's,
/// compared in place: this runs at every frame slot, drawn or not.
fn moved(app: &App, rows: usize) -> bool {
    let d = &app.drawn;
    d.selected != app.selected
        || d.rows != app.rows.len()
        || d.elections != app.model.elections.len()
        || d.alarms != app.model.alarm_counts()
        || !app.rows_in_view(rows).map(|r| &r.key).eq(d.window.iter())
}

/// After a settle, with nothing else changed: whether what settled shows. It does when an
/// election settled since the last frame is in view, selected or in the detail view, or
/// when the rows in view, the selection or the counts moved. `rows`: the table's rows.
pub(crate) fn rows_show(app: &App, rows: usize) -> bool {
    let idx = &app.rows_index;
    if idx.settled_all {
        return true;
    }
    if idx.settled.is_empty() {
        return false;
    }
    // The timeline view shows more rows than the table: any change may be among them.
    if app.screen == super::Screen::Timeline {
        return true;
    }
    let on_screen = |k: &Key| idx.settled.contains(k);
    let described = app.describe.as_ref().is_some_and(|d| on_screen(&d.key));
    let selected = app
        .rows
        .get(app.selected)
        .is_some_and(|r| on_screen(&r.key));
    described || selected || app.rows_in_view(rows).any(|r| on_screen(&r.key)) || moved(app, rows)
}

/// A frame was drawn: remembers what it showed, and that nothing settled is unshown.
pub(crate) fn drawn(app: &mut App, rows: usize) {
    app.drawn = now_showing(app, rows);
    app.rows_index.settled.clear();
    app.rows_index.settled_all = false;
}

#[cfg(test)]
mod tests {
    use std::time::{Instant, SystemTime};

    use super::*;
    use crate::app::{Action, Msg, update};
    use crate::model::{Election, Scheme, SourceEvent, SourceInfo};

    const ROWS: usize = 10;

    /// 100 elections e000..e099, sorted by name, the first 10 in view, as the runtime keeps
    /// them (events deferred to the frame's tick), and one frame drawn.
    fn app() -> App {
        let mut app = App::new(
            vec![SourceInfo::test_etcd()],
            Instant::now(),
            SystemTime::now(),
        );
        app.rows_index.defer = true;
        let elections = (0..100).map(|i| election(&format!("e{i:03}"))).collect();
        changed(&mut app, elections);
        frame(app)
    }

    fn election(name: &str) -> Election {
        Election::new(0, name.into(), Scheme::EtcdElection)
    }

    /// Elections as an event brings them: whether the event alone asks for a frame.
    fn changed(app: &mut App, elections: Vec<Election>) -> bool {
        let ev = SourceEvent::Elections {
            source: 0,
            elections,
        };
        update(app, Msg::Source(ev)).redraw
    }

    /// The frame's tick: whether the settled rows show.
    fn tick(app: &mut App) -> bool {
        let (now, wall) = (app.model.now, app.model.wall);
        update(app, Msg::Tick { now, wall });
        rows_show(app, ROWS)
    }

    fn frame(mut app: App) -> App {
        assert!(tick(&mut app), "the first rows show");
        drawn(&mut app, ROWS);
        app
    }

    #[test]
    fn a_change_off_screen_needs_no_frame_one_in_view_or_selected_does() {
        let mut app = app();
        assert!(
            !changed(&mut app, vec![election("e050")]),
            "known at the tick"
        );
        assert!(app.rows_index.pending(&app.model));
        assert!(!tick(&mut app), "e050 is not in view");
        assert!(!app.rows_index.pending(&app.model), "settled all the same");
        assert!(!changed(&mut app, vec![election("e003")]));
        assert!(tick(&mut app), "e003 is in view");
        drawn(&mut app, ROWS);
        assert!(!tick(&mut app), "nothing new since that frame");
        update(&mut app, Msg::Action(Action::Bottom));
        drawn(&mut app, ROWS);
        changed(&mut app, vec![election("e099")]);
        assert!(tick(&mut app), "the selected election");
        drawn(&mut app, ROWS);
        changed(&mut app, vec![election("e003")]);
        assert!(!tick(&mut app), "e003 scrolled out of view");
    }

    #[test]
    fn a_new_election_off_screen_changes_the_counts_and_the_view_moves_with_it() {
        let mut app = app();
        changed(&mut app, vec![election("z-new")]);
        assert!(tick(&mut app), "the header's count and the title's total");
        drawn(&mut app, ROWS);
        // One sorted in above the view shifts the rows in view.
        changed(&mut app, vec![election("a-new")]);
        assert!(tick(&mut app), "the rows in view moved");
    }

    #[test]
    fn the_detail_view_shows_its_election_wherever_its_row_is() {
        let mut app = app();
        update(&mut app, Msg::Action(Action::Describe));
        let key = app.describe.as_ref().map(|d| d.key.clone());
        assert_eq!(key, Some((0, "e000".to_string())));
        // The detail view stays on e000 while the selection below it moves to the end.
        app.selected = 99;
        drawn(&mut app, ROWS);
        changed(&mut app, vec![election("e000")]);
        assert!(tick(&mut app), "e000 is in the detail view");
    }

    #[test]
    fn a_revision_alone_waits_for_the_next_frame_when_deferred() {
        let mut app = app();
        let rev = |app: &mut App, revision| {
            update(
                app,
                Msg::Source(SourceEvent::Revision {
                    source: 0,
                    revision,
                }),
            )
            .redraw
        };
        assert!(!rev(&mut app, 42));
        assert_eq!(
            app.model.sources[0].revision,
            Some(42),
            "shown at the next frame"
        );
        app.rows_index.defer = false;
        assert!(
            rev(&mut app, 43),
            "status and watch draw nothing: they ask at once"
        );
    }
}
