//! The rows the table draws are the rows the runtime counts as in view (`ui::table_rows`
//! against `app::frames`): here, in the layer that may use both.

use std::time::{Instant, SystemTime};

use crate::app::frames::{drawn, rows_show};
use crate::app::{App, Msg, update};
use crate::model::{Election, Scheme, SourceEvent, SourceInfo};

fn election(name: &str) -> Election {
    Election::new(0, name.into(), Scheme::EtcdElection)
}

fn changed(app: &mut App, elections: Vec<Election>) {
    let ev = SourceEvent::Elections {
        source: 0,
        elections,
    };
    update(app, Msg::Source(ev));
}

/// 100 elections e000..e099, sorted by name, events deferred to the frame's tick as the
/// runtime keeps them, and one frame of 10 rows drawn.
fn app() -> App {
    let mut app = App::new(
        vec![SourceInfo::test_etcd()],
        Instant::now(),
        SystemTime::now(),
    );
    app.rows_index.defer = true;
    changed(
        &mut app,
        (0..100).map(|i| election(&format!("e{i:03}"))).collect(),
    );
    let (now, wall) = (app.model.now, app.model.wall);
    update(&mut app, Msg::Tick { now, wall });
    drawn(&mut app, 10);
    app
}

/// The rows the table draws are the rows in view: on a wide terminal the table takes the
/// whole height beside the detail (45 rows at 200x50, not the 16 of the narrow layout's
/// share), so a change in its 30th row asks for a frame at once, not at the next tick.
#[test]
fn every_row_the_table_draws_is_in_view_on_a_wide_terminal_and_a_narrow_one() {
    for (width, height, fit) in [(200, 50, 45), (100, 50, 16)] {
        let mut app = app();
        update(&mut app, Msg::Resize { width, height });
        let rows = super::table_rows(width, height);
        assert_eq!(rows, fit, "{width}x{height}");
        let backend = ratatui::backend::TestBackend::new(width, height);
        let mut term = ratatui::Terminal::new(backend).expect("terminal");
        term.draw(|f| super::view(&app, f)).expect("draw");
        let screen = format!("{:?}", term.backend().buffer());
        let name = |i: usize| format!("e{i:03}");
        assert!(
            screen.contains(&name(rows - 1)),
            "{width}x{height}: last row drawn"
        );
        assert!(
            !screen.contains(&name(rows)),
            "{width}x{height}: one more not drawn"
        );
        drawn(&mut app, rows);
        changed(&mut app, vec![election(&name(rows - 1))]);
        let (now, wall) = (app.model.now, app.model.wall);
        update(&mut app, Msg::Tick { now, wall });
        assert!(
            rows_show(&app, rows),
            "{width}x{height}: the last row in view"
        );
    }
}
