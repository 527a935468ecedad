//! The alert rules electop ships (`assets/prometheus/electop-rules.yml`), and copies of them
//! that a test Prometheus can fire within seconds.

use std::path::{Path, PathBuf};

/// The shipped rules file.
pub fn shipped_rules() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/prometheus/electop-rules.yml")
}

/// The shipped rules file's unit tests (`promtool test rules`).
pub fn shipped_rule_tests() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/prometheus/electop-rules.test.yml")
}

/// Writes `dir/electop-rules.yml`, the shipped rules with every `for:` set to `duration`
/// ("1s"), and returns its path: the real expressions, labels and annotations, without the
/// 10 s to 1 min a test would otherwise wait. Panics if the file has no `for:` to shorten.
pub fn rules_with_for(dir: &Path, duration: &str) -> PathBuf {
    let shipped = shipped_rules();
    let text = std::fs::read_to_string(&shipped)
        .unwrap_or_else(|e| panic!("read {}: {e}", shipped.display()));
    let (shortened, count) = with_for(&text, duration);
    assert!(count > 0, "no `for:` in {}", shipped.display());
    let path = dir.join("electop-rules.yml");
    std::fs::write(&path, shortened).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    path
}

/// `text` with the value of every `for:` line replaced by `duration`, and how many there were.
pub fn with_for(text: &str, duration: &str) -> (String, usize) {
    let mut count = 0;
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let body = line.trim_start();
        if let Some(value) = body.strip_prefix("for:")
            && !value.trim().is_empty()
        {
            let indent = &line[..line.len() - body.len()];
            out.push_str(&format!("{indent}for: {duration}"));
            count += 1;
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    (out, count)
}

/// The `expr:` of every rule in a rules file, as written: a one-line `expr: X`, or a block
/// (`expr: |`) of the more-indented lines below it.
pub fn rule_exprs(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut exprs = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let body = line.trim_start();
        let Some(value) = body.strip_prefix("expr:") else {
            continue;
        };
        let value = value.trim();
        if !value.starts_with('|') && !value.starts_with('>') {
            exprs.push(value.to_string());
            continue;
        }
        let indent = line.len() - body.len();
        let block: Vec<&str> = lines[i + 1..]
            .iter()
            .take_while(|l| l.trim().is_empty() || l.len() - l.trim_start().len() > indent)
            .map(|l| l.trim())
            .collect();
        exprs.push(block.join("\n").trim().to_string());
    }
    exprs
}
