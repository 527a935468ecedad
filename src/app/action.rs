/// Everything a key can ask for. Only actions change the screen state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    Quit,
    Up,
    Down,
    PageUp,
    PageDown,
    Top,
    Bottom,
    /// Move focus between the elections table, the line of candidates and the history.
    FocusNext,
    FocusPrev,
    ToggleHelp,
    /// Show each member of the stores (like `etcdctl endpoint status`).
    ToggleMembers,
    /// Open the detail view of the selected election (`Enter`).
    Describe,
    /// Copy the leader's id to the terminal's clipboard (OSC 52).
    CopyLeader,
    /// Copy the leader's key to the terminal's clipboard (OSC 52).
    CopyKey,
    /// Close the open overlay or view, or clear the filter; never quits.
    Back,
    /// Admin: pick (or type) a new leader for the selected election.
    ForceLeader,
    /// Admin: force a re-election of the selected election.
    Reelect,
    /// Admin: make the selected election's leader resign.
    Resign,
    /// In a dialog: yes (`y`), the only answer that confirms; it also takes the highlighted
    /// candidate. In the `/` and `:` bars (Enter): keep the filter, run the command.
    Accept,
    /// In a dialog (Enter): take the highlighted candidate or the typed id. Never a yes: a
    /// confirmation asks for `y`, so an Enter typed on from the picker does not act.
    Choose,
    /// In a confirmation: open or close the details, the whole plan (`d`).
    Details,
    /// In a dialog: a typed character.
    Type(char),
    /// In a dialog: delete the last typed character.
    Erase,
    /// In the command bar: complete what is typed.
    Complete,
    /// Open the `/` filter bar.
    StartFilter,
    /// Open the `:` command bar.
    StartCommand,
    /// Sort the table by the next key.
    CycleSort,
    /// Sort the table by this key (again: reverse).
    SortBy(super::rows::SortKey),
    /// Open or close the events view.
    ToggleEvents,
    /// Open or close the timeline view: who led when.
    ToggleTimeline,
    /// The timeline's window: narrower (`+`) or wider (`-`).
    ZoomIn,
    ZoomOut,
    /// The timeline's window: back or forward in time, a tenth of it.
    PanLeft,
    PanRight,
    /// The timeline's cursor: an instant earlier or later.
    CursorLeft,
    CursorRight,
}
