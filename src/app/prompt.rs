//! The `/` filter and `:` command bar: what is typed, what it completes to, and what a
//! command means. Running a command is `update`'s business.

use super::rows::SortKey;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PromptKind {
    Filter,
    Command,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prompt {
    pub kind: PromptKind,
    pub text: String,
    /// Why what is typed cannot be used (a bad regex), shown beside it.
    pub error: Option<String>,
}

/// A parsed `:` command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum BarCommand {
    Sort(SortKey),
    Events,
    Timeline,
    Main,
    Members,
    Help,
    Quit,
    Reelect,
    Resign,
    ForceLeader(Option<String>),
    /// `:ctx NAME` switches; `:ctx` alone lists the contexts.
    Context(Option<String>),
}

/// Every command, with what it takes, for completion and the help.
pub(crate) const COMMANDS: &[(&str, &str, &str)] = &[
    (
        "sort",
        "alarms|name|leader|ttl|changes|line|rate|last",
        "sort the table (again: reverse)",
    ),
    ("events", "", "timeline of every change (v)"),
    ("timeline", "", "who led when, a strip per election (t)"),
    ("main", "", "back to the elections (Esc)"),
    ("members", "", "store members (e)"),
    ("help", "", "keys of this screen (?)"),
    (
        "reelect",
        "",
        "force a re-election of the selected election",
    ),
    ("resign", "", "make the selected leader resign"),
    ("force-leader", "[ID]", "force a leader (ID, or pick)"),
    ("ctx", "NAME", "switch context"),
    ("q", "", "quit"),
    ("quit", "", "quit"),
];

pub(crate) fn parse(text: &str) -> Result<BarCommand, String> {
    let mut words = text.split_whitespace();
    let Some(name) = words.next() else {
        return Err("type a command, Tab completes".to_string());
    };
    let arg = words.next().map(str::to_string);
    Ok(match (name, arg) {
        ("sort", Some(k)) => BarCommand::Sort(
            SortKey::from_name(&k)
                .ok_or_else(|| format!("sort by what? {}", sort_names().join(", ")))?,
        ),
        ("sort", None) => return Err(format!("sort by {}", sort_names().join("|"))),
        ("events" | "ev", _) => BarCommand::Events,
        ("timeline" | "tl", _) => BarCommand::Timeline,
        ("main" | "elections", _) => BarCommand::Main,
        ("members", _) => BarCommand::Members,
        ("help", _) => BarCommand::Help,
        ("q" | "quit" | "q!", _) => BarCommand::Quit,
        ("reelect", _) => BarCommand::Reelect,
        ("resign", _) => BarCommand::Resign,
        ("force-leader", id) => BarCommand::ForceLeader(id),
        ("ctx" | "context", n) => BarCommand::Context(n),
        (other, _) => return Err(format!("unknown command `{other}`; Tab lists them")),
    })
}

fn sort_names() -> Vec<&'static str> {
    SortKey::ALL.iter().map(|k| k.name()).collect()
}

/// What the text typed so far may become: whole command lines, for the bar to list. `ids` are
/// the arguments the state knows ([`super::App::completion_args`]): the selected election's
/// candidates for `force-leader`, the contexts for `ctx`.
pub(crate) fn completions(text: &str, ids: &[String]) -> Vec<String> {
    match text.split_once(' ') {
        None => COMMANDS
            .iter()
            .map(|(name, _, _)| *name)
            .filter(|n| n.starts_with(text))
            .map(str::to_string)
            .collect(),
        Some((cmd, arg)) => {
            let args: Vec<String> = match cmd {
                "sort" => sort_names().into_iter().map(str::to_string).collect(),
                "force-leader" | "ctx" | "context" => ids.to_vec(),
                _ => Vec::new(),
            };
            args.into_iter()
                .filter(|a| a.starts_with(arg.trim_start()))
                .map(|a| format!("{cmd} {a}"))
                .collect()
        }
    }
}

/// Tab: the one completion (with a space when an argument follows), else the longest prefix
/// the completions share.
pub(crate) fn complete(text: &str, ids: &[String]) -> String {
    let options = completions(text, ids);
    match options.as_slice() {
        [] => text.to_string(),
        [one] => {
            let takes_arg = COMMANDS
                .iter()
                .any(|(n, args, _)| n == one && !args.is_empty());
            if takes_arg {
                format!("{one} ")
            } else {
                one.clone()
            }
        }
        many => {
            let first = &many[0];
            let len = many.iter().fold(first.len(), |len, o| {
                first
                    .char_indices()
                    .zip(o.chars())
                    .take_while(|((_, a), b)| a == b)
                    .map(|((i, a), _)| i + a.len_utf8())
                    .last()
                    .unwrap_or(0)
                    .min(len)
            });
            let prefix = &first[..len];
            if prefix.len() > text.len() {
                prefix.to_string()
            } else {
                text.to_string()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tab_completes_commands_and_their_arguments() {
        assert_eq!(complete("ev", &[]), "events");
        assert_eq!(complete("so", &[]), "sort ");
        assert_eq!(complete("sort r", &[]), "sort rate");
        assert_eq!(
            completions("sort l", &[]),
            ["sort leader", "sort line", "sort last"]
        );
        assert_eq!(
            complete("sort l", &[]),
            "sort l",
            "ambiguous: nothing to add"
        );
        assert_eq!(
            complete("re", &[]),
            "re",
            "reelect and resign share only `re`"
        );
        assert_eq!(completions("re", &[]), ["reelect", "resign"]);
        let ids = ["node-a".to_string(), "node-b".to_string()];
        assert_eq!(complete("force-leader node-", &ids), "force-leader node-");
        assert_eq!(complete("force-leader node-b", &ids), "force-leader node-b");
        assert_eq!(complete("xyz", &[]), "xyz");
    }

    #[test]
    fn commands_parse_with_readable_errors() {
        assert_eq!(parse("sort ttl"), Ok(BarCommand::Sort(SortKey::Ttl)));
        assert_eq!(parse(" q "), Ok(BarCommand::Quit));
        assert_eq!(
            parse("force-leader n1"),
            Ok(BarCommand::ForceLeader(Some("n1".into())))
        );
        assert!(parse("sort size").unwrap_err().contains("alarms, name"));
        assert_eq!(parse("ctx"), Ok(BarCommand::Context(None)));
        assert_eq!(
            parse("ctx prod"),
            Ok(BarCommand::Context(Some("prod".into())))
        );
        assert!(
            parse("explode")
                .unwrap_err()
                .contains("unknown command `explode`")
        );
    }
}
