//! The real binary, in tmux, against a real etcd: a destructive action is never confirmed
//! by a key that also chooses. `F`, Enter picks the new leader; a second Enter (typed on
//! from the picker) is no answer: the confirmation stays, says `y` is, and nothing is
//! written until `y`.

mod common;

use std::time::Duration;

use common::T;
use common::etcd::{EtcdServer, campaign_in_order};
use common::tmux::Tmux;

fn shell(home: &std::path::Path, args: &str) -> String {
    format!(
        "env RUST_BACKTRACE=0 XDG_CONFIG_HOME={h}/config XDG_DATA_HOME={h}/data {bin} {args}; echo ELECTOP-EXITED $?; sleep 60",
        h = home.display(),
        bin = common::electop::bin(),
    )
}

const TITLE: &str = "Force node-b to lead jobs";

#[test]
fn f_enter_enter_does_not_force_a_leader_only_y_does() {
    let etcd = EtcdServer::start();
    let [_a, mut b] = campaign_in_order(&etcd, "/tuiconfirm/jobs", ["node-a", "node-b"]);
    let home = common::scratch::tempdir();
    let args = format!("--etcd {} --prefix /tuiconfirm/", etcd.endpoint());
    let tmux = Tmux::start(100, 30, &shell(home.path(), &args));
    tmux.wait_screen("the election", T, |s| {
        s.contains("jobs") && s.contains("node-a") && s.contains("node-b")
    });

    // Typed in one go, as a hurried hand does.
    tmux.send(&["F", "Enter", "Enter"]);
    let screen = tmux.wait_screen("the confirmation, still open", T, |s| {
        s.contains(TITLE) && s.contains("Enter does not confirm")
    });
    assert!(
        screen.contains("y: do it") && !screen.contains("y/Enter"),
        "the keys say only y confirms:\n{screen}"
    );
    // More Enters are no answer either; nothing is sent meanwhile.
    tmux.send(&["Enter"]);
    std::thread::sleep(Duration::from_millis(700));
    let screen = tmux.capture();
    assert!(
        screen.contains(TITLE) && !screen.contains("done:"),
        "{screen}"
    );
    tmux.send(&["Escape"]);
    tmux.wait_screen("cancelled", T, |s| {
        !s.contains(TITLE) && s.contains("cancelled: nothing was written")
    });
    let audit = home.path().join("data/electop/audit.jsonl");
    assert!(
        std::fs::read_to_string(&audit)
            .unwrap_or_default()
            .is_empty(),
        "nothing was audited: nothing was written"
    );

    // The explicit answer does it.
    tmux.send(&["F", "Enter"]);
    tmux.wait_screen("the confirmation", T, |s| s.contains(TITLE));
    tmux.send(&["y"]);
    tmux.wait_screen("the outcome", T, |s| s.contains("done:"));
    assert!(b.wait_elected(Duration::from_secs(40)), "node-b takes over");
    tmux.send(&["q"]);
    tmux.wait_screen("exit", T, |s| s.contains("ELECTOP-EXITED 0"));
    let audit = std::fs::read_to_string(&audit).expect("audit log");
    assert!(
        audit.contains("\"action\":\"force-leader\"") && audit.contains("\"outcome\":\"done\""),
        "{audit}"
    );
}
