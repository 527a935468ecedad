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
    /// Close the open overlay (or quit when none is open).
    Back,
}
