//! Named contexts, as in kubeconfig: `[[context]]` names a set of the file's `[[source]]`
//! entries (by their `name`, or `etcd1`, `sql1`, `zk1`... for unnamed ones), `current-context`
//! picks the one used when `--context` is not given (else the first context).

use serde::Deserialize;

use super::SourceConfig;

/// `[[context]]` as written.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Context {
    pub name: String,
    /// Names of `[[source]]` entries.
    pub sources: Vec<String>,
}

/// The name every source is shown by: its `name`, else its kind and its rank among the
/// sources of that kind (`etcd1`, `etcd2`, `sql1`...).
pub(crate) fn source_names(sources: &[SourceConfig]) -> Vec<String> {
    let mut counts = std::collections::HashMap::<&str, usize>::new();
    sources
        .iter()
        .map(|s| {
            let rank = counts.entry(s.kind()).or_default();
            *rank += 1;
            match s.name() {
                Some(name) => name.to_string(),
                None => format!("{}{rank}", s.kind()),
            }
        })
        .collect()
}

/// A name is shown in one cell and written before a `/` in `SOURCE/NAME`: no `/`, no
/// blanks or control characters, not empty.
pub(crate) fn check_name(what: &str, name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err(format!(
            "{what} has an empty `name`; give it a name, or leave `name` out"
        ));
    }
    if name
        .chars()
        .any(|c| c == '/' || c.is_whitespace() || c.is_control())
    {
        return Err(format!(
            "{what}: name `{}` may not hold `/`, spaces or control characters; use e.g. prod-etcd",
            crate::model::escape_bytes(name.as_bytes())
        ));
    }
    Ok(())
}

/// Source names unique, contexts named uniquely, each naming known sources, at least one,
/// and `current-context` one of them.
pub(crate) fn check(
    names: &[String],
    contexts: &[Context],
    current: Option<&str>,
) -> Result<(), String> {
    for (i, n) in names.iter().enumerate() {
        if let Some(j) = names[..i].iter().position(|m| m == n) {
            return Err(format!(
                "[[source]] #{} and #{} are both named `{n}`; source names must differ",
                j + 1,
                i + 1
            ));
        }
    }
    for (i, c) in contexts.iter().enumerate() {
        let what = format!("[[context]] #{}", i + 1);
        check_name(&what, &c.name)?;
        if contexts[..i].iter().any(|d| d.name == c.name) {
            return Err(format!(
                "{what}: context `{}` is defined twice; context names must differ",
                c.name
            ));
        }
        if c.sources.is_empty() {
            return Err(format!(
                "context `{}` has no sources; list [[source]] names, e.g. sources = [\"{}\"]",
                c.name,
                names.first().map(String::as_str).unwrap_or("etcd1")
            ));
        }
        if let Some((_, twice)) = c
            .sources
            .iter()
            .enumerate()
            .find(|(i, s)| c.sources[..*i].contains(s))
        {
            return Err(format!(
                "context `{}` lists source `{twice}` twice; list each once",
                c.name
            ));
        }
        if let Some(unknown) = c.sources.iter().find(|s| !names.contains(s)) {
            return Err(format!(
                "context `{}`: no [[source]] is named `{unknown}`; the sources are {}",
                c.name,
                list(names)
            ));
        }
    }
    if let Some(cur) = current
        && !contexts.iter().any(|c| c.name == cur)
    {
        return Err(match contexts.is_empty() {
            true => format!("current-context = \"{cur}\" but no [[context]] is defined"),
            false => format!(
                "current-context = \"{cur}\" is not a context; the contexts are {}",
                list(&contexts.iter().map(|c| c.name.clone()).collect::<Vec<_>>())
            ),
        });
    }
    Ok(())
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}

/// Why `--context NAME` (or `:ctx NAME`) names no context.
pub(crate) fn unknown(name: &str, contexts: &[Context]) -> String {
    if contexts.is_empty() {
        return format!(
            "no contexts configured, so there is no context `{name}`: define [[context]] entries in the config file"
        );
    }
    let known: Vec<String> = contexts.iter().map(|c| c.name.clone()).collect();
    format!(
        "unknown context `{name}`; the contexts are {}",
        list(&known)
    )
}

/// `electop contexts`: each context with its sources, `*` on the one used without
/// `--context`.
pub(crate) fn listing(config: &super::Config) -> String {
    if config.contexts.is_empty() {
        return "no contexts configured: add [[context]] entries (name, sources) to the config file\n"
            .to_string();
    }
    let current = config.default_context();
    let width = config
        .contexts
        .iter()
        .map(|c| c.name.len())
        .max()
        .unwrap_or(0)
        .max(4);
    let mut out = format!("CURRENT  {:width$}  SOURCES\n", "NAME");
    for c in &config.contexts {
        let mark = if Some(c.name.as_str()) == current {
            "*"
        } else {
            ""
        };
        out.push_str(&format!(
            "{mark:7}  {:width$}  {}\n",
            c.name,
            c.sources.join(", ")
        ));
    }
    out
}
