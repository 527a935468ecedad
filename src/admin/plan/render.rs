//! The plan in words: what the confirmation (dashboard and CLI) lists under "will write",
//! each step in its store's words ([`StoreStep`](super::StoreStep)).

use std::fmt;

use super::{Check, Compare, Plan};

impl Plan {
    /// One line per store operation, as it will be sent, then what the store does after.
    pub fn writes(&self) -> Vec<String> {
        let mut lines: Vec<String> = self.steps.iter().map(|s| s.line()).collect();
        lines.extend(self.then.as_ref().map(|t| format!("then {t}")));
        lines
    }

    /// The same operations for the details view, each as lines: a step that compares
    /// several things lists them one to a line, so what every write is compared on reads
    /// down the page.
    pub fn writes_in_lines(&self) -> Vec<Vec<String>> {
        let mut out: Vec<Vec<String>> = self.steps.iter().map(|s| s.lines()).collect();
        out.extend(self.then.as_ref().map(|t| vec![format!("then {t}")]));
        out
    }
}

/// A compare in revision words (`create_revision(k) == 5`); a store that counts otherwise
/// words its own first.
impl fmt::Display for Compare {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let k = &self.key.shown;
        match &self.check {
            Check::CreateRevision(r) => write!(f, "create_revision({k}) == {r}"),
            Check::ModRevision(r) => write!(f, "mod_revision({k}) == {r}"),
            Check::Value(_, shown) => write!(f, "value({k}) == {shown}"),
            Check::Lease(l) => write!(f, "lease({k}) == {l:x}"),
            Check::Absent => write!(f, "{k} is absent"),
        }
    }
}

/// A step's compares for the details view: the first under its heading, each next one
/// after `and`, one to a line.
pub fn compares_in_lines(compares: impl IntoIterator<Item = String>) -> Vec<String> {
    compares
        .into_iter()
        .enumerate()
        .map(|(i, c)| format!("{}{c}", if i == 0 { "  " } else { "  and " }))
        .collect()
}
